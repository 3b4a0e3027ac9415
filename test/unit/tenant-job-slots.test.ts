import { describe, expect, it } from "vitest"
import { TenantJobSlots } from "../../src/actors/tenant-job-slots.ts"

const day = Date.UTC(2026, 10, 25)
const slotsAt = () => new TenantJobSlots({ reconcileEveryMs: 5_000, pendingTtlMs: 30_000 })

describe("TenantJobSlots (a tenant's concurrency and daily counts)", () => {
  it("frees a job's slot once, even when its release arrives after a reconcile already left it out", () => {
    const slots = slotsAt()
    slots.reconcile({ runningIds: new Set(["a", "b"]), today: 2 }, new Set(), day, day)
    expect(slots.running).toBe(2)
    // Both jobs end; their rows are terminal before the (batched) release reaches the entity, and
    // a reconcile reads SQL meanwhile.
    slots.reconcile({ runningIds: new Set(), today: 2 }, new Set(), day + 6_000, day)
    slots.reserve(["c", "d"], day + 6_000)
    expect(slots.running).toBe(2)
    slots.release(["a", "b"])
    // A count would have dropped to 0 here and let two more jobs past the limit.
    expect(slots.running).toBe(2)
    slots.release(["c"])
    slots.release(["c"])
    expect(slots.running).toBe(1)
  })

  it("counts a job reserved twice (two tries of one keyed request) once, running or written", () => {
    const slots = slotsAt()
    slots.reconcile({ runningIds: new Set(["written"]), today: 1 }, new Set(), day, day)
    slots.reserve(["a", "b"], day)
    expect([slots.running, slots.today]).toEqual([3, 3])
    slots.reserve(["a", "b", "written", "c"], day)
    expect([slots.running, slots.today]).toEqual([4, 4])
    expect(slots.holds("written") && slots.holds("c")).toBe(true)
    expect(slots.holds("other")).toBe(false)
  })

  it("admits all jobs or none, naming the daily quota when it alone has no room", () => {
    const slots = slotsAt()
    slots.reconcile({ runningIds: new Set(["r1"]), today: 8 }, new Set(), day, day)
    expect(slots.admit(["a", "b", "c"], false, { daily: 10, concurrent: 50, creditRoom: Infinity }, day)).toEqual({ refused: "daily" })
    expect(slots.admit(["a", "b", "c"], false, { daily: 100, concurrent: 3, creditRoom: Infinity }, day)).toEqual({ refused: "concurrent" })
    expect([slots.running, slots.today]).toEqual([1, 8])
    expect(slots.admit(["a", "b"], false, { daily: 10, concurrent: 3, creditRoom: Infinity }, day)).toEqual({ reserved: ["a", "b"] })
    expect([slots.running, slots.today]).toEqual([3, 10])
  })

  it("admits what fits of a partial request in order, and every job that holds its slot already wherever it stands", () => {
    const slots = slotsAt()
    slots.reconcile({ runningIds: new Set(["h"]), today: 1 }, new Set(), day, day)
    // One slot left: x fits, y does not, h takes none; y's refusal names the concurrency quota.
    expect(slots.admit(["x", "y", "h"], true, { daily: 100, concurrent: 2, creditRoom: Infinity }, day)).toEqual({ reserved: ["x", "h"], shortBy: "concurrent" })
    // No room at all (a limit lowered below the running count): the held ones still pass, without error.
    expect(slots.admit(["x", "h"], true, { daily: 100, concurrent: 1, creditRoom: Infinity }, day)).toEqual({ reserved: ["x", "h"] })
    expect(slots.admit(["x", "z"], true, { daily: 100, concurrent: 1, creditRoom: Infinity }, day)).toEqual({ reserved: ["x"], shortBy: "concurrent" })
    // Nothing new fits and nothing is held: refused, by the daily quota when it is the one used up.
    expect(slots.admit(["z"], true, { daily: 2, concurrent: 10, creditRoom: Infinity }, day)).toEqual({ refused: "daily" })
    // A job named twice needs one slot.
    expect(slots.admit(["d", "d"], true, { daily: 100, concurrent: 3, creditRoom: Infinity }, day)).toEqual({ reserved: ["d"] })
    expect([slots.running, slots.today]).toEqual([3, 3])
  })

  it("admits no more new jobs than the free credit covers, naming the credit before the concurrency", () => {
    const slots = slotsAt()
    slots.reconcile({ runningIds: new Set(["h"]), today: 1 }, new Set(), day, day)
    expect(slots.admit(["a", "b"], false, { daily: 100, concurrent: 1, creditRoom: 1 }, day)).toEqual({ refused: "credit" })
    expect(slots.admit(["a", "b", "h"], true, { daily: 100, concurrent: 10, creditRoom: 1 }, day)).toEqual({ reserved: ["a", "h"], shortBy: "credit" })
    // A job that holds its slot already was paid for: it passes with no credit free.
    expect(slots.admit(["a"], false, { daily: 100, concurrent: 10, creditRoom: 0 }, day)).toEqual({ reserved: ["a"] })
    expect(slots.admit(["c"], true, { daily: 100, concurrent: 10, creditRoom: 0 }, day)).toEqual({ refused: "credit" })
    // The daily quota is named first: a top-up would not help.
    expect(slots.admit(["c"], true, { daily: 2, concurrent: 10, creditRoom: 0 }, day)).toEqual({ refused: "daily" })
  })

  it("counts a reservation whose row is written while the counts are read, rather than forgetting it", () => {
    const slots = slotsAt()
    slots.reconcile({ runningIds: new Set(), today: 0 }, new Set(), day, day)
    slots.reserve(["a"], day)
    // The entity looks its reservations up first: "a" is not written yet…
    const pending = slots.pendingIds(day + 6_000)
    expect(pending).toEqual(["a"])
    // …and its row commits before the counts are read: counted in SQL and still pending.
    slots.reconcile({ runningIds: new Set(["a"]), today: 1 }, new Set(), day + 6_000, day)
    expect(slots.running).toBe(1)
    expect(slots.today).toBe(2) // twice for now, on the safe side; the next reconcile settles it
    slots.reconcile({ runningIds: new Set(["a"]), today: 1 }, new Set(slots.pendingIds(day + 12_000)), day + 12_000, day)
    expect(slots.today).toBe(1)
    expect(slots.running).toBe(1)
  })

  it("keeps a release that arrives while the counts are read, though SQL still saw the job running", () => {
    const slots = slotsAt()
    slots.reconcile({ runningIds: new Set(["a", "b"]), today: 2 }, new Set(), day, day)
    slots.pendingIds(day + 6_000)
    // "a" ends after SQL was read (it was running then) and before the counts are replaced.
    slots.release(["a"])
    slots.reconcile({ runningIds: new Set(["a", "b"]), today: 2 }, new Set(), day + 6_000, day)
    expect(slots.running).toBe(1)
    expect(slots.holds("a")).toBe(false)
    // Only the read it crossed: a later one counts what SQL says.
    slots.pendingIds(day + 12_000)
    slots.reconcile({ runningIds: new Set(["a", "b"]), today: 2 }, new Set(), day + 12_000, day)
    expect(slots.running).toBe(2)
  })

  it("takes a reservation that was never written off the day's count, but not a job that ended", () => {
    const slots = slotsAt()
    slots.reconcile({ runningIds: new Set(), today: 5 }, new Set(), day, day)
    slots.reserve(["kept", "refused"], day)
    expect([slots.running, slots.today]).toEqual([2, 7])
    slots.release(["refused"], true)
    expect([slots.running, slots.today]).toEqual([1, 6])
    // Given back twice (a retried message): counted off once.
    slots.release(["refused"], true)
    slots.release(["kept"])
    expect([slots.running, slots.today]).toEqual([0, 6])
  })

  it("says whether the counts were read recently, on the same UTC day", () => {
    const slots = slotsAt()
    expect(slots.reconciledWithin(day, day, 500)).toBe(false)
    slots.reconcile({ runningIds: new Set(), today: 0 }, new Set(), day + 1_000, day)
    expect(slots.reconciledWithin(day + 1_400, day, 500)).toBe(true)
    expect(slots.reconciledWithin(day + 1_500, day, 500)).toBe(false)
    expect(slots.reconciledWithin(day + 1_400, day + 86_400_000, 500)).toBe(false)
  })

  it("forgets a reservation whose row was never written after its time to live", () => {
    const slots = slotsAt()
    slots.reconcile({ runningIds: new Set(), today: 0 }, new Set(), day, day)
    slots.reserve(["lost"], day)
    expect(slots.pendingIds(day + 29_000)).toEqual(["lost"])
    expect(slots.pendingIds(day + 31_000)).toEqual([])
    slots.reconcile({ runningIds: new Set(), today: 0 }, new Set(), day + 31_000, day)
    expect(slots.running).toBe(0)
    expect(slots.today).toBe(0)
  })

  it("asks for a reconcile when the counts are old or a new UTC day began", () => {
    const slots = slotsAt()
    expect(slots.needsReconcile(day, day)).toBe(true)
    slots.reconcile({ runningIds: new Set(), today: 0 }, new Set(), day + 1_000, day)
    expect(slots.needsReconcile(day + 2_000, day)).toBe(false)
    expect(slots.needsReconcile(day + 7_000, day)).toBe(true)
    expect(slots.needsReconcile(day + 2_000, day + 86_400_000)).toBe(true)
  })
})
