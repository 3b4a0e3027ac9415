/**
 * `POST /v1/scraper/map` through the real HTTP interface against loopback fixture sites: the exact
 * URL sets, robots.txt honoured (and fetched once per origin), sitemap indexes with a gzipped child,
 * bounds, validation, 402 and 422, and no URL fetched twice (docs/site-crawls.md).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FixtureSite, loopbackOnlyEnv, OFFSITE_URL, startFixtureSite } from "./support/fixture-site.ts"
import { backends, client, type RunningServer, startServer } from "./support/server-process.ts"

describe.each(backends())("site map over HTTP ($name)", (backend) => {
  let server: RunningServer
  let site: FixtureSite
  let down: FixtureSite
  let bare: FixtureSite
  let api: ReturnType<typeof client>
  let key: string
  let price: string

  beforeAll(async () => {
    site = await startFixtureSite({ hosts: ["127.0.0.1"] })
    down = await startFixtureSite({ hosts: ["127.0.0.3"], robots: "error" })
    bare = await startFixtureSite({ hosts: ["127.0.0.4"], robots: "missing" })
    server = await startServer({ ...(await backend.env()), ALLOW_PRIVATE_TARGETS: "true", ...loopbackOnlyEnv() })
    api = client(server.baseUrl)
    key = (await api.createTenant()).apiKey
    const pricing = await api.get("/v1/billing/pricing", key)
    price = pricing.json.data.items.find((i: any) => i.serviceKey === "scraper.map" && i.item === "map")?.price
  })
  afterAll(async () => {
    await server?.stop()
    await Promise.all([site?.close(), down?.close(), bare?.close()])
  })

  const map = (body: Record<string, unknown>, apiKey = key) => api.post("/v1/scraper/map", body, apiKey)
  /** What `run` made the site serve, in order. */
  const served = async <A>(fixture: FixtureSite, run: () => Promise<A>) => {
    const before = fixture.requests().length
    const result = await run()
    return { result, requests: fixture.requests().slice(before) }
  }
  const paths = (urls: ReadonlyArray<string>, fixture = site) => urls.map((u) => u.replace(fixture.origins[0]!, "")).sort()

  it("lists the site's sitemap URLs and linked pages exactly, honours robots.txt, and fetches nothing twice", async () => {
    const { result: res, requests } = await served(site, () => map({ url: site.url("/site/") }))
    expect(res.status, res.text).toBe(200)
    const data = res.json.data
    expect(paths(data.urls)).toEqual([
      "/site/",
      "/site/a",
      "/site/a?x=1&y=2",
      "/site/b",
      "/site/deep/c",
      "/site/deep/d",
      "/site/from-root-sitemap",
      "/site/from-sitemap-1",
      "/site/from-sitemap-2",
      "/site/from-sitemap-3"
    ])
    expect(data.urls[0]).toBe(site.url("/site/"))
    expect(data).toMatchObject({ url: site.url("/site/"), count: 10, stoppedBy: "done", sitemapsFetched: 4 })
    expect(data.skipped.robots).toBe(2) // /site/private/secret for everyone, /site/no-trawl for TrawlBot
    // The sitemap's offsite entry; the home page's link to it is then a URL already judged.
    expect(data.skipped.offsite).toBe(1)
    expect(data.urls).not.toContain(OFFSITE_URL)
    // Each URL once: the pages listed, the four sitemaps, robots.txt; nothing disallowed or nofollowed.
    expect([...requests].sort()).toEqual([
      "/robots.txt",
      "/site/",
      "/site/a",
      "/site/a?x=1&y=2",
      "/site/b",
      "/site/deep/c",
      "/site/deep/d",
      "/site/from-root-sitemap",
      "/site/from-sitemap-1",
      "/site/from-sitemap-2",
      "/site/from-sitemap-3",
      "/site/sitemap-index.xml",
      "/site/sitemap-more.xml",
      "/site/sitemap-pages.xml.gz",
      "/sitemap.xml"
    ])
    expect(data.pagesFetched).toBe(10)
  })

  it("reads only sitemaps with sitemap=only, and robots.txt is not fetched again for the origin", async () => {
    const { result: res, requests } = await served(site, () => map({ url: site.url("/site/"), sitemap: "only" }))
    expect(res.status, res.text).toBe(200)
    expect(paths(res.json.data.urls)).toEqual(["/site/a", "/site/from-root-sitemap", "/site/from-sitemap-1", "/site/from-sitemap-2", "/site/from-sitemap-3"])
    expect(res.json.data.pagesFetched).toBe(0)
    expect([...requests].sort()).toEqual(["/site/sitemap-index.xml", "/site/sitemap-more.xml", "/site/sitemap-pages.xml.gz", "/sitemap.xml"])
  })

  it("follows links only with sitemap=skip, and applies path globs, query keys and the limit", async () => {
    const skip = await served(site, () => map({ url: site.url("/site/"), sitemap: "skip" }))
    expect(paths(skip.result.json.data.urls)).toEqual(["/site/", "/site/a", "/site/a?x=1&y=2", "/site/b", "/site/deep/c", "/site/deep/d"])
    expect(skip.requests.some((r) => r.includes("sitemap"))).toBe(false)
    expect(new Set(skip.requests).size).toBe(skip.requests.length)

    const excluded = await map({ url: site.url("/site/"), sitemap: "skip", excludePaths: ["/site/deep/**"] })
    expect(paths(excluded.json.data.urls)).toEqual(["/site/", "/site/a", "/site/a?x=1&y=2", "/site/b"])
    const included = await map({ url: site.url("/site/"), includePaths: ["/site/from-*"] })
    expect(paths(included.json.data.urls)).toEqual(["/site/from-root-sitemap", "/site/from-sitemap-1", "/site/from-sitemap-2", "/site/from-sitemap-3"])
    const noQuery = await map({ url: site.url("/site/"), sitemap: "skip", ignoreQueryParameters: true })
    expect(paths(noQuery.json.data.urls)).toEqual(["/site/", "/site/a", "/site/b", "/site/deep/c", "/site/deep/d"])

    const limited = await served(site, () => map({ url: site.url("/site/"), limit: 3 }))
    expect(limited.result.json.data).toMatchObject({ count: 3, stoppedBy: "limit" })
    expect(limited.result.json.data.urls).toHaveLength(3)
    // A limit met by the sitemaps needs no page fetched beyond them.
    expect(limited.result.json.data.pagesFetched).toBeLessThanOrEqual(3)
  })

  it("stops at its budget and answers what it found", async () => {
    const res = await map({ url: site.url("/site/slow-start"), sitemap: "skip", budgetMs: 1000 })
    expect(res.status, res.text).toBe(200)
    expect(res.json.data.stoppedBy, res.text).toBe("budget")
    expect(res.json.data.urls[0]).toBe(site.url("/site/slow-start"))
    expect(res.json.data.urls.length).toBeGreaterThan(1)
  })

  it("keeps the domain's politeness across maps: concurrent maps of one site fetch at most its perDomainConcurrency pages at once", async () => {
    // robots.txt read already (cached), so what the site sees at once are page fetches.
    expect((await map({ url: site.url("/site/slow-start"), sitemap: "skip", limit: 1 })).status).toBe(200)
    site.peakInFlight(true)
    // half of them read the sitemaps too, whose fetches wait for a slot as pages do, past the budget
    const maps = await Promise.all(Array.from({ length: 4 }, (_, i) => map({ url: site.url("/site/slow-start"), sitemap: i % 2 === 0 ? "skip" : "include", budgetMs: 3000 })))
    for (const res of maps) {
      expect(res.status, res.text).toBe(200)
      expect(res.json.data.stoppedBy).toBe("budget")
    }
    // four maps of four slow pages each, four at a time per map: 16 at once without the domain's slots
    expect(site.peakInFlight().get("127.0.0.1")).toBeLessThanOrEqual(2)
  })

  it("lists nothing when robots.txt answers 5xx, and everything when it is missing (4xx)", async () => {
    const refused = await served(down, () => map({ url: down.url("/site/") }))
    expect(refused.result.status, refused.result.text).toBe(200)
    expect(refused.result.json.data).toMatchObject({ urls: [], count: 0, pagesFetched: 0 })
    expect(refused.result.json.data.skipped.robots).toBeGreaterThanOrEqual(1)
    expect(refused.requests).toEqual(["/robots.txt"])

    const open = await map({ url: bare.url("/site/"), sitemap: "skip" })
    expect(paths(open.json.data.urls, bare)).toEqual([
      "/site/", "/site/a", "/site/a?x=1&y=2", "/site/b", "/site/deep/c", "/site/deep/d", "/site/no-trawl", "/site/private/secret"
    ])
  })

  it("refuses bad bodies with 400 and every offending path, and an unsafe URL with 422", async () => {
    const bad = await map({ url: "not a url", limit: 5001, sitemap: "sometimes", budgetMs: 10, includePaths: ["no-slash"], extra: 1 })
    expect(bad.status, bad.text).toBe(400)
    expect(bad.json).toMatchObject({ status: "error", code: "validation_error" })
    const detailPaths = bad.json.error.details.map((d: any) => d.path)
    for (const p of ["url", "limit", "sitemap", "budgetMs", "includePaths[0]", "extra"]) {
      expect(detailPaths.some((d: string) => d === p || d.replace(/\.(\d+)/g, "[$1]") === p), `${p} in ${JSON.stringify(detailPaths)}`).toBe(true)
    }
    expect((await map({ url: site.url("/"), limit: 0 })).status).toBe(400)
    expect((await map({})).status).toBe(400)
    const unsafe = await map({ url: "ftp://127.0.0.1/" })
    expect(unsafe.status, unsafe.text).toBe(422)
    expect(unsafe.json.code).toBe("unsafe_url")
  })

  it("costs its price, and answers 402 without the credit before fetching anything", async () => {
    expect(price).toMatch(/^\d+\.\d+$/)
    const broke = await api.createTenant({ credits: "0" })
    const refused = await served(bare, () => map({ url: bare.url("/site/b") }, broke.apiKey))
    expect(refused.result.status, refused.result.text).toBe(402)
    expect(refused.result.json.code).toBe("insufficient_credit")
    expect(refused.requests).toEqual([])

    const one = await api.createTenant({ credits: price })
    expect((await map({ url: bare.url("/site/b"), sitemap: "skip" }, one.apiKey)).status).toBe(200)
    expect((await map({ url: bare.url("/site/b"), sitemap: "skip" }, one.apiKey)).status).toBe(402)
    const debits = await api.get("/v1/billing/me/transactions?type=debit&serviceKey=scraper.map", one.apiKey)
    expect(debits.status, debits.text).toBe(200)
    expect(debits.json.data.items).toHaveLength(1)
    expect(debits.json.data.items[0]).toMatchObject({ serviceKey: "scraper.map", resourceType: "site_map", amount: `-${price}` })
  })

  it("is in the OpenAPI document with its bounds", async () => {
    const doc = (await api.get("/v1/openapi.json")).json
    const op = doc.paths["/v1/scraper/map"].post
    expect(op).toBeDefined()
    expect(JSON.stringify(doc)).toMatch(/"maximum":5000/)
    expect(JSON.stringify(doc)).toMatch(/"maximum":60000/)
  })
})

