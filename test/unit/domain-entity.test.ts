import { Effect, Fiber, Layer } from "effect"
import { Entity, ShardingConfig } from "effect/cluster"
import { describe, expect, it, vi } from "vitest"
import { DomainEntity, DomainEntityLive, parseHolder, RESTART_QUIET_MS, SLOT_RENEW_MS } from "../../src/actors/domain-entity.ts"
import { entitySlotBackend } from "../../src/actors/domain-slots.ts"
import { Config, type loadConfig } from "../../src/config.ts"
import { makeCrawlServiceTest } from "../../src/crawl/crawl-service.ts"
import { DatabaseLive } from "../../src/sql/database.ts"
import { DomainRepoLive } from "../../src/sql/domain-repo.ts"
import { MigrationsLive } from "../../src/sql/migrate.ts"
import { testDatabases } from "../support/databases.ts"

// The entity only reads the politeness limit from the crawl service; it never crawls.
const crawl = makeCrawlServiceTest(() => {
  throw new Error("the domain entity does not crawl")
}, { perDomainConcurrency: 2 })

const entityLayer = (config: ReturnType<typeof loadConfig>) =>
  DomainEntityLive.pipe(
    Layer.provide(crawl),
    Layer.provide(DomainRepoLive),
    Layer.provide(MigrationsLive),
    Layer.provideMerge(DatabaseLive),
    Layer.provide(Layer.succeed(Config, config))
  )

/** Runs bodies against the entity of one domain on the database of `config`: each in an entity started anew. */
const onDatabase = (config: ReturnType<typeof loadConfig>) =>
  <A, E>(body: (domain: Effect.Success<ReturnType<typeof clientFor>>) => Effect.Effect<A, E>) =>
    Effect.runPromise(clientFor(config).pipe(Effect.flatMap(body), Effect.scoped, Effect.provide(ShardingConfig.layer())))

/** Runs `body` against the entity of one domain, on a fresh embedded database. */
const run = async <A, E>(body: (domain: Effect.Success<ReturnType<typeof clientFor>>) => Effect.Effect<A, E>) =>
  onDatabase(await testDatabases[0]!.config())(body)

const clientFor = (config: ReturnType<typeof loadConfig>) =>
  Entity.makeTestClient(DomainEntity, entityLayer(config)).pipe(Effect.flatMap((make) => make("example.com")))

const acquire = (domain: Effect.Success<ReturnType<typeof clientFor>>, holder: string, priority = 0) =>
  domain.Acquire({ holder, ttlMs: 60_000, priority })

/** True when the fiber has finished after the entity handled everything queued before this. */
const granted = (fiber: Fiber.Fiber<unknown, unknown>) =>
  Effect.yieldNow.pipe(Effect.repeat({ times: 20 }), Effect.andThen(Effect.sync(() => fiber.pollUnsafe() !== undefined)))

