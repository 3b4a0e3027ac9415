import { Deferred, Effect, type Exit } from "effect"
import { describe, expect, it } from "vitest"
import { makeGroupCommit } from "../../src/sql/group-commit.ts"

/**
 * Writes `first` and then, while that first batch is held open, the `rest` (each after a turn of
 * the scheduler); releases the first batch after 20 ms. `write` answers the batch's results.
 * Answers every item's exit and the batches in the order they were written.
 */
const scenario = async <I, O>(
  first: I,
  rest: ReadonlyArray<I>,
  write: (items: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<O>>,
  options: Parameters<typeof makeGroupCommit<I, O>>[1]
) => {
  const batches: Array<ReadonlyArray<I>> = []
  // Per batch: whether the first batch was still held open when it was written.
  const openWhenWritten: Array<boolean> = []
  let firstOpen = true
  const exits = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const gate = yield* Deferred.make<void>()
    const commit = yield* makeGroupCommit((items: ReadonlyArray<I>) =>
      Effect.gen(function*() {
        batches.push(items)
        openWhenWritten.push(firstOpen)
        if (batches.length === 1) yield* Deferred.await(gate)
        return yield* write(items)
      }), options)
    const [exits] = yield* Effect.all([
      Effect.all([commit(first), ...rest.map((item) => Effect.yieldNow.pipe(Effect.andThen(commit(item))))].map(Effect.exit), {
        concurrency: "unbounded"
      }),
      Effect.sleep("20 millis").pipe(Effect.andThen(Effect.sync(() => (firstOpen = false))), Effect.andThen(Deferred.succeed(gate, undefined)))
    ], { concurrency: "unbounded" })
    return exits as ReadonlyArray<Exit.Exit<O>>
  })))
  return { batches, exits, openWhenWritten }
}

const values = <O>(exits: ReadonlyArray<Exit.Exit<O>>) => exits.map((e) => (e._tag === "Success" ? e.value : "failed"))

describe("group commit", () => {
  it("writes an idle caller's item at once, and the items that arrive meanwhile together in the next batch", async () => {
    const r = await scenario(1, [2, 3, 4, 5], (items) => Effect.succeed(items.map((n) => n * 10)), { maxBatch: 3 })
    expect(values(r.exits)).toEqual([10, 20, 30, 40, 50])
    // The first item alone; the rest waited for it and went in batches of at most three.
    expect(r.batches).toEqual([[1], [2, 3, 4], [5]])
  })

  it("keeps items with the same key out of one batch", async () => {
    const r = await scenario("x0", ["a1", "b1", "a2", "c1"], Effect.succeed, { maxBatch: 10, key: (s) => s[0]! })
    expect(r.batches).toEqual([["x0"], ["a1", "b1", "c1"], ["a2"]])
  })

  it("stops a batch before its items weigh more than the bound; a heavy item goes alone", async () => {
    const r = await scenario(1, [4, 5, 2, 30, 3], Effect.succeed, { maxBatch: 10, weight: (n) => n, maxWeight: 10 })
    expect(r.batches).toEqual([[1], [4, 5], [2], [30], [3]])
  })

  it("writes each item of a failed batch on its own, so only the bad one fails", async () => {
    const r = await scenario(1, [12, 13, 14], (items) => (items.includes(13) ? Effect.die(new Error("bad item")) : Effect.succeed(items)), {
      maxBatch: 10
    })
    expect(values(r.exits)).toEqual([1, 12, "failed", 14])
    expect(r.batches).toEqual([[1], [12, 13, 14], [12], [13], [14]])
  })

  it("with inFlight 2, writes the next batch while the first is still being written", async () => {
    const r = await scenario(1, [2, 3, 4, 5], (items) => Effect.succeed(items.map((n) => n * 10)), { maxBatch: 10, inFlight: 2 })
    expect(values(r.exits)).toEqual([10, 20, 30, 40, 50])
    // The first batch is held open for 20 ms; every later item was written beside it, not after it.
    expect(r.batches[0]).toEqual([1])
    expect(r.batches.slice(1).flat().sort()).toEqual([2, 3, 4, 5])
    expect(r.openWhenWritten.slice(1).every(Boolean)).toBe(true)
  })
})

describe("group commit and a write that throws", () => {
  it("fails the callers of a write that throws while building its statement, and goes on writing for later ones", async () => {
    const result = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const commit = yield* makeGroupCommit((items: ReadonlyArray<number>) => {
        if (items.includes(0)) throw new Error("cannot build the statement")
        return Effect.succeed(items.map((n) => n * 10))
      }, { maxBatch: 10 })
      const bad = yield* Effect.exit(commit(0))
      const good = yield* commit(7).pipe(Effect.timeout("1 second"))
      return { bad: bad._tag, good }
    })))
    expect(result).toEqual({ bad: "Failure", good: 70 })
  })
})
