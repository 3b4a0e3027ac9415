/**
 * Site crawls through the real HTTP interface against a generated loopback site
 * (test/support/crawl-site.ts; docs/site-crawls.md): the counts a crawl must reach are worked out
 * here from the site's model, independently of the crawler, and the site counts what it served, so
 * no URL may be fetched twice. Also: robots.txt and Crawl-delay, bounds, the trap cap, cancel,
 * idempotency, events and webhooks, 402, another tenant's 404, validation.
 */
import { randomBytes } from "node:crypto"
import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { verifyWebhookSignature } from "../src/webhooks/signing.ts"
import { CRAWL_OFFSITE_URL, type CrawlSite, linksOf, SITEMAP_PATHS, startCrawlSite } from "./support/crawl-site.ts"
import { loopbackOnlyEnv } from "./support/fixture-site.ts"
import { shardLockNamespace } from "../src/actors/cluster-info.ts"
import { backends, client, createTestDatabase, freePort, INTERNAL_TOKEN, pgQuery, type RunningServer, startServer } from "./support/server-process.ts"
import { until } from "./support/until.ts"

const ROBOTS_DISALLOWED = ["/private", "/no-trawl"]

/** A URL's key as documented: fragment dropped, query parameters sorted by name. */
const keyOf = (href: string, base: string): string | null => {
  const u = new URL(href, base)
  if (u.protocol !== "http:" && u.protocol !== "https:") return null
  u.hash = ""
  const params = [...u.searchParams.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
  u.search = params.length === 0 ? "" : "?" + params.map(([k, v]) => `${k}=${v}`).join("&")
  return u.href
}

interface Expected {
  readonly pages: ReadonlyArray<string>
  readonly discovered: number
  readonly duplicates: number
  readonly robots: number
  readonly offsite: number
  /** Paths first found by each page (by path); the sitemap's are under "sitemap". */
  readonly children: ReadonlyMap<string, ReadonlyArray<string>>
}

/**
 * What a crawl of the site from "/" must do, worked out breadth first from the model: the
 * sitemaps' URLs first (depth 1), then each page's links; a page at maxDepth is not read.
 */
const expectedCrawl = (origin: string, maxDepth: number): Expected => {
  const judged = new Set<string>()
  const pages: Array<string> = []
  const children = new Map<string, Array<string>>()
  let candidates = 0
  let robots = 0
  let offsite = 0
  const queue: Array<{ key: string; depth: number }> = []
  const consider = (key: string, depth: number, parent: string) => {
    candidates++
    if (judged.has(key)) return
    judged.add(key)
    const u = new URL(key)
    if (u.origin !== origin) return void offsite++
    if (ROBOTS_DISALLOWED.some((p) => u.pathname.startsWith(p))) return void robots++
    if (depth > maxDepth) throw new Error("the fixture crawl never goes past maxDepth in this model")
    pages.push(u.pathname + u.search)
    children.set(parent, [...(children.get(parent) ?? []), u.pathname + u.search])
    queue.push({ key, depth })
  }
  const seed = origin + "/"
  judged.add(seed)
  pages.push("/")
  // The seed first, then the sitemap's pages, then breadth first.
  queue.push({ key: seed, depth: 0 })
  for (const p of SITEMAP_PATHS) consider(origin + p, 1, "sitemap")
  while (queue.length > 0) {
    const { key, depth } = queue.shift()!
    if (depth >= maxDepth) continue
    const path = new URL(key).pathname
    const base = path === "/about" ? origin + "/base/" : key
    // every sighting is judged: a link the page repeats (fragment or not) is a duplicate
    const batch: Array<string> = []
    for (const link of linksOf(path) ?? []) {
      if (link.nofollow || link.href.startsWith("#") || link.href.startsWith("mailto:")) continue
      const u = new URL(link.href, base)
      u.hash = ""
      batch.push(keyOf(u.href, base)!)
    }
    for (const k of batch) consider(k, depth + 1, new URL(key).pathname + new URL(key).search)
  }
  return { pages, discovered: judged.size, duplicates: candidates - (judged.size - 1), robots, offsite, children }
}

interface Received {
  readonly headers: IncomingHttpHeaders
  readonly raw: Buffer
}

const receiver = async () => {
  const received: Array<Received> = []
  const server: Server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c) => chunks.push(c))
    req.on("end", () => {
      received.push({ headers: req.headers, raw: Buffer.concat(chunks) })
      res.writeHead(200).end("ok")
    })
  })
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()))
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`,
    received,
    close: () => new Promise<void>((r) => {
      server.close(() => r())
      server.closeAllConnections()
    })
  }
}

/** The events of a tenant's stream from its start, read until `done` says so. */
const readEvents = async (baseUrl: string, key: string, done: (events: ReadonlyArray<{ event: string; data: any }>) => boolean) => {
  const controller = new AbortController()
  const res = await fetch(`${baseUrl}/v1/scraper/events`, { headers: { "x-api-key": key, accept: "text/event-stream", "last-event-id": "0" }, signal: controller.signal })
  const events: Array<{ event: string; data: any }> = []
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ""
  const timer = setTimeout(() => controller.abort(), 30_000)
  try {
    while (!done(events)) {
      const { value, done: end } = await reader.read()
      if (end) break
      buffer += value
      let cut: number
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, cut)
        buffer = buffer.slice(cut + 2)
        const event = /^event: (.*)$/m.exec(frame)?.[1]
        const data = /^data: (.*)$/m.exec(frame)?.[1]
        if (event && data) events.push({ event, data: JSON.parse(data) })
      }
    }
  } finally {
    clearTimeout(timer)
    controller.abort()
  }
  return events
}

describe.each(backends())("site crawls over HTTP ($name)", (backend) => {
  let server: RunningServer
  let site: CrawlSite
  let api: ReturnType<typeof client>
  let key: string

  beforeAll(async () => {
    site = await startCrawlSite()
    server = await startServer({ ...(await backend.env()), ALLOW_PRIVATE_TARGETS: "true", ...loopbackOnlyEnv() })
    api = client(server.baseUrl)
    key = (await api.createTenant()).apiKey
  }, 120_000)
  afterAll(async () => {
    await server?.stop()
    await site?.close()
  })

  const waitEnded = (id: string, apiKey = key, timeoutMs = 240_000) =>
    until(`crawl ${id} ended`, async () => {
      const res = await api.get(`/v1/scraper/crawls/${id}`, apiKey)
      return ["done", "failed", "cancelled"].includes(res.json?.data?.status) && res.json.data.counts.queued === 0 ? res.json.data : undefined
    }, timeoutMs)

  const allPages = async (id: string, query = "") => {
    const items: Array<any> = []
    for (let offset = 0;; offset += 200) {
      const res = await api.get(`/v1/scraper/crawls/${id}/pages?limit=200&offset=${offset}${query}`, key)
      expect(res.status, res.text).toBe(200)
      items.push(...res.json.data.items)
      if (!res.json.data.pagination.hasMore) return { items, total: res.json.data.pagination.total as number }
    }
  }

  it("crawls the site exactly: counts, depth, parents, robots, sitemaps, no URL fetched twice, events and webhooks", async () => {
    const hook = await receiver()
    try {
      const before = site.requests().length
      const created = await api.post("/v1/scraper/crawls", { url: site.url("/"), limit: 10_000, webhookUrl: hook.url }, key)
      expect(created.status, created.text).toBe(201)
      const secret = created.json.data.webhookSecret as string
      expect(secret).toBeTypeOf("string")
      expect(created.json.data).toMatchObject({ url: site.url("/"), limit: 10_000, maxDepth: 3, finishedAt: null })
      expect(["queued", "running"]).toContain(created.json.data.status)
      const id = created.json.data.id as string

      const crawl = await waitEnded(id)
      const expected = expectedCrawl(site.origin, 3)
      expect(crawl.status).toBe("done")
      expect(crawl.counts).toEqual({
        discovered: expected.discovered,
        queued: 0,
        done: expected.pages.length,
        failed: 0,
        skipped: { robots: expected.robots, filtered: 0, duplicate: expected.duplicates, offsite: expected.offsite, unsafe: 0 }
      })
      expect(expected.pages.length).toBeGreaterThan(250)

      // Each page once; nothing disallowed, nofollowed, offsite or beyond maxDepth.
      const served = site.requests().slice(before).map((r) => r.path)
      const fetchedPages = served.filter((p) => !p.startsWith("/sitemap") && p !== "/robots.txt")
      expect([...fetchedPages].sort()).toEqual([...expected.pages].sort())
      expect(new Set(fetchedPages).size).toBe(fetchedPages.length)
      expect(served.filter((p) => p === "/robots.txt").length).toBeLessThanOrEqual(1)
      for (const never of ["/private/x", "/no-trawl", "/nofollowed", "/deep/0/0"]) expect(served).not.toContain(never)

      // The pages: the crawl's jobs with their depth and the page that linked them.
      const pages = await allPages(id)
      expect(pages.total).toBe(expected.pages.length)
      expect(pages.items.every((p) => p.status === "done")).toBe(true)
      const byPath = new Map(pages.items.map((p) => [new URL(p.url).pathname + new URL(p.url).search, p]))
      expect(byPath.get("/")).toMatchObject({ depth: 0, parentUrl: null, parentJobId: null })
      expect(byPath.get("/section/0")).toMatchObject({ depth: 1, parentUrl: null })
      expect(byPath.get("/calendar/2025/11")?.depth).toBe(3)
      expect(byPath.get("/base/rel-target")?.parentUrl).toBe(site.url("/about"))
      const home = byPath.get("/")!
      const fromHome = await allPages(id, `&parentJobId=${home.jobId}`)
      expect(fromHome.items.map((p) => new URL(p.url).pathname + new URL(p.url).search).sort()).toEqual([...expected.children.get("/")!].sort())
      const depth0 = await allPages(id, "&depth=0")
      expect(depth0.items.map((p) => p.jobId)).toEqual([home.jobId])
      // Every page is an ordinary job of the tenant.
      const job = await api.get(`/v1/scraper/jobs/${home.jobId}`, key)
      expect(job.json.data).toMatchObject({ status: "done", url: site.url("/") })

      // Events on the tenant's stream: started, one per page, done.
      const events = (await readEvents(server.baseUrl, key, (es) => es.some((e) => e.event === "crawl.done" && e.data.id === id)))
        .filter((e) => e.event.startsWith("crawl.") && (e.data.id === id || e.data.crawlId === id))
      expect(events.filter((e) => e.event === "crawl.started")).toHaveLength(1)
      expect(events.filter((e) => e.event === "crawl.page")).toHaveLength(expected.pages.length)
      expect(events.at(-1)).toMatchObject({ event: "crawl.done", data: { status: "done", counts: crawl.counts } })

      // The same as signed webhooks.
      await until("crawl webhooks", () => hook.received.some((r) => JSON.parse(r.raw.toString()).event === "crawl.done"), 60_000)
      await until("every page's webhook", () => hook.received.filter((r) => JSON.parse(r.raw.toString()).event === "crawl.page").length >= expected.pages.length, 60_000)
      for (const r of hook.received) {
        expect(verifyWebhookSignature({ rawBody: r.raw, headers: r.headers as Record<string, string>, secret }).ok).toBe(true)
        expect(r.headers["x-service-crawlid"]).toBe(id)
      }
      const bodies = hook.received.map((r) => JSON.parse(r.raw.toString()))
      expect(bodies.filter((b) => b.event === "crawl.started")).toHaveLength(1)
      expect(bodies.filter((b) => b.event === "crawl.page")).toHaveLength(expected.pages.length)
      expect(bodies.find((b) => b.event === "crawl.done")).toMatchObject({ crawlId: id, status: "done", counts: crawl.counts })
    } finally {
      await hook.close()
    }
  }, 300_000)

  it("honours limit, maxDepth, path globs and ignoreQueryParameters, and caps a calendar trap per path pattern", async () => {
    const limited = await api.post("/v1/scraper/crawls", { url: site.url("/"), limit: 5, sitemap: "skip" }, key)
    expect(limited.status, limited.text).toBe(201)
    const l = await waitEnded(limited.json.data.id)
    expect(l.counts.done).toBe(5)
    expect(l.counts.discovered).toBeGreaterThan(5)

    const shallow = await api.post("/v1/scraper/crawls", { url: site.url("/"), maxDepth: 0 }, key)
    const s = await waitEnded(shallow.json.data.id)
    // The seed alone: the sitemap's pages are at depth 1.
    expect(s.counts.done).toBe(1)

    const globbed = await api.post("/v1/scraper/crawls", { url: site.url("/"), maxDepth: 2, sitemap: "skip", includePaths: ["/section/1", "/section/1/**"] }, key)
    const g = await waitEnded(globbed.json.data.id)
    const gp = await allPages(globbed.json.data.id)
    expect(gp.items.map((p) => new URL(p.url).pathname).sort()).toEqual(
      ["/", "/section/1", ...Array.from({ length: 10 }, (_, i) => `/section/1/item/${i}`)].sort()
    )
    expect(g.counts.skipped.filtered).toBeGreaterThan(0)

    // ignoreQueryParameters: a URL's key is without the query, but the URL is fetched as found, query and all.
    const noQuery = await api.post("/v1/scraper/crawls", { url: site.url("/dup?b=2&a=1"), maxDepth: 1, sitemap: "skip", ignoreQueryParameters: true }, key)
    expect(noQuery.json.data.url).toBe(site.url("/dup"))
    expect(noQuery.json.data).toMatchObject({ ignoreQueryParameters: true, sitemap: "skip", maxDepth: 1, respectRobots: true, includePaths: [], page: {} })
    const nq = await waitEnded(noQuery.json.data.id)
    const nqPages = (await allPages(noQuery.json.data.id)).items
    expect(nqPages.map((p) => p.url).sort()).toEqual([site.url("/"), site.url("/dup?a=1&b=2")])
    const seedJob = await api.get(`/v1/scraper/jobs/${nqPages.find((p) => p.depth === 0)!.jobId}`, key)
    expect(seedJob.json.data.url).toBe(site.url("/dup?a=1&b=2"))
    expect(nq.counts.done).toBe(2)

    // Only the sitemaps' pages, links not followed, the seed not fetched.
    const onlySitemap = await api.post("/v1/scraper/crawls", { url: site.url("/"), sitemap: "only" }, key)
    const o = await waitEnded(onlySitemap.json.data.id)
    const op = await allPages(onlySitemap.json.data.id)
    expect(op.items.map((p) => new URL(p.url).pathname).sort()).toEqual([...SITEMAP_PATHS].sort())
    expect(op.items.every((p) => p.depth === 0)).toBe(true)
    expect(o.counts).toMatchObject({ done: SITEMAP_PATHS.length, discovered: SITEMAP_PATHS.length })

    // respectRobots: false fetches what robots.txt disallows.
    const rude = await api.post("/v1/scraper/crawls", { url: site.url("/"), maxDepth: 1, sitemap: "skip", respectRobots: false }, key)
    const r = await waitEnded(rude.json.data.id)
    const rp = await allPages(rude.json.data.id)
    expect(rp.items.map((p) => new URL(p.url).pathname)).toEqual(expect.arrayContaining(["/private/x", "/no-trawl"]))
    expect(r.counts.skipped.robots).toBe(0)

    // A calendar whose months link on forever: at most 200 day pages (one pattern) however deep it goes.
    const trap = await api.post("/v1/scraper/crawls", { url: site.url("/calendar/2026/01"), maxDepth: 20, limit: 10_000, sitemap: "skip" }, key)
    const t = await waitEnded(trap.json.data.id)
    const tp = await allPages(trap.json.data.id)
    const days = tp.items.filter((p) => /\/calendar\/\d{4}\/\d{2}\/\d{2}$/.test(p.url))
    const months = tp.items.filter((p) => /\/calendar\/\d{4}\/\d{2}$/.test(p.url))
    expect(days).toHaveLength(200)
    expect(months).toHaveLength(41) // the seed and two more months per level, 20 levels deep
    expect(t.counts.done).toBe(241)
    expect(t.counts.skipped.filtered).toBeGreaterThan(0)
  }, 300_000)

  it("waits Crawl-delay between pages of a site that asks for it", async () => {
    const slow = await startCrawlSite({ host: "127.0.0.2", crawlDelay: 1 })
    try {
      const created = await api.post("/v1/scraper/crawls", { url: slow.url("/about"), sitemap: "skip", maxDepth: 1 }, key)
      expect(created.status, created.text).toBe(201)
      const c = await waitEnded(created.json.data.id, key, 60_000)
      expect(c.counts.done).toBe(3) // /about, /section/0, /base/rel-target
      const times = slow.requests().filter((r) => r.path !== "/robots.txt").map((r) => r.at)
      expect(times).toHaveLength(3)
      for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(1000)
    } finally {
      await slow.close()
    }
  }, 120_000)

  it("cancels: discovery stops, queued pages are cancelled, finished ones kept", async () => {
    // Pages that take a moment each, so that some are still waiting when the cancel comes (on the
    // fast site a busy-enough run had fetched every page it had found by then).
    const slowSite = await startCrawlSite({ pageDelayMs: 250 })
    try {
      await cancelMidCrawl(slowSite)
    } finally {
      await slowSite.close()
    }
  }, 120_000)

  const cancelMidCrawl = async (site: CrawlSite) => {
    const created = await api.post("/v1/scraper/crawls", { url: site.url("/"), limit: 10_000, maxDepth: 3 }, key)
    const id = created.json.data.id as string
    await until("some pages done, others waiting", async () => {
      const counts = (await api.get(`/v1/scraper/crawls/${id}`, key)).json.data.counts
      return counts.done >= 3 && counts.queued > 0 ? true : undefined
    }, 60_000)
    const cancelled = await api.post(`/v1/scraper/crawls/${id}/cancel`, {}, key)
    expect(cancelled.status, cancelled.text).toBe(200)
    expect(cancelled.json.data.status).toBe("cancelled")
    expect(cancelled.json.data.finishedAt).not.toBeNull()
    const after = await waitEnded(id, key, 20_000).catch(async (e) => {
      console.log(JSON.stringify((await api.get(`/v1/scraper/crawls/${id}`, key)).json), JSON.stringify((await allPages(id, "&status=queued,running")).items.slice(0, 3)))
      throw e
    })
    expect(after.status).toBe("cancelled")
    const pages = await allPages(id)
    expect(pages.items.some((p) => p.status === "cancelled")).toBe(true)
    expect(pages.items.filter((p) => p.status === "done").length).toBe(after.counts.done)
    // Nothing more is fetched for it.
    const served = site.requests().length
    await new Promise((r) => setTimeout(r, 1500))
    expect((await api.get(`/v1/scraper/crawls/${id}`, key)).json.data.counts).toEqual(after.counts)
    expect(site.requests().length).toBe(served)
    const again = await api.post(`/v1/scraper/crawls/${id}/cancel`, {}, key)
    expect(again.status).toBe(409)
    const listed = await api.get("/v1/scraper/crawls?status=cancelled", key)
    expect(listed.json.data.items.map((c: any) => c.id)).toContain(id)
    expect(listed.json.data.items.every((c: any) => c.status === "cancelled")).toBe(true)
  }

  it("starts no page once cancelled, also while pages wait for a slow site's politeness slot", async () => {
    // A fast seed linking 30 pages that each take 4 s: a few fetching, the rest waiting their turn.
    const asked: Array<string> = []
    const slow = createServer((req, res) => {
      const path = req.url ?? "/"
      if (path === "/robots.txt") return void res.writeHead(404).end()
      asked.push(path)
      const body = path === "/"
        ? `<html><body>${Array.from({ length: 30 }, (_, i) => `<a href="/slow/${i}">page ${i}</a>`).join(" ")}</body></html>`
        : "<html><body><p>finally</p></body></html>"
      setTimeout(() => res.writeHead(200, { "content-type": "text/html" }).end(body), path === "/" ? 0 : 4000)
    })
    await new Promise<void>((resolve) => slow.listen(0, "127.0.0.3", resolve))
    try {
      const { port } = slow.address() as AddressInfo
      const created = await api.post("/v1/scraper/crawls", { url: `http://127.0.0.3:${port}/`, sitemap: "skip", maxDepth: 1, limit: 50 }, key)
      expect(created.status, created.text).toBe(201)
      const id = created.json.data.id as string
      await until("slow pages being fetched", async () => (asked.length >= 2 ? true : undefined), 60_000)
      await new Promise((r) => setTimeout(r, 500))
      const cancelled = await api.post(`/v1/scraper/crawls/${id}/cancel`, {}, key)
      expect(cancelled.status, cancelled.text).toBe(200)
      const atCancel = asked.length
      await waitEnded(id, key, 20_000)
      await new Promise((r) => setTimeout(r, 1500))
      expect(asked.slice(atCancel)).toEqual([])
      // Every page whose job was made ended with one crawl.page event (those the cancel stopped as
      // cancelled); the pages that waited for their turn have no job, and say so.
      const pages = (await allPages(id)).items
      const made = pages.filter((p) => p.jobId !== null)
      expect(made.length).toBeGreaterThanOrEqual(2)
      expect(pages.filter((p) => p.jobId === null).length).toBeGreaterThan(0)
      expect(pages.filter((p) => p.jobId === null).every((p) => p.status === "cancelled")).toBe(true)
      const ofCrawl = (es: ReadonlyArray<{ event: string; data: any }>) => es.filter((e) => e.event === "crawl.page" && e.data.crawlId === id)
      const events = ofCrawl(await readEvents(server.baseUrl, key, (es) => ofCrawl(es).length >= made.length))
      expect(events.map((e) => e.data.jobId).sort()).toEqual(made.map((p) => p.jobId).sort())
      for (const e of events) expect(e.data).toMatchObject({ id, status: made.find((p) => p.jobId === e.data.jobId)!.status })
      expect(events.some((e) => e.data.status === "cancelled")).toBe(true)
      for (const p of made) expect((await api.get(`/v1/scraper/jobs/${p.jobId}`, key)).status).toBe(200)
    } finally {
      slow.closeAllConnections()
      await new Promise((resolve) => slow.close(resolve))
    }
  }, 120_000)

  it("reads links of 2xx pages only, and lists pages in the order it accepted them", async () => {
    const small = createServer((req, res) => {
      const path = req.url ?? "/"
      if (path === "/robots.txt") return void res.writeHead(404).end()
      const links = (...to: Array<string>) => `<html><body>${to.map((t) => `<a href="${t}">${t}</a>`).join(" ")}</body></html>`
      if (path === "/") return void res.writeHead(200, { "content-type": "text/html" }).end(links("/missing", "/ok"))
      if (path === "/missing") return void res.writeHead(404, { "content-type": "text/html" }).end(links("/from-missing"))
      res.writeHead(200, { "content-type": "text/html" }).end(links(path === "/ok" ? "/from-ok" : "/"))
    })
    await new Promise<void>((resolve) => small.listen(0, "127.0.0.4", resolve))
    try {
      const { port } = small.address() as AddressInfo
      const created = await api.post("/v1/scraper/crawls", { url: `http://127.0.0.4:${port}/`, sitemap: "skip", maxDepth: 3 }, key)
      expect(created.status, created.text).toBe(201)
      const ended = await waitEnded(created.json.data.id, key, 60_000)
      const pages = (await allPages(created.json.data.id)).items
      expect(pages.map((p) => new URL(p.url).pathname)).toEqual(["/", "/missing", "/ok", "/from-ok"])
      // a 404 is an answer: its job is done, its links are not read
      expect(ended.counts).toMatchObject({ done: 4, failed: 0 })
    } finally {
      small.closeAllConnections()
      await new Promise((resolve) => small.close(resolve))
    }
  }, 120_000)

  it("reads no links of a page that redirected into what robots.txt disallows", async () => {
    const asked: Array<string> = []
    const site5 = createServer((req, res) => {
      const path = req.url ?? "/"
      asked.push(path)
      if (path === "/robots.txt") return void res.writeHead(200, { "content-type": "text/plain" }).end("User-agent: *\nDisallow: /private\n")
      if (path === "/") return void res.writeHead(200, { "content-type": "text/html" }).end(`<a href="/to-private">in</a>`)
      if (path === "/to-private") return void res.writeHead(302, { location: "/private/secret" }).end()
      res.writeHead(200, { "content-type": "text/html" }).end(`<a href="/private/deeper">deeper</a> <a href="/public">public</a>`)
    })
    await new Promise<void>((resolve) => site5.listen(0, "127.0.0.5", resolve))
    try {
      const { port } = site5.address() as AddressInfo
      const created = await api.post("/v1/scraper/crawls", { url: `http://127.0.0.5:${port}/`, sitemap: "skip", maxDepth: 3 }, key)
      expect(created.status, created.text).toBe(201)
      await waitEnded(created.json.data.id, key, 60_000)
      const pages = (await allPages(created.json.data.id)).items
      expect(pages.map((p) => new URL(p.url).pathname)).toEqual(["/", "/to-private"])
      expect(asked).not.toContain("/private/deeper")
      expect(asked).not.toContain("/public")
    } finally {
      site5.closeAllConnections()
      await new Promise((resolve) => site5.close(resolve))
    }
  }, 120_000)

  it("pauses on the daily job quota with a reason, and resumes when the quota is raised", async () => {
    const t = await api.createTenant()
    const admin = await api.call("POST", "/internal/v1/internal-admins", { token: INTERNAL_TOKEN, body: { email: `root-${Date.now()}@trawl.dev` } })
    const setDaily = async (limit: number) => {
      const res = await api.call("PUT", `/v1/admin/tenants/${t.tenantId}/quotas/scraper.jobs.daily`, { key: admin.json.data.apiKey, body: { limit } })
      expect(res.status, res.text).toBe(200)
    }
    await setDaily(5)
    const created = await api.post("/v1/scraper/crawls", { url: site.url("/"), limit: 12, sitemap: "skip" }, t.apiKey)
    expect(created.status, created.text).toBe(201)
    const id = created.json.data.id as string
    const paused = await until("crawl paused", async () => {
      const c = (await api.get(`/v1/scraper/crawls/${id}`, t.apiKey)).json.data
      return c.statusReason !== null && c.counts.done === 5 ? c : undefined
    }, 60_000)
    expect(paused.status).toBe("running")
    expect(paused.statusReason).toMatch(/^paused at \d{4}-.*: .*scraper\.jobs\.daily.*resumes/)
    await setDaily(100)
    const c = await waitEnded(id, t.apiKey, 90_000)
    expect(c).toMatchObject({ status: "done", statusReason: null })
    expect(c.counts.done).toBe(12)
  }, 150_000)

  it("answers a retry with the same Idempotency-Key with the first crawl", async () => {
    const body = { url: site.url("/dup?b=2&a=1#x"), maxDepth: 0, sitemap: "skip" }
    const first = await api.call("POST", "/v1/scraper/crawls", { key, body, headers: { "idempotency-key": "crawl-once-1" } })
    const second = await api.call("POST", "/v1/scraper/crawls", { key, body, headers: { "idempotency-key": "crawl-once-1" } })
    expect(first.status, first.text).toBe(201)
    expect(second.status).toBe(201)
    expect(second.json.data.id).toBe(first.json.data.id)
    expect(first.json.data.url).toBe(site.url("/dup?a=1&b=2"))
    const other = await api.call("POST", "/v1/scraper/crawls", { key, body: { ...body, maxDepth: 1 }, headers: { "idempotency-key": "crawl-once-1" } })
    expect(other.status).toBe(409)
    const c = await waitEnded(first.json.data.id)
    expect(c.counts.done).toBe(1)
  }, 60_000)

  it("answers 402 without the credit for a first page, 404 for another tenant's crawl, and 400 or 422 for bad bodies", async () => {
    const broke = await api.createTenant({ credits: "0" })
    const refused = await api.post("/v1/scraper/crawls", { url: site.url("/") }, broke.apiKey)
    expect(refused.status, refused.text).toBe(402)
    expect(refused.json.code).toBe("insufficient_credit")
    expect((await api.get("/v1/scraper/crawls", broke.apiKey)).json.data.pagination.total).toBe(0)

    const mine = await api.post("/v1/scraper/crawls", { url: site.url("/section/1/item/1/detail"), maxDepth: 0, sitemap: "skip" }, key)
    const other = await api.createTenant()
    const id = mine.json.data.id
    expect((await api.get(`/v1/scraper/crawls/${id}`, other.apiKey)).status).toBe(404)
    expect((await api.get(`/v1/scraper/crawls/${id}/pages`, other.apiKey)).status).toBe(404)
    expect((await api.post(`/v1/scraper/crawls/${id}/cancel`, {}, other.apiKey)).status).toBe(404)
    expect((await api.get("/v1/scraper/crawls/crawl_nope", key)).status).toBe(404)

    for (const bad of [
      { url: site.url("/"), limit: 0 },
      { url: site.url("/"), limit: 10_001 },
      { url: site.url("/"), maxDepth: -1 },
      { url: site.url("/"), maxDepth: 21 },
      { url: site.url("/"), maxPagesPerPattern: 0 },
      { url: site.url("/"), maxPagesPerPattern: 10_001 },
      { url: site.url("/"), sitemap: "sometimes" },
      { url: site.url("/"), includePaths: ["no-slash"] },
      { url: site.url("/"), includePaths: Array.from({ length: 51 }, () => "/a") },
      { url: site.url("/"), page: { timeoutMs: 1 } },
      { url: site.url("/"), webhookSecret: "0123456789abcdef0123" },
      { url: site.url("/"), unknownField: true },
      { limit: 3 }
    ]) {
      const res = await api.post("/v1/scraper/crawls", bad, key)
      expect(res.status, JSON.stringify(bad)).toBe(400)
      expect(res.json.code).toBe("validation_error")
    }
    const unsafe = await api.post("/v1/scraper/crawls", { url: "ftp://127.0.0.1/x" }, key)
    expect(unsafe.status).toBe(422)
    for (const q of ["status=sleeping", "sort=url:asc", "limit=0", "limit=201"]) {
      expect((await api.get(`/v1/scraper/crawls?${q}`, key)).status, q).toBe(400)
    }
    for (const q of ["status=waiting", "depth=21", "depth=x"]) {
      expect((await api.get(`/v1/scraper/crawls/${id}/pages?${q}`, key)).status, q).toBe(400)
    }
    expect(CRAWL_OFFSITE_URL).not.toContain(site.origin)
  }, 60_000)
})

