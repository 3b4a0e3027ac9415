/**
 * A local fixture web site for the end-to-end job tests. It listens on loopback addresses only
 * (127.0.0.0/8), on a random port per address, and counts the requests it serves per path.
 *
 * Pages (every host serves the same pages):
 *   /page                 a normal ~2 KB HTML article
 *   /changing             content changes on each fetch (page-history `changed`, diff)
 *   /changing.txt         the same as text/plain lines
 *   /changing.bin         PNG-like bytes that change on each fetch, sent without a Content-Type
 *   /untyped-cp1251       a windows-1251 page whose <meta> names its charset, sent without a Content-Type
 *   /missing              404
 *   /missing-empty        404 with an empty body (a browser shows an error page of its own)
 *   /error                500
 *   /slow?ms=N            waits N ms (default 5000) before answering a normal page
 *   /redirect?to=/path    302 to another fixture page (default /page)
 *   /blocked              403 JS challenge for plain HTTP clients: a tiny page that sets a cookie and
 *                         reloads; the request that carries the cookie gets the content (a real browser)
 *   /robots.txt           per `robots`: "site" (default) disallows /site/private for everyone and also
 *                         /site/no-trawl for TrawlBot, and names /site/sitemap-index.xml; "missing" 404;
 *                         "error" 500
 *   /sitemap.xml          a urlset with /site/from-root-sitemap
 *   /site/...             a small site for site maps (`SITE_PAGES`): links with a <base href>, a
 *                         fragment, the same query in two orders, mailto:, javascript:, rel=nofollow,
 *                         an offsite link, robots-disallowed pages; a sitemap index with a gzipped
 *                         child and an offsite entry; /site/slow-start links to slow pages
 *   anything else         404
 *
 * Several loopback addresses give several `domainId`s: Trawl limits concurrent fetches per domain
 * (2) and learns per domain which engine works, so tests that must not influence each other use
 * different hosts.
 */
import { mkdtempSync, writeFileSync } from "node:fs"
import http from "node:http"
import type { AddressInfo, Socket } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { gzipSync } from "node:zlib"

export const ARTICLE_TITLE = "Trawl fixture article"

const paragraph = (i: number) =>
  `<p>Paragraph ${i}: the quick brown fox jumps over the lazy dog while the fixture site serves a steady page.</p>`

/** The ~2 KB page served at /page (and after /redirect, and by /slow). */
export const ARTICLE_HTML =
  `<!doctype html><html><head><meta charset="utf-8"><title>${ARTICLE_TITLE}</title></head><body><article><h1>${ARTICLE_TITLE}</h1>` +
  Array.from({ length: 16 }, (_, i) => paragraph(i + 1)).join("") +
  `</article></body></html>`

export const BLOCKED_CONTENT_MARKER = "Real content behind the wall"
/** The text a script-built page shows once its script ran. */
export const SCRIPT_BUILT_MARKER = "Written by the page script"

const changingPage = (n: number) =>
  `<!doctype html><html><head><meta charset="utf-8"><title>Changing page</title></head><body>` +
  `<h1>Changing page</h1><p>Stable line one.</p><p>Version number ${n}</p><p>Stable line two.</p></body></html>`

/** An offsite link of the /site/ pages: another loopback host, never fetched by a map of this site. */
export const OFFSITE_URL = "http://127.0.0.254:9/elsewhere"

const sitePage = (title: string, links: ReadonlyArray<string>, head = "") =>
  `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title>${head}</head><body><h1>${title}</h1>` +
  links.map((l) => `<p>${l}</p>`).join("") + `</body></html>`