describe("DomainEntity politeness slots", () => {
  it("started again while its earlier self had slots out, grants nothing until their holders have renewed them", async () => {
    const config = await testDatabases[0]!.config()
    const on = onDatabase(config)
    // The first entity grants two slots, then its node dies (its memory goes with it).
    await on((domain) => Effect.all([acquire(domain, "x#1"), acquire(domain, "y#1")]))
    await on((domain) =>
      Effect.gen(function*() {
        const fresh = yield* Effect.forkChild(acquire(domain, "fresh"))
        yield* Effect.sleep("1 second")
        expect(yield* granted(fresh)).toBe(false)
        // The holders' node renews: both slots are counted, so the fresh job waits for one of them.
        yield* domain.Renew({ holders: [{ holder: "x#1", ttlMs: 60_000 }, { holder: "y#1", ttlMs: 60_000 }] })
        yield* Effect.sleep(`${SLOT_RENEW_MS + 1500} millis`)
        expect(yield* granted(fresh)).toBe(false)
        yield* domain.Release({ holder: "x#1", outcomes: [] })
        yield* Fiber.join(fresh)
      }))
  }, 60_000)

  it("started again within its mark while no holder renews (they died with a PostgreSQL outage), grants again after a few seconds", async () => {
    const config = await testDatabases[0]!.config()
    const on = onDatabase(config)
    // Two slots out, then every shard is given up (the database was out of reach) and the runs that
    // held the slots were interrupted with it: nobody will renew them.
    await on((domain) => Effect.all([acquire(domain, "x#1"), acquire(domain, "y#1")]))
    await on((domain) =>
      Effect.gen(function*() {
        const started = Date.now()
        const fresh = yield* Effect.forkChild(acquire(domain, "fresh"))
        yield* Effect.sleep("1 second")
        // Still the quiet: a holder that lives may yet renew.
        expect(yield* granted(fresh)).toBe(false)
        // It was 13 s (a 10 s renewal period), which held every domain that long after an outage.
        const joined = yield* Fiber.join(fresh).pipe(Effect.timeout("7 seconds"), Effect.exit)
        expect(joined._tag).toBe("Success")
        expect(Date.now() - started).toBeGreaterThanOrEqual(RESTART_QUIET_MS - 100)
      }))
  }, 60_000)

  it("started again after it stopped with no slot out, grants at once", async () => {
    const config = await testDatabases[0]!.config()
    const on = onDatabase(config)
    await on((domain) => acquire(domain, "x").pipe(Effect.andThen(domain.Release({ holder: "x", outcomes: [] }))))
    await on((domain) =>
      Effect.gen(function*() {
        const fresh = yield* Effect.forkChild(acquire(domain, "fresh"))
        yield* Effect.sleep("300 millis")
        expect(yield* granted(fresh)).toBe(true)
      }))
  }, 60_000)

  it("does not bring back a slot on a renewal that arrives after its release", async () => {
    await run((domain) =>
      Effect.gen(function*() {
        yield* acquire(domain, "a#1")
        yield* acquire(domain, "b#1")
        yield* domain.Release({ holder: "a#1", outcomes: [] })
        // Sent before the release, arrived after it.
        yield* domain.Renew({ holders: [{ holder: "a#1", ttlMs: 60_000 }, { holder: "b#1", ttlMs: 60_000 }] })
        const c = yield* Effect.forkChild(acquire(domain, "c"))
        yield* Fiber.join(c)
        // b still holds its slot: the domain is full again.
        const d = yield* Effect.forkChild(acquire(domain, "d"))
        expect(yield* granted(d)).toBe(false)
        yield* Fiber.interrupt(d)
      }))
  }, 60_000)

  it("keeps a renewed slot past its first lease, and counts a holder it did not know (it restarted) before granting more", async () => {
    await run((domain) =>
      Effect.gen(function*() {
        // a holds with a short lease, renewed before it runs out; b is a holder from before a restart.
        yield* domain.Acquire({ holder: "a", ttlMs: 300, priority: 0 })
        yield* domain.Renew({ holders: [{ holder: "a", ttlMs: 60_000 }, { holder: "b#1", ttlMs: 60_000 }] })
        yield* Effect.sleep("1500 millis")
        // Both slots are held: past a's first lease and the entity's expiry check, c still waits.
        const c = yield* Effect.forkChild(acquire(domain, "c"))
        yield* Effect.sleep("1200 millis")
        expect(yield* granted(c)).toBe(false)
        yield* domain.Release({ holder: "b#1", outcomes: [] })
        yield* Fiber.join(c)
        yield* domain.Renew({ holders: [{ holder: "c#0", ttlMs: 60_000 }] })
        yield* domain.Release({ holder: "a", outcomes: [] })
        const d = yield* Effect.forkChild(acquire(domain, "d"))
        yield* Fiber.join(d)
      }))
  }, 60_000)

  it("gives at most two slots, hands a freed slot to the next waiter by priority, one waiter per release", async () => {
    await run((domain) =>
      Effect.gen(function*() {
        yield* acquire(domain, "a")
        yield* acquire(domain, "b")
        const low = yield* Effect.forkChild(acquire(domain, "low", 0))
        const high = yield* Effect.forkChild(acquire(domain, "high", 5))
        const later = yield* Effect.forkChild(acquire(domain, "later", 5))
        expect(yield* granted(low)).toBe(false)
        expect(yield* granted(high)).toBe(false)

        yield* domain.Release({ holder: "a", outcomes: [] })
        yield* Fiber.join(high)
        expect(yield* granted(later)).toBe(false)
        expect(yield* granted(low)).toBe(false)

        yield* domain.Release({ holder: "b", outcomes: [] })
        yield* Fiber.join(later)
        expect(yield* granted(low)).toBe(false)

        yield* domain.Release({ holder: "high", outcomes: [] })
        yield* Fiber.join(low)
      })
    )
  }, 60_000)

  it("lets a holder that asks again keep its slot, and a holder that gives up leave the queue", async () => {
    await run((domain) =>
      Effect.gen(function*() {
        yield* acquire(domain, "a")
        yield* acquire(domain, "a")
        yield* acquire(domain, "b")
        const gaveUp = yield* Effect.forkChild(acquire(domain, "gave-up"))
        const next = yield* Effect.forkChild(acquire(domain, "next"))
        // The waiting holder stops waiting (it crawls without a slot) and releases what it never got.
        yield* Fiber.interrupt(gaveUp)
        yield* domain.Release({ holder: "gave-up", outcomes: [] })
        yield* domain.Release({ holder: "a", outcomes: [] })
        yield* Fiber.join(next)
      })
    )
  }, 60_000)

  it("answers Acquire with what earlier releases recorded about the engines", async () => {
    const history = await run((domain) =>
      Effect.gen(function*() {
        expect(yield* acquire(domain, "first")).toEqual([])
        yield* domain.Release({ holder: "first", outcomes: [{ engine: "http", ok: false }, { engine: "brave", ok: true }] })
        return yield* acquire(domain, "second")
      })
    )
    expect(history.map((h) => [h.engine, h.ok]).sort()).toEqual([["brave", true], ["http", false]])
  }, 60_000)

  it("keeps the stored time of an engine's outcome fresh under steady traffic (written at most once a minute, but written)", async () => {
    const config = await testDatabases[0]!.config()
    const on = onDatabase(config)
    // The entity's clock jumps 40 s between releases; the database's own clock (which stamps the
    // stored rows) only moves on by the real pauses between them.
    const realNow = Date.now.bind(Date)
    let fakeNow: number | undefined
    const clock = vi.spyOn(Date, "now").mockImplementation(() => fakeNow ?? realNow())
    let start = 0
    try {
      await on((domain) =>
        Effect.gen(function*() {
          // The entity and its database are up: the first outcome is written right after this.
          yield* acquire(domain, "warm")
          yield* domain.Release({ holder: "warm", outcomes: [] })
          start = realNow()
          for (const [i, offset] of [0, 40_000, 80_000].entries()) {
            fakeNow = start + offset
            yield* acquire(domain, `job${i}`)
            yield* domain.Release({ holder: `job${i}`, outcomes: [{ engine: "brave", ok: true }] })
            yield* Effect.sleep("300 millis")
          }
        }))
      fakeNow = undefined
      // Read back by an entity started anew: the third outcome (a minute and more after the first
      // was written) was written too.
      const stored = await on((domain) => acquire(domain, "reader").pipe(Effect.map((h) => h.find((e) => e.engine === "brave")!.at)))
      expect(stored).toBeGreaterThan(start + 500)
    } finally {
      clock.mockRestore()
    }
  }, 60_000)

  it("moves a slot to the holder a node hands it over to, and counts that holder even if the slot had expired", async () => {
    await run((domain) =>
      Effect.gen(function*() {
        yield* acquire(domain, "a")
        yield* acquire(domain, "b")
        const waiting = yield* Effect.forkChild(acquire(domain, "w"))
        // a's slot now belongs to c: still two holders, so w keeps waiting.
        yield* domain.Handover({ from: "a", to: "c", ttlMs: 60_000, outcomes: [{ engine: "http", ok: true }] })
        expect(yield* granted(waiting)).toBe(false)
        // a released late (its message raced the handover): it held nothing any more, so w still waits.
        yield* domain.Release({ holder: "a", outcomes: [] })
        expect(yield* granted(waiting)).toBe(false)
        // A handover from a holder that no longer holds anything still counts its new holder (it is fetching).
        yield* domain.Handover({ from: "gone", to: "d", ttlMs: 60_000, outcomes: [] })
        yield* domain.Release({ holder: "b", outcomes: [] })
        expect(yield* granted(waiting)).toBe(false)
        // Below the limit again (d alone): the waiting holder gets the slot.
        yield* domain.Release({ holder: "c", outcomes: [] })
        yield* Fiber.join(waiting)
      })
    )
  }, 60_000)

  it("lets a job's later run take over its slot at once, and frees nothing on the earlier run's late release or handover", async () => {
    await run((domain) =>
      Effect.gen(function*() {
        yield* acquire(domain, "job#1")
        yield* acquire(domain, "b")
        // The job's node was lost: its next run gets the job's slot without waiting for it to expire.
        yield* acquire(domain, "job#2")
        const waiting = yield* Effect.forkChild(acquire(domain, "w"))
        // The first run was only slow: its release comes late and must not free the second run's slot.
        yield* domain.Release({ holder: "job#1", outcomes: [] })
        expect(yield* granted(waiting)).toBe(false)
        // Nor may it hand that slot on; the job it hands to is fetching, so it is counted too.
        yield* domain.Handover({ from: "job#1", to: "c", ttlMs: 60_000, outcomes: [] })
        yield* domain.Release({ holder: "b", outcomes: [] })
        expect(yield* granted(waiting)).toBe(false)
        // The job (its second run) still holds its slot: one of two, so the waiting holder gets the other.
        yield* domain.Release({ holder: "c", outcomes: [] })
        yield* Fiber.join(waiting)
        // The second run's own release frees its slot.
        const next = yield* Effect.forkChild(acquire(domain, "next"))
        expect(yield* granted(next)).toBe(false)
        yield* domain.Release({ holder: "job#2", outcomes: [] })
        yield* Fiber.join(next)
      })
    )
  }, 60_000)
})

