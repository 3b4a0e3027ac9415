/**
 * robots.txt, sitemaps, links and the map's loop on synthetic inputs (docs/site-crawls.md).
 */
import { gzipSync } from "node:zlib"
import { describe, expect, it } from "vitest"
import { crawlKey, extractLinks, MAX_PAGE_LINKS, pathFilter, pathGlobMatcher, siteScope } from "../../src/crawl/links.ts"
import { INLINE_CHARS, readLinks } from "../../src/crawl/link-reader.ts"
import { ROBOTS_FAILURE_TTL_MS, ROBOTS_TTL_MS, ROBOTS_USER_AGENT, RobotsCache, robotsFrom } from "../../src/crawl/robots.ts"
import { type Fetched, mapSite, type MapOptions } from "../../src/crawl/site-map.ts"
import { parseSitemap, sitemapText, walkSitemaps } from "../../src/crawl/sitemaps.ts"

const robotsText = [
  "User-agent: *",
  "Disallow: /private",
  "",
  `User-agent: ${ROBOTS_USER_AGENT}`,
  "Disallow: /private",
  "Disallow: /not-for-trawl",
  "Allow: /not-for-trawl/but-this",
  "",
  "Sitemap: https://example.com/sitemap-index.xml",
  "Sitemap: https://cdn.example.net/other.xml"
].join("\n")

describe("robots.txt", () => {
  const base = "https://example.com/robots.txt"
  it("is read for Trawl's own group, with its Allow exceptions, and lists its sitemaps", () => {
    const r = robotsFrom(base, { status: 200, body: Buffer.from(robotsText) })
    expect(r.kind).toBe("rules")
    expect(r.isAllowed("https://example.com/")).toBe(true)
    expect(r.isAllowed("https://example.com/private/x")).toBe(false)
    expect(r.isAllowed("https://example.com/not-for-trawl")).toBe(false)
    expect(r.isAllowed("https://example.com/not-for-trawl/but-this")).toBe(true)
    expect(r.sitemaps).toEqual(["https://example.com/sitemap-index.xml", "https://cdn.example.net/other.xml"])
  })

  it("falls back to the * group when no group names Trawl", () => {
    const r = robotsFrom(base, { status: 200, body: Buffer.from("User-agent: OtherBot\nDisallow: /\n\nUser-agent: *\nDisallow: /x\n") })
    expect(r.isAllowed("https://example.com/a")).toBe(true)
    expect(r.isAllowed("https://example.com/x/1")).toBe(false)
  })

  it("allows everything on a 4xx, disallows everything on a 5xx, a 429 or no answer", () => {
    for (const status of [401, 403, 404, 410]) expect(robotsFrom(base, { status, body: null }).isAllowed("https://example.com/a")).toBe(true)
    for (const fetched of [{ status: 500, body: null }, { status: 503, body: null }, { status: 429, body: null }, null]) {
      const r = robotsFrom(base, fetched)
      expect(r.kind).toBe("unavailable")
      expect(r.isAllowed("https://example.com/")).toBe(false)
    }
  })

  it("is fetched once per origin while fresh, again once stale; a failure is kept for less time", async () => {
    let now = 0
    const asked: Array<string> = []
    let status = 200
    const cache = new RobotsCache(async (url) => {
      asked.push(url)
      return { status, body: Buffer.from("User-agent: *\nDisallow: /no\n") }
    }, 100, () => now)
    const page = new URL("https://example.com/a")
    await Promise.all([cache.get(page), cache.get(new URL("https://example.com/b")), cache.get(page)])
    expect(asked).toEqual(["https://example.com/robots.txt"])
    await cache.get(new URL("http://example.com/a"))
    expect(asked).toHaveLength(2)
    now = ROBOTS_TTL_MS - 1
    await cache.get(page)
    expect(asked).toHaveLength(2)
    now = ROBOTS_TTL_MS + 1
    status = 503
    expect((await cache.get(page)).kind).toBe("unavailable")
    expect(asked).toHaveLength(3)
    now += ROBOTS_FAILURE_TTL_MS + 1
    status = 200
    expect((await cache.get(page)).kind).toBe("rules")
    expect(asked).toHaveLength(4)
  })
})