const urlset = (origin: string, paths: ReadonlyArray<string>) =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` +
  paths.map((p) => `<url><loc>${p.startsWith("http") ? p : origin + p}</loc></url>`).join("") + `</urlset>`

/** The /site/ pages: HTML by path, given the origin they are served from. */
const SITE_PAGES: Record<string, (origin: string) => string> = {
  "/site/": () =>
    sitePage("Home", [
      `<a href="/site/a">A</a>`,
      `<a href="b">B (relative)</a>`,
      `<a href="/site/a#section">A again, with a fragment</a>`,
      `<a href="#top">this page</a>`,
      `<a href="/site/a?y=2&amp;x=1">A with a query</a>`,
      `<a href="/site/a?x=1&amp;y=2">the same query in another order</a>`,
      `<a href="mailto:someone@example.com">mail</a>`,
      `<a href="javascript:void(0)">script</a>`,
      `<a href="tel:+123">phone</a>`,
      `<a href="/site/private/secret">disallowed for everyone</a>`,
      `<a href="/site/no-trawl">disallowed for TrawlBot</a>`,
      `<a rel="nofollow" href="/site/nofollowed">not followed</a>`,
      `<a href="${OFFSITE_URL}">offsite</a>`
    ]),
  "/site/a": () => sitePage("A", [`<a href="c">C, below the base</a>`, `<a href="/site/">home</a>`], `<base href="/site/deep/">`),
  "/site/b": () => sitePage("B", [`<a href="/site/a">A</a>`, `<a href="/site/deep/c">C</a>`]),
  "/site/deep/c": () => sitePage("C", [`<a href="d">D</a>`]),
  "/site/deep/d": () => sitePage("D", [`<a href="../../site/">home</a>`]),
  "/site/from-sitemap-1": () => sitePage("From the sitemap 1", [`<a href="/site/">home</a>`]),
  "/site/from-sitemap-2": () => sitePage("From the sitemap 2", []),
  "/site/from-sitemap-3": () => sitePage("From the sitemap 3", []),
  "/site/from-root-sitemap": () => sitePage("From /sitemap.xml", []),
  "/site/private/secret": () => sitePage("Secret", []),
  "/site/no-trawl": () => sitePage("Not for TrawlBot", []),
  "/site/nofollowed": () => sitePage("Nofollowed", []),
  "/site/slow-start": () => sitePage("Slow links", [1, 2, 3, 4].map((n) => `<a href="/slow?ms=4000&amp;n=${n}">slow ${n}</a>`))
}

/** The site's robots.txt when `robots` is "site". */
const siteRobots = (origin: string) =>
  `# fixture site\nUser-agent: *\nDisallow: /site/private\n\nUser-agent: TrawlBot\nDisallow: /site/private\nDisallow: /site/no-trawl\n\n` +
  `Sitemap: ${origin}/site/sitemap-index.xml\n`

export interface FixtureSite {
  /** One origin per host, e.g. http://127.0.0.1:41234 */
  readonly origins: ReadonlyArray<string>
  /** Absolute URL of a path on host number `host` (default the first). */
  readonly url: (path: string, host?: number) => string
  /** Requests served for a path (query string ignored), across all hosts. */
  readonly hits: (path: string) => number
  /** Every request served, as path and query, in order, across all hosts. */
  readonly requests: () => ReadonlyArray<string>
  /** Total TCP connections accepted, across all hosts. */
  readonly connections: () => number
  /** How many times /changing has been served (its current version number). */
  readonly changingVersion: () => number
  /**
   * The most requests each host (a Trawl domain) had in flight at once since the last reset:
   * from a request's arrival until its answer is written or its connection closes. A browser's own
   * /favicon.ico requests are left out (they are not fetches Trawl asked for).
   */
  readonly peakInFlight: (reset?: boolean) => ReadonlyMap<string, number>
  readonly close: () => Promise<void>
}

const isLoopback = (host: string) => /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host) || host === "::1"

