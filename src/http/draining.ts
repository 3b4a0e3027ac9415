import type { Server, ServerResponse } from "node:http"
import { Server as NetServer } from "node:net"
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

/** How long a shutdown waits for the requests under way to be answered (docs/chaos.md "Graceful shutdown"). */
export const REQUEST_DRAIN_MS = 8000

/**
 * Closing the HTTP server without cutting a request off. Node's own `close` stops listening and
 * closes the idle keep-alive connections at once, but a busy keep-alive connection goes on taking
 * requests (each answered `Connection: keep-alive`), so under steady load the server never drains
 * and its grace period ends with requests cut off, some of which had already created their job.
 * Here, from `close` on: every response says `Connection: close` (the client opens a new connection
 * for its next request and is refused there, so it never sends into a closing socket), connections
 * still idle are closed every 250 ms, and `close` resolves once every connection has ended or
 * after `waitMs`.
 */
export const closingServer = (server: Server) => {
  const open = new Set<ServerResponse>()
  let closing = false
  server.prependListener("request", (_req, res: ServerResponse) => {
    if (closing) res.setHeader("connection", "close")
    open.add(res)
    res.once("close", () => open.delete(res))
  })
  return {
    server,
    close: (waitMs: number) =>
      new Promise<void>((resolve) => {
        closing = true
        for (const res of open) if (!res.headersSent) res.setHeader("connection", "close")
        const idle = setInterval(() => server.closeIdleConnections(), 250)
        const timer = setTimeout(done, waitMs)
        function done() {
          clearInterval(idle)
          clearTimeout(timer)
          resolve()
        }
        // net.Server's close: stops listening and calls back once every connection has ended,
        // without http.Server's closing of the idle ones at this instant (a client may be sending
        // on one right now; those that stay idle go at the next 250 ms tick).
        NetServer.prototype.close.call(server, () => done())
      })
  }
}

/**
 * Built on top of the HTTP server, so its finalizer runs before the server's own (which then finds
 * it closed) and before the cluster hands the node's shards off: shutdown first stops taking
 * connections, ends the long-lived responses, closes the stream connections that cannot deliver
 * their last bytes (a client that reads nothing) within a second, and waits up to
 * `REQUEST_DRAIN_MS` for the requests under way to be answered.
 */
export const drainOnShutdown = (streams: StreamConnections, http: ReturnType<typeof closingServer>) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const draining = yield* Draining
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        const began = Date.now()
        const closed = http.close(REQUEST_DRAIN_MS)
        yield* Effect.logInfo("shutdown: no new connections; answering the requests under way")
        yield* draining.begin
        yield* Effect.promise(() => streams.closeAll(1000))
        yield* Effect.promise(() => closed)
        // What follows is the cluster's part: entities stop and the shards are handed off.
        yield* Effect.logInfo(`shutdown: requests answered in ${Date.now() - began} ms; stopping entities and handing off shards`)
      })
    )
  }))
