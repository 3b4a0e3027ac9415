/**
 * The Idempotency service (src/http/idempotency.ts) on the in-memory IdempotencyRepo and the
 * TestClock: replays, mismatches, freed and abandoned claims. On real databases, with concurrent
 * requests and interrupted clients: test/integration/idempotency.test.ts.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { Config, configForTests } from "../../src/config.ts"
import { ABANDONED_CLAIM_SECONDS, Idempotency, type KeyedAttempt, makeIdempotencyLayer, requestHash } from "../../src/http/idempotency.ts"
import { fail } from "../../src/schema/errors.ts"
import { IdempotencyRepo, IdempotencyRepoTest } from "../../src/sql/idempotency-repo.ts"

const Keys = makeIdempotencyLayer({ claimRenewal: "15 seconds" }).pipe(
  Layer.provideMerge(Layer.mergeAll(IdempotencyRepoTest, Layer.succeed(Config, configForTests())))
)

/** A creation that records the attempts it was given and answers 201 with a numbered id. */
const recorder = () => {
  const attempts: Array<KeyedAttempt | undefined> = []
  const create = (attempt: KeyedAttempt | undefined) =>
    Effect.sync(() => {
      attempts.push(attempt)
      return { status: 201, body: { id: `job_${attempts.length}` } }
    })
  return { attempts, create }
}

layer(Keys)("Idempotency", (it) => {
  it.effect("runs a keyed request once: the same body replays the first answer, another body is a 409", () =>
    Effect.gen(function*() {
      const idempotency = yield* Idempotency
      const { attempts, create } = recorder()
      const first = yield* idempotency.run("ten_1", "k1", { url: "https://a.example/", priority: 1 }, create)
      // The same body with its keys in another order is the same request.
      const again = yield* idempotency.run("ten_1", "k1", { priority: 1, url: "https://a.example/" }, create)
      expect([first.status, again.status]).toEqual([201, 201])
      expect(attempts).toHaveLength(1)
      expect(attempts[0]).toMatchObject({ resumed: false })
      const other = yield* Effect.flip(idempotency.run("ten_1", "k1", { url: "https://b.example/" }, create))
      expect([other.status, other.code]).toEqual([409, "idempotency_mismatch"])
      // Keys are per tenant.
      expect((yield* idempotency.run("ten_2", "k1", { url: "https://b.example/" }, create)).status).toBe(201)
      expect(attempts).toHaveLength(2)
    }))

  it.effect("a failed request stores nothing: its retry runs again with the same seed, as a resumed try", () =>
    Effect.gen(function*() {
      const idempotency = yield* Idempotency
      const seen: Array<KeyedAttempt | undefined> = []
      const failing = (attempt: KeyedAttempt | undefined) =>
        Effect.andThen(Effect.sync(() => seen.push(attempt)), fail(503, "dependency_unavailable", "down"))
      expect((yield* Effect.flip(idempotency.run("ten_1", "k2", { n: 1 }, failing))).status).toBe(503)
      const { attempts, create } = recorder()
      expect((yield* idempotency.run("ten_1", "k2", { n: 1 }, create)).status).toBe(201)
      expect(attempts[0]).toEqual({ seed: seen[0]!.seed, resumed: true })
      // Another body under the freed key starts afresh, with a new seed.
      const next = recorder()
      yield* Effect.flip(idempotency.run("ten_1", "k3", { n: 1 }, failing))
      yield* idempotency.run("ten_1", "k3", { n: 2 }, next.create)
      expect(next.attempts[0]!.resumed).toBe(false)
      expect(next.attempts[0]!.seed).not.toBe(seen[1]!.seed)
    }))

  it.effect(`a claim left by a dead node is taken over once it is ${ABANDONED_CLAIM_SECONDS} s old, keeping its seed`, () =>
    Effect.gen(function*() {
      const idempotency = yield* Idempotency
      const body = { url: "https://c.example/" }
      // A node claimed the key, then died: no renewal, no answer, no release.
      const dead = yield* (yield* IdempotencyRepo).claim("ten_1", "k4", requestHash(body), "claim_dead")
      const { attempts, create } = recorder()
      yield* TestClock.adjust(`${ABANDONED_CLAIM_SECONDS + 1} seconds`)
      expect((yield* idempotency.run("ten_1", "k4", body, create)).status).toBe(201)
      expect(attempts).toEqual([{ seed: dead!.seed, resumed: true }])
    }))
})
