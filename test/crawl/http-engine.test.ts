import type { AddressInfo } from "node:net"
import { brotliCompressSync, gzipSync, zstdCompressSync } from "node:zlib"
import { gotScraping } from "got-scraping"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createHttpEngine } from "../../src/crawl/engines/http.ts"
import { classifyAddress } from "../../src/crawl/ssrf.ts"
import { ARTICLE, type Fixture, fakeLookup, gzipPage, html, jsChallenge, page, startFixture } from "./fixture.ts"

let site: Fixture
const engine = createHttpEngine({ maxBodyBytes: 64 * 1024 })

beforeAll(async () => {
  site = await startFixture({
    "/ok": page(200, ARTICLE),
    "/gone": page(410, html("<h1>Gone</h1>")),
    "/boom": page(500, html("<h1>Internal error</h1>")),
    "/forbidden": page(403, html("<h1>Forbidden</h1>")),
    "/throttled": page(429, html("<h1>Slow down</h1>"), { "retry-after": "5" }),
    "/wall": page(200, html(`<div class="cf-challenge">One more step</div>`, "Attention Required! | Cloudflare")),
    "/captcha": page(200, html(`<p>Please verify you are human to continue.</p><div class="g-recaptcha"></div>`)),
    "/article-mentions-captcha": page(200, html(`<p>${"How CAPTCHA systems work and why they matter. ".repeat(80)}</p>`)),
    "/challenge": jsChallenge,
    "/empty": (_req, res) => res.writeHead(200, { "content-type": "text/html" }).end(),
    "/blank": page(200, "   \n  "),
    "/gzip": gzipPage(ARTICLE),
    "/big": page(200, "x".repeat(200 * 1024)),
    "/big-chunked": (_req, res) => {
      res.writeHead(200, { "content-type": "text/html" })
      let n = 0
      const push = () => {
        while (n < 100) {
          n++
          if (!res.write("y".repeat(4096))) return res.once("drain", push)
        }
        res.end()
      }
      push()
    },
    "/slow": (_req, res) => {
      const t = setTimeout(() => res.writeHead(200).end(ARTICLE), 10_000)
      res.on("close", () => clearTimeout(t))
    },
    "/r1": (_req, res) => res.writeHead(301, { location: "/r2", "set-cookie": "step=1; Path=/" }).end(),
    "/r2": (_req, res) => res.writeHead(302, { location: "/cookie-echo" }).end(),
    "/cookie-echo": (req, res) => res.writeHead(200, { "content-type": "text/html" }).end(html(`<p>cookie=${req.headers.cookie ?? ""}</p>${"<p>filler text</p>".repeat(5)}`)),
    "/loop": (_req, res) => res.writeHead(302, { location: "/loop" }).end(),
    // The fixture's own address, spelled as one number, with and without a scheme; and in canonical form.
    "/odd-spelling": (req, res) => {
      const port = (req.socket.address() as AddressInfo).port
      const how = new URL(req.url!, "http://x").searchParams.get("how")
      const locations: Record<string, string> = {
        absolute: `http://2130706433:${port}/ok`,
        "scheme-relative": `//2130706433:${port}/ok`,
        // The URL parser drops tabs inside a URL: these name the same host.
        "with-tab": `http://2130\t706433:${port}/ok`,
        "slash-tab-slash": `/\t/2130706433:${port}/ok`,
        "hex-tab": `http://0x7f.\t1:${port}/ok`,
        // What follows the host is the parser's to encode: a space there hides nothing.
        "space-in-query": `http://2130706433:${port}/ok?q=a b`,
        canonical: `http://127.0.0.1:${port}/ok`,
        // From an http page, "http:" without slashes is a path on the same host.
        "same-scheme-path": "http:2130706433"
      }
      // Node refuses a header value with a tab or newline in setHeader: the head is written raw.
      res.socket!.end(`HTTP/1.1 302 Found\r\nLocation: ${locations[how!]}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`)
    },
    "/gzip-br": (_req, res) => res.writeHead(200, { "content-type": "text/html", "content-encoding": "gzip, br" }).end(brotliCompressSync(gzipSync(ARTICLE))),
    "/two-codings": (_req, res) => {
      res.setHeader("content-encoding", ["gzip", "br"])
      res.writeHead(200, { "content-type": "text/html" }).end(brotliCompressSync(gzipSync(ARTICLE)))
    },
    "/zstd": (_req, res) => res.writeHead(200, { "content-type": "text/html", "content-encoding": "zstd" }).end(zstdCompressSync(ARTICLE)),
    "/unknown-coding": (_req, res) => res.writeHead(200, { "content-type": "text/html", "content-encoding": "compress" }).end(ARTICLE),
    "/truncated-gzip": (_req, res) => {
      const whole = gzipSync(ARTICLE)
      res.writeHead(200, { "content-type": "text/html", "content-encoding": "gzip" }).end(whole.subarray(0, Math.floor(whole.length / 2)))
    },
    "/short-body": (req, res) => {
      req.socket.end("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 1000\r\n\r\n<p>only this</p>")
    },
    "/no-type": (_req, res) => res.writeHead(200, { "content-type": "" }).end(ARTICLE),
    "/bad-type": (req, _res) => {
      req.socket.end(`HTTP/1.1 200 OK\r\nContent-Type: text/html; x=\u0001y\r\nContent-Length: ${ARTICLE.length}\r\nConnection: close\r\n\r\n${ARTICLE}`)
    },
    // The Location's bytes are UTF-8, as a site with non-ASCII paths writes them.
    "/utf8-location": (req, _res) => {
      req.socket.end(Buffer.concat([
        Buffer.from("HTTP/1.1 302 Found\r\nLocation: /ok?q="),
        Buffer.from("üniçøde", "utf8"),
        Buffer.from("\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
      ]))
    },
    "/latin1-location": (req, _res) => {
      req.socket.end(Buffer.concat([
        Buffer.from("HTTP/1.1 302 Found\r\nLocation: /ok?q="),
        Buffer.from("ü", "latin1"),
        Buffer.from("\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
      ]))
    },
    "/headers": (req, res) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(req.headers)),
    "/raw-headers": (req, res) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(req.rawHeaders)),
    "/cookie-then-raw": (_req, res) => res.writeHead(302, { location: "/raw-headers", "set-cookie": "step=2; Path=/" }).end()
  })
})
afterAll(async () => {
  await engine.close?.()
  await site.close()
})

