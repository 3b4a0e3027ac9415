/**
 * The part of test/site-ssrf.e2e.test.ts that runs inside the loopback-only network namespace
 * (`unshare -n -m`), as `node --import tsx test/support/site-ssrf-inside.ts <map|crawl>`. The outer
 * shell has already brought `lo` up, put the private addresses of TRAPS on it (only inside this
 * namespace: nothing leaves it) and bind-mounted a private /etc/hosts naming them (SITE_HOSTS).
 *
 * - A "public" site on 127.0.0.2 (declared public to this server only, SSRF_TEST_PUBLIC_ADDRESSES)
 *   as www.site.example, whose pages and sitemap link to private, link-local, unique-local and
 *   loopback addresses, by IP literal and by names of the same site.
 * - A trap HTTP server on each of those addresses (the site's port and 80) counting connections:
 *   the guard is on, so none may arrive. A first fetch from this script to each trap shows the traps
 *   are reachable, so zero connections later means the server refused, not that nothing was there.
 * - Trawl without ALLOW_PRIVATE_TARGETS; embedded database, or DATABASE_URL (PostgreSQL through its
 *   unix socket, the only way out of the namespace).
 *
 * Prints one line `RESULT <json>`.
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { resolve } from "node:path"
import { client, startServer } from "./server-process.ts"

/** The addresses put on `lo` inside the namespace, and what they stand for. */
export const TRAPS = ["10.0.0.1", "169.254.169.254", "fd00::1", "127.0.0.1"] as const

/** The /etc/hosts of the namespace: the site, and names of the same site for each trap. */
export const SITE_HOSTS: ReadonlyArray<[string, string]> = [
  ["127.0.0.2", "www.site.example"],
  ["10.0.0.1", "intranet.site.example"],
  ["169.254.169.254", "metadata.site.example"],
  ["fd00::1", "v6.site.example"],
  ["127.0.0.1", "loop.site.example"]
]

/** The unsafe links of the site's pages (P = the site's port): names of the site, then IP literals. */
export const unsafeNames = (p: number) => [
  `http://intranet.site.example:${p}/`,
  `http://metadata.site.example/latest/meta-data/`,
  `http://v6.site.example:${p}/`,
  `http://loop.site.example:${p}/`
]
export const unsafeLiterals = (p: number) => [
  `http://10.0.0.1:${p}/`,
  `http://169.254.169.254/latest/meta-data/`,
  `http://[fd00::1]:${p}/`,
  `http://127.0.0.1:${p}/`
]
/** Named only by the sitemap. */
export const sitemapUnsafe = (p: number) => `http://intranet.site.example:${p}/from-sitemap`

const page = (title: string, links: ReadonlyArray<string>) =>
  `<!doctype html><html><head><title>${title}</title></head><body><h1>${title}</h1>` +
  links.map((l) => `<p><a href="${l}">${l}</a></p>`).join("") + `</body></html>`

const listen = (server: Server, host: string, port: number) =>
  new Promise<number>((resolve, reject) => {
    server.once("error", reject)
    server.listen(port, host, () => resolve((server.address() as AddressInfo).port))
  })

