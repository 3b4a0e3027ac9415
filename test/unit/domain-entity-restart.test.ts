/**
 * What a domain's entity finds when it is started again (src/actors/domain-entity.ts): its engine
 * history and lease mark, here in one DomainRepoTest shared by every start, on the real clock (the
 * entity reads Date.now()). The same against PostgreSQL and the embedded database:
 * test/unit/domain-entity.test.ts.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Fiber, Layer } from "effect"
import { Entity, ShardingConfig } from "effect/cluster"
import { DomainEntity, DomainEntityLive } from "../../src/actors/domain-entity.ts"
import { makeCrawlServiceTest } from "../../src/crawl/crawl-service.ts"
import { DomainRepo, DomainRepoTest } from "../../src/sql/domain-repo.ts"

const crawl = makeCrawlServiceTest(() => {
  throw new Error("the domain entity does not crawl")
}, { perDomainConcurrency: 2 })

/** Runs `body` against a freshly started entity of example.com, over the given repository. */
const started = (repo: Context.Context<DomainRepo>) =>
  <A, E>(body: (domain: Effect.Success<ReturnType<typeof client>>) => Effect.Effect<A, E>) =>
    client(repo).pipe(Effect.flatMap(body), Effect.scoped, Effect.provide(ShardingConfig.layer()))

const client = (repo: Context.Context<DomainRepo>) =>
  Entity.makeTestClient(DomainEntity, DomainEntityLive.pipe(Layer.provide(crawl), Layer.provide(Layer.succeedContext(repo))))
    .pipe(Effect.flatMap((make) => make("example.com")))

/** True when the fiber has finished after the entity handled everything queued before this. */
const granted = (fiber: Fiber.Fiber<unknown, unknown>) =>
  Effect.yieldNow.pipe(Effect.repeat({ times: 20 }), Effect.andThen(Effect.sync(() => fiber.pollUnsafe() !== undefined)))

const acquire = (domain: Effect.Success<ReturnType<typeof client>>, holder: string) => domain.Acquire({ holder, ttlMs: 60_000, priority: 0 })

describe("a domain entity started again", () => {
  it.live("answers with the engine outcomes its earlier self recorded", () =>
    Effect.gen(function*() {
      const repo = yield* Layer.build(DomainRepoTest)
      const on = started(repo)
      yield* on((domain) =>
        acquire(domain, "a").pipe(Effect.andThen(domain.Release({ holder: "a", outcomes: [{ engine: "http", ok: false }, { engine: "browser", ok: true }] }))))
      const history = yield* on((domain) => acquire(domain, "b"))
      expect(history.map((h) => [h.engine, h.ok]).sort()).toEqual([["browser", true], ["http", false]])
    }).pipe(Effect.scoped))

  it.live("grants nothing while its earlier self may still have slots out, and at once after a clean stop", () =>
    Effect.gen(function*() {
      const repo = yield* Layer.build(DomainRepoTest)
      const on = started(repo)
      // Two slots granted, then the node dies: the lease mark stays.
      yield* on((domain) => Effect.all([acquire(domain, "x#1"), acquire(domain, "y#1")]))
      expect(yield* Context.get(repo, DomainRepo).leaseMark("example.com")).toBeInstanceOf(Date)
      yield* on((domain) =>
        Effect.gen(function*() {
          const fresh = yield* Effect.forkChild(acquire(domain, "fresh"))
          yield* Effect.sleep("1 second")
          expect(yield* granted(fresh)).toBe(false)
          yield* Fiber.interrupt(fresh)
        }))

      // On a fresh repository, an entity that stopped with no slot out cleared its mark.
      const clean = yield* Layer.build(DomainRepoTest)
      yield* started(clean)((domain) => acquire(domain, "x").pipe(Effect.andThen(domain.Release({ holder: "x", outcomes: [] }))))
      yield* started(clean)((domain) =>
        Effect.gen(function*() {
          const fresh = yield* Effect.forkChild(acquire(domain, "fresh"))
          yield* Effect.sleep("300 millis")
          expect(yield* granted(fresh)).toBe(true)
        }))
    }).pipe(Effect.scoped), 20_000)
})
