/**
 * A generated loopback site for site-crawl tests (docs/site-crawls.md): a home page, sections of
 * items with details under them, a sitemap index (one child gzipped), robots.txt disallows, a
 * calendar trap (months linking to their neighbours and to 31 days each), duplicate URLs spelled
 * with other query orders and fragments, a `<base href>`, a nofollow link, a `mailto:` and an
 * offsite link. The site is a pure model (`linksOf`) served by a counting server, so a test can
 * work out what a crawl must find on its own, and check that no URL was served twice.
 */
import http from "node:http"
import type { AddressInfo, Socket } from "node:net"
import { gzipSync } from "node:zlib"

export const SECTIONS = 8
export const ITEMS = 10
export const DAYS = 31
/** Never fetched: a crawl without allowExternal leaves it offsite. */
export const CRAWL_OFFSITE_URL = "http://127.0.0.254:9/elsewhere"

export interface Link {
  readonly href: string
  readonly nofollow?: boolean
}

const pad = (n: number) => String(n).padStart(2, "0")
const month = (y: number, m: number) => {
  const i = y * 12 + (m - 1)
  return `/calendar/${Math.floor(i / 12)}/${pad((i % 12) + 1)}`
}

/** The links of a page of the site, as its HTML writes them (relative or absolute), or undefined when there is no such page. */
export const linksOf = (path: string): ReadonlyArray<Link> | undefined => {
  if (path === "/") {
    return [
      ...Array.from({ length: SECTIONS }, (_, s) => ({ href: `/section/${s}` })),
      { href: "/calendar/2026/01" },
      // One page, spelled three ways: query order and a fragment make no other URL.
      { href: "/dup?a=1&b=2" },
      { href: "/dup?b=2&a=1" },
      { href: "/dup?a=1&b=2#part" },
      { href: "#top" },
      { href: "/about" },
      { href: "/private/x" },
      { href: "/no-trawl" },
      { href: "mailto:someone@example.com" },
      { href: CRAWL_OFFSITE_URL },
      { href: "/nofollowed", nofollow: true }
    ]
  }
  let m = /^\/section\/(\d+)$/.exec(path)
  if (m && Number(m[1]) < SECTIONS) return [{ href: "/" }, ...Array.from({ length: ITEMS }, (_, i) => ({ href: `/section/${m![1]}/item/${i}` }))]
  m = /^\/section\/(\d+)\/item\/(\d+)$/.exec(path)
  if (m && Number(m[1]) < SECTIONS && Number(m[2]) < ITEMS) {
    const [s, i] = [m[1], Number(m[2])]
    return [{ href: `/section/${s}/item/${(i + 1) % ITEMS}` }, { href: `/section/${s}/item/${i}/detail` }, { href: `/section/${s}` }]
  }
  m = /^\/section\/(\d+)\/item\/(\d+)\/detail$/.exec(path)
  if (m && Number(m[1]) < SECTIONS && Number(m[2]) < ITEMS) return [{ href: `/deep/${m[1]}/${m[2]}` }]
  m = /^\/deep\/(\d+)\/(\d+)$/.exec(path)
  if (m) return [{ href: `/deep/${m[1]}/${m[2]}/more` }]
  m = /^\/calendar\/(\d{4})\/(\d{2})$/.exec(path)
  if (m) {
    const [y, mo] = [Number(m[1]), Number(m[2])]
    return [
      { href: month(y, mo - 1) },
      { href: month(y, mo + 1) },
      ...Array.from({ length: DAYS }, (_, d) => ({ href: `${path}/${pad(d + 1)}` }))
    ]
  }
  if (/^\/calendar\/\d{4}\/\d{2}\/\d{2}$/.test(path)) return []
  if (path === "/dup") return [{ href: "/" }]
  if (path === "/about") return [{ href: "/section/0" }, { href: "rel-target" }]
  if (path === "/base/rel-target") return []
  if (/^\/from-sitemap\/\d+$/.test(path)) return []
  if (path === "/private/x" || path === "/no-trawl" || path === "/nofollowed") return []
  return undefined
}

