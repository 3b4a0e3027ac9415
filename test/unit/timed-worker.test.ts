import { describe, expect, it } from "vitest"
import { makeTimedWorkers, WorkerTaskError, WorkerTimeout } from "../../src/workers/timed-worker.ts"

const entry = new URL("../support/busy-worker.ts", import.meta.url)

describe("timed workers (CPU-bound work off the event loop, each task bounded)", () => {
  it("answers tasks, and a task's own failure with its code", async () => {
    const workers = makeTimedWorkers<{ spinMs: number; fail?: string }, { spun: number }>(entry, { size: 2, timeoutMs: 5000, what: "test" })
    expect(await workers.run({ spinMs: 10 })).toEqual({ spun: 10 })
    const failed = await workers.run({ spinMs: 0, fail: "no" }).catch((e) => e)
    expect(failed).toBeInstanceOf(WorkerTaskError)
    expect(failed).toMatchObject({ message: "no", code: "asked" })
  })

  it("fails a task that runs too long alone, and the tasks queued behind it run on a fresh worker", async () => {
    // The clock starts once the worker is up, so a slow start (a busy machine) does not count.
    const workers = makeTimedWorkers<{ spinMs: number }, { spun: number }>(entry, { size: 1, timeoutMs: 1000, what: "test" })
    const runaway = workers.run({ spinMs: 60_000 })
    const queued = [workers.run({ spinMs: 5 }), workers.run({ spinMs: 6 })]
    const started = Date.now()
    await expect(runaway).rejects.toBeInstanceOf(WorkerTimeout)
    // The event loop was free meanwhile: the timer fired on time, not after the spin.
    expect(Date.now() - started).toBeLessThan(10_000)
    expect(await Promise.all(queued)).toEqual([{ spun: 5 }, { spun: 6 }])
  })

  it("serves waiting owners in turn: one owner's many tasks do not hold another's behind them", async () => {
    const workers = makeTimedWorkers<{ spinMs: number }, { spun: number }>(entry, { size: 1, timeoutMs: 5000, what: "test" })
    const order: Array<string> = []
    const run = (owner: string, i: number) => workers.run({ spinMs: 20 + i }, owner).then(() => void order.push(`${owner}${i}`))
    const all = [run("a", 0), run("a", 1), run("a", 2), run("a", 3), run("b", 0), run("b", 1)]
    await Promise.all(all)
    // b came to wait while a0 ran and none of its own did: it goes first, then the two take turns.
    expect(order).toEqual(["a0", "b0", "a1", "b1", "a2", "a3"])
  })

  it("puts an owner that comes to wait with nothing running ahead of one whose task runs to its time bound", async () => {
    const workers = makeTimedWorkers<{ spinMs: number }, { spun: number }>(entry, { size: 1, timeoutMs: 1000, what: "test" })
    const order: Array<string> = []
    const run = (owner: string, i: number, spinMs: number) =>
      workers.run({ spinMs }, owner).then(() => void order.push(`${owner}${i}`), () => void order.push(`${owner}${i} timed out`))
    // a's runaway task holds the only worker; a queues another before b arrives.
    const a0 = run("a", 0, 60_000)
    const a1 = run("a", 1, 60_000)
    await new Promise((r) => setTimeout(r, 50))
    const b0 = run("b", 0, 5)
    await Promise.all([a0, a1, b0])
    // b waited for one time bound, not two.
    expect(order).toEqual(["a0 timed out", "b0", "a1 timed out"])
  })

  it("fails a task that waits too long for a worker, without running it", async () => {
    const workers = makeTimedWorkers<{ spinMs: number }, { spun: number }>(entry, { size: 1, timeoutMs: 5000, queueTimeoutMs: 300, what: "test" })
    const busy = workers.run({ spinMs: 1500 })
    const waiting = workers.run({ spinMs: 1 })
    const failed = await waiting.catch((e) => e)
    expect(failed).toBeInstanceOf(WorkerTimeout)
    expect(failed.message).toMatch(/waited longer than 300 ms/)
    expect(await busy).toEqual({ spun: 1500 })
  })
})