describe("sitemaps", () => {
  it("reads urlsets and indexes, with prefixes, CDATA, entities and comments", () => {
    expect(parseSitemap(`<?xml version="1.0"?><urlset xmlns="x"><url><loc> https://a.example/1?x=1&amp;y=2 </loc></url><!-- <loc>https://a.example/no</loc> --><url><loc><![CDATA[https://a.example/2]]></loc></url></urlset>`))
      .toEqual({ kind: "urlset", locs: ["https://a.example/1?x=1&y=2", "https://a.example/2"] })
    expect(parseSitemap(`<sm:sitemapindex xmlns:sm="x"><sm:sitemap><sm:loc>https://a.example/s1.xml</sm:loc></sm:sitemap></sm:sitemapindex>`))
      .toEqual({ kind: "index", locs: ["https://a.example/s1.xml"] })
    expect(parseSitemap("https://a.example/1\nhttps://a.example/2\n")).toEqual({ kind: "urlset", locs: ["https://a.example/1", "https://a.example/2"] })
    expect(parseSitemap("<html><body>not a sitemap</body></html>").kind).toBe("invalid")
  })

  it("reads a sitemap of tags never closed in one pass (a regular expression rescanned the rest from each)", () => {
    // 1 MB each: minutes of a backtracking scan, a moment of a forward one
    expect(parseSitemap("<urlset>" + "<loc ".repeat(200_000))).toEqual({ kind: "urlset", locs: [] })
    expect(parseSitemap("<urlset>" + "<loc>x".repeat(170_000))).toEqual({ kind: "urlset", locs: [] })
    expect(parseSitemap("<urlset><url><loc>https://a.example/1</loc></url>" + "<!--".repeat(250_000))).toEqual({ kind: "urlset", locs: ["https://a.example/1"] })
    // what comes before an unclosed tag is still read
    expect(parseSitemap("<urlset><loc>https://a.example/1</loc><loc>https://a.example/2").locs).toEqual(["https://a.example/1"])
  })

  it("unpacks gzip by its magic bytes, within the size bound", () => {
    const xml = `<urlset><url><loc>https://a.example/1</loc></url></urlset>`
    expect(sitemapText(gzipSync(xml), 1000)).toBe(xml)
    expect(sitemapText(gzipSync("x".repeat(5000)), 1000)).toBeNull()
    expect(sitemapText(Buffer.from("x".repeat(1001)), 1000)).toBeNull()
    expect(sitemapText(Buffer.from([0x1f, 0x8b, 1, 2, 3]), 1000)).toBeNull()
  })

  it("follows indexes within their depth and the file bound, each sitemap once", async () => {
    const files: Record<string, string> = {
      "https://a.example/index.xml": `<sitemapindex><sitemap><loc>https://a.example/s1.xml</loc></sitemap><sitemap><loc>https://a.example/nested.xml</loc></sitemap><sitemap><loc>https://a.example/s1.xml</loc></sitemap><sitemap><loc>https://evil.example/s.xml</loc></sitemap></sitemapindex>`,
      "https://a.example/s1.xml": `<urlset><url><loc>https://a.example/p1</loc></url><url><loc>https://a.example/p2</loc></url></urlset>`,
      "https://a.example/nested.xml": `<sitemapindex><sitemap><loc>https://a.example/deeper.xml</loc></sitemap></sitemapindex>`,
      "https://a.example/deeper.xml": `<urlset><url><loc>https://a.example/p3</loc></url></urlset>`
    }
    const walk = async (maxIndexDepth: number, maxFiles: number) => {
      const fetched: Array<string> = []
      const pages: Array<string> = []
      const r = await walkSitemaps(["https://a.example/index.xml"], async (u) => {
        fetched.push(u)
        return files[u] === undefined ? null : Buffer.from(files[u]!)
      }, {
        bounds: { maxFiles, maxBytes: 10_000, maxIndexDepth },
        accept: (u) => u.startsWith("https://a.example/"),
        onPage: (u) => void pages.push(u),
        wantMore: () => true
      })
      return { ...r, fetched, pages }
    }
    const deep = await walk(2, 10)
    expect(deep.pages).toEqual(["https://a.example/p1", "https://a.example/p2", "https://a.example/p3"])
    expect(deep.fetched).toEqual(["https://a.example/index.xml", "https://a.example/s1.xml", "https://a.example/nested.xml", "https://a.example/deeper.xml"])
    const shallow = await walk(1, 10)
    expect(shallow.pages).toEqual(["https://a.example/p1", "https://a.example/p2"])
    expect(shallow.fetched).not.toContain("https://a.example/deeper.xml")
    const few = await walk(2, 2)
    expect(few.fetched).toHaveLength(2)
    expect(few.skipped).toBe(1)
  })
})

