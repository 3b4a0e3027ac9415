import { Effect, Exit } from "effect"
import { SqlError } from "effect/sql"
import { describe, expect, it } from "vitest"
import { retryTransient } from "../../src/sql/transient.ts"

const failing = (reasons: ReadonlyArray<SqlError.SqlErrorReason>) => {
  let calls = 0
  const effect = Effect.suspend(() => {
    const reason = reasons[calls++]
    return reason ? Effect.fail(new SqlError.SqlError({ reason })) : Effect.succeed("written")
  })
  return { effect, calls: () => calls }
}

describe("retryTransient", () => {
  it("writes through passing faults (a lost connection, a deadlock)", async () => {
    const w = failing([new SqlError.ConnectionError({ cause: new Error("gone") }), new SqlError.DeadlockError({ cause: new Error("deadlock") })])
    expect(await Effect.runPromise(retryTransient(w.effect))).toBe("written")
    expect(w.calls()).toBe(3)
  })

  it("does not repeat a statement that failed for good, or ran out of time", async () => {
    for (const reason of [new SqlError.ConstraintError({ cause: new Error("violated") }), new SqlError.StatementTimeoutError({ cause: new Error("57014") })]) {
      const w = failing([reason])
      const exit = await Effect.runPromiseExit(retryTransient(w.effect))
      expect(Exit.isFailure(exit), reason._tag).toBe(true)
      expect(w.calls(), reason._tag).toBe(1)
    }
  })
})