describe("parseHolder", () => {
  it("reads a job and its run, and takes any other holder as a job of run 0", () => {
    expect(parseHolder("job_abc#3")).toEqual({ job: "job_abc", run: 3 })
    expect(parseHolder("a#b#12")).toEqual({ job: "a#b", run: 12 })
    expect(parseHolder("plain")).toEqual({ job: "plain", run: 0 })
    expect(parseHolder("odd#x")).toEqual({ job: "odd#x", run: 0 })
    expect(parseHolder("neg#-1")).toEqual({ job: "neg#-1", run: 0 })
  })
})

describe("the cluster slot backend (entitySlotBackend)", () => {
  const quick = { acquireWait: "100 millis", pingWait: "100 millis", retryAfterInterrupt: "10 millis" } as const

  it("keeps a job waiting in a long queue, past many bounded waits, and never crawls it without a slot", async () => {
    await run((domain) =>
      Effect.gen(function*() {
        const backend = entitySlotBackend(() => domain, quick)
        yield* acquire(domain, "a")
        yield* acquire(domain, "b")
        const waiting = yield* Effect.forkChild(backend.acquire("example.com", "queued", 0, 60_000))
        // Ten bounded waits run out; the entity answers its pings, so the job is still waiting.
        yield* Effect.sleep("1 second")
        expect(waiting.pollUnsafe()).toBeUndefined()
        yield* domain.Release({ holder: "a", outcomes: [{ engine: "http", ok: true }] })
        const history = yield* Fiber.join(waiting)
        expect(history?.map((h) => h.engine)).toEqual(["http"])
      })
    )
  }, 60_000)

  it("asks again when the entity's reply is an interruption (the entity stopped, its shard moving), instead of ending the job's run", async () => {
    let asked = 0
    const moving = {
      Acquire: () => (++asked < 3 ? Effect.interrupt : Effect.succeed([{ engine: "http", ok: true, at: 1 }])),
      Release: () => Effect.void,
      Handover: () => Effect.void,
      Renew: () => Effect.void,
      Ping: () => Effect.void
    }
    const exit = await Effect.runPromise(Effect.exit(entitySlotBackend(() => moving, quick).acquire("example.com", "moved", 0, 60_000)))
    expect(exit._tag).toBe("Success")
    if (exit._tag === "Success") expect(exit.value?.map((h) => h.engine)).toEqual(["http"])
    expect(asked).toBe(3)
  }, 60_000)

  it("takes a one-way message whose reply is an interruption or a defect as sent, instead of ending the sending job's run", async () => {
    const stopping = {
      Acquire: () => Effect.never,
      Release: () => Effect.interrupt,
      Handover: () => Effect.die("entity gone"),
      Renew: () => Effect.interrupt,
      Ping: () => Effect.void
    }
    const backend = entitySlotBackend(() => stopping, quick)
    const exit = await Effect.runPromise(Effect.exit(Effect.all([
      backend.release("example.com", "a", []),
      backend.handover("example.com", "a", "b", 1000, []),
      backend.renew("example.com", [{ holder: "b", ttlMs: 1000 }])
    ])))
    expect(exit._tag).toBe("Success")
  }, 60_000)

  it("still stops at once when the waiting job itself is interrupted", async () => {
    const waitingForever = { Acquire: () => Effect.never, Release: () => Effect.void, Handover: () => Effect.void, Renew: () => Effect.void, Ping: () => Effect.void }
    await Effect.runPromise(Effect.gen(function*() {
      const fiber = yield* Effect.forkChild(entitySlotBackend(() => waitingForever, quick).acquire("example.com", "stopped", 0, 60_000))
      yield* Effect.sleep("50 millis")
      const exit = yield* Fiber.interrupt(fiber).pipe(Effect.andThen(Fiber.await(fiber)))
      expect(exit._tag).toBe("Failure")
    }))
  }, 60_000)

  it("crawls without a slot when the entity answers nothing at all", async () => {
    const unreachable = {
      Acquire: () => Effect.never,
      Release: () => Effect.void,
      Handover: () => Effect.void,
      Renew: () => Effect.void,
      Ping: () => Effect.never
    }
    const history = await Effect.runPromise(entitySlotBackend(() => unreachable, quick).acquire("example.com", "alone", 0, 60_000))
    expect(history).toBeUndefined()
  }, 60_000)
})
