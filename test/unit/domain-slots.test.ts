import { Deferred, Effect, Fiber, type Scope } from "effect"
import { describe, expect, it } from "vitest"
import type { HistoryEntry } from "../../src/actors/domain-entity.ts"
import { type DomainSlot, type DomainSlotBackend, type DomainSlotsShape, makeDomainSlots, MAX_HANDOVERS } from "../../src/actors/domain-slots.ts"

/**
 * A stand-in for the domain entity with a limit of two slots: it records every message and grants
 * waiting holders in arrival order, so the tests can check what the node's cache sends and that the
 * domain never has more than two holders.
 */
const fakeEntity = () => {
  const log: Array<string> = []
  const holders = new Set<string>()
  let peak = 0
  const queue: Array<{ holder: string; granted: Deferred.Deferred<ReadonlyArray<HistoryEntry>> }> = []
  const history: Array<HistoryEntry> = [{ engine: "http", ok: true, at: 1 }]
  const grant = () => {
    while (holders.size < 2 && queue.length > 0) {
      const next = queue.shift()!
      holders.add(next.holder)
      peak = Math.max(peak, holders.size)
      Deferred.doneUnsafe(next.granted, Effect.succeed(history))
    }
  }
  // Mutable, so a test can slow one call down.
  const backend: { -readonly [K in keyof DomainSlotBackend]: DomainSlotBackend[K] } = {
    acquire: (_d, holder) =>
      Effect.suspend(() => {
        log.push(`acquire ${holder}`)
        const granted = Deferred.makeUnsafe<ReadonlyArray<HistoryEntry>>()
        queue.push({ holder, granted })
        grant()
        return Deferred.await(granted)
      }),
    release: (_d, holder) =>
      Effect.sync(() => {
        log.push(`release ${holder}`)
        holders.delete(holder)
        // As the entity does: a holder that gave up waiting leaves the queue too.
        const queued = queue.findIndex((q) => q.holder === holder)
        if (queued >= 0) queue.splice(queued, 1)
        grant()
      }),
    handover: (_d, from, to) =>
      Effect.sync(() => {
        log.push(`handover ${from}->${to}`)
        holders.delete(from)
        holders.add(to)
        peak = Math.max(peak, holders.size)
      }),
    renew: (_d, renewed) => Effect.sync(() => void log.push(`renew ${renewed.map((r) => `${r.holder}/${r.ttlMs}`).join(",")}`))
  }
  return { backend, log, holders, peak: () => peak }
}

type Slots = Effect.Success<ReturnType<typeof makeDomainSlots>>

const run = <A>(body: (slots: Slots, entity: ReturnType<typeof fakeEntity>) => Effect.Effect<A, never, Scope.Scope>, renewEveryMs?: number) => {
  const entity = fakeEntity()
  return Effect.runPromise(Effect.scoped(Effect.flatMap(makeDomainSlots(entity.backend, 2, { ...(renewEveryMs ? { renewEveryMs } : {}) }), (slots) => body(slots, entity))))
}

const settle = Effect.yieldNow.pipe(Effect.repeat({ times: 20 }))

/** Passes `slot` on from job to job `times` times (jobs j1, j2, ...); answers the last job's slot. */
const passAlong = (slots: DomainSlotsShape, slot: DomainSlot, times: number) =>
  Effect.gen(function*() {
    let current = slot
    for (let i = 1; i <= times; i++) {
      const next = yield* Effect.forkChild(slots.acquire("d", `j${i}`, 0, 1000))
      yield* settle
      yield* current.release([])
      current = yield* Fiber.join(next)
    }
    return current
  })
const done = (f: Fiber.Fiber<unknown, unknown>) => f.pollUnsafe() !== undefined