describe("site crawls with the SSRF guard classifying addresses (embedded)", () => {
  let server: RunningServer
  let site: CrawlSite
  let api: ReturnType<typeof client>
  let key: string

  beforeAll(async () => {
    site = await startCrawlSite({ host: "127.0.0.1" })
    // Only 127.0.0.1 is declared public: every other loopback address is private to the guard.
    server = await startServer({ SSRF_TEST_PUBLIC_ADDRESSES: "127.0.0.1", ...loopbackOnlyEnv() })
    api = client(server.baseUrl)
    key = (await api.createTenant()).apiKey
  }, 120_000)
  afterAll(async () => {
    await server?.stop()
    await site?.close()
  })

  it("skips a discovered link to a private address as unsafe, and refuses a private seed with 422", async () => {
    const created = await api.post("/v1/scraper/crawls", { url: site.url("/"), maxDepth: 1, sitemap: "skip", allowExternal: true }, key)
    expect(created.status, created.text).toBe(201)
    const crawl = await until("crawl ended", async () => {
      const res = await api.get(`/v1/scraper/crawls/${created.json.data.id}`, key)
      return res.json.data.status === "done" ? res.json.data : undefined
    }, 120_000)
    // The home page's link to 127.0.0.254 is in scope with allowExternal, and refused by the guard.
    expect(crawl.counts.skipped.unsafe).toBe(1)
    expect(crawl.counts.skipped.offsite).toBe(0)
    expect(crawl.counts.done).toBe(12) // "/" and its 11 allowed links on the site
    expect(crawl.counts.skipped.robots).toBe(2)
    const refused = await api.post("/v1/scraper/crawls", { url: "http://127.0.0.9:9/" }, key)
    expect(refused.status, refused.text).toBe(422)
    expect(refused.json.error.details[0]).toMatchObject({ path: "url", code: "non_public_address" })
  }, 150_000)
})

