/**
 * The per-node cache of credential lookups (src/iam/credential-cache.ts): the credentials in use
 * are read again in bulk every 10 s, so one in steady use is never read on a request's path and a
 * change whose notice was lost is seen within a round; an unused entry expires after 30 s.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { makeCredentialCache } from "../../src/iam/credential-cache.ts"

/** A store of credentials by hash, recording every read (the hashes each one asked for). */
const makeStore = (initial: Record<string, string>) => {
  const rows = new Map(Object.entries(initial))
  const reads: Array<ReadonlyArray<string>> = []
  /** When set, a read takes this long (on the test clock) after taking its snapshot of the rows. */
  const slow = { by: 0 }
  const read = (hashes: ReadonlyArray<string>) =>
    Effect.suspend(() => {
      reads.push([...hashes])
      const found = new Map(hashes.flatMap((h) => (rows.has(h) ? [[h, rows.get(h)!] as const] : [])))
      return slow.by > 0 ? Effect.as(Effect.sleep(slow.by), found) : Effect.succeed(found)
    })
  return { rows, reads, read, slow }
}

/** A cache whose values remember how many times they were built over a previous one. */
const makeCache = (store: ReturnType<typeof makeStore>) =>
  makeCredentialCache({ read: store.read, build: (row: string, previous: { row: string; builds: number } | undefined) => ({ row, builds: (previous?.builds ?? 0) + 1 }) })

describe("credential cache", () => {
  it.effect("reads a credential in steady use again in bulk every 10 s, never on a request's path", () =>
    Effect.gen(function*() {
      const store = makeStore({ a: "role-1", b: "role-1" })
      const cache = yield* makeCache(store)
      expect((yield* cache.get("a"))?.row).toBe("role-1")
      expect((yield* cache.get("b"))?.row).toBe("role-1")
      expect(store.reads).toEqual([["a"], ["b"]])
      // A minute of use, past twice the 30 s an entry is believed: only the rounds read.
      for (let second = 1; second <= 60; second++) {
        yield* TestClock.adjust("1 second")
        expect(yield* cache.get("a")).toBeDefined()
        expect(yield* cache.get("b")).toBeDefined()
      }
      expect(store.reads.slice(2)).toEqual(Array.from({ length: 6 }, () => ["a", "b"]))
      // The value made from a re-read row is built over the one it replaces.
      expect((yield* cache.get("a"))?.builds).toBe(7)
    }))

  it.effect("sees a change whose notice was lost within a round: a new row replaces the value, a missing one drops it", () =>
    Effect.gen(function*() {
      const store = makeStore({ a: "role-1", b: "role-1" })
      const cache = yield* makeCache(store)
      yield* cache.get("a")
      yield* cache.get("b")
      yield* cache.get("a")
      yield* cache.get("b")
      // Changed behind the cache's back: a's role, b revoked.
      store.rows.set("a", "role-2")
      store.rows.delete("b")
      yield* TestClock.adjust("10 seconds")
      expect(store.reads.at(-1)).toEqual(["a", "b"])
      const reads = store.reads.length
      expect((yield* cache.get("a"))?.row).toBe("role-2")
      expect(store.reads.length).toBe(reads)
      // b was dropped by the round: the request reads it, and it is gone.
      expect(yield* cache.get("b")).toBeUndefined()
      expect(store.reads.at(-1)).toEqual(["b"])
    }))

  it.effect("does not read again an entry unused since the last round, which expires after 30 s", () =>
    Effect.gen(function*() {
      const store = makeStore({ a: "role-1" })
      const cache = yield* makeCache(store)
      yield* cache.get("a")
      yield* TestClock.adjust("29 seconds")
      expect(store.reads).toEqual([["a"]])
      expect(yield* cache.get("a")).toBeDefined()
      expect(store.reads).toEqual([["a"]])
      yield* TestClock.adjust("2 seconds")
      // Used at 29 s, re-read by the round at 30 s: believed again from there.
      expect(store.reads).toEqual([["a"], ["a"]])
      yield* TestClock.adjust("40 seconds")
      expect(yield* cache.get("a")).toBeDefined()
      expect(store.reads).toEqual([["a"], ["a"], ["a"]])
    }))

  it.effect("drops an entry at once on forget, and by value on forgetWhere", () =>
    Effect.gen(function*() {
      const store = makeStore({ a: "role-1", b: "role-2", c: "role-2" })
      const cache = yield* makeCache(store)
      for (const h of ["a", "b", "c"]) yield* cache.get(h)
      cache.forget("a")
      cache.forgetWhere((v) => v.row === "role-2")
      for (const h of ["a", "b", "c"]) yield* cache.get(h)
      expect(store.reads).toEqual([["a"], ["b"], ["c"], ["a"], ["b"], ["c"]])
    }))

  it.effect("renews a round's entries though another credential is dropped while it reads, and passes over the dropped one", () =>
    Effect.gen(function*() {
      const store = makeStore({ a: "role-1", b: "role-1", other: "role-1" })
      const cache = yield* makeCache(store)
      for (const h of ["a", "b", "other"]) yield* cache.get(h)
      // past the first round (at start), then in use again
      yield* TestClock.adjust("5 seconds")
      for (const h of ["a", "b"]) yield* cache.get(h)
      // a is revoked and its notice lost; the round's read takes a second, during which b and another
      // credential are dropped (their notices arrive): b's row as read may predate its change
      store.rows.delete("a")
      store.slow.by = 1000
      yield* TestClock.adjust("5 seconds")
      cache.forget("other")
      cache.forget("b")
      yield* TestClock.adjust("1 second")
      store.slow.by = 0
      const reads = store.reads.length
      // the round dropped a (no row) without waiting for its 30 s to run out
      expect(yield* cache.get("a")).toBeUndefined()
      expect(store.reads.slice(reads)).toEqual([["a"]])
      // b was not put back by the round's read: the request reads it again
      expect(yield* cache.get("b")).toBeDefined()
      expect(store.reads.slice(reads)).toEqual([["a"], ["b"]])
    }))

  it.effect("does not keep a request's read that a drop of the same credential overtook, but keeps others'", () =>
    Effect.gen(function*() {
      const store = makeStore({ a: "role-1", b: "role-1" })
      const cache = yield* makeCache(store)
      store.slow.by = 1000
      const readA = yield* Effect.forkChild(cache.get("a"))
      const readB = yield* Effect.forkChild(cache.get("b"))
      yield* TestClock.adjust("10 millis")
      cache.forget("a")
      cache.evict("b")
      yield* TestClock.adjust("1 second")
      expect(yield* Fiber.join(readA)).toBeDefined()
      expect(yield* Fiber.join(readB)).toBeDefined()
      store.slow.by = 0
      const reads = store.reads.length
      yield* cache.get("a")
      yield* cache.get("b")
      // a is read again (its read may predate the drop); b's read was kept (an eviction changes nothing in the store)
      expect(store.reads.slice(reads)).toEqual([["a"]])
    }))

  it.effect("reads a large cache again in statements of at most 500 credentials", () =>
    Effect.gen(function*() {
      const hashes = Array.from({ length: 1200 }, (_, i) => `h${i}`)
      const store = makeStore(Object.fromEntries(hashes.map((h) => [h, "role-1"])))
      const cache = yield* makeCache(store)
      for (const h of hashes) yield* cache.get(h)
      for (const h of hashes) yield* cache.get(h)
      store.reads.length = 0
      yield* TestClock.adjust("10 seconds")
      expect(store.reads.map((r) => r.length)).toEqual([500, 500, 200])
      expect(store.reads.flat().sort()).toEqual([...hashes].sort())
    }))
})
