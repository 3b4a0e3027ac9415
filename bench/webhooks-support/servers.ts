/**
 * The loopback servers of `npm run bench:webhooks`, in the bench process:
 *
 * - the webhook receiver on 127.0.0.1: reads the whole body, records the arrival time and the
 *   identifying headers, answers `200 ok` at once;
 * - the crawl fixture: a tiny HTML page answered at once, on several loopback addresses (one port
 *   each), since every address is its own domain for Trawl's per-domain politeness limit.
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http"

export interface Arrival {
  /** Epoch milliseconds (fractional), when the request body had fully arrived. */
  readonly at: number
  readonly jobId: string | undefined
  readonly deliveryId: string | undefined
  readonly bytes: number
  /** Kept only while `keepRaw` is on (the Trawl phase, for signature checks). */
  readonly headers?: IncomingHttpHeaders
  readonly raw?: Buffer
}

const listen = (server: Server, host: string) =>
  new Promise<number>((res, rej) => {
    server.once("error", rej)
    server.listen(0, host, () => res((server.address() as { port: number }).port))
  })

const closeServer = (server: Server) =>
  new Promise<void>((res) => {
    server.close(() => res())
    server.closeAllConnections()
  })

/** Epoch milliseconds with sub-millisecond resolution. */
export const nowMs = () => performance.timeOrigin + performance.now()

export const startReceiver = async () => {
  const arrivals: Array<Arrival> = []
  /** `connections`: TCP connections accepted so far (keep-alive reuse shows as few of them). */
  const state = { keepRaw: false, connections: 0 }
  const server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const at = nowMs()
      const raw = Buffer.concat(chunks)
      const jobId = req.headers["x-service-jobid"] as string | undefined
      const deliveryId = req.headers["x-service-delivery-id"] as string | undefined
      arrivals.push(state.keepRaw ? { at, jobId, deliveryId, bytes: raw.length, headers: req.headers, raw } : { at, jobId, deliveryId, bytes: raw.length })
      res.writeHead(200, { "content-type": "text/plain", "content-length": "2" })
      res.end("ok")
    })
  })
  server.on("connection", () => void state.connections++)
  server.keepAliveTimeout = 30_000
  const port = await listen(server, "127.0.0.1")
  return {
    url: `http://127.0.0.1:${port}/hook`,
    arrivals,
    state,
    close: () => closeServer(server)
  }
}

export type Receiver = Awaited<ReturnType<typeof startReceiver>>

/** One tiny-page server per loopback address 127.0.0.2 … 127.0.0.(1 + count). */
export const startFixture = async (count: number) => {
  const page = (path: string) =>
    Buffer.from(`<!doctype html><html><head><title>Fixture ${path}</title></head><body><main><h1>Page ${path}</h1><p>Tiny fixture page.</p></main></body></html>`)
  const servers: Array<Server> = []
  const bases: Array<string> = []
  try {
    for (let i = 0; i < count; i++) {
      const host = `127.0.0.${2 + i}`
      const server = createServer((req, res) => {
        const body = page(req.url ?? "/")
        res.writeHead(200, { "content-type": "text/html; charset=utf-8", "content-length": String(body.length) })
        res.end(body)
      })
      servers.push(server)
      bases.push(`http://${host}:${await listen(server, host)}`)
    }
  } catch (error) {
    await Promise.all(servers.map(closeServer))
    throw error
  }
  return { bases, close: () => Promise.all(servers.map(closeServer)).then(() => undefined) }
}