// Two runners need a PostgreSQL server they can share; the embedded database serves one runner only.
describe.skipIf(!process.env.DATABASE_URL)("site crawls on two PostgreSQL nodes, one killed mid-crawl", () => {
  let dbUrl: string
  const nodes: Array<{ server: RunningServer; runnerPort: number }> = []
  const sites: Array<CrawlSite> = []

  beforeAll(async () => {
    dbUrl = await createTestDatabase(process.env.DATABASE_URL!)
    // One secret key for both nodes: API keys are hashed with it, so either node knows the tenant's key.
    const env = {
      DATABASE_URL: dbUrl,
      SECRET_KEY: randomBytes(32).toString("hex"),
      ALLOW_PRIVATE_TARGETS: "true",
      ...loopbackOnlyEnv(),
      ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {})
    }
    for (let i = 0; i < 2; i++) {
      const runnerPort = await freePort()
      nodes.push({ server: await startServer({ ...env, RUNNER_PORT: String(runnerPort) }), runnerPort })
    }
    // Slow pages, so that the crawls are well under way, not over, when a node dies.
    sites.push(await startCrawlSite({ host: "127.0.0.6", pageDelayMs: 400 }), await startCrawlSite({ host: "127.0.0.7", pageDelayMs: 400 }))
  }, 120_000)
  afterAll(async () => {
    for (const n of nodes) await n.server.stop()
    await Promise.all(sites.map((s) => s.close()))
  })

  /** The node whose database session holds the shard lock of `entityId`'s shard. */
  const holderOf = async (entityId: string) => {
    const [message] = await pgQuery<{ shard_id: string }>(dbUrl, "SELECT shard_id FROM cluster_messages WHERE entity_id = $1 LIMIT 1", [entityId])
    const shard = Number(message!.shard_id.split(":")[1])
    const holders = await pgQuery<{ application_name: string; client_port: number }>(dbUrl,
      `SELECT a.application_name, a.client_port FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
       WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1::int8::oid AND l.objid = $2 AND l.objsubid = 2
         AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
      [shardLockNamespace, 1_000_000 + shard])
    const name = holders[0]?.application_name ?? ""
    return nodes.findIndex((n) => name.includes(`trawl-${n.server.process.pid}-`) || name.includes(`:${n.runnerPort}`))
  }

  it("finishes every crawl with each URL a page exactly once after the node driving one dies", async () => {
    const api0 = client(nodes[0]!.server.baseUrl)
    const key = (await api0.createTenant()).apiKey
    const ids: Array<string> = []
    for (const site of sites) {
      const created = await api0.post("/v1/scraper/crawls", { url: site.url("/"), limit: 10_000 }, key)
      expect(created.status, created.text).toBe(201)
      ids.push(created.json.data.id)
    }
    await until("both crawls under way", async () => {
      for (const id of ids) if ((await api0.get(`/v1/scraper/crawls/${id}`, key)).json.data.counts.done < 20) return undefined
      return true
    }, 120_000)
    // The node driving the first crawl dies with it mid-way.
    const victim = await holderOf(ids[0]!)
    expect(victim, "the first crawl's shard is held by one of the nodes").toBeGreaterThanOrEqual(0)
    const api = client(nodes[1 - victim]!.server.baseUrl)
    const seen = await api.get(`/v1/scraper/crawls/${ids[0]}`, key)
    expect(seen.status, seen.text).toBe(200)
    const before = seen.json.data
    expect(before.status).toBe("running")
    expect(before.counts.queued).toBeGreaterThan(0)
    await nodes[victim]!.server.stop("SIGKILL")
    for (const [i, id] of ids.entries()) {
      const crawl = await until(`crawl ${id} ended`, async () => {
        const res = await api.get(`/v1/scraper/crawls/${id}`, key)
        return ["done", "failed", "cancelled"].includes(res.json?.data?.status) ? res.json.data : undefined
      }, 300_000)
      const site = sites[i]!
      const expected = expectedCrawl(site.origin, 3)
      expect(crawl.status).toBe("done")
      expect(crawl.counts).toEqual({
        discovered: expected.discovered,
        queued: 0,
        done: expected.pages.length,
        failed: 0,
        skipped: { robots: expected.robots, filtered: 0, duplicate: expected.duplicates, offsite: expected.offsite, unsafe: 0 }
      })
      // Each URL is one page of the crawl, its job done.
      const urls: Array<string> = []
      for (let offset = 0;; offset += 200) {
        const res = await api.get(`/v1/scraper/crawls/${id}/pages?limit=200&offset=${offset}`, key)
        urls.push(...res.json.data.items.map((p: any) => new URL(p.url).pathname + new URL(p.url).search))
        expect(res.json.data.items.every((p: any) => p.status === "done")).toBe(true)
        if (!res.json.data.pagination.hasMore) break
      }
      expect([...urls].sort()).toEqual([...expected.pages].sort())
      // A fetch under way on the killed node is made again by its job's re-run: at most the pages in flight then.
      const served = site.requests().map((r) => r.path).filter((p) => !p.startsWith("/sitemap") && p !== "/robots.txt")
      expect(new Set(served)).toEqual(new Set(expected.pages))
      console.log(`crawl ${i}: ${expected.pages.length} pages, ${served.length - expected.pages.length} fetched again after the kill`)
      expect(served.length - expected.pages.length).toBeLessThanOrEqual(16)
    }
  }, 600_000)
})
