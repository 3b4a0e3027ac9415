import { Deferred, Effect, Fiber, Layer } from "effect"
import { describe, expect, it } from "vitest"
import { ACCOUNT_ALLOWANCE, ADDRESS_ALLOWANCE, Attempts, AttemptsLive } from "../../src/iam/attempts.ts"
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

const run = <A, E>(effect: Effect.Effect<A, E, Attempts | Kv>) => Effect.runPromise(Effect.provide(effect, AttemptsLive.pipe(Layer.provideMerge(RoundTripKv))))

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

  // A lock's lapse is simulated by deleting its key, as its expiry would.
  const lapse = (subject: string) => Effect.gen(function*() { yield* (yield* Kv).del(`auth:lock:${subject}`) })

  it("reads one try of an account once its lock lapses (a client obeying Retry-After is heard); its failure locks twice as long", async () => {
    const answers = await run(Effect.gen(function*() {
      const out: Array<"read" | number> = []
      const tryOnce = () => Effect.map(attempt("id:ann", null), (a) => void out.push(a))
      for (let i = 0; i < ACCOUNT_ALLOWANCE + 2; i++) yield* tryOnce()
      yield* lapse("account:id:ann")
      yield* tryOnce()
      yield* tryOnce()
      yield* lapse("account:id:ann")
      yield* tryOnce()
      yield* tryOnce()
      return out
    }))
    // 5 read, locked 30 s (a try while locked is refused unread and does not lengthen it), one read
    // past the lapse, then 60 s, one read, 120 s
    expect(answers.slice(0, 5)).toEqual(Array(5).fill("read"))
    expect(answers[5]).toBe(30)
    expect(answers[6]).toBeLessThanOrEqual(30)
    expect(answers.slice(7)).toEqual(["read", 60, "read", 120])
  })

  it("a success clears an account's count and its lock history", async () => {
    const answers = await run(Effect.gen(function*() {
      const attempts = yield* Attempts
      for (let i = 0; i < ACCOUNT_ALLOWANCE + 1; i++) yield* attempt("id:bob", null)
      yield* lapse("account:id:bob")
      yield* attempt("id:bob", null)
      yield* attempts.succeeded("id:bob")
      return yield* Effect.all(Array.from({ length: ACCOUNT_ALLOWANCE + 1 }, () => attempt("id:bob", null)))
    }))
    expect(answers).toEqual([...Array(ACCOUNT_ALLOWANCE).fill("read"), 30])
  })

  it("reads one failure of an address past its lock's lapse, and that failure locks it again for twice as long", async () => {
    const answers = await run(Effect.gen(function*() {
      const attempts = yield* Attempts
      for (let i = 0; i < ADDRESS_ALLOWANCE; i++) yield* attempts.failed("192.0.2.3")
      const locked = yield* attempt("email:c@example.com", "192.0.2.3")
      yield* lapse("address:192.0.2.3")
      const heard = yield* attempt("email:d@example.com", "192.0.2.3")
      yield* attempts.failed("192.0.2.3")
      return [locked, heard, yield* attempt("email:e@example.com", "192.0.2.3")]
    }))
    expect(answers).toEqual([30, "read", 60])
  })

  it("refuses a try that passed the lock check just before a parallel try (on another node) locked", async () => {
    // The late try's count lands after the locking try set the count back: its count alone is
    // under the allowance, so only reading the lock again stops the 6th password check.
    const kv = makeMemoryKv()
    const answers = await Effect.runPromise(Effect.gen(function*() {
      const held = yield* Deferred.make<void>()
      let hold = false
      const heldKv = Layer.succeed(Kv, { ...kv, incr: (key, ttlMs) => (hold ? (hold = false, Effect.andThen(Deferred.await(held), kv.incr(key, ttlMs))) : kv.incr(key, ttlMs)) })
      const tryOnce = attempt("email:f@example.com", null).pipe(Effect.provide(AttemptsLive.pipe(Layer.provide(heldKv))))
      const out: Array<"read" | number> = []
      for (let i = 0; i < ACCOUNT_ALLOWANCE; i++) out.push(yield* tryOnce)
      hold = true
      const late = yield* Effect.forkChild(tryOnce)
      yield* Effect.yieldNow
      out.push(yield* tryOnce)
      yield* Deferred.succeed(held, undefined)
      out.push(yield* Fiber.join(late))
      return out
    }))
    expect(answers).toEqual(["read", "read", "read", "read", "read", 30, 30])
  })
})
