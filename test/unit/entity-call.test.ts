import { Cause, Effect, Exit, Fiber } from "effect"
import { describe, expect, it } from "vitest"
import { entityCall } from "../../src/actors/entity-call.ts"

const failureOf = async (call: Effect.Effect<unknown, unknown>) => {
  const exit = await Effect.runPromise(Effect.exit(entityCall(call)))
  if (Exit.isSuccess(exit)) throw new Error("expected a failure")
  return exit.cause
}

describe("entityCall (how handlers meet the cluster's failures)", () => {
  it("answers 503 dependency_unavailable for a reply that is an interruption (the entity stopped mid-call)", async () => {
    const cause = await failureOf(Effect.interrupt)
    expect(Cause.hasInterrupts(cause)).toBe(false)
    expect(Cause.squash(cause)).toMatchObject({ status: 503, code: "dependency_unavailable" })
  })

  it("answers 503 for the cluster's transport failures and leaves the entity's own errors to the caller", async () => {
    expect(Cause.squash(await failureOf(Effect.fail({ _tag: "MailboxFull" })))).toMatchObject({ status: 503 })
    expect(Cause.squash(await failureOf(Effect.fail({ _tag: "QuotaExceeded", limit: 1 })))).toEqual({ _tag: "QuotaExceeded", limit: 1 })
  })

  it("answers 503 when the entity does not answer in time (one that fails on a message and restarts, say), saying the call may still take effect", async () => {
    const exit = await Effect.runPromise(Effect.exit(entityCall(Effect.never, { timeout: "50 millis" })))
    expect(Exit.isFailure(exit)).toBe(true)
    if (Exit.isFailure(exit)) {
      expect(Cause.squash(exit.cause)).toMatchObject({ status: 503, code: "dependency_unavailable", retryAfter: 5 })
      expect((Cause.squash(exit.cause) as Error).message).toMatch(/may still take effect/)
    }
  })

  it("stays interrupted when the caller itself is interrupted", async () => {
    const exit = await Effect.runPromise(Effect.gen(function*() {
      const fiber = yield* Effect.forkChild(entityCall(Effect.never))
      yield* Effect.yieldNow
      return yield* Fiber.interrupt(fiber).pipe(Effect.andThen(Fiber.await(fiber)))
    }))
    expect(Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)).toBe(true)
  })
})
