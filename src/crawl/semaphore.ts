/**
 * Small async semaphores: a plain one (browser page cap) and a keyed one (per-domain politeness).
 */

const abortError = (signal: AbortSignal): Error =>
  signal.reason instanceof Error ? signal.reason : new DOMException("aborted", "AbortError")

interface Waiter {
  readonly grant: () => void
  cancelled: boolean
}

/** A FIFO queue with an advancing head: taking the first is O(1), not a shift of the whole array. */
class Fifo<A> {
  private items: Array<A> = []
  private head = 0
  get size(): number {
    return this.items.length - this.head
  }
  push(item: A) {
    this.items.push(item)
  }
  take(): A | undefined {
    if (this.head === this.items.length) return undefined
    const item = this.items[this.head++]!
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head)
      this.head = 0
    }
    return item
  }
}

export class Semaphore {
  private active = 0
  private queued = 0
  /** Waiters by priority; `levels` lists the priorities that have any, highest first. */
  private readonly byPriority = new Map<number, Fifo<Waiter>>()
  private readonly levels: Array<number> = []
  readonly limit: number
  constructor(limit: number) {
    if (!(limit >= 1)) throw new Error("semaphore limit must be >= 1")
    this.limit = limit
  }
  get inUse(): number {
    return this.active
  }
  get waiting(): number {
    return this.queued
  }
  /** The next waiter that has not given up, highest priority first; undefined when none waits. */
  private next(): Waiter | undefined {
    while (this.levels.length > 0) {
      const level = this.levels[0]!
      const fifo = this.byPriority.get(level)!
      const waiter = fifo.take()
      if (fifo.size === 0) {
        this.byPriority.delete(level)
        this.levels.shift()
      }
      if (waiter && !waiter.cancelled) return waiter
    }
    return undefined
  }
  /**
   * Resolves with a release function (idempotent); rejects when `signal` aborts first.
   * Waiters are served highest `priority` first, first come first served within a priority.
   * Joining or leaving the queue costs O(number of distinct priorities waiting). A caller that
   * has to wait is handed `raise` through `onQueued`: it moves the wait to a higher priority (to
   * the back of that priority's queue); a lower one, or one after the grant, changes nothing.
   */
  acquire(signal?: AbortSignal, priority = 0, onQueued?: (raise: (priority: number) => void) => void): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(abortError(signal))
    const release = () => {
      let done = false
      return () => {
        if (done) return
        done = true
        const next = this.next()
        if (next) {
          this.queued--
          next.grant()
        } else {
          this.active--
        }
      }
    }
    if (this.active < this.limit) {
      this.active++
      return Promise.resolve(release())
    }
    return new Promise((resolve, reject) => {
      let settled = false
      const grant = () => {
        settled = true
        signal?.removeEventListener("abort", onAbort)
        resolve(release())
      }
      let waiter: Waiter = { cancelled: false, grant }
      // A waiter that gives up stays in its queue, marked, and is skipped when its turn comes.
      const onAbort = () => {
        settled = true
        waiter.cancelled = true
        this.queued--
        reject(abortError(signal!))
      }
      signal?.addEventListener("abort", onAbort, { once: true })
      this.enqueue(waiter, priority)
      this.queued++
      let level = priority
      onQueued?.((raised) => {
        if (settled || raised <= level) return
        // The wait moves: its old place is skipped, as a given-up one is.
        waiter.cancelled = true
        waiter = { cancelled: false, grant }
        level = raised
        this.enqueue(waiter, raised)
      })
    })
  }

  private enqueue(waiter: Waiter, priority: number) {
    let fifo = this.byPriority.get(priority)
    if (!fifo) {
      this.byPriority.set(priority, (fifo = new Fifo()))
      let at = 0
      while (at < this.levels.length && this.levels[at]! > priority) at++
      this.levels.splice(at, 0, priority)
    }
    fifo.push(waiter)
  }
}

/** Per-key concurrency cap (e.g. 2 concurrent fetches per domainId). Idle keys are dropped. */
export class KeyedLimiter {
  private readonly byKey = new Map<string, Semaphore>()
  readonly limitPerKey: number
  constructor(limitPerKey: number) {
    this.limitPerKey = limitPerKey
  }
  async acquire(key: string, signal?: AbortSignal): Promise<() => void> {
    let sem = this.byKey.get(key)
    if (!sem) this.byKey.set(key, (sem = new Semaphore(this.limitPerKey)))
    const s = sem
    let release: () => void
    try {
      release = await s.acquire(signal)
    } catch (e) {
      if (s.inUse === 0 && s.waiting === 0) this.byKey.delete(key)
      throw e
    }
    return () => {
      release()
      if (s.inUse === 0 && s.waiting === 0 && this.byKey.get(key) === s) this.byKey.delete(key)
    }
  }
  get size(): number {
    return this.byKey.size
  }
}
