import { randomUUID } from "node:crypto"
import type { Server } from "node:http"
import type { Duplex } from "node:stream"
import { errorEnvelope } from "../schema/errors.ts"

/** What Node's parser refused, as status, reason phrase, code and message. */
const refusalOf = (code: string | undefined): readonly [number, string, string, string] => {
  switch (code) {
    case "HPE_HEADER_OVERFLOW":
      return [431, "Request Header Fields Too Large", "headers_too_large", "the request line and headers are larger than 16 KiB"]
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return [408, "Request Timeout", "request_timeout", "the request was not received in time"]
    default:
      return [400, "Bad Request", "validation_error", "the request is not valid HTTP (a header may hold a character HTTP does not allow)"]
  }
}

/**
 * Requests that Node's HTTP parser refuses before any route runs (a header value with a control
 * character, a request line and headers over 16 KiB, a malformed request line) are answered in the
 * envelope with an `x-request-id`, like every other response, instead of Node's bare status line.
 */
export const answerParserRefusals = (server: Server): Server =>
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Duplex) => {
    // Nobody is left to answer, or a response is already on its way on this connection.
    const inFlight = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true
    if (error.code === "ECONNRESET" || !socket.writable || inFlight) return void socket.destroy()
    const [status, reason, code, message] = refusalOf(error.code)
    const requestId = `req_${randomUUID()}`
    const body = JSON.stringify(errorEnvelope(code, message, requestId))
    // Written, then closed for good: the server allows half-open connections, so end() alone would
    // leave the socket open until the client closed its side.
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
        `x-request-id: ${requestId}\r\nconnection: close\r\n\r\n${body}`,
      () => socket.destroy()
    )
  })
