import { Effect, Layer } from "effect"
import { describe, expect, it } from "vitest"
import { Attempts, AttemptsLive } from "../../src/iam/attempts.ts"
import { Kv, makeMemoryKv } from "../../src/kv/kv.ts"

/** The in-process store, each call a turn of the scheduler later, as a round trip to Redis is: tries sent together interleave. */
const RoundTripKv = Layer.sync(Kv, () => {
  const kv = makeMemoryKv()
  const later = <A>(effect: Effect.Effect<A>) => Effect.andThen(Effect.yieldNow, effect)
  return {
    ...kv,
    incr: (key, ttlMs) => later(kv.incr(key, ttlMs)),
    setIfAbsent: (key, value, ttlMs) => later(kv.setIfAbsent(key, value, ttlMs)),
    get: (key) => later(kv.get(key)),
    set: (key, value, ttlMs) => later(kv.set(key, value, ttlMs))
  }
})

const run = <A, E>(effect: Effect.Effect<A, E, Attempts>) => Effect.runPromise(Effect.provide(effect, AttemptsLive.pipe(Layer.provide(RoundTripKv))))

/** The answer to one try: "read" when it may check the secret, else the seconds to wait. */
const attempt = (account: string, address: string | null) =>
  Effect.gen(function*() {
    const attempts = yield* Attempts
    return yield* attempts.begin(account, address).pipe(
      Effect.as("read" as const),
      Effect.catch((e: any) => Effect.succeed(e.retryAfter as number))
    )
  })

describe("limits on guessing", () => {
  it("refuses the tries past an account's allowance sent together by one lock, not one each twice as long", async () => {
    const answers = await run(Effect.all(Array.from({ length: 12 }, () => attempt("email:a@example.com", "192.0.2.1")), { concurrency: "unbounded" }))
    expect(answers.filter((a) => a === "read")).toHaveLength(5)
    expect(new Set(answers.filter((a) => a !== "read"))).toEqual(new Set([30]))
  })

  it("locks an address at its 30th failure, once however many fail together", async () => {
    const answers = await run(Effect.gen(function*() {
      const attempts = yield* Attempts
      yield* Effect.all(Array.from({ length: 40 }, () => attempts.failed("192.0.2.2")), { concurrency: "unbounded" })
      return yield* attempt("email:b@example.com", "192.0.2.2")
    }))
    expect(answers).toBe(30)
  })
})