describe("links", () => {
  it("reads a large page's links off the event loop, with the same answer", async () => {
    const big = `<html><body>${Array.from({ length: 40_000 }, (_, i) => `<p><a href="/item/${i}">item ${i}</a></p>`).join("")}</body></html>`
    expect(big.length).toBeGreaterThan(INLINE_CHARS)
    let ticks = 0
    const timer = setInterval(() => ticks++, 5)
    try {
      const links = await readLinks(big, "https://a.example/")
      // the timer ran while the links were read: the read did not hold the event loop
      expect(ticks).toBeGreaterThan(0)
      expect(links).toEqual(extractLinks(big, "https://a.example/"))
      expect(links).toHaveLength(MAX_PAGE_LINKS)
    } finally {
      clearInterval(timer)
    }
    expect(await readLinks(`<a href="/small">small</a>`, "https://a.example/")).toEqual(["https://a.example/small"])
  })

  it("are read with <base href>, without fragments, nofollow, mailto: and other schemes, every sighting kept", () => {
    const html = `<html><head><base href="/docs/v2/"></head><body>
      <a href="intro">intro</a><a href="intro#part">again</a><a href="#top">self</a>
      <a href="/abs">abs</a><a href="https://other.example/x">other</a><area href="map-area">
      <a href="mailto:a@b.c">m</a><a href="javascript:alert(1)">j</a><a href="tel:1">t</a><a href="data:text/html,x">d</a>
      <a href="ftp://a.example/f">ftp</a><a rel="noopener NoFollow" href="/skipped">n</a><a href="">empty</a><a>none</a>
    </body></html>`
    expect(extractLinks(html, "https://a.example/docs/page")).toEqual([
      "https://a.example/docs/v2/intro",
      "https://a.example/docs/v2/intro",
      "https://a.example/abs",
      "https://other.example/x",
      "https://a.example/docs/v2/map-area"
    ])
  })

  it("are none on a page whose robots meta says nofollow", () => {
    expect(extractLinks(`<head><meta name="ROBOTS" content="noindex, nofollow"></head><a href="/x">x</a>`, "https://a.example/")).toEqual([])
    expect(extractLinks(`<head><meta name="robots" content="noindex"></head><a href="/x">x</a>`, "https://a.example/")).toEqual(["https://a.example/x"])
  })

  it("are keyed as page history keys them, and without the query when asked", () => {
    expect(crawlKey("HTTP://A.Example:80/p?b=2&a=1#frag")).toBe("http://a.example/p?a=1&b=2")
    expect(crawlKey("https://a.example/p?b=2&a=1", { ignoreQueryParameters: true })).toBe("https://a.example/p")
    expect(crawlKey("mailto:a@b.c")).toBeNull()
    expect(crawlKey("not a url")).toBeNull()
  })

  it("are read from deeply nested pages in one pass, and at most MAX_PAGE_LINKS of them", () => {
    // 400 000 nested elements: linkedom's DOM held the event loop for over a minute
    const deep = "<html><body>" + "<div>".repeat(400_000) + '<a href="/x">x</a>' + "</div>".repeat(400_000) + "</body></html>"
    expect(extractLinks(deep, "https://a.example/")).toEqual(["https://a.example/x"])
    const many = "<body>" + Array.from({ length: MAX_PAGE_LINKS + 5 }, (_, i) => `<a href="/p${i}">p</a>`).join("") + "</body>"
    const links = extractLinks(many, "https://a.example/")
    expect(links).toHaveLength(MAX_PAGE_LINKS)
    expect(links.at(-1)).toBe(`https://a.example/p${MAX_PAGE_LINKS - 1}`)
  })

  it("match path globs as their regular-expression reading does, on random globs and paths", () => {
    const asRegExp = (glob: string) =>
      new RegExp("^" + glob.replace(/\*\*|\*|\?|[.+^${}()|[\]\\]/g, (t) => t === "**" ? ".*" : t === "*" ? "[^/]*" : t === "?" ? "[^/]" : "\\" + t) + "$", "u")
    let seed = 11
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
    const pick = (alphabet: ReadonlyArray<string>, max: number) => Array.from({ length: Math.floor(next() * max) }, () => alphabet[Math.floor(next() * alphabet.length)]).join("")
    for (let i = 0; i < 5000; i++) {
      const glob = "/" + pick(["a", "b", "/", "*", "**", "?", "."], 7)
      const path = "/" + pick(["a", "b", "/", "."], 9)
      expect(pathGlobMatcher(glob)(path), `${glob} ~ ${path}`).toBe(asRegExp(glob).test(path))
    }
  })

  it("match a glob of many stars in time linear in the path (a backtracking regex ran for minutes on this)", () => {
    const long = "/" + "a".repeat(5000)
    expect(pathGlobMatcher("/*a*a*a*a*a*a*a*a*b")(long)).toBe(false)
    expect(pathGlobMatcher("/**a**a**a**a**a**b")(long)).toBe(false)
    expect(pathGlobMatcher("/*a*a*a*a*a*a*a*a*a")(long)).toBe(true)
  })

  it("are filtered by path globs (exclude wins) and by site scope", () => {
    expect(pathGlobMatcher("/blog/*")("/blog/a")).toBe(true)
    expect(pathGlobMatcher("/blog/*")("/blog/a/b")).toBe(false)
    expect(pathGlobMatcher("/blog/**")("/blog/a/b")).toBe(true)
    expect(pathGlobMatcher("/p?.html")("/p1.html")).toBe(true)
    expect(pathGlobMatcher("/a.b")("/axb")).toBe(false)
    expect(pathGlobMatcher("/x/?")("/x/é")).toBe(true)
    const paths = pathFilter(["/blog/**", "/about"], ["/blog/drafts/**"])
    expect(["/blog/x", "/about", "/blog/drafts/1", "/other"].map((p) => paths(new URL(`https://a.example${p}?q=/blog/x`)))).toEqual([true, true, false, false])
    expect(pathFilter([], [])(new URL("https://a.example/anything"))).toBe(true)
    const site = siteScope(new URL("https://www.example.co.uk/"), {})
    const subs = siteScope(new URL("https://www.example.co.uk/"), { allowSubdomains: true })
    const hosts = ["https://www.example.co.uk:8443/x", "http://www.example.co.uk/", "https://docs.example.co.uk/", "https://example.co.uk/", "https://other.co.uk/"]
    expect(hosts.map((h) => site(new URL(h)))).toEqual([true, true, false, false, false])
    expect(hosts.map((h) => subs(new URL(h)))).toEqual([true, true, true, true, false])
  })
})

