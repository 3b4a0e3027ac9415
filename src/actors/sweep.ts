import { type Duration, Effect, Schedule } from "effect"

/**
 * The loop every cluster sweeper runs: now and then, find work whose hand-off was lost and
 * send it again (the handlers are idempotent). A failed round is logged and the next one tries again.
 */
export const sweepLoop = <A>(
  what: string,
  every: Duration.Input,
  find: Effect.Effect<ReadonlyArray<A>>,
  resend: (item: A) => Effect.Effect<unknown, unknown>
) =>
  Effect.gen(function*() {
    const stale = yield* find
    yield* Effect.forEach(stale, (item) => Effect.ignore(resend(item)), { concurrency: 16, discard: true })
    if (stale.length > 0) yield* Effect.logInfo(`sweeper re-sent ${stale.length} ${what}`)
  }).pipe(Effect.catchCause(Effect.logWarning), Effect.repeat(Schedule.spaced(every)))