/** Pages listed by the sitemaps (the index lists two children; one is gzipped). */
export const SITEMAP_PATHS: ReadonlyArray<string> = [
  ...Array.from({ length: 10 }, (_, i) => `/from-sitemap/${i}`),
  "/section/0"
]

const page = (path: string, links: ReadonlyArray<Link>) =>
  `<!doctype html><html><head><title>${path}</title>${path === "/about" ? `<base href="/base/">` : ""}</head><body><h1>${path}</h1>` +
  links.map((l) => `<a href="${l.href.replace(/&/g, "&amp;")}"${l.nofollow ? " rel=\"nofollow\"" : ""}>${l.href.replace(/&/g, "&amp;")}</a>`).join(" ") +
  `</body></html>`

const urlset = (origin: string, paths: ReadonlyArray<string>) =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` +
  paths.map((p) => `<url><loc>${p.startsWith("http") ? p : origin + p}</loc></url>`).join("") +
  `</urlset>`

export interface CrawlSite {
  readonly origin: string
  readonly url: (path: string) => string
  /** Every request served (path and query), in order, with the time it came. */
  readonly requests: () => ReadonlyArray<{ readonly path: string; readonly at: number }>
  readonly close: () => Promise<void>
}

/**
 * Serves the site on `host`. `crawlDelay` adds `Crawl-delay` (seconds) to robots.txt's TrawlBot
 * group; `pageDelayMs` makes every page answer that much later (a crawl that lasts a while).
 */
export const startCrawlSite = async (options: { host?: string; crawlDelay?: number; pageDelayMs?: number } = {}): Promise<CrawlSite> => {
  const host = options.host ?? "127.0.0.1"
  if (!/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)) throw new Error(`the crawl site listens on loopback only, not ${host}`)
  const log: Array<{ path: string; at: number }> = []
  const sockets = new Set<Socket>()
  let origin = ""
  const server = http.createServer((req, res) => {
    const u = new URL(req.url ?? "/", "http://site")
    log.push({ path: u.pathname + u.search, at: Date.now() })
    const send = (status: number, body: string | Buffer, type = "text/html; charset=utf-8") => res.writeHead(status, { "content-type": type }).end(body)
    switch (u.pathname) {
      case "/robots.txt":
        return send(
          200,
          `User-agent: *\nDisallow: /private\n\nUser-agent: TrawlBot\nDisallow: /private\nDisallow: /no-trawl\n` +
            (options.crawlDelay ? `Crawl-delay: ${options.crawlDelay}\n` : "") +
            `\nSitemap: ${origin}/sitemap-index.xml\n`,
          "text/plain"
        )
      case "/sitemap-index.xml":
        return send(
          200,
          `<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` +
            `<sitemap><loc>${origin}/sitemap-a.xml</loc></sitemap><sitemap><loc>${origin}/sitemap-b.xml.gz</loc></sitemap></sitemapindex>`,
          "application/xml"
        )
      case "/sitemap-a.xml":
        return send(200, urlset(origin, [...SITEMAP_PATHS.slice(0, 5), "/section/0"]), "application/xml")
      case "/sitemap-b.xml.gz":
        return send(200, gzipSync(urlset(origin, SITEMAP_PATHS.slice(5, 10))), "application/gzip")
      case "/sitemap.xml":
        return send(404, "no root sitemap", "text/plain")
    }
    const links = linksOf(u.pathname)
    if (!links) return send(404, "<!doctype html><html><body>Not here</body></html>")
    if (options.pageDelayMs) return void setTimeout(() => res.destroyed || send(200, page(u.pathname, links)), options.pageDelayMs)
    return send(200, page(u.pathname, links))
  })
  server.keepAliveTimeout = 2000
  server.on("connection", (s) => {
    sockets.add(s)
    s.on("close", () => sockets.delete(s))
  })
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(0, host, () => resolve())
  })
  origin = `http://${host}:${(server.address() as AddressInfo).port}`
  return {
    origin,
    url: (path) => origin + path,
    requests: () => [...log],
    close: async () => {
      for (const s of sockets) s.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}
