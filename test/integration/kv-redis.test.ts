import { Effect, Fiber } from "effect"
import { describe, expect, it } from "vitest"
import { makeRedisKv, redisNamespace } from "../../src/kv/kv.ts"

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

describe.skipIf(!redisUrl)("Redis namespaces of deployments sharing one server (skipped without REDIS_URL)", () => {
  it("keeps counters, values and channels of two namespaces apart, and names a deployment by its database", async () => {
    expect(redisNamespace("postgres://u@h:5432/trawl_a?host=/run")).toBe("trawl:trawl_a")
    expect(redisNamespace("postgres://other-host/trawl_a")).toBe("trawl:trawl_a")
    expect(redisNamespace(undefined)).toBe("trawl")
    const nonce = `${Date.now()}:${Math.random()}`
    const heard: Array<string> = []
    await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const a = yield* makeRedisKv(redisUrl!, `test-a:${nonce}`)
      const b = yield* makeRedisKv(redisUrl!, `test-b:${nonce}`)
      expect(yield* a.incr("n", 10_000)).toBe(1)
      expect(yield* a.incr("n", 10_000)).toBe(2)
      expect(yield* b.incr("n", 10_000)).toBe(1)
      yield* a.set("v", "from a", 10_000)
      expect(yield* b.get("v")).toBeUndefined()
      expect(yield* a.get("v")).toBe("from a")
      yield* b.subscribe("events", (m) => heard.push(m))
      yield* Effect.sleep("100 millis")
      yield* a.publish("events", "a's")
      yield* b.publish("events", "b's")
      yield* Effect.sleep("200 millis")
      expect(heard).toEqual(["b's"])
    })))
  }, 20_000)
})

describe.skipIf(!redisUrl)("Redis subscriptions made while the connection starts (skipped without REDIS_URL)", () => {
  it("subscribes at any moment of the connection's handshake", async () => {
    // A node subscribes a few milliseconds after opening its connections; ioredis wrote such a
    // SUBSCRIBE before its own ready check, which subscriber mode then refused (about 1 in 7).
    const outcomes: Array<string> = []
    for (let i = 0; i < 100; i++) {
      outcomes.push(
        await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
          const kv = yield* makeRedisKv(redisUrl!, `test-handshake:${Date.now()}`)
          yield* Effect.sleep(`${(i % 20) * 0.25} millis`)
          yield* kv.subscribe("events", () => {})
          return "subscribed"
        }))).catch((e: unknown) => String(e))
      )
    }
    expect(outcomes.filter((o) => o !== "subscribed")).toEqual([])
  }, 30_000)
})
