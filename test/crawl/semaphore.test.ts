import { describe, expect, it } from "vitest"
import { KeyedLimiter, Semaphore } from "../../src/crawl/semaphore.ts"

describe("Semaphore / KeyedLimiter", () => {
  it("caps concurrency and hands slots over in order", async () => {
    const sem = new Semaphore(2)
    const r1 = await sem.acquire()
    const r2 = await sem.acquire()
    const order: number[] = []
    const p3 = sem.acquire().then((r) => (order.push(3), r))
    const p4 = sem.acquire().then((r) => (order.push(4), r))
    expect(sem.waiting).toBe(2)
    r1()
    r1() // idempotent
    const r3 = await p3
    expect(sem.inUse).toBe(2)
    r2()
    const r4 = await p4
    expect(order).toEqual([3, 4])
    r3()
    r4()
    expect(sem.inUse).toBe(0)
  })

  it("a waiting acquire is abandoned when its signal aborts", async () => {
    const sem = new Semaphore(1)
    const r = await sem.acquire()
    const ac = new AbortController()
    const p = sem.acquire(ac.signal)
    ac.abort()
    await expect(p).rejects.toBeTruthy()
    expect(sem.waiting).toBe(0)
    r()
    expect(sem.inUse).toBe(0)
  })

  it("serves the highest priority first, in arrival order within a priority, skipping waiters that gave up", async () => {
    const sem = new Semaphore(1)
    const held = await sem.acquire()
    const order: Array<string> = []
    const ac = new AbortController()
    const waiters = [
      ["low-1", 0], ["high-1", 5], ["mid", 2], ["high-2", 5], ["low-2", 0], ["gives-up", 5]
    ].map(([name, priority]) => {
      const signal = name === "gives-up" ? ac.signal : undefined
      return sem.acquire(signal, priority as number).then((release) => {
        order.push(name as string)
        release()
      }, () => order.push(`${name} (aborted)`))
    })
    expect(sem.waiting).toBe(6)
    ac.abort()
    await Promise.resolve()
    expect(sem.waiting).toBe(5)
    held()
    await Promise.all(waiters)
    expect(order).toEqual(["gives-up (aborted)", "high-1", "high-2", "mid", "low-1", "low-2"])
    expect(sem.inUse).toBe(0)
    expect(sem.waiting).toBe(0)
  })

  it("moves a waiter to a higher priority when raised, once; a lower one, or one after the grant or an abort, changes nothing", async () => {
    const sem = new Semaphore(1)
    const held = await sem.acquire()
    const order: Array<string> = []
    const raises = new Map<string, (p: number) => void>()
    const ac = new AbortController()
    const wait = (name: string, priority: number, signal?: AbortSignal) =>
      sem.acquire(signal, priority, (raise) => raises.set(name, raise)).then((release) => {
        order.push(name)
        release()
      }, () => order.push(`${name} (aborted)`))
    const all = [wait("a", 0), wait("b", 3), wait("c", 0), wait("gone", 0, ac.signal)]
    raises.get("c")!(3) // behind b, which was at 3 first
    raises.get("c")!(1) // lower: no change
    raises.get("a")!(0) // the same: no change
    ac.abort()
    await Promise.resolve()
    raises.get("gone")!(9) // gave up: stays gone
    expect(sem.waiting).toBe(3)
    held()
    await Promise.all(all)
    expect(order).toEqual(["gone (aborted)", "b", "c", "a"])
    raises.get("b")!(10) // granted already: nothing is queued again
    expect([sem.inUse, sem.waiting]).toEqual([0, 0])
    const again = await sem.acquire()
    again()
    expect(sem.inUse).toBe(0)
  })

  it("per-domain politeness: 2 per key, keys independent, idle keys dropped", async () => {
    const lim = new KeyedLimiter(2)
    const a1 = await lim.acquire("example.com")
    const a2 = await lim.acquire("example.com")
    let third = false
    const p = lim.acquire("example.com").then((r) => ((third = true), r))
    const b1 = await lim.acquire("other.org")
    await new Promise((r) => setTimeout(r, 10))
    expect(third).toBe(false)
    a1()
    const a3 = await p
    expect(third).toBe(true)
    a2()
    a3()
    b1()
    expect(lim.size).toBe(0)
  })
})
