import { Context, Deferred, Effect, Layer } from "effect"
import type { StreamConnections } from "./stream-connections.ts"

/**
 * Set once the node starts shutting down, before the HTTP server waits for open responses:
 * long-lived responses (the event stream) end at once, and clients resume elsewhere with
 * `Last-Event-ID`, instead of holding the shutdown until the server's grace period runs out.
 */
export class Draining extends Context.Service<Draining, {
  /** Completes when shutdown begins. */
  readonly started: Effect.Effect<void>
  readonly begin: Effect.Effect<void>
}>()("trawl/Draining") {}

export const DrainingLive = Layer.sync(Draining, () => {
  const signal = Deferred.makeUnsafe<void>()
  return Draining.of({ started: Deferred.await(signal), begin: Effect.asVoid(Deferred.succeed(signal, undefined)) })
})

/**
 * Built on top of the HTTP server, so its finalizer runs before the server's own: shutdown
 * first ends the long-lived responses, closes the stream connections that cannot deliver their
 * last bytes (a client that reads nothing) within a second, then closes the server.
 */
export const drainOnShutdown = (streams: StreamConnections) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const draining = yield* Draining
    yield* Effect.addFinalizer(() => draining.begin.pipe(Effect.andThen(Effect.promise(() => streams.closeAll(1000)))))
  }))