describe("DomainSlots (the node's side of the domain's politeness slots)", () => {
  it("renews the lease of every slot its jobs hold, with each slot's own length, until it is given back", async () => {
    await run((slots, entity) =>
      Effect.gen(function*() {
        const a = yield* slots.acquire("d", "a", 0, 1000)
        yield* slots.acquire("d", "b", 0, 2000)
        yield* Effect.sleep("130 millis")
        expect(entity.log.filter((l) => l.startsWith("renew"))).toContain("renew a/1000,b/2000")
        yield* a.release([])
        entity.log.length = 0
        yield* Effect.sleep("130 millis")
        expect(entity.log.filter((l) => l.startsWith("renew"))).toContain("renew b/2000")
        expect(entity.log.join(" ")).not.toMatch(/renew[^ ]*a\//)
      }), 50)
  })

  it("renews on a fixed beat: a domain whose renewal send hangs (its entity out of reach) does not hold up the others'", async () => {
    await run((slots, entity) =>
      Effect.gen(function*() {
        const fast = entity.backend.renew
        // The first domain's entity never answers; a real send gives up after 2 s, this one not at all.
        entity.backend.renew = (d, holders) => (d === "stuck" ? Effect.never : fast(d, holders))
        yield* slots.acquire("stuck", "s", 0, 1000)
        yield* slots.acquire("d", "a", 0, 1000)
        yield* Effect.sleep("330 millis")
        // Rounds at 50, 100, ... ms: every one reaches "d" although each waits on "stuck" for ever.
        expect(entity.log.filter((l) => l === "renew a/1000").length).toBeGreaterThanOrEqual(4)
      }), 50)
  })

  it("asks the entity while it holds no slot, then hands a freed slot to the next waiting job without asking", async () => {
    await run((slots, entity) =>
      Effect.gen(function*() {
        const a = yield* slots.acquire("d", "a", 0, 1000)
        const b = yield* slots.acquire("d", "b", 0, 1000)
        expect(a.history).toEqual([{ engine: "http", ok: true, at: 1 }])
        // Two slots held, so the next two jobs wait for them here.
        const c = yield* Effect.forkChild(slots.acquire("d", "c", 0, 1000))
        const e = yield* Effect.forkChild(slots.acquire("d", "e", 5, 1000))
        yield* settle
        expect(done(c) || done(e)).toBe(false)
        yield* a.release([{ engine: "brave", ok: false }])
        const eSlot = yield* Fiber.join(e)
        // The higher priority went first, and learned what the released job found.
        expect(eSlot.history.map((h) => [h.engine, h.ok]).sort()).toEqual([["brave", false], ["http", true]])
        yield* b.release([])
        yield* (yield* Fiber.join(c)).release([])
        yield* eSlot.release([])
        expect(entity.log).toEqual(["acquire a", "acquire b", "handover a->e", "handover b->c", "release c", "release e"])
        expect(entity.peak()).toBe(2)
        expect(entity.holders.size).toBe(0)
      })
    )
  })

  it("lends the priority of the jobs waiting here for a domain to its holders that wait for something else, until they give their slot back", async () => {
    await run((slots) =>
      Effect.gen(function*() {
        const raised: Array<string> = []
        const a = yield* slots.acquire("d", "a", 0, 1000)
        const b = yield* slots.acquire("d", "b", 0, 1000)
        // a waits for a crawl slot now: it can be raised.
        slots.lendPriority("d", "a", (p) => raised.push(`a:${p}`))
        const high = yield* Effect.forkChild(slots.acquire("d", "high", 7, 1000))
        yield* settle
        expect(raised).toEqual(["a:7"])
        // A holder that starts waiting later is raised at once to the highest priority waiting.
        slots.lendPriority("d", "b", (p) => raised.push(`b:${p}`))
        expect(raised).toEqual(["a:7", "b:7"])
        // Neither a job that holds nothing here, nor one of another domain, is raised.
        slots.lendPriority("d", "stranger", (p) => raised.push(`stranger:${p}`))
        slots.lendPriority("other", "a", (p) => raised.push(`other:${p}`))
        // Once a gives its slot back it lends nothing more.
        yield* a.release([])
        const highSlot = yield* Fiber.join(high)
        const mid = yield* Effect.forkChild(slots.acquire("d", "mid", 3, 1000))
        yield* settle
        expect(raised).toEqual(["a:7", "b:7", "b:3"])
        yield* b.release([])
        yield* (yield* Fiber.join(mid)).release([])
        yield* highSlot.release([])
        expect(slots.domainsTracked()).toBe(0)
      })
    )
  })

  it("returns a slot to the entity after MAX_HANDOVERS, and the jobs it no longer covers ask the entity", async () => {
    await run((slots, entity) =>
      Effect.gen(function*() {
        // A long job holds one slot all along; jobs pass the other one on.
        const long = yield* slots.acquire("d", "long", 0, 1000)
        const last = yield* passAlong(slots, yield* slots.acquire("d", "j0", 0, 1000), MAX_HANDOVERS + 1)
        yield* last.release([])
        yield* long.release([])
        const kinds = entity.log.map((l) => l.split(" ")[0])
        expect(kinds.filter((k) => k === "handover")).toHaveLength(MAX_HANDOVERS)
        // After the last allowed handover the slot went back, and the waiting job asked for its own.
        expect(entity.log.slice(MAX_HANDOVERS + 2, MAX_HANDOVERS + 4)).toEqual([`release j${MAX_HANDOVERS}`, `acquire j${MAX_HANDOVERS + 1}`])
        expect(entity.holders.size).toBe(0)
      })
    )
  })

  it("lets a waiting job leave, and passes on a slot granted just as it left", async () => {
    await run((slots, entity) =>
      Effect.gen(function*() {
        const a = yield* slots.acquire("d", "a", 0, 1000)
        const b = yield* slots.acquire("d", "b", 0, 1000)
        const gone = yield* Effect.forkChild(slots.acquire("d", "gone", 0, 1000))
        const stays = yield* Effect.forkChild(slots.acquire("d", "stays", 0, 1000))
        yield* settle
        yield* Fiber.interrupt(gone)
        yield* a.release([])
        const s = yield* Fiber.join(stays)
        yield* b.release([])
        yield* s.release([])
        expect(entity.log).toEqual(["acquire a", "acquire b", "handover a->stays", "release b", "release stays"])
        expect(entity.holders.size).toBe(0)
      })
    )
  })

  it("tells the entity when a job stops waiting for its answer, so the slot never goes to a job that left", async () => {
    await run((slots, entity) =>
      Effect.gen(function*() {
        // Another node holds both slots: this node's job waits in the entity's queue.
        entity.holders.add("other-1")
        entity.holders.add("other-2")
        const gone = yield* Effect.forkChild(slots.acquire("d", "gone", 0, 1000))
        const stays = yield* Effect.forkChild(slots.acquire("d", "stays", 0, 1000))
        yield* settle
        expect(entity.log).toEqual(["acquire gone", "acquire stays"])
        yield* Fiber.interrupt(gone)
        yield* settle
        expect(entity.log).toEqual(["acquire gone", "acquire stays", "release gone"])
        // The other node frees a slot: it goes to the job that still waits.
        yield* entity.backend.release("d", "other-1", [])
        const s = yield* Fiber.join(stays)
        expect([...entity.holders].sort()).toEqual(["other-2", "stays"])
        yield* s.release([])
      })
    )
  })

  it("keeps nothing for a domain whose entity could not be reached, or whose ask was given up", async () => {
    await run((slots, entity) =>
      Effect.gen(function*() {
        entity.backend.acquire = () => Effect.succeed(undefined)
        const unreached = yield* slots.acquire("unreached", "a", 0, 1000)
        expect(unreached.history).toEqual([])
        expect(slots.domainsTracked()).toBe(0)
        entity.backend.acquire = () => Effect.never
        const asking = yield* Effect.forkChild(slots.acquire("slow", "b", 0, 1000))
        yield* settle
        yield* Fiber.interrupt(asking)
        expect(slots.domainsTracked()).toBe(0)
      })
    )
  })

  it("asks the entity while this node holds fewer than all of the domain's slots", async () => {
    await run((slots, entity) =>
      Effect.gen(function*() {
        const a = yield* slots.acquire("d", "a", 0, 1000)
        // One slot held here: the second may be free (or another node's), so the entity decides.
        const b = yield* slots.acquire("d", "b", 0, 1000)
        // Both held here now: the third waits here for one of them.
        const c = yield* Effect.forkChild(slots.acquire("d", "c", 0, 1000))
        yield* settle
        expect(done(c)).toBe(false)
        expect(entity.log).toEqual(["acquire a", "acquire b"])
        yield* a.release([])
        yield* (yield* Fiber.join(c)).release([])
        yield* b.release([])
        expect(entity.log).toEqual(["acquire a", "acquire b", "handover a->c", "release c", "release b"])
        expect(entity.holders.size).toBe(0)
        expect(entity.peak()).toBe(2)
      })
    )
  })

  it("does not hand a slot to a job that came after this node's jobs queued at the entity: it queues there behind them", async () => {
    await run((slots, entity) =>
      Effect.gen(function*() {
        // Another node holds both slots (as after a fail-over: the entity restarted with their holders).
        entity.holders.add("x1")
        entity.holders.add("x2")
        // This node's jobs a and b ask the entity, which queues them.
        const a = yield* Effect.forkChild(slots.acquire("d", "a", 0, 1000))
        const b = yield* Effect.forkChild(slots.acquire("d", "b", 0, 1000))
        yield* settle
        // One is granted (x1 done): the node holds one slot, b still waits at the entity.
        yield* entity.backend.release("d", "x1", [])
        const aSlot = yield* Fiber.join(a)
        yield* entity.backend.release("d", "x2", [])
        const bSlot = yield* Fiber.join(b)
        // Both held here, nobody of this node at the entity: c waits here, as before.
        const c = yield* Effect.forkChild(slots.acquire("d", "c", 0, 1000))
        yield* settle
        expect(entity.log).toEqual(["acquire a", "acquire b", "release x1", "release x2"])
        yield* aSlot.release([])
        yield* (yield* Fiber.join(c)).release([])
        yield* bSlot.release([])
        expect(entity.holders.size).toBe(0)
      })
    )
    await run((slots, entity) =>
      Effect.gen(function*() {
        entity.holders.add("x1")
        entity.holders.add("x2")
        // a and b queue at the entity; a is granted, then the other slot is too, to someone of the entity's queue...
        const a = yield* Effect.forkChild(slots.acquire("d", "a", 0, 1000))
        const b = yield* Effect.forkChild(slots.acquire("d", "b", 0, 1000))
        const c = yield* Effect.forkChild(slots.acquire("d", "c", 0, 1000))
        yield* settle
        yield* entity.backend.release("d", "x1", [])
        yield* entity.backend.release("d", "x2", [])
        const aSlot = yield* Fiber.join(a)
        const bSlot = yield* Fiber.join(b)
        // ...c is still queued at the entity, so a job coming now queues there behind it rather than
        // waiting here for a handover that would pass c by.
        const late = yield* Effect.forkChild(slots.acquire("d", "late", 0, 1000))
        yield* settle
        expect(entity.log.slice(-1)).toEqual(["acquire late"])
        yield* aSlot.release([])
        const cSlot = yield* Fiber.join(c)
        yield* bSlot.release([])
        const lateSlot = yield* Fiber.join(late)
        yield* cSlot.release([])
        yield* lateSlot.release([])
        expect(entity.log).toEqual(["acquire a", "acquire b", "acquire c", "release x1", "release x2", "acquire late", "release a", "release b", "release c", "release late"])
        expect(entity.peak()).toBe(2)
        expect(entity.holders.size).toBe(0)
        expect(slots.domainsTracked()).toBe(0)
      })
    )
  })

  it("finishes a slot's return to the entity, and asks for the jobs waiting here, even if the releasing job is interrupted meanwhile", async () => {
    await run((slots, entity) =>
      Effect.gen(function*() {
        // The last allowed handover makes the next release give the slot back to the entity.
        const long = yield* slots.acquire("d", "long", 0, 1000)
        const current = yield* passAlong(slots, yield* slots.acquire("d", "j0", 0, 1000), MAX_HANDOVERS)
        const waiting = yield* Effect.forkChild(slots.acquire("d", "waiting", 0, 1000))
        yield* settle
        // The entity is slow to take the release (a send across nodes, a shard moving).
        const gate = Deferred.makeUnsafe<void>()
        const slowRelease = entity.backend.release
        entity.backend.release = (d, h, o) => Deferred.await(gate).pipe(Effect.andThen(slowRelease(d, h, o)))
        const releasing = yield* Effect.forkChild(current.release([]))
        yield* settle
        const interrupting = yield* Effect.forkChild(Fiber.interrupt(releasing))
        yield* settle
        Deferred.doneUnsafe(gate, Effect.void)
        yield* Fiber.join(interrupting)
        const w = yield* Fiber.join(waiting).pipe(Effect.timeout("2 seconds"), Effect.orDie)
        yield* w.release([])
        yield* long.release([])
        expect(entity.log.slice(-4)).toEqual([`release j${MAX_HANDOVERS}`, "acquire waiting", "release waiting", "release long"])
        expect(entity.holders.size).toBe(0)
      })
    )
  })

  it("releases a job that stopped waiting while its slot was being handed to it only after the handover, so no phantom holder is left", async () => {
    await run((slots, entity) =>
      Effect.gen(function*() {
        const a = yield* slots.acquire("d", "a", 0, 1000)
        const b = yield* slots.acquire("d", "b", 0, 1000)
        const leaving = yield* Effect.forkChild(slots.acquire("d", "leaving", 0, 1000))
        yield* settle
        const gate = Deferred.makeUnsafe<void>()
        const slowHandover = entity.backend.handover
        entity.backend.handover = (d, f, t, ttl, o) => Deferred.await(gate).pipe(Effect.andThen(slowHandover(d, f, t, ttl, o)))
        const releasing = yield* Effect.forkChild(a.release([]))
        yield* settle
        yield* Fiber.interrupt(leaving)
        Deferred.doneUnsafe(gate, Effect.void)
        yield* Fiber.join(releasing)
        yield* b.release([])
        expect(entity.log).toEqual(["acquire a", "acquire b", "handover a->leaving", "release leaving", "release b"])
        expect(entity.holders.size).toBe(0)
      })
    )
  })

  describe("withSlot (how a job holds its slot)", () => {
    it("gives the slot back once, with what the job learned, when the job releases it early", async () => {
      await run((slots, entity) =>
        Effect.gen(function*() {
          const after = yield* slots.withSlot("d", "a", 0, 1000, (history, release) =>
            Effect.gen(function*() {
              expect(history).toEqual([{ engine: "http", ok: true, at: 1 }])
              yield* release([{ engine: "http", ok: true }])
              yield* release([])
              // The rest of the job (its terminal write) runs without the slot.
              return entity.holders.size
            }))
          expect(after).toBe(0)
          expect(entity.log).toEqual(["acquire a", "release a"])
        })
      )
    })

    it("gives the slot back when the job fails or is interrupted before it releases it (also while it waits for something else)", async () => {
      await run((slots, entity) =>
        Effect.gen(function*() {
          const failed = yield* Effect.result(slots.withSlot("d", "failing", 0, 1000, () => Effect.fail("boom")))
          expect(failed._tag).toBe("Failure")
          // Two jobs hold both slots and then park, as a job parks waiting for a crawl slot.
          const parked = Deferred.makeUnsafe<void>()
          const holding = yield* Effect.forkChild(slots.withSlot("d", "x", 0, 1000, () => Deferred.await(parked)))
          const holding2 = yield* Effect.forkChild(slots.withSlot("d", "y", 0, 1000, () => Deferred.await(parked)))
          yield* settle
          expect(entity.holders).toEqual(new Set(["x", "y"]))
          const waiting = yield* Effect.forkChild(slots.withSlot("d", "z", 0, 1000, () => Effect.succeed("crawled")))
          yield* settle
          expect(done(waiting)).toBe(false)
          // Interrupted while parked: its slot goes to the waiting job.
          yield* Fiber.interrupt(holding)
          expect(yield* Fiber.join(waiting)).toBe("crawled")
          yield* Fiber.interrupt(holding2)
          yield* settle
          // The entity heard of the handover before the job it went to could end and release it,
          // so no phantom holder is left.
          expect(entity.log.slice(-3)).toEqual(["handover x->z", "release z", "release y"])
          expect(entity.holders.size).toBe(0)
          expect(entity.peak()).toBe(2)
        })
      )
    })
  })
})
