/**
 * Local fixture HTTP server for crawl tests. Listens on a loopback address only.
 */
import { existsSync } from "node:fs"
import http from "node:http"
import type { AddressInfo } from "node:net"
import { gzipSync } from "node:zlib"
import type { LookupFunction } from "../../src/crawl/ssrf.ts"

export type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void

export interface Fixture {
  host: string
  port: number
  origin: string
  url(path: string): string
  /** Every request path served, in order. */
  hits: string[]
  /** TCP connections accepted. */
  connections(): number
  close(): Promise<void>
}

export const startFixture = async (routes: Record<string, Handler>, host = "127.0.0.1"): Promise<Fixture> => {
  if (!host.startsWith("127.") && host !== "::1") throw new Error("fixtures listen on loopback only")
  const hits: string[] = []
  let connections = 0
  const server = http.createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0]!
    hits.push(req.url ?? "/")
    const h = routes[path]
    if (h) return h(req, res)
    res.writeHead(404, { "content-type": "text/html" }).end("<html><body><h1>Not here</h1></body></html>")
  })
  const sockets = new Set<import("node:net").Socket>()
  server.on("connection", (s) => {
    connections++
    sockets.add(s)
    s.on("close", () => sockets.delete(s))
  })
  await new Promise<void>((resolve) => server.listen(0, host, resolve))
  const port = (server.address() as AddressInfo).port
  const origin = `http://${host.includes(":") ? `[${host}]` : host}:${port}`
  return {
    host,
    port,
    origin,
    url: (p) => origin + p,
    hits,
    connections: () => connections,
    close: async () => {
      for (const s of sockets) s.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}

export const html = (body: string, title = "Fixture page") =>
  `<!doctype html><html><head><title>${title}</title></head><body>${body}</body></html>`

export const page =
  (status: number, body: string, headers: Record<string, string> = {}): Handler =>
  (_req, res) => {
    res.writeHead(status, { "content-type": "text/html; charset=utf-8", ...headers }).end(body)
  }

export const gzipPage =
  (body: string): Handler =>
  (_req, res) => {
    res.writeHead(200, { "content-type": "text/html", "content-encoding": "gzip" }).end(gzipSync(body))
  }

export const ARTICLE = html(
  `<article><h1>Hello from the fixture</h1>${"<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit.</p>".repeat(20)}</article>`,
  "A normal article"
)

/**
 * A page that refuses plain HTTP clients: 403 with a JS challenge (sets a cookie, reloads) unless
 * the cookie is present; a real browser passes, got-scraping does not run scripts.
 */
export const jsChallenge: Handler = (req, res) => {
  if ((req.headers.cookie ?? "").includes("trawl_js=ok")) {
    res.writeHead(200, { "content-type": "text/html" }).end(html("<h1>Welcome, browser</h1><p>Real content behind the wall.</p>"))
    return
  }
  res
    .writeHead(403, { "content-type": "text/html" })
    .end(
      html(
        `<p>Verify you are human. Checking your browser…</p><script>document.cookie = "trawl_js=ok; path=/"; setTimeout(function () { location.reload() }, 50)</script>`,
        "Just a moment"
      )
    )
}

/**
 * A fake resolver: names map to loopback addresses, everything else is NXDOMAIN. Tests never
 * use the system resolver, so no DNS query leaves the machine.
 */
export const fakeLookup = (map: Record<string, string>): LookupFunction & { calls: string[] } => {
  const calls: string[] = []
  const fn = ((hostname: string, options: unknown, callback?: Function) => {
    const cb = (typeof options === "function" ? options : callback) as Function
    const all = typeof options === "object" && options !== null && (options as { all?: boolean }).all === true
    calls.push(hostname)
    const address = map[hostname]
    setImmediate(() => {
      if (!address) return cb(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND", hostname }))
      const family = address.includes(":") ? 6 : 4
      if (all) cb(null, [{ address, family }])
      else cb(null, address, family)
    })
  }) as unknown as LookupFunction & { calls: string[] }
  fn.calls = calls
  return fn
}

export const CHROMIUM_PATH = "/usr/bin/chromium"
export const hasChromium = existsSync(CHROMIUM_PATH)
export const NO_CHROMIUM_REASON = `browser tests skipped: ${CHROMIUM_PATH} is not installed`

/** Chromium resolves nothing by itself in tests (the guard proxy does the resolving); the proxy itself is on 127.0.0.1. */
export const testBrowserArgs = (extra: Record<string, string> = {}) => [
  `--host-resolver-rules=${[...Object.entries(extra).map(([h, ip]) => `MAP ${h} ${ip}`), "MAP * ~NOTFOUND", "EXCLUDE 127.0.0.1"].join(", ")}`
]