describe("mapSite", () => {
  const origin = "https://a.example"
  const page = (...links: Array<string>) => links.map((l) => `<a href="${l}">x</a>`).join("")
  const site: Record<string, string> = {
    "/robots.txt": "User-agent: *\nDisallow: /private\nSitemap: https://a.example/index.xml\n",
    "/index.xml": `<sitemapindex><sitemap><loc>https://a.example/s.xml.gz</loc></sitemap></sitemapindex>`,
    "/": page("/a", "/a#x", "/b?y=1&x=2", "/b?x=2&y=1", "/private/p", "https://other.example/", "mailto:x@y.z"),
    "/a": page("/c", "/"),
    "/b": page("/a"),
    "/c": page("/d"),
    "/d": page(),
    "/from-sitemap": page("/e"),
    "/e": page()
  }
  const run = async (options: Partial<MapOptions>, safe: (u: URL) => boolean = () => true) => {
    const fetched: Array<string> = []
    const fetch = async (url: string): Promise<Fetched> => {
      fetched.push(url)
      const u = new URL(url)
      if (u.pathname === "/s.xml.gz") {
        return { status: 200, finalUrl: url, contentType: "application/gzip", body: gzipSync(`<urlset><url><loc>${origin}/from-sitemap</loc></url><url><loc>${origin}/a</loc></url></urlset>`) }
      }
      const body = site[u.pathname]
      return body === undefined
        ? { status: 404, finalUrl: url, contentType: "text/html", body: Buffer.from("no") }
        : { status: 200, finalUrl: url, contentType: u.pathname.endsWith(".xml") || u.pathname.endsWith(".txt") ? "text/plain" : "text/html", body: Buffer.from(body) }
    }
    const robots = new RobotsCache(async (u) => fetch(u))
    const result = await mapSite({
      url: `${origin}/`, limit: 100, includePaths: [], excludePaths: [], allowSubdomains: false, ignoreQueryParameters: false,
      sitemap: "include", budgetMs: 10_000, ...options
    }, { fetch, robots, isSafe: async (u) => safe(u), concurrency: 2 })
    return { ...result, fetched }
  }

  it("lists the seed, the sitemap's pages and the links found, each URL once, each fetched once", async () => {
    const r = await run({})
    expect([...r.urls].sort()).toEqual(["/", "/a", "/b?x=2&y=1", "/c", "/d", "/e", "/from-sitemap"].map((p) => origin + p).sort())
    expect(r.urls[0]).toBe(`${origin}/`)
    expect(new Set(r.fetched).size).toBe(r.fetched.length)
    expect(r.fetched).not.toContain(`${origin}/private/p`)
    expect(r.stoppedBy).toBe("done")
    expect(r.skipped).toMatchObject({ robots: 1, offsite: 1 })
    expect(r.sitemapsFetched).toBe(3) // the index, its gzipped child, /sitemap.xml (a 404)
  })

  it("keeps only sitemap URLs with sitemap=only, and fetches no page", async () => {
    const r = await run({ sitemap: "only" })
    expect([...r.urls].sort()).toEqual([`${origin}/a`, `${origin}/from-sitemap`])
    expect(r.pagesFetched).toBe(0)
  })

  it("reads no sitemap with sitemap=skip, and honours the limit, paths, query keys and the guard", async () => {
    const skip = await run({ sitemap: "skip" })
    expect(skip.fetched.some((u) => u.includes(".xml"))).toBe(false)
    expect(skip.urls).not.toContain(`${origin}/from-sitemap`)
    const limited = await run({ limit: 3 })
    expect(limited.urls).toHaveLength(3)
    expect(limited.stoppedBy).toBe("limit")
    const filtered = await run({ sitemap: "skip", excludePaths: ["/c", "/d"] })
    expect([...filtered.urls].sort()).toEqual(["/", "/a", "/b?x=2&y=1"].map((p) => origin + p).sort())
    const noQuery = await run({ sitemap: "skip", ignoreQueryParameters: true })
    expect(noQuery.urls).toContain(`${origin}/b`)
    expect(noQuery.urls.some((u) => u.includes("?"))).toBe(false)
    const guarded = await run({ sitemap: "skip" }, (u) => u.pathname !== "/a")
    expect(guarded.urls).not.toContain(`${origin}/a`)
    expect(guarded.skipped.unsafe).toBe(1)
  })

  it("counts a URL the guard refuses as unsafe before asking its host's robots.txt", async () => {
    // A host of the site whose robots.txt could not be read (the guard refused its fetch) would
    // otherwise count as disallowed by robots.txt.
    const internal = "https://intranet.a.example/"
    const unread = new RobotsCache(async (u) => (new URL(u).hostname === "intranet.a.example" ? null : { status: 404, body: null }))
    const asked: Array<string> = []
    const robots = { get: (u: URL) => (asked.push(u.hostname), unread.get(u)) } as unknown as RobotsCache
    const r = await mapSite({
      url: `${origin}/`, limit: 100, includePaths: [], excludePaths: [], allowSubdomains: true, ignoreQueryParameters: false,
      sitemap: "skip", budgetMs: 5000
    }, {
      fetch: async (url) => ({ status: 200, finalUrl: url, contentType: "text/html", body: Buffer.from(page(internal, `${internal}x`)) }),
      robots,
      isSafe: async (u) => u.hostname !== "intranet.a.example"
    })
    expect(r.urls).toEqual([`${origin}/`])
    expect(r.skipped).toMatchObject({ unsafe: 2, robots: 0 })
    expect(asked).not.toContain("intranet.a.example")
  })

  it("does not read the links of a page that redirected off the site", async () => {
    const fetch = async (url: string): Promise<Fetched> => {
      const u = new URL(url)
      if (u.pathname === "/robots.txt") return { status: 404, finalUrl: url, contentType: null, body: null }
      if (u.pathname === "/") return { status: 200, finalUrl: url, contentType: "text/html", body: Buffer.from(page("/moved", "/stay")) }
      if (u.pathname === "/moved") return { status: 200, finalUrl: "https://other.example/landing", contentType: "text/html", body: Buffer.from(page("/from-elsewhere")) }
      return { status: 200, finalUrl: url, contentType: "text/html", body: Buffer.from(page()) }
    }
    const r = await mapSite({
      url: `${origin}/`, limit: 100, includePaths: [], excludePaths: [], allowSubdomains: false, ignoreQueryParameters: false,
      sitemap: "skip", budgetMs: 5000
    }, { fetch, robots: new RobotsCache(async (u) => fetch(u)), isSafe: async () => true })
    expect([...r.urls].sort()).toEqual([`${origin}/`, `${origin}/moved`, `${origin}/stay`])
  })

  it("counts every repeated sighting of a key as a duplicate, however the page spells it", async () => {
    const seed = `<a href="/x">1</a><a href="/x#a">2</a><a href="/x">3</a><a href="/y?b=1&a=2">4</a><a href="/y?a=2&b=1">5</a><a href="#top">6</a><a href="/">7</a>`
    const fetch = async (url: string): Promise<Fetched> => {
      const u = new URL(url)
      if (u.pathname === "/robots.txt") return { status: 404, finalUrl: url, contentType: "text/plain", body: Buffer.from("") }
      return { status: 200, finalUrl: url, contentType: "text/html", body: Buffer.from(u.pathname === "/" ? seed : "leaf") }
    }
    const r = await mapSite({
      url: `${origin}/`, limit: 100, includePaths: [], excludePaths: [], allowSubdomains: false, ignoreQueryParameters: false,
      sitemap: "skip", budgetMs: 5000
    }, { fetch, robots: new RobotsCache(async (u) => fetch(u)), isSafe: async () => true })
    expect([...r.urls].sort()).toEqual([`${origin}/`, `${origin}/x`, `${origin}/y?a=2&b=1`])
    // /x#a, the second /x, /y in the other order, and the seed again (#top is the page itself: not a link)
    expect(r.skipped.duplicate).toBe(4)
  })

  it("does not read the links of a page whose final URL robots.txt disallows, as a crawl does not", async () => {
    const fetch = async (url: string): Promise<Fetched> => {
      const u = new URL(url)
      if (u.pathname === "/robots.txt") return { status: 200, finalUrl: url, contentType: "text/plain", body: Buffer.from("User-agent: *\nDisallow: /private\n") }
      if (u.pathname === "/") return { status: 200, finalUrl: url, contentType: "text/html", body: Buffer.from(page("/to-private", "/stay")) }
      if (u.pathname === "/to-private") return { status: 200, finalUrl: `${origin}/private/x`, contentType: "text/html", body: Buffer.from(page("/leaked")) }
      return { status: 200, finalUrl: url, contentType: "text/html", body: Buffer.from(page()) }
    }
    const r = await mapSite({
      url: `${origin}/`, limit: 100, includePaths: [], excludePaths: [], allowSubdomains: false, ignoreQueryParameters: false,
      sitemap: "skip", budgetMs: 5000
    }, { fetch, robots: new RobotsCache(async (u) => fetch(u)), isSafe: async () => true })
    expect([...r.urls].sort()).toEqual([`${origin}/`, `${origin}/stay`, `${origin}/to-private`])
  })

  it("fetches an origin with a Crawl-delay one page at a time, that long apart", async () => {
    let inFlight = 0
    let most = 0
    const starts: Array<number> = []
    const fetch = async (url: string): Promise<Fetched> => {
      const u = new URL(url)
      if (u.pathname === "/robots.txt") return { status: 200, finalUrl: url, contentType: "text/plain", body: Buffer.from("User-agent: *\nCrawl-delay: 0.2\n") }
      inFlight++
      most = Math.max(most, inFlight)
      starts.push(Date.now())
      await new Promise((r) => setTimeout(r, 20))
      inFlight--
      return { status: 200, finalUrl: url, contentType: "text/html", body: Buffer.from(u.pathname === "/" ? page("/1", "/2", "/3") : page()) }
    }
    const r = await mapSite({
      url: `${origin}/`, limit: 100, includePaths: [], excludePaths: [], allowSubdomains: false, ignoreQueryParameters: false,
      sitemap: "skip", budgetMs: 10_000
    }, { fetch, robots: new RobotsCache(async (u) => fetch(u)), isSafe: async () => true, concurrency: 4 })
    expect(r.urls).toHaveLength(4)
    expect(most).toBe(1)
    // each page starts at least the delay after the one before it ended (20 ms of fetch + 200 ms)
    for (let i = 1; i < starts.length; i++) expect(starts[i]! - starts[i - 1]!).toBeGreaterThanOrEqual(215)
  })

  it("stops at its budget", async () => {
    const slowFetch = (url: string, _t: number, signal: AbortSignal): Promise<Fetched> =>
      new URL(url).pathname === "/robots.txt"
        ? Promise.resolve({ status: 404, finalUrl: url, contentType: null, body: null })
        : new Promise((resolve) => signal.addEventListener("abort", () => resolve(null), { once: true }))
    const r = await mapSite({
      url: `${origin}/`, limit: 100, includePaths: [], excludePaths: [], allowSubdomains: false, ignoreQueryParameters: false,
      sitemap: "include", budgetMs: 200
    }, { fetch: slowFetch, robots: new RobotsCache(async (u) => slowFetch(u, 0, new AbortController().signal)), isSafe: async () => true })
    expect(r.stoppedBy).toBe("budget")
    expect(r.urls).toEqual([`${origin}/`])
    // A robots.txt that never answers does not hold the map past its budget either.
    const stuck = await mapSite({
      url: `${origin}/`, limit: 100, includePaths: [], excludePaths: [], allowSubdomains: false, ignoreQueryParameters: false,
      sitemap: "include", budgetMs: 200
    }, { fetch: slowFetch, robots: new RobotsCache(() => new Promise(() => {})), isSafe: async () => true })
    expect(stuck).toMatchObject({ stoppedBy: "budget", urls: [], pagesFetched: 0 })
  })
})