export const startFixtureSite = async (
  options: { hosts?: ReadonlyArray<string>; robots?: "site" | "missing" | "error" } = {}
): Promise<FixtureSite> => {
  const hosts = options.hosts ?? ["127.0.0.1"]
  for (const h of hosts) if (!isLoopback(h)) throw new Error(`the fixture site listens on loopback only, not ${h}`)
  const counts = new Map<string, number>()
  const requestLog: Array<string> = []
  let changing = 0
  let changingText = 0
  let changingBinary = 0
  let connections = 0
  const sockets = new Set<Socket>()
  const timers = new Set<NodeJS.Timeout>()

  const inFlight = new Map<string, number>()
  let peaks = new Map<string, number>()

  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const u = new URL(req.url ?? "/", "http://fixture")
    const path = u.pathname
    if (path !== "/favicon.ico") {
      const host = req.socket.localAddress ?? "?"
      const now = (inFlight.get(host) ?? 0) + 1
      inFlight.set(host, now)
      if (now > (peaks.get(host) ?? 0)) peaks.set(host, now)
      res.once("close", () => inFlight.set(host, inFlight.get(host)! - 1))
    }
    counts.set(path, (counts.get(path) ?? 0) + 1)
    requestLog.push(path + u.search)
    const origin = `http://${req.headers.host ?? "fixture"}`
    const send = (status: number, body: string, headers: Record<string, string> = {}) => {
      if (res.destroyed) return
      res.writeHead(status, { "content-type": "text/html; charset=utf-8", ...headers }).end(body)
    }
    const sitePageOf = SITE_PAGES[path]
    if (sitePageOf) return send(200, sitePageOf(origin))
    switch (path) {
      case "/robots.txt":
        if (options.robots === "missing") return send(404, "no robots here", { "content-type": "text/plain" })
        if (options.robots === "error") return send(500, "robots broke", { "content-type": "text/plain" })
        return send(200, siteRobots(origin), { "content-type": "text/plain" })
      case "/sitemap.xml":
        return send(200, urlset(origin, ["/site/from-root-sitemap"]), { "content-type": "application/xml" })
      case "/site/sitemap-index.xml":
        return send(
          200,
          `<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` +
            `<sitemap><loc>${origin}/site/sitemap-pages.xml.gz</loc></sitemap><sitemap><loc><![CDATA[${origin}/site/sitemap-more.xml]]></loc></sitemap>` +
            `</sitemapindex>`,
          { "content-type": "application/xml" }
        )
      case "/site/sitemap-pages.xml.gz":
        if (!res.destroyed) {
          res.writeHead(200, { "content-type": "application/gzip" })
            .end(gzipSync(urlset(origin, ["/site/from-sitemap-1", "/site/from-sitemap-2", "/site/a"])))
        }
        return
      case "/site/sitemap-more.xml":
        return send(200, urlset(origin, ["/site/from-sitemap-3", "/site/from-sitemap-1", OFFSITE_URL]), { "content-type": "application/xml" })
      case "/page":
        return send(200, ARTICLE_HTML)
      case "/changing":
        changing++
        return send(200, changingPage(changing))
      case "/changing.txt":
        changingText++
        return send(200, `Stable line one.\nVersion number ${changingText}\nStable line two.\n`, { "content-type": "text/plain; charset=utf-8" })
      case "/changing.bin":
        changingBinary++
        if (!res.destroyed) res.writeHead(200).end(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, changingBinary % 256]))
        return
      case "/untyped-cp1251":
        if (!res.destroyed) {
          res.writeHead(200).end(Buffer.concat([
            Buffer.from(`<html><head><meta charset="windows-1251"></head><body><p>`),
            Buffer.from([0xcf, 0xf0, 0xe8, 0xe2, 0xe5, 0xf2]), // "Привет"
            Buffer.from("</p></body></html>")
          ]))
        }
        return
      case "/empty":
        return send(200, "")
      case "/script-built":
        // A shell whose text only its script writes: what an app built in the browser sends.
        return send(200, `<!doctype html><html><head><title>App</title></head><body><div id="root"></div>` +
          `<script>document.getElementById("root").innerHTML = "<h1>${SCRIPT_BUILT_MARKER}</h1>"</script></body></html>`)
      case "/missing-empty":
        return send(404, "")
      case "/missing":
        return send(404, "<!doctype html><html><head><title>Not found</title></head><body><h1>No such page</h1></body></html>")
      case "/error":
        return send(500, "<!doctype html><html><head><title>Oops</title></head><body><h1>Internal fixture error</h1></body></html>")
      case "/slow": {
        const ms = Math.min(Math.max(Number(u.searchParams.get("ms") ?? 5000) || 0, 0), 120_000)
        const t = setTimeout(() => {
          timers.delete(t)
          send(200, ARTICLE_HTML)
        }, ms)
        timers.add(t)
        res.on("close", () => {
          clearTimeout(t)
          timers.delete(t)
        })
        return
      }
      case "/redirect": {
        const to = u.searchParams.get("to") ?? "/page"
        // Only to this fixture (a relative Location), never elsewhere.
        if (!to.startsWith("/") || to.startsWith("//")) return send(400, "bad redirect target")
        return send(302, "", { location: to })
      }
      case "/blocked": {
        if ((req.headers.cookie ?? "").includes("trawl_js=ok")) {
          return send(
            200,
            `<!doctype html><html><head><title>Welcome</title></head><body><h1>Welcome, browser</h1><p>${BLOCKED_CONTENT_MARKER}.</p></body></html>`
          )
        }
        return send(
          403,
          `<!doctype html><html><head><title>Just a moment...</title></head><body><p>Verify you are human. Checking your browser...</p>` +
            `<script>document.cookie = "trawl_js=ok; path=/"; setTimeout(function () { location.reload() }, 50)</script></body></html>`
        )
      }
      default:
        return send(404, "<!doctype html><html><body><h1>Not here</h1></body></html>")
    }
  }

  const servers: Array<http.Server> = []
  const origins: Array<string> = []
  for (const host of hosts) {
    const server = http.createServer(handler)
    server.keepAliveTimeout = 2000
    server.on("connection", (s) => {
      connections++
      sockets.add(s)
      s.on("close", () => sockets.delete(s))
    })
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject)
      server.listen(0, host, () => resolve())
    })
    const port = (server.address() as AddressInfo).port
    servers.push(server)
    origins.push(`http://${host.includes(":") ? `[${host}]` : host}:${port}`)
  }

  return {
    origins,
    url: (path, host = 0) => origins[host]! + path,
    hits: (path) => counts.get(path) ?? 0,
    requests: () => [...requestLog],
    connections: () => connections,
    changingVersion: () => changing,
    peakInFlight: (reset = false) => {
      const seen = peaks
      // A reset starts from what is in flight now.
      if (reset) peaks = new Map([...inFlight].filter(([, n]) => n > 0))
      return seen
    },
    close: async () => {
      for (const t of timers) clearTimeout(t)
      for (const s of sockets) s.destroy()
      await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))))
    }
  }
}

