/**
 * The cheapest HTTP/1.1 client a bench can have: one keep-alive socket sending requests prepared
 * as bytes, one at a time, and reading answers that carry a Content-Length (Trawl's JSON answers
 * do). A bench whose client shares the machine's cores with the server uses it so that the client's
 * own CPU weighs as little as possible in what is measured (docs/performance.md, bench:auth).
 */
import { connect, type Socket } from "node:net"

export interface RawAnswer {
  readonly status: number
  readonly body: Buffer
}

/** A request as the bytes sent on the wire: request line, headers and body. */
export const rawRequest = (method: string, url: URL, headers: Record<string, string>, body = "") => {
  const lines = [`${method} ${url.pathname}${url.search} HTTP/1.1`, `host: ${url.host}`]
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`)
  lines.push(`content-length: ${Buffer.byteLength(body)}`)
  return Buffer.from(`${lines.join("\r\n")}\r\n\r\n${body}`)
}

const HEAD_END = Buffer.from("\r\n\r\n")

/** One keep-alive connection to `url`'s host; `send` waits for the answer before the next request. */
export const rawConnection = (url: URL) => {
  const socket: Socket = connect({ host: url.hostname, port: Number(url.port) })
  socket.setNoDelay(true)
  let pending: { resolve: (a: RawAnswer) => void; reject: (e: Error) => void } | undefined
  let buffered: Buffer = Buffer.alloc(0)
  const settle = (outcome: RawAnswer | Error) => {
    const waiting = pending
    pending = undefined
    if (!waiting) return
    if (outcome instanceof Error) waiting.reject(outcome)
    else waiting.resolve(outcome)
  }
  socket.on("data", (chunk: Buffer) => {
    buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk])
    const headEnd = buffered.indexOf(HEAD_END)
    if (headEnd < 0) return
    const head = buffered.toString("latin1", 0, headEnd)
    const length = /\r\ncontent-length:\s*(\d+)/i.exec(head)
    if (!length) return settle(new Error(`an answer without content-length: ${head.split("\r\n")[0]}`))
    const end = headEnd + HEAD_END.length + Number(length[1])
    if (buffered.length < end) return
    const answer = { status: Number(head.slice(9, 12)), body: buffered.subarray(headEnd + HEAD_END.length, end) }
    buffered = buffered.subarray(end)
    settle(answer)
  })
  socket.on("error", (e) => settle(e))
  socket.on("close", () => settle(new Error("the server closed the connection")))
  return {
    send: (request: Buffer) =>
      new Promise<RawAnswer>((resolve, reject) => {
        if (pending) return reject(new Error("one request at a time per connection"))
        pending = { resolve, reject }
        socket.write(request)
      }),
    close: () => void socket.destroy()
  }
}
