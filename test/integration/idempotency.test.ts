import { Deferred, Effect, Fiber, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { describe, expect, it } from "vitest"
import { ABANDONED_CLAIM_SECONDS, IDEMPOTENCY_TTL_HOURS, Idempotency, type IdempotencyShape, type KeyedAttempt, makeIdempotencyLayer, requestHash } from "../../src/http/idempotency.ts"
import { newId } from "../../src/ids.ts"
import { fail } from "../../src/schema/errors.ts"
import { IdempotencyRepoLive } from "../../src/sql/idempotency-repo.ts"
import { runMigrations } from "../../src/sql/migrate.ts"
import type { loadConfig } from "../../src/config.ts"
import { databaseLayer, testDatabases } from "../support/databases.ts"

const layerFor = (config: ReturnType<typeof loadConfig>) =>
  makeIdempotencyLayer({ claimRenewal: "100 millis" }).pipe(Layer.provide(IdempotencyRepoLive), Layer.provideMerge(databaseLayer(config)))

/** Runs `test` on a fresh migrated database of `db`, with the service (claims renewed every 100 ms) and a tenant id. */
const withIdempotency = async <A>(
  db: (typeof testDatabases)[number],
  test: (ctx: { sql: SqlClient.SqlClient; idempotency: IdempotencyShape; tenant: string }) => Effect.Effect<A, unknown>
) =>
  Effect.runPromise(Effect.gen(function*() {
    yield* runMigrations
    return yield* test({ sql: yield* SqlClient.SqlClient, idempotency: yield* Idempotency, tenant: newId("ten") })
  }).pipe(Effect.provide(layerFor(await db.config())), Effect.scoped))

describe.each(testDatabases)("Idempotency-Key handling ($name)", (db) => {
  it("finishes and stores a request whose client went away mid-way, so its retry gets the first answer and creates nothing again", async () => {
    await withIdempotency(db, ({ idempotency, tenant }) => Effect.gen(function*() {
      let created = 0
      const started = Deferred.makeUnsafe<void>()
      const create = Effect.gen(function*() {
        created++
        Deferred.doneUnsafe(started, Effect.void)
        // The rows are being written while the client hangs up.
        yield* Effect.sleep("200 millis")
        return { status: 201, body: { id: `job-${created}` } }
      })
      const first = yield* Effect.forkChild(idempotency.run(tenant, "k", { url: "x" }, () => create))
      yield* Deferred.await(started)
      yield* Fiber.interrupt(first)
      const retry = yield* idempotency.run(tenant, "k", { url: "x" }, () => create)
      expect(retry.status).toBe(201)
      expect(created).toBe(1)
    }))
  })

  it("renews the claim of a request that takes long, so a duplicate waits for it instead of taking the key as abandoned", async () => {
    await withIdempotency(db, ({ sql, idempotency, tenant }) => Effect.gen(function*() {
      let created = 0
      const started = Deferred.makeUnsafe<void>()
      const finish = Deferred.makeUnsafe<void>()
      const create = Effect.gen(function*() {
        created++
        Deferred.doneUnsafe(started, Effect.void)
        yield* Deferred.await(finish)
        return { status: 201, body: { id: `job-${created}` } }
      })
      const slow = yield* Effect.forkChild(idempotency.run(tenant, "slow", { url: "x" }, () => create))
      yield* Deferred.await(started)
      // The claim looks as old as one its node left behind…
      yield* sql`UPDATE idempotency_keys SET created_at = now() - interval '10 minutes' WHERE tenant_id = ${tenant} AND key = 'slow'`
      // …until the running request renews it.
      yield* Effect.sleep("500 millis")
      const [row] = yield* sql<{ fresh: boolean }>`
        SELECT created_at > now() - interval '5 seconds' AS fresh FROM idempotency_keys WHERE tenant_id = ${tenant} AND key = 'slow'`
      expect(row?.fresh).toBe(true)
      const duplicate = yield* Effect.forkChild(idempotency.run(tenant, "slow", { url: "x" }, () => create))
      yield* Effect.sleep("300 millis")
      Deferred.doneUnsafe(finish, Effect.void)
      const [a, b] = [yield* Fiber.join(slow), yield* Fiber.join(duplicate)]
      expect([a.status, b.status]).toEqual([201, 201])
      expect(created).toBe(1)
    }))
  })

  it("gives a request that takes over its own abandoned claim the key's seed again, and any other request a new one", async () => {
    await withIdempotency(db, ({ sql, idempotency, tenant }) => Effect.gen(function*() {
      const seen: Array<KeyedAttempt | undefined> = []
      const succeeds = (attempt: KeyedAttempt | undefined) => {
        seen.push(attempt)
        return Effect.succeed({ status: 201, body: { seed: attempt?.seed } })
      }
      // What a try whose node died mid-way leaves: its claim, with its seed and no response.
      const deadTry = (key: string, fingerprint: unknown, ageSeconds: number) => {
        const seed = newId("seed")
        return sql`INSERT INTO idempotency_keys (tenant_id, key, request_hash, id_seed, claim_token, created_at)
                   VALUES (${tenant}, ${key}, ${requestHash(fingerprint)}, ${seed}, ${newId("claim")}, now() - ${ageSeconds} * interval '1 second')`.pipe(Effect.as(seed))
      }
      // A claim renewed lately is a request still running: the same request waits for it, another is a mismatch.
      yield* deadTry("live", { url: "a" }, 1)
      const mismatch = yield* Effect.flip(idempotency.run(tenant, "live", { url: "b" }, succeeds))
      expect(mismatch.code).toBe("idempotency_mismatch")
      const seed = yield* deadTry("k", { url: "a" }, ABANDONED_CLAIM_SECONDS + 1)
      const retry = yield* idempotency.run(tenant, "k", { url: "a" }, succeeds)
      expect(retry.status).toBe(201)
      expect(seen[0]).toEqual({ seed, resumed: true })
      // The retry's answer is stored: the next one gets it, and runs nothing.
      yield* idempotency.run(tenant, "k", { url: "a" }, succeeds)
      expect(seen).toHaveLength(1)

      // Two retries at once take the abandoned claim over once: one runs, the other answers its response.
      const raceSeed = yield* deadTry("race", { url: "a" }, ABANDONED_CLAIM_SECONDS + 1)
      const runs: Array<KeyedAttempt | undefined> = []
      const slowly = (attempt: KeyedAttempt | undefined) =>
        Effect.sync(() => runs.push(attempt)).pipe(Effect.andThen(Effect.sleep("200 millis")), Effect.as({ status: 201, body: { run: runs.length } }))
      const [r1, r2] = yield* Effect.all([
        idempotency.run(tenant, "race", { url: "a" }, slowly),
        idempotency.run(tenant, "race", { url: "a" }, slowly)
      ], { concurrency: 2 })
      expect(runs).toEqual([{ seed: raceSeed, resumed: true }])
      expect([r1.status, r2.status]).toEqual([201, 201])

      // Another body that finds an abandoned claim starts afresh: a new seed, nothing to resume.
      const otherSeed = yield* deadTry("other", { url: "a" }, ABANDONED_CLAIM_SECONDS + 1)
      yield* idempotency.run(tenant, "other", { url: "b" }, succeeds)
      expect(seen[1]!.resumed).toBe(false)
      expect(seen[1]!.seed).not.toBe(otherSeed)
      // A claim of its own, fresh, is not a resumption either.
      yield* idempotency.run(tenant, "new", { url: "a" }, succeeds)
      expect(seen[2]!.resumed).toBe(false)
      expect(seen[2]!.seed).not.toBe(seed)
      // After 24 hours a key is free for anything: another body runs, with a new seed.
      yield* idempotency.run(tenant, "old", { url: "a" }, succeeds)
      yield* sql`UPDATE idempotency_keys SET created_at = now() - ${IDEMPOTENCY_TTL_HOURS + 1} * interval '1 hour' WHERE tenant_id = ${tenant} AND key = 'old'`
      const expired = yield* idempotency.run(tenant, "old", { url: "b" }, succeeds)
      expect(expired.status).toBe(201)
      expect(seen.slice(-2).map((a) => a!.resumed)).toEqual([false, false])
      expect(seen.at(-1)!.seed).not.toBe(seen.at(-2)!.seed)
      // Without a key there is no attempt to derive anything from.
      yield* idempotency.run(tenant, undefined, { url: "a" }, succeeds)
      expect(seen.at(-1)).toBeUndefined()
    }))
  })

  it("keeps the seed of a request that failed, so its retry still meets what it wrote; a slow holder whose claim was taken cannot touch it", async () => {
    await withIdempotency(db, ({ sql, idempotency, tenant }) => Effect.gen(function*() {
      const seen: Array<KeyedAttempt | undefined> = []
      const record = (attempt: KeyedAttempt | undefined) => Effect.sync(() => seen.push(attempt))
      // A try that wrote something, then failed (an entity that was moving, say): 503.
      const failed = yield* Effect.flip(idempotency.run(tenant, "k", { url: "a" }, (attempt) =>
        record(attempt).pipe(Effect.andThen(fail(503, "service_unavailable", "try again")))))
      expect(failed.status).toBe(503)
      // The key is free at once (no 30 s wait), and the retry derives the same ids.
      yield* idempotency.run(tenant, "k", { url: "a" }, (attempt) => record(attempt).pipe(Effect.as({ status: 201, body: {} })))
      expect(seen[1]).toEqual({ seed: seen[0]!.seed, resumed: true })

      // A holder that took too long: its claim went to a successor. It then neither renews, stores nor frees that claim.
      const started = Deferred.makeUnsafe<void>()
      const finish = Deferred.makeUnsafe<void>()
      const slow = yield* Effect.forkChild(idempotency.run(tenant, "slow", { url: "a" }, () =>
        Deferred.succeed(started, undefined).pipe(Effect.andThen(Deferred.await(finish)), Effect.as({ status: 201, body: { from: "slow" } }))))
      yield* Deferred.await(started)
      yield* sql`UPDATE idempotency_keys SET claim_token = 'successor', created_at = now() - interval '1 hour' WHERE tenant_id = ${tenant} AND key = 'slow'`
      yield* Effect.sleep("300 millis")
      Deferred.doneUnsafe(finish, Effect.void)
      expect((yield* Fiber.join(slow)).status).toBe(201)
      const [row] = yield* sql<{ claim_token: string; status_code: number | null; renewed: boolean }>`
        SELECT claim_token, status_code, created_at > now() - interval '1 minute' AS renewed FROM idempotency_keys WHERE tenant_id = ${tenant} AND key = 'slow'`
      expect(row).toEqual({ claim_token: "successor", status_code: null, renewed: false })
    }))
  })
})
