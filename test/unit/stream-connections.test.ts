import http from "node:http"
import { connect, type Socket } from "node:net"
import { afterEach, describe, expect, it } from "vitest"
import { StreamConnections } from "../../src/http/stream-connections.ts"

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Waits until `check` holds, up to `ms`. */
const until = async (check: () => boolean, ms: number) => {
  const deadline = Date.now() + ms
  while (!check() && Date.now() < deadline) await sleep(20)
  return check()
}

describe("StreamConnections (event stream sockets)", () => {
  const cleanups: Array<() => void> = []
  afterEach(() => {
    for (const c of cleanups.splice(0)) c()
  })

  /** A server whose /stream (of tenant `t` in the query) sends `bytes` at once, then a keep-alive every `tickMs` (if given); 429 when not admitted. */
  const serve = async (streams: StreamConnections, options: { bytes: number; tickMs?: number }) => {
    const server = http.createServer((req, res) => {
      const [path, query] = (req.url ?? "").split("?")
      if (path !== "/stream") return res.writeHead(404).end()
      if (!streams.admit(new URLSearchParams(query).get("t") ?? "t1", req, res)) return res.writeHead(429).end()
      res.writeHead(200, { "content-type": "text/event-stream" })
      const chunk = Buffer.alloc(64 * 1024, 0x61)
      for (let sent = 0; sent < options.bytes; sent += chunk.length) res.write(chunk)
      const tick = options.tickMs ? setInterval(() => res.write(": keep-alive\n\n"), options.tickMs) : undefined
      res.on("close", () => clearInterval(tick))
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    cleanups.push(() => server.closeAllConnections())
    return { server, port: (server.address() as { port: number }).port }
  }

  /** Opens /stream; `read` false leaves every byte unread. */
  const open = (port: number, read: boolean, tenant = "t1"): Socket => {
    const socket = connect(port, "127.0.0.1", () => socket.write(`GET /stream?t=${tenant} HTTP/1.1\r\nHost: x\r\n\r\n`))
    socket.on("error", () => {})
    if (read) socket.on("data", () => {})
    else socket.pause()
    cleanups.push(() => socket.destroy())
    return socket
  }

  it("closes a stream connection whose client reads nothing once its send buffers are full and nothing goes out", async () => {
    const streams = new StreamConnections({ stallMs: 300, maxPerTenant: 10 })
    const { port } = await serve(streams, { bytes: 32 * 1024 * 1024, tickMs: 50 })
    open(port, false)
    expect(await until(() => streams.open === 1, 2000)).toBe(true)
    expect(await until(() => streams.open === 0, 10_000)).toBe(true)
  })

  it("keeps a stream whose client reads, though it only sends keep-alives", async () => {
    const streams = new StreamConnections({ stallMs: 300, maxPerTenant: 10 })
    const { port } = await serve(streams, { bytes: 0, tickMs: 50 })
    open(port, true)
    expect(await until(() => streams.open === 1, 2000)).toBe(true)
    await sleep(1000)
    expect(streams.open).toBe(1)
  })

  it("at shutdown, closes the stream connections that cannot deliver their last bytes, so the server can close", async () => {
    const streams = new StreamConnections({ stallMs: 600_000, maxPerTenant: 10 })
    // The response waits for its client to take what was written before it can go on (or end).
    const { server, port } = await serve(streams, { bytes: 32 * 1024 * 1024 })
    open(port, false)
    expect(await until(() => streams.open === 1, 2000)).toBe(true)
    const closed = new Promise<void>((resolve) => server.close(() => resolve()))
    // The response is still under way: the server waits on it.
    const early = await Promise.race([closed.then(() => "closed"), sleep(500).then(() => "waiting")])
    expect(early).toBe("waiting")
    await streams.closeAll(200)
    expect(await Promise.race([closed.then(() => "closed"), sleep(5000).then(() => "waiting")])).toBe("closed")
  })

  it("admits at most maxPerTenant streams of one tenant, others' streams apart, and frees a place when one closes", async () => {
    const streams = new StreamConnections({ stallMs: 600_000, maxPerTenant: 2 })
    const { port } = await serve(streams, { bytes: 0, tickMs: 50 })
    const answer = (socket: Socket) => new Promise<string>((resolve) => socket.once("data", (d) => resolve(d.toString().split("\r\n")[0]!)))
    const first = open(port, true)
    const firstAnswer = answer(first)
    const second = open(port, true)
    expect(await firstAnswer).toContain("200")
    expect(await answer(second)).toContain("200")
    expect(await answer(open(port, true))).toContain("429")
    expect(await answer(open(port, true, "t2"))).toContain("200")
    first.destroy()
    expect(await until(() => streams.open === 2, 2000)).toBe(true)
    expect(await answer(open(port, true))).toContain("200")
  })
})