const get = (path: string, extra: { timeoutMs?: number; signal?: AbortSignal; allowPrivate?: boolean } = {}) =>
  engine.fetch({ url: site.url(path), timeoutMs: extra.timeoutMs ?? 5000, allowPrivate: extra.allowPrivate ?? true, ...(extra.signal ? { signal: extra.signal } : {}) })

describe("http engine: classification", () => {
  it("fetches a normal page", async () => {
    const a = await get("/ok")
    expect(a).toMatchObject({ engine: "http", classification: "ok", httpStatus: 200, finalUrl: site.url("/ok"), redirects: [] })
    expect(a.contentType).toContain("text/html")
    expect(a.body!.toString()).toContain("Hello from the fixture")
    expect(a.bytes).toBe(Buffer.byteLength(ARTICLE))
    expect(a.screenshot).toBeNull()
    expect(a.durationMs).toBeGreaterThanOrEqual(0)
  })

  it("sends browser-like headers (got-scraping header generator)", async () => {
    const a = await get("/headers")
    const h = JSON.parse(a.body!.toString()) as Record<string, string>
    expect(h["user-agent"]).toMatch(/Mozilla\/5\.0 .*(Chrome|Firefox)\//)
    expect(h["accept"]).toContain("text/html")
    expect(h["accept-language"]).toBeTruthy()
    expect(h["accept-encoding"]).not.toContain("zstd")
  })

  it("sends the headers in the browser's order and casing (got-scraping's generator), a redirect's cookie in its place", async () => {
    const generator = (gotScraping.defaults.options.context as { headerGenerator: { orderHeaders(h: object): object } }).headerGenerator
    for (const path of ["/raw-headers", "/cookie-then-raw"]) {
      const a = await get(path)
      const raw = JSON.parse(a.body!.toString()) as Array<string>
      const names = raw.filter((_, i) => i % 2 === 0)
      const values = Object.fromEntries(names.map((n, i) => [n, raw[2 * i + 1]]))
      expect(names.slice(0, 2)).toEqual(["Host", "Connection"])
      expect(values.Host).toBe(new URL(site.url("/")).host)
      // A browser's GET carries no body headers.
      expect(names.some((n) => /^(content-length|transfer-encoding)$/i.test(n))).toBe(false)
      expect(names.every((n) => n === n.split("-").map((p) => p[0]!.toUpperCase() + p.slice(1).toLowerCase()).join("-"))).toBe(true)
      expect(names).toEqual(Object.keys(generator.orderHeaders(values)))
      expect(values.Cookie).toBe(path === "/cookie-then-raw" ? "step=2" : undefined)
    }
  })

  it("404 and 410 are not_found with their status (content, not a failure)", async () => {
    expect(await get("/nothing-here")).toMatchObject({ classification: "not_found", httpStatus: 404 })
    const gone = await get("/gone")
    expect(gone).toMatchObject({ classification: "not_found", httpStatus: 410 })
    expect(gone.body!.toString()).toContain("Gone")
  })

  it("5xx is server_error", async () => {
    expect(await get("/boom")).toMatchObject({ classification: "server_error", httpStatus: 500 })
  })

  it("403, 429 and bot walls are blocked", async () => {
    expect(await get("/forbidden")).toMatchObject({ classification: "blocked", httpStatus: 403 })
    expect(await get("/throttled")).toMatchObject({ classification: "blocked", httpStatus: 429 })
    expect(await get("/wall")).toMatchObject({ classification: "blocked", httpStatus: 200 })
    expect(await get("/captcha")).toMatchObject({ classification: "blocked", httpStatus: 200 })
    expect(await get("/challenge")).toMatchObject({ classification: "blocked", httpStatus: 403 })
  })

  it("a long article that merely mentions captchas is not a wall", async () => {
    expect(await get("/article-mentions-captcha")).toMatchObject({ classification: "ok" })
  })

  it("empty and whitespace-only bodies are empty", async () => {
    expect(await get("/empty")).toMatchObject({ classification: "empty", httpStatus: 200, bytes: 0 })
    expect(await get("/blank")).toMatchObject({ classification: "empty" })
  })

  it("decompresses gzip", async () => {
    const a = await get("/gzip")
    expect(a.classification).toBe("ok")
    expect(a.body!.toString()).toContain("Hello from the fixture")
  })

  it("decodes every coding a response lists, last applied first, and zstd", async () => {
    for (const path of ["/gzip-br", "/two-codings", "/zstd"]) {
      const a = await get(path)
      expect(a.classification, path).toBe("ok")
      expect(a.body!.toString(), path).toBe(ARTICLE)
    }
  })

  it("a coding it cannot decode, or a truncated compressed body, fails the attempt instead of keeping undecoded or partial bytes, with the status the target sent", async () => {
    expect(await get("/unknown-coding")).toMatchObject({ classification: "connection_error", httpStatus: 200, body: null, error: expect.stringContaining("unsupported Content-Encoding: compress") })
    expect(await get("/truncated-gzip")).toMatchObject({ classification: "connection_error", httpStatus: 200, body: null })
    expect(await get("/short-body")).toMatchObject({ classification: "connection_error", httpStatus: 200, body: null })
  })

  it("keeps no content type for an empty or malformed Content-Type header", async () => {
    expect(await get("/no-type")).toMatchObject({ classification: "ok", contentType: null })
    expect(await get("/bad-type")).toMatchObject({ classification: "ok", contentType: null })
  })

  it("reads a Location's non-ASCII bytes as UTF-8, as a browser does, and percent-encodes bytes that are not UTF-8", async () => {
    expect(await get("/utf8-location")).toMatchObject({ classification: "ok", finalUrl: site.url("/ok?q=%C3%BCni%C3%A7%C3%B8de") })
    expect(await get("/latin1-location")).toMatchObject({ classification: "ok", finalUrl: site.url("/ok?q=%FC") })
  })

  it("reports a screenshot as unavailable", async () => {
    const a = await engine.fetch({ url: site.url("/ok"), timeoutMs: 5000, allowPrivate: true, screenshot: { format: "png" } })
    expect(a.screenshot).toBeNull()
    expect(a.screenshotUnavailable).toMatch(/does not render/)
  })
})

describe("http engine: redirects", () => {
  it("follows redirects manually, records each hop and carries cookies set on the way", async () => {
    const a = await get("/r1")
    expect(a).toMatchObject({ classification: "ok", httpStatus: 200, finalUrl: site.url("/cookie-echo"), redirects: [site.url("/r1"), site.url("/r2")] })
    expect(a.body!.toString()).toContain("cookie=step=1")
  })

  it("refuses a Location that spells its IPv4 host oddly, as a job's own URL is refused (even with private targets allowed)", async () => {
    for (const how of ["absolute", "scheme-relative", "with-tab", "slash-tab-slash", "hex-tab", "space-in-query"]) {
      const a = await get(`/odd-spelling?how=${how}`)
      expect(a.classification, how).toBe("unsafe_url")
      expect(a.error).toMatch(/non-canonical IPv4 spelling/)
    }
    expect((await get("/odd-spelling?how=canonical")).classification).toBe("ok")
    const path = await get("/odd-spelling?how=same-scheme-path")
    expect(path.classification).not.toBe("unsafe_url")
    expect(path.finalUrl).toBe(site.url("/2130706433"))
  })

  it("stops a redirect loop", async () => {
    const a = await get("/loop")
    expect(a.classification).toBe("connection_error")
    expect(a.error).toMatch(/redirects/)
    expect(a.redirects.length).toBe(11)
  })
})

describe("http engine: limits and failures", () => {
  it("caps the body (declared length) → too_large", async () => {
    const a = await get("/big")
    expect(a).toMatchObject({ classification: "too_large", httpStatus: 200, body: null })
    expect(a.bytes).toBeGreaterThan(64 * 1024)
  })

  it("caps the body (chunked, no length) → too_large", async () => {
    const a = await get("/big-chunked")
    expect(a).toMatchObject({ classification: "too_large", body: null })
  })

  it("times out", async () => {
    const t = performance.now()
    const a = await get("/slow", { timeoutMs: 400 })
    expect(a.classification).toBe("timeout")
    expect(performance.now() - t).toBeLessThan(3000)
  })

  it("is cancelled by the signal", async () => {
    const ac = new AbortController()
    setTimeout(() => ac.abort(), 150)
    const t = performance.now()
    const a = await get("/slow", { timeoutMs: 5000, signal: ac.signal })
    expect(a.classification).toBe("cancelled")
    expect(performance.now() - t).toBeLessThan(3000)
    const pre = new AbortController()
    pre.abort()
    expect((await get("/ok", { signal: pre.signal })).classification).toBe("cancelled")
  })

  it("a refused connection is connection_error", async () => {
    const closed = await startFixture({})
    const url = closed.url("/")
    await closed.close()
    const a = await engine.fetch({ url, timeoutMs: 3000, allowPrivate: true })
    expect(a.classification).toBe("connection_error")
  })

  it("an unresolvable name is dns_error (fake resolver, no real DNS)", async () => {
    const e = createHttpEngine({ lookup: fakeLookup({}) })
    const a = await e.fetch({ url: "http://nxdomain.example/", timeoutMs: 3000, allowPrivate: true })
    expect(a.classification).toBe("dns_error")
    await e.close?.()
  })
})

describe("http engine: SSRF guard", () => {
  it("refuses loopback and unsafe spellings when allowPrivate is false, without connecting", async () => {
    const before = site.connections()
    for (const url of [site.url("/ok"), `http://2130706433:${site.port}/ok`, `http://0x7f.1:${site.port}/`, `http://[::ffff:127.0.0.1]:${site.port}/`, "file:///etc/passwd"]) {
      const a = await engine.fetch({ url, timeoutMs: 3000, allowPrivate: false })
      expect(a.classification, url).toBe("unsafe_url")
    }
    expect(site.connections()).toBe(before)
  })

  describe("redirect to a refused address", () => {
    // 127.0.0.2 plays a public web site (the test classifier calls it public); 127.0.0.1 plays an
    // internal service. Names resolve through a fake resolver only.
    let publicSite: Fixture
    let internal: Fixture
    let guarded: ReturnType<typeof createHttpEngine>
    let lookup: ReturnType<typeof fakeLookup>
    beforeAll(async () => {
      internal = await startFixture({ "/secret": page(200, html("<p>internal secret</p>")) }, "127.0.0.1")
      publicSite = await startFixture(
        {
          "/ok": page(200, ARTICLE),
          "/to-evil-name": (_req, res) => res.writeHead(302, { location: `http://evil.example:${internal.port}/secret` }).end(),
          "/to-loopback": (_req, res) => res.writeHead(302, { location: `http://127.0.0.1:${internal.port}/secret` }).end(),
          "/to-decimal": (_req, res) => res.writeHead(302, { location: `http://2130706433:${internal.port}/secret` }).end(),
          "/to-mapped": (_req, res) => res.writeHead(307, { location: `http://[::ffff:7f00:1]:${internal.port}/secret` }).end(),
          "/to-file": (_req, res) => res.writeHead(302, { location: "file:///etc/passwd" }).end(),
          "/to-public": (_req, res) => res.writeHead(302, { location: "/ok" }).end()
        },
        "127.0.0.2"
      )
      lookup = fakeLookup({ "public.example": "127.0.0.2", "evil.example": "127.0.0.1" })
      guarded = createHttpEngine({ lookup, classify: (ip) => (ip === "127.0.0.2" ? "public" : classifyAddress(ip)) })
    })
    afterAll(async () => {
      await guarded.close?.()
      await publicSite.close()
      await internal.close()
    })
    const fetchPublic = (path: string) =>
      guarded.fetch({ url: `http://public.example:${publicSite.port}${path}`, timeoutMs: 5000, allowPrivate: false })

    it("the pretend-public site itself is allowed (resolved by the guard's lookup)", async () => {
      const a = await fetchPublic("/to-public")
      expect(a).toMatchObject({ classification: "ok", httpStatus: 200, finalUrl: `http://public.example:${publicSite.port}/ok` })
      expect(lookup.calls).toContain("public.example")
    })

    it.each(["/to-evil-name", "/to-loopback", "/to-decimal", "/to-mapped", "/to-file"])("%s is refused before connecting", async (path) => {
      const a = await fetchPublic(path)
      expect(a.classification).toBe("unsafe_url")
      expect(a.httpStatus).toBeGreaterThanOrEqual(300)
      expect(a.redirects).toEqual([`http://public.example:${publicSite.port}${path}`])
      expect(a.error).toMatch(/redirect refused/)
      expect(internal.connections()).toBe(0)
      expect(internal.hits).toEqual([])
    })
  })
})

describe("http engine and IPv6 literal hosts", () => {
  // ::1 plays a public IPv6 site (the test classifier calls it public); 127.0.0.1 plays an
  // internal service. Every other IPv6 address keeps its real class, so nothing else is contacted.
  let v6Site: Fixture
  let internal: Fixture
  const guarded = createHttpEngine({ classify: (ip) => (ip === "::1" ? "public" : classifyAddress(ip)) })
  beforeAll(async () => {
    internal = await startFixture({ "/secret": page(200, html("<p>internal secret</p>")) }, "127.0.0.1")
    v6Site = await startFixture(
      {
        "/ok": page(200, ARTICLE),
        "/to-self": (_req, res) => res.writeHead(302, { location: "/ok" }).end(),
        "/to-mapped": (_req, res) => res.writeHead(302, { location: `http://[::ffff:127.0.0.1]:${internal.port}/secret` }).end(),
        "/to-unique-local": (_req, res) => res.writeHead(302, { location: `http://[fd00::1]:${internal.port}/secret` }).end()
      },
      "::1"
    )
  })
  afterAll(async () => {
    await guarded.close?.()
    await v6Site.close()
    await internal.close()
  })

  it("fetches a public IPv6 literal and follows its redirects", async () => {
    const a = await guarded.fetch({ url: v6Site.url("/to-self"), timeoutMs: 5000, allowPrivate: false })
    expect(a).toMatchObject({ classification: "ok", httpStatus: 200, finalUrl: v6Site.url("/ok") })
  })

  it.each(["/to-mapped", "/to-unique-local"])("refuses a redirect from it to a non-public IPv6 literal (%s)", async (path) => {
    const a = await guarded.fetch({ url: v6Site.url(path), timeoutMs: 5000, allowPrivate: false })
    expect(a.classification).toBe("unsafe_url")
    expect(a.error).toMatch(/redirect refused/)
    expect(internal.connections()).toBe(0)
  })

  it.each(["http://169.254.169.254/latest/meta-data/", "http://[fe80::1]/", "http://224.0.0.1/", "http://0.0.0.0/"])(
    "with allowPrivate, still refuses a redirect to a link-local, multicast or unspecified literal (%s), before connecting",
    async (target) => {
      const devSite = await startFixture({ "/away": (_req, res) => res.writeHead(302, { location: target }).end() }, "127.0.0.1")
      try {
        const a = await guarded.fetch({ url: devSite.url("/away"), timeoutMs: 5000, allowPrivate: true })
        // refused by the guard, not by a failed connection (which the test's loopback-only guard would make connection_error)
        expect(a.classification, a.error ?? "").toBe("unsafe_url")
        expect(a.error).toMatch(/non_public_address/)
      } finally {
        await devSite.close()
      }
    }
  )

  it("refuses the IPv6 loopback literal itself under the real classifier", async () => {
    const before = v6Site.connections()
    const a = await engine.fetch({ url: v6Site.url("/ok"), timeoutMs: 3000, allowPrivate: false })
    expect(a.classification).toBe("unsafe_url")
    expect(v6Site.connections()).toBe(before)
  })
})

describe("http engine with the got-scraping transport", () => {
  const gotEngine = createHttpEngine({ transport: "got-scraping", maxBodyBytes: 64 * 1024 })
  afterAll(async () => {
    await gotEngine.close?.()
  })
  const g = (path: string, extra: { timeoutMs?: number; signal?: AbortSignal } = {}) =>
    gotEngine.fetch({ url: site.url(path), timeoutMs: extra.timeoutMs ?? 5000, allowPrivate: true, ...(extra.signal ? { signal: extra.signal } : {}) })

  it("gives the same classifications", async () => {
    expect(await g("/ok")).toMatchObject({ classification: "ok", httpStatus: 200 })
    expect((await g("/gzip")).body!.toString()).toContain("Hello from the fixture")
    expect(await g("/nothing-here")).toMatchObject({ classification: "not_found", httpStatus: 404 })
    expect(await g("/boom")).toMatchObject({ classification: "server_error" })
    expect(await g("/challenge")).toMatchObject({ classification: "blocked" })
    expect(await g("/big")).toMatchObject({ classification: "too_large" })
    expect(await g("/big-chunked")).toMatchObject({ classification: "too_large" })
    expect(await g("/slow", { timeoutMs: 300 })).toMatchObject({ classification: "timeout" })
    const r = await g("/r1")
    expect(r).toMatchObject({ classification: "ok", redirects: [site.url("/r1"), site.url("/r2")] })
    expect(r.body!.toString()).toContain("cookie=step=1")
    const ac = new AbortController()
    setTimeout(() => ac.abort(), 100)
    expect(await g("/slow", { signal: ac.signal })).toMatchObject({ classification: "cancelled" })
  })

  it("refuses a name that resolves to loopback (safe lookup on the connection)", async () => {
    const internal = await startFixture({ "/": page(200, ARTICLE) })
    const e = createHttpEngine({ transport: "got-scraping", lookup: fakeLookup({ "evil.example": "127.0.0.1" }) })
    const a = await e.fetch({ url: `http://evil.example:${internal.port}/`, timeoutMs: 3000, allowPrivate: false })
    expect(a.classification).toBe("unsafe_url")
    expect(internal.connections()).toBe(0)
    await e.close?.()
    await internal.close()
  })
})

describe("alternate engine", () => {
  it("goes through ALTERNATE_PROXY_URL when set (a local forward proxy here)", async () => {
    const { startGuardProxy } = await import("../../src/crawl/engines/guard-proxy.ts")
    const proxy = await startGuardProxy({ allowPrivate: true })
    const viaProxy = createHttpEngine({ name: "alternate", proxyUrl: proxy.url })
    const before = site.hits.length
    const a = await viaProxy.fetch({ url: site.url("/r1"), timeoutMs: 5000, allowPrivate: true })
    expect(a).toMatchObject({ engine: "alternate", classification: "ok", httpStatus: 200, finalUrl: site.url("/cookie-echo") })
    expect(site.hits.slice(before)).toEqual(["/r1", "/r2", "/cookie-echo"])
    await viaProxy.close?.()
    await proxy.close()
  })

  it("through a proxy, every hop is resolved and classified before it is sent", async () => {
    const viaProxy = createHttpEngine({ name: "alternate", proxyUrl: "http://127.0.0.1:9", lookup: fakeLookup({ "evil.example": "10.0.0.1" }) })
    const a = await viaProxy.fetch({ url: "http://evil.example/", timeoutMs: 3000, allowPrivate: false })
    expect(a).toMatchObject({ engine: "alternate", classification: "unsafe_url" })
    await viaProxy.close?.()
  })

  it("through a proxy, a slow resolution is bounded by the attempt's deadline and its caller's signal", async () => {
    // A resolver that never answers: nothing is sent to the proxy (port 9 has no listener anyway).
    const silent = ((() => {}) as unknown) as import("../../src/crawl/ssrf.ts").LookupFunction
    const viaProxy = createHttpEngine({ name: "alternate", proxyUrl: "http://127.0.0.1:9", lookup: silent })
    let t = performance.now()
    const timedOut = await viaProxy.fetch({ url: "http://slow-dns.example/", timeoutMs: 1000, allowPrivate: false })
    expect(timedOut).toMatchObject({ engine: "alternate", classification: "timeout" })
    expect(performance.now() - t).toBeLessThan(5000)
    const ac = new AbortController()
    setTimeout(() => ac.abort(), 200)
    t = performance.now()
    const cancelled = await viaProxy.fetch({ url: "http://slow-dns.example/", timeoutMs: 20_000, allowPrivate: false, signal: ac.signal })
    expect(cancelled).toMatchObject({ engine: "alternate", classification: "cancelled" })
    expect(performance.now() - t).toBeLessThan(5000)
    await viaProxy.close?.()
  })

  it("through a proxy, a resolver that fails for now (EAI_AGAIN) is a timeout, retried, and a name that does not exist a dns_error", async () => {
    const flaky = ((_host: string, _options: unknown, callback: Function) =>
      setImmediate(() => callback(Object.assign(new Error("getaddrinfo EAI_AGAIN"), { code: "EAI_AGAIN" })))) as unknown as import("../../src/crawl/ssrf.ts").LookupFunction
    const viaProxy = createHttpEngine({ name: "alternate", proxyUrl: "http://127.0.0.1:9", lookup: flaky })
    expect(await viaProxy.fetch({ url: "http://flaky-dns.example/", timeoutMs: 3000, allowPrivate: false })).toMatchObject({ classification: "timeout" })
    const missing = createHttpEngine({ name: "alternate", proxyUrl: "http://127.0.0.1:9", lookup: fakeLookup({}) })
    expect(await missing.fetch({ url: "http://no-such-name.example/", timeoutMs: 3000, allowPrivate: false })).toMatchObject({ classification: "dns_error" })
    await viaProxy.close?.()
    await missing.close?.()
  })

  it("goes direct when no proxy is set", async () => {
    const direct = createHttpEngine({ name: "alternate" })
    expect(await direct.fetch({ url: site.url("/ok"), timeoutMs: 5000, allowPrivate: true })).toMatchObject({ engine: "alternate", classification: "ok" })
    await direct.close?.()
  })
})
