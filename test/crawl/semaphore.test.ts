import { describe, expect, it } from "vitest"
import { KeyedLimiter, Semaphore } from "../../src/crawl/semaphore.js"

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
