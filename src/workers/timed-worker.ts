import { parentPort, Worker } from "node:worker_threads"

/**
 * CPU-bound work on worker threads, each task bounded in time: a task that runs too long takes
 * its worker with it (the thread is terminated, which stops any JavaScript, a runaway regex
 * included) and fails alone; tasks queued behind it go to a fresh worker. A task's time starts
 * once its worker is up (a fresh one first loads its code). With `queueTimeoutMs`, a task that
 * waits that long for a worker fails too. Waiting tasks are taken by their `owner` in turn (a
 * tenant, say), so one owner's many tasks do not hold every other owner's behind them; an owner
 * that comes to wait while none of its tasks runs goes ahead of the owners that have one running,
 * so a tenant whose slow tasks fill the workers is served after the others, not before them.
 * Workers start on demand, one task at a time each, and do not keep the process alive.
 *
 * A worker entry answers `{ id, input }` messages with `{ id, result }` or `{ id, error, code? }`.
 */
export interface TimedWorkers<I, O> {
  readonly run: (input: I, owner?: string) => Promise<O>
}

/** A task's failure as its worker reported it; `code` says which kind (the entry's own names). */
export class WorkerTaskError extends Error {
  override readonly name = "WorkerTaskError"
  readonly code: string | undefined
  constructor(message: string, code?: string) {
    super(message)
    this.code = code
  }
}

/** A task that did not end within the time bound. */
export class WorkerTimeout extends Error {
  override readonly name = "WorkerTimeout"
}

interface Task<I, O> {
  readonly id: number
  readonly owner: string
  readonly input: I
  readonly resolve: (o: O) => void
  readonly reject: (e: Error) => void
  queueTimer?: NodeJS.Timeout
}

interface Slot<I, O> {
  readonly worker: Worker
  online: boolean
  task: Task<I, O> | undefined
  timer: NodeJS.Timeout | undefined
}

export const makeTimedWorkers = <I, O>(
  entry: URL,
  options: { readonly size: number; readonly timeoutMs: number; readonly queueTimeoutMs?: number; readonly what: string }
): TimedWorkers<I, O> => {
  const slots: Array<Slot<I, O>> = []
  // Waiting tasks by owner, and the owners with waiting tasks in the order they are served.
  const waiting = new Map<string, Array<Task<I, O>>>()
  const turns: Array<string> = []
  // Tasks running, by owner.
  const running = new Map<string, number>()
  const isRunning = (owner: string) => (running.get(owner) ?? 0) > 0

  /** An owner that comes to wait: behind the others, but ahead of those with a task running if it has none. */
  const joinTurns = (owner: string) => {
    const at = isRunning(owner) ? -1 : turns.findIndex(isRunning)
    if (at < 0) turns.push(owner)
    else turns.splice(at, 0, owner)
  }

  /** The next task: the first of the owner whose turn it is, who then goes to the back of the line. */
  const takeNext = (): Task<I, O> | undefined => {
    const owner = turns.shift()
    if (owner === undefined) return undefined
    const tasks = waiting.get(owner)!
    const task = tasks.shift()!
    if (tasks.length > 0) turns.push(owner)
    else waiting.delete(owner)
    return task
  }

  const unqueue = (task: Task<I, O>): boolean => {
    const tasks = waiting.get(task.owner)
    const at = tasks?.indexOf(task) ?? -1
    if (at < 0) return false
    tasks!.splice(at, 1)
    if (tasks!.length === 0) {
      waiting.delete(task.owner)
      turns.splice(turns.indexOf(task.owner), 1)
    }
    return true
  }
  let nextId = 0

  const settle = (slot: Slot<I, O>) => {
    clearTimeout(slot.timer)
    const task = slot.task
    slot.task = undefined
    slot.timer = undefined
    if (task) {
      const left = (running.get(task.owner) ?? 1) - 1
      if (left > 0) running.set(task.owner, left)
      else running.delete(task.owner)
    }
    return task
  }

  const drop = (slot: Slot<I, O>) => {
    const i = slots.indexOf(slot)
    if (i >= 0) slots.splice(i, 1)
  }

  const start = (): Slot<I, O> => {
    // Node strips the worker's TypeScript itself, as it does the process's (docs/performance.md "Running TypeScript").
    const worker = new Worker(entry)
    worker.unref()
    const slot: Slot<I, O> = { worker, online: false, task: undefined, timer: undefined }
    worker.once("online", () => {
      slot.online = true
      if (slot.task) arm(slot)
    })
    worker.on("message", (m: { id: number; result?: O; error?: string; code?: string }) => {
      if (slot.task?.id !== m.id) return
      const task = settle(slot)!
      if (m.error === undefined) task.resolve(m.result as O)
      else task.reject(new WorkerTaskError(m.error, m.code))
      dispatch()
    })
    const lost = (e: unknown) => {
      drop(slot)
      settle(slot)?.reject(e instanceof Error ? e : new Error(`the ${options.what} worker stopped (${String(e)})`))
      dispatch()
    }
    worker.on("error", lost)
    worker.on("exit", lost)
    slots.push(slot)
    return slot
  }

  /** Starts the running task's clock. */
  const arm = (slot: Slot<I, O>) => {
    slot.timer = setTimeout(() => {
      drop(slot)
      settle(slot)?.reject(new WorkerTimeout(`the ${options.what} took longer than ${options.timeoutMs} ms`))
      void slot.worker.terminate()
      dispatch()
    }, options.timeoutMs)
  }

  const dispatch = () => {
    while (turns.length > 0) {
      let slot = slots.find((s) => s.task === undefined)
      if (!slot && slots.length < options.size) {
        try {
          slot = start()
        } catch (e) {
          // No worker can be started: the waiting tasks fail instead of waiting for ever.
          for (let task = takeNext(); task; task = takeNext()) {
            clearTimeout(task.queueTimer)
            task.reject(e instanceof Error ? e : new Error(String(e)))
          }
          return
        }
      }
      if (!slot) return
      const task = takeNext()!
      clearTimeout(task.queueTimer)
      slot.task = task
      running.set(task.owner, (running.get(task.owner) ?? 0) + 1)
      if (slot.online) arm(slot)
      slot.worker.postMessage({ id: task.id, input: task.input })
    }
  }

  return {
    run: (input, owner = "") =>
      new Promise<O>((resolve, reject) => {
        const task: Task<I, O> = { id: nextId++, owner, input, resolve, reject }
        if (options.queueTimeoutMs !== undefined) {
          task.queueTimer = setTimeout(() => {
            if (unqueue(task)) reject(new WorkerTimeout(`the ${options.what} waited longer than ${options.queueTimeoutMs} ms for a worker`))
          }, options.queueTimeoutMs)
        }
        const tasks = waiting.get(owner)
        if (tasks) tasks.push(task)
        else {
          waiting.set(owner, [task])
          joinTurns(owner)
        }
        dispatch()
      })
  }
}

/**
 * The worker side: answers each task with `handle`'s result, or its error's message and the
 * `code` that `codeOf` gives it. Called once, from a worker entry.
 */
export const serveTasks = <I, O>(handle: (input: I) => O, codeOf: (e: unknown) => string | undefined = () => undefined): void => {
  parentPort!.on("message", ({ id, input }: { id: number; input: I }) => {
    try {
      parentPort!.postMessage({ id, result: handle(input) })
    } catch (e) {
      parentPort!.postMessage({ id, error: e instanceof Error ? e.message : String(e), code: codeOf(e) })
    }
  })
}