describe("site map with the SSRF guard classifying addresses (embedded)", () => {
  let server: RunningServer
  let site: FixtureSite
  let other: FixtureSite
  let api: ReturnType<typeof client>
  let key: string

  beforeAll(async () => {
    site = await startFixtureSite({ hosts: ["127.0.0.1"] })
    other = await startFixtureSite({ hosts: ["127.0.0.5"] })
    // Private targets are not allowed: only 127.0.0.1 is declared public, so every fetch and every
    // listed URL passes the guard's real classification, and 127.0.0.5 stays loopback (refused).
    server = await startServer({ SSRF_TEST_PUBLIC_ADDRESSES: "127.0.0.1", ...loopbackOnlyEnv() })
    api = client(server.baseUrl)
    key = (await api.createTenant()).apiKey
  })
  afterAll(async () => {
    await server?.stop()
    await Promise.all([site?.close(), other?.close()])
  })

  it("maps a public site through the guard, and refuses a seed on a private address with 422 before fetching", async () => {
    const res = await api.post("/v1/scraper/map", { url: site.url("/site/"), sitemap: "skip" }, key)
    expect(res.status, res.text).toBe(200)
    expect(res.json.data.urls.map((u: string) => u.replace(site.origins[0]!, "")).sort())
      .toEqual(["/site/", "/site/a", "/site/a?x=1&y=2", "/site/b", "/site/deep/c", "/site/deep/d"])
    const refused = await api.post("/v1/scraper/map", { url: other.url("/site/") }, key)
    expect(refused.status, refused.text).toBe(422)
    expect(refused.json).toMatchObject({ code: "unsafe_url" })
    expect(refused.json.error.details[0]).toMatchObject({ path: "url", code: "non_public_address" })
    expect(other.requests()).toEqual([])
  })
})