/**
 * Env for a Trawl server process that keeps it on loopback: a preload module (written to a
 * temporary file) makes `dns.lookup` answer only IP literals and `localhost`, and refuses any
 * socket connection to an IP address outside 127.0.0.0/8 and ::1. Browser engines reach targets
 * through Trawl's guard proxy (inside this process), so they are covered too. A belt and braces
 * for the rule that tests send traffic to loopback only.
 */
export const loopbackOnlyEnv = (): Record<string, string> => {
  const dir = mkdtempSync(join(tmpdir(), "trawl-loopback-"))
  const file = join(dir, "loopback-only.mjs")
  writeFileSync(
    file,
    `
import dns from "node:dns"
import net from "node:net"
import { syncBuiltinESMExports } from "node:module"
const loop = (a) => (net.isIPv4(a) && a.startsWith("127.")) || a === "::1" || a === "::ffff:127.0.0.1" || /^::ffff:127\\./.test(a)
const refuse = (host) => Object.assign(new Error("loopback-only test guard: no DNS for " + host), { code: "ENOTFOUND", hostname: host })
const origLookup = dns.lookup
dns.lookup = function (hostname, options, callback) {
  const cb = typeof options === "function" ? options : callback
  if (net.isIP(hostname) || hostname === "localhost") return origLookup.call(dns, hostname, options, callback)
  const all = typeof options === "object" && options !== null && options.all === true
  process.nextTick(() => (all ? cb(refuse(hostname), []) : cb(refuse(hostname))))
}
const origPLookup = dns.promises.lookup
dns.promises.lookup = async (hostname, options) => {
  if (net.isIP(hostname) || hostname === "localhost") return origPLookup(hostname, options)
  throw refuse(hostname)
}
const origConnect = net.Socket.prototype.connect
net.Socket.prototype.connect = function (...args) {
  let o = args[0]
  if (Array.isArray(o)) o = o[0]
  let host
  if (o !== null && typeof o === "object") host = o.path ? undefined : (o.host ?? "localhost")
  else if (typeof o === "number" || typeof o === "string") host = typeof args[1] === "string" ? args[1] : "localhost"
  if (host !== undefined && net.isIP(host) && !loop(host)) {
    const err = Object.assign(new Error("loopback-only test guard: refused connection to " + host), { code: "ECONNREFUSED" })
    process.nextTick(() => this.destroy(err))
    return this
  }
  return origConnect.apply(this, args)
}
syncBuiltinESMExports()
`
  )
  return { NODE_OPTIONS: `--import ${file}` }
}

/** PNG files start with these 8 bytes. */
export const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
