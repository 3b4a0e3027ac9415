import type { IncomingMessage, Server, ServerResponse } from "node:http"
import type { Socket } from "node:net"

/**
 * The connections that carry an event stream now. Such a response ends only when the stream does,
 * and a client that stops reading leaves its last bytes unsent: the connection then stays open,
 * and a shutdown waits on it for the server's whole grace period. So a connection whose stream
 * sends nothing for `stallMs` is closed (a live stream sends a keep-alive every 15 s), and when the
 * node shuts down, the connections whose stream has not finished `settleMs` after the streams
 * ended are closed. A connection leaves the set when its stream response closes (a keep-alive
 * connection may go on with other requests, which Node times as usual).
 */
export class StreamConnections {
  private readonly sockets = new Set<Socket>()
  private readonly isStream: (request: IncomingMessage) => boolean
  private readonly stallMs: number

  constructor(options: { readonly isStream: (request: IncomingMessage) => boolean; readonly stallMs: number }) {
    this.isStream = options.isStream
    this.stallMs = options.stallMs
  }

  get open(): number {
    return this.sockets.size
  }

  /** Watches the server's requests for streams; answers the server. */
  watch(server: Server): Server {
    return server.on("request", (request: IncomingMessage, response: ServerResponse) => {
      if (!this.isStream(request)) return
      const socket = request.socket
      this.sockets.add(socket)
      // Idle means nothing went out (or came in): a full send buffer towards a client that reads nothing.
      const stalled = () => socket.destroy()
      socket.setTimeout(this.stallMs, stalled)
      response.once("close", () => {
        this.sockets.delete(socket)
        socket.off("timeout", stalled)
      })
    })
  }

  /** Waits up to `settleMs` for the stream connections to close, then closes those left. */
  async closeAll(settleMs: number): Promise<void> {
    const deadline = Date.now() + settleMs
    while (this.sockets.size > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
    for (const socket of this.sockets) socket.destroy()
  }
}