const main = async () => {
  const mode = process.argv[2]
  if (mode !== "map" && mode !== "crawl") throw new Error("usage: site-ssrf-inside.ts <map|crawl>")
  const out: Record<string, unknown> = { mode }

  // The public site.
  const siteRequests: Array<string> = []
  let port = 0
  const site = createServer((req, res) => {
    const path = req.url ?? "/"
    siteRequests.push(path)
    const origin = `http://www.site.example:${port}`
    const html = (body: string) => res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(body)
    switch (path) {
      case "/robots.txt":
        return res.writeHead(200, { "content-type": "text/plain" }).end(`User-agent: *\nAllow: /\nSitemap: ${origin}/sitemap.xml\n`)
      case "/sitemap.xml":
        return res.writeHead(200, { "content-type": "application/xml" }).end(
          `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` +
            [`${origin}/a`, sitemapUnsafe(port)].map((u) => `<url><loc>${u}</loc></url>`).join("") + `</urlset>`
        )
      case "/":
        return html(page("Home", ["/a", "/b", ...unsafeNames(port), ...unsafeLiterals(port)]))
      case "/a":
        return html(page("A", ["/b", ...unsafeNames(port), ...unsafeLiterals(port)]))
      case "/b":
        return html(page("B", ["/"]))
      default:
        return res.writeHead(404).end()
    }
  })
  port = await listen(site, "127.0.0.2", 0)
  out.port = port

  // The traps: every connection counted, answered with a page that would link further if read.
  const trapConnections: Record<string, number> = {}
  const traps: Array<Server> = []
  for (const address of TRAPS) {
    trapConnections[address] = 0
    for (const p of [port, 80]) {
      const trap = createServer((_req, res) => res.writeHead(200, { "content-type": "text/html" }).end(page("Trap", ["/more"])))
      trap.on("connection", () => trapConnections[address]!++)
      await listen(trap, address, p)
      traps.push(trap)
    }
  }

  // Control: the traps answer from inside the namespace (the bracketed form for IPv6).
  const control: Record<string, number> = {}
  for (const address of TRAPS) {
    const host = address.includes(":") ? `[${address}]` : address
    const res = await fetch(`http://${host}:${port}/`)
    await res.text()
    const res80 = await fetch(`http://${host}/`)
    await res80.text()
    control[address] = trapConnections[address]!
    trapConnections[address] = 0
  }
  out.control = control

  const server = await startServer(
    {
      SSRF_TEST_PUBLIC_ADDRESSES: "127.0.0.2",
      ...(process.env.INSIDE_DATABASE_URL ? { DATABASE_URL: process.env.INSIDE_DATABASE_URL } : {})
    },
    { timeoutMs: 150_000 }
  )
  try {
    const api = client(server.baseUrl)
    const { apiKey } = await api.createTenant({ credits: "100.00" })
    const seed = `http://www.site.example:${port}/`
    if (mode === "map") {
      const res = await api.post("/v1/scraper/map", { url: seed, allowSubdomains: true }, apiKey)
      out.map = { status: res.status, data: res.json?.data, error: res.status === 200 ? undefined : res.text }
      // A seed that names a private address is refused before anything is fetched.
      const refused = await api.post("/v1/scraper/map", { url: `http://intranet.site.example:${port}/`, allowSubdomains: true }, apiKey)
      out.mapPrivateSeed = { status: refused.status, code: refused.json?.code }
    } else {
      const created = await api.post(
        "/v1/scraper/crawls",
        { url: seed, limit: 50, maxDepth: 5, allowSubdomains: true, allowExternal: true, page: { escalation: [{ engine: "http", attempts: 1, timeoutMs: 10_000 }] } },
        apiKey
      )
      out.crawlCreated = { status: created.status, error: created.status === 201 ? undefined : created.text }
      if (created.status === 201) {
        const id = created.json.data.id as string
        let crawl: any
        for (let i = 0; i < 600; i++) {
          crawl = (await api.get(`/v1/scraper/crawls/${id}`, apiKey)).json?.data
          if (["done", "failed", "cancelled"].includes(crawl?.status)) break
          await new Promise((r) => setTimeout(r, 200))
        }
        out.crawl = crawl
        const pages = await api.get(`/v1/scraper/crawls/${id}/pages?limit=100`, apiKey)
        out.crawlPages = { status: pages.status, urls: (pages.json?.data?.items ?? []).map((p: { url: string }) => p.url) }
      }
      const refused = await api.post("/v1/scraper/crawls", { url: `http://intranet.site.example:${port}/` }, apiKey)
      out.crawlPrivateSeed = { status: refused.status, code: refused.json?.code }
    }
  } finally {
    // Printed just after the server says it listens, so read it once the work is done.
    out.database = /database: (.*)/.exec(server.output())?.[1]
    await server.stop()
  }
  out.trapConnections = trapConnections
  out.siteRequests = siteRequests
  for (const t of [site, ...traps]) t.closeAllConnections()
  console.log(`RESULT ${JSON.stringify(out)}`)
  process.exit(0)
}

// Run only as the namespace's script; the test imports the constants above.
if (process.argv[1] !== undefined && resolve(process.argv[1]) === import.meta.filename) {
  main().catch((error) => {
    console.error("inside the namespace:", error)
    process.exit(1)
  })
}
