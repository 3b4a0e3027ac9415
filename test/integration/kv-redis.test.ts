import { Effect, Fiber } from "effect"
import { describe, expect, it } from "vitest"
import { makeRedisKv } from "../../src/kv/kv.ts"

const redisUrl = process.env.REDIS_URL

// Needs a Redis server: CI starts one; without REDIS_URL there is nothing to test here.
describe.skipIf(!redisUrl)("Redis pub/sub of the event fan-out (skipped without REDIS_URL)", () => {
  it("delivers to every subscriber of a channel, also those that subscribed at the same moment, until each leaves", async () => {
    const got: Record<string, Array<string>> = { a: [], b: [], c: [] }
    const channel = `trawl:test:${Date.now()}:${Math.random()}`
    await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const kv = yield* makeRedisKv(redisUrl!)
      const waitFor = (who: string, n: number) =>
        Effect.promise(async () => {
          for (let i = 0; i < 100 && got[who]!.length < n; i++) await new Promise((r) => setTimeout(r, 20))
        })
      // Three streams of one tenant open together (after a drain, every client reconnects at once).
      const [a, b] = yield* Effect.all([
        Effect.forkChild(Effect.scoped(Effect.andThen(kv.subscribe(channel, (m) => got.a!.push(m)), Effect.never))),
        Effect.forkChild(Effect.scoped(Effect.andThen(kv.subscribe(channel, (m) => got.b!.push(m)), Effect.never)))
      ])
      yield* kv.subscribe(channel, (m) => got.c!.push(m))
      yield* Effect.sleep("200 millis")
      yield* kv.publish(channel, "1")
      yield* Effect.all([waitFor("a", 1), waitFor("b", 1), waitFor("c", 1)])
      expect(got).toEqual({ a: ["1"], b: ["1"], c: ["1"] })
      // One leaving does not end the channel for the others.
      yield* Fiber.interrupt(a!)
      yield* kv.publish(channel, "2")
      yield* Effect.all([waitFor("b", 2), waitFor("c", 2)])
      expect(got).toEqual({ a: ["1"], b: ["1", "2"], c: ["1", "2"] })
      yield* Fiber.interrupt(b!)
    })))
  }, 20_000)
})

describe.skipIf(!redisUrl)("Redis sliding window of the per-second rate limit (skipped without REDIS_URL)", () => {
  it("admits at most `limit` events in any window by the server's clock, and does not count refusals", async () => {
    const key = `trawl:test:window:${Date.now()}:${Math.random()}`
    await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const kv = yield* makeRedisKv(redisUrl!)
      const admit = () => kv.admitInWindow(key, 300, 2)
      // Issued together, as concurrent requests of one key on several nodes are: exactly two pass.
      const burst = yield* Effect.all(Array.from({ length: 6 }, admit), { concurrency: "unbounded" })
      expect(burst.filter(Boolean)).toHaveLength(2)
      yield* Effect.sleep("320 millis")
      expect(yield* Effect.all([admit(), admit(), admit()])).toEqual([true, true, false])
    })))
  }, 20_000)
})
