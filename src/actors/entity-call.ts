import { Cause, type Duration, Effect } from "effect"
import { Unavailable } from "../schema/errors.ts"

const clusterTags = new Set([
  "MailboxFull",
  "AlreadyProcessingMessage",
  "PersistenceError",
  "EntityNotAssignedToRunner",
  "RunnerUnavailable",
  "RunnerNotRegistered",
  "MalformedMessage"
])

const unavailable = new Unavailable({
  code: "dependency_unavailable",
  message: "the cluster could not take the request now, try again",
  retryAfter: 1
})

/**
 * Sends a one-way message whose loss heals itself (a sweeper resends, or a reconcile recounts), at
 * best effort: it never holds its sender for more than 2 s (while shards move, a send can wait for
 * its shard to come back), and no failure of it ends the sender's work, not even a reply that is an
 * interruption (the receiving entity stopping), which Effect.ignore would pass on.
 */
export const sendOneWay = <E, R>(send: Effect.Effect<void, E, R>): Effect.Effect<void, never, R> =>
  send.pipe(Effect.timeout("2 seconds"), Effect.catchCause(() => Effect.void))

const tooSlow = new Unavailable({
  code: "dependency_unavailable",
  message: "the cluster did not answer in time; the request may still take effect, so check before sending it again",
  retryAfter: 5
})

/**
 * Maps the cluster's own transport failures of an entity call to
 * `503 dependency_unavailable`, leaving the entity's domain errors to the caller. So is a reply that
 * is an interruption: the entity stopped while it handled the call (its shard moving to another
 * node). If it is the caller that is interrupted, the mapping never runs on. A call is answered
 * within `timeout` (30 s unless the call is known to take long): an entity that keeps failing on a
 * message, restarting each time, must not hold a request for as long as its client waits.
 */
export const entityCall = <A, E, R>(
  call: Effect.Effect<A, E, R>,
  options: { readonly timeout: Duration.Input } = { timeout: "30 seconds" }
): Effect.Effect<A, Exclude<E, { readonly _tag: "MailboxFull" | "AlreadyProcessingMessage" | "PersistenceError" | "EntityNotAssignedToRunner" }> | Unavailable, R> =>
  Effect.catchIf(
    call,
    (e): e is any => typeof e === "object" && e !== null && clusterTags.has((e as { _tag?: string })._tag ?? ""),
    (e) => Effect.logWarning("entity call failed", e).pipe(Effect.andThen(Effect.fail(unavailable)))
  ).pipe(
    Effect.catchCause((cause) =>
      Cause.hasInterruptsOnly(cause)
        ? Effect.logWarning("entity call interrupted by the entity's stop").pipe(Effect.andThen(Effect.fail(unavailable)))
        : Effect.failCause(cause)
    ),
    Effect.timeoutOrElse({ duration: options.timeout, orElse: () => Effect.fail(tooSlow) })
  ) as never
