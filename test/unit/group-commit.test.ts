import { Deferred, Effect } from "effect"
import { describe, expect, it } from "vitest"
import { makeGroupCommit } from "../../src/sql/group-commit.ts"

const run = <A>(body: Effect.Effect<A, never, import("effect").Scope.Scope>) => Effect.runPromise(Effect.scoped(body))

describe("group commit", () => {
  it("writes an idle caller's item at once, and the items that arrive meanwhile together in the next batch", async () => {
    const batches: Array<ReadonlyArray<number>> = []
    await run(Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const write = yield* makeGroupCommit((items: ReadonlyArray<number>) =>
        Effect.gen(function*() {
          batches.push(items)
          if (batches.length === 1) yield* Deferred.await(gate)
          return items.map((n) => n * 10)
        }), { maxBatch: 3 })
      const results = yield* Effect.all([
        write(1),
        Effect.yieldNow.pipe(Effect.andThen(write(2))),
        Effect.yieldNow.pipe(Effect.andThen(write(3))),
        Effect.yieldNow.pipe(Effect.andThen(write(4))),
        Effect.yieldNow.pipe(Effect.andThen(write(5))),
        Effect.sleep("20 millis").pipe(Effect.andThen(Deferred.succeed(gate, undefined)), Effect.as(0))
      ], { concurrency: "unbounded" })
      expect(results).toEqual([10, 20, 30, 40, 50, 0])
    }))
    // The first item alone; the rest waited for it and went in batches of at most three.
    expect(batches).toEqual([[1], [2, 3, 4], [5]])
  })

  it("keeps items with the same key out of one batch", async () => {
    const batches: Array<ReadonlyArray<string>> = []
    await run(Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const write = yield* makeGroupCommit((items: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          batches.push(items)
          if (batches.length === 1) yield* Deferred.await(gate)
          return items
        }), { maxBatch: 10, key: (s) => s[0]! })
      yield* Effect.all([
        write("x0"),
        Effect.yieldNow.pipe(Effect.andThen(write("a1"))),
        Effect.yieldNow.pipe(Effect.andThen(write("b1"))),
        Effect.yieldNow.pipe(Effect.andThen(write("a2"))),
        Effect.yieldNow.pipe(Effect.andThen(write("c1"))),
        Effect.sleep("20 millis").pipe(Effect.andThen(Deferred.succeed(gate, undefined)), Effect.as(""))
      ], { concurrency: "unbounded" })
    }))
    expect(batches).toEqual([["x0"], ["a1", "b1", "c1"], ["a2"]])
  })

  it("stops a batch before its items weigh more than the bound; a heavy item goes alone", async () => {
    const batches: Array<ReadonlyArray<number>> = []
    await run(Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const write = yield* makeGroupCommit((items: ReadonlyArray<number>) =>
        Effect.gen(function*() {
          batches.push(items)
          if (batches.length === 1) yield* Deferred.await(gate)
          return items
        }), { maxBatch: 10, weight: (n) => n, maxWeight: 10 })
      yield* Effect.all([
        write(1),
        ...[4, 5, 2, 30, 3].map((n) => Effect.yieldNow.pipe(Effect.andThen(write(n)))),
        Effect.sleep("20 millis").pipe(Effect.andThen(Deferred.succeed(gate, undefined)), Effect.as(0))
      ], { concurrency: "unbounded" })
    }))
    expect(batches).toEqual([[1], [4, 5], [2], [30], [3]])
  })

  it("writes each item of a failed batch on its own, so only the bad one fails", async () => {
    const batches: Array<ReadonlyArray<number>> = []
    const outcomes = await run(Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const write = yield* makeGroupCommit((items: ReadonlyArray<number>) =>
        Effect.gen(function*() {
          batches.push(items)
          if (batches.length === 1) yield* Deferred.await(gate)
          if (items.includes(13)) return yield* Effect.die(new Error("bad item"))
          return items
        }), { maxBatch: 10 })
      return yield* Effect.all([
        write(1),
        ...[12, 13, 14].map((n) => Effect.yieldNow.pipe(Effect.andThen(write(n)))),
        Effect.sleep("20 millis").pipe(Effect.andThen(Deferred.succeed(gate, undefined)), Effect.as(0))
      ].map((e) => Effect.exit(e)), { concurrency: "unbounded" })
    }))
    expect(outcomes.map((e) => e._tag)).toEqual(["Success", "Success", "Failure", "Success", "Success"])
    expect(batches).toEqual([[1], [12, 13, 14], [12], [13], [14]])
  })
})
