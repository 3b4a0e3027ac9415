import type { IncomingMessage, ServerResponse } from "node:http"
import type { Socket } from "node:net"
import { Context } from "effect"

/**
 * The connections that carry an event stream now. Such a response ends only when the stream does,
 * and a client that stops reading leaves its last bytes unsent: the connection then stays open,
 * and a shutdown waits on it for the server's whole grace period. So a connection whose stream
 * sends nothing for `stallMs` is closed (a live stream sends a keep-alive every 15 s), and when the
 * node shuts down, the connections whose stream has not finished `settleMs` after the streams
 * ended are closed. A connection leaves the set when its stream response closes (a keep-alive
 * connection may go on with other requests, which Node times as usual).
 *
 * A stream is admitted by the handler that serves it (whatever spelling of the path the router
 * took), and a tenant holds at most `maxPerTenant` of them on a node: each one that stalls holds
 * its unsent events, so their number must be bounded too.
 */
export class StreamConnections {
  private readonly sockets = new Set<Socket>()
  private readonly perTenant = new Map<string, number>()
  readonly stallMs: number
  readonly maxPerTenant: number

  constructor(options: { readonly stallMs: number; readonly maxPerTenant: number }) {
    this.stallMs = options.stallMs
    this.maxPerTenant = options.maxPerTenant
  }

  get open(): number {
    return this.sockets.size
  }

  /** Takes a stream response of `tenantId` into the set; false when the tenant has `maxPerTenant` open here already. */
  admit(tenantId: string, request: IncomingMessage, response: ServerResponse): boolean {
    const held = this.perTenant.get(tenantId) ?? 0
    if (held >= this.maxPerTenant) return false
    this.perTenant.set(tenantId, held + 1)
    const socket = request.socket
    this.sockets.add(socket)
    // Idle means nothing went out (or came in): a full send buffer towards a client that reads nothing.
    const stalled = () => socket.destroy()
    socket.setTimeout(this.stallMs, stalled)
    response.once("close", () => {
      this.sockets.delete(socket)
      socket.off("timeout", stalled)
      const left = (this.perTenant.get(tenantId) ?? 1) - 1
      if (left > 0) this.perTenant.set(tenantId, left)
      else this.perTenant.delete(tenantId)
    })
    return true
  }

  /** Waits up to `settleMs` for the stream connections to close, then closes those left. */
  async closeAll(settleMs: number): Promise<void> {
    const deadline = Date.now() + settleMs
    while (this.sockets.size > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
    for (const socket of this.sockets) socket.destroy()
  }
}

/** Event streams one tenant may hold open on one node. */
export const MAX_STREAMS_PER_TENANT = 10

/** The node's stream connections, for the handler that serves the event stream. */
export class OpenStreams extends Context.Service<OpenStreams, StreamConnections>()("trawl/OpenStreams") {}
