/**
 * Small async semaphores: a plain one (browser page cap) and a keyed one (per-domain politeness).
 */

const abortError = (signal: AbortSignal): Error =>
  signal.reason instanceof Error ? signal.reason : new DOMException("aborted", "AbortError")

export class Semaphore {
  private active = 0
  private readonly waiters: Array<{ grant: () => void; priority: number }> = []
  constructor(readonly limit: number) {
    if (!(limit >= 1)) throw new Error("semaphore limit must be >= 1")
  }
  get inUse(): number {
    return this.active
  }
  get waiting(): number {
    return this.waiters.length
  }
  /**
   * Resolves with a release function (idempotent); rejects when `signal` aborts first.
   * Waiters are served highest `priority` first, first come first served within a priority.
   */
  acquire(signal?: AbortSignal, priority = 0): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(abortError(signal))
    const release = () => {
      let done = false
      return () => {
        if (done) return
        done = true
        const next = this.waiters.shift()
        if (next) next.grant()
        else this.active--
      }
    }
    if (this.active < this.limit) {
      this.active++
      return Promise.resolve(release())
    }
    return new Promise((resolve, reject) => {
      const waiter = {
        priority,
        grant: () => {
          signal?.removeEventListener("abort", onAbort)
          resolve(release())
        }
      }
      const onAbort = () => {
        const i = this.waiters.indexOf(waiter)
        if (i >= 0) this.waiters.splice(i, 1)
        reject(abortError(signal!))
      }
      signal?.addEventListener("abort", onAbort, { once: true })
      const at = this.waiters.findIndex((w) => w.priority < priority)
      if (at < 0) this.waiters.push(waiter)
      else this.waiters.splice(at, 0, waiter)
    })
  }
}

/** Per-key concurrency cap (e.g. 2 concurrent fetches per domainId). Idle keys are dropped. */
export class KeyedLimiter {
  private readonly byKey = new Map<string, Semaphore>()
  constructor(readonly limitPerKey: number) {}
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
