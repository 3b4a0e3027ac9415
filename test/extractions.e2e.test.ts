/**
 * Extractions end to end, through HTTP against the real server process: inputs (inline html /
 * markdown / text / json, `url`, `jobId`), articles and products, creation rules, sanitizing,
 * list/search, cancel, replay, cache, idempotency, LLM refinement against a scripted fake
 * OpenAI-compatible server, extraction webhooks, tenant isolation and a crash mid-extraction.
 *
 * Every inline input carries a unique nonce: the extraction cache is keyed by content (across
 * tenants), so a test only sees a cache hit when it asks for one.
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import { rmSync } from "node:fs"
import type { Socket } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { verifyWebhookSignature } from "../src/webhooks/signing.ts"
import { type FakeLlm, startFakeLlm } from "./support/fake-llm.ts"
import { backends, client, type RunningServer, startServer } from "./support/server-process.ts"
import { until } from "./support/until.ts"

// ---------------------------------------------------------------------------------------------
// Loopback helpers

/** A loopback web site whose pages (and their delay) are registered per path; counts hits. */
const startPages = async () => {
  const pages = new Map<string, { html: string | Buffer; delayMs?: number; delayFirstOnly?: boolean; contentType?: string }>()
  const hits = new Map<string, number>()
  const sockets = new Set<Socket>()
  const timers = new Set<NodeJS.Timeout>()
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname
    const n = (hits.get(path) ?? 0) + 1
    hits.set(path, n)
    const page = pages.get(path)
    if (!page) {
      res.writeHead(404, { "content-type": "text/html" }).end("<html><body><p>missing</p></body></html>")
      return
    }
    const delay = page.delayMs && (!page.delayFirstOnly || n === 1) ? page.delayMs : 0
    const t = setTimeout(() => {
      timers.delete(t)
      if (!res.destroyed) res.writeHead(200, { "content-type": page.contentType ?? "text/html; charset=utf-8" }).end(page.html)
    }, delay)
    timers.add(t)
  })
  server.on("connection", (s: Socket) => {
    sockets.add(s)
    s.on("close", () => sockets.delete(s))
  })
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()))
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`
  return {
    base,
    put: (path: string, html: string | Buffer, opts: { delayMs?: number; delayFirstOnly?: boolean; contentType?: string } = {}) => {
      pages.set(path, { html, ...opts })
      return base + path
    },
    hits: (path: string) => hits.get(path) ?? 0,
    close: () =>
      new Promise<void>((r) => {
        for (const t of timers) clearTimeout(t)
        for (const s of sockets) s.destroy()
        server.close(() => r())
      })
  }
}

interface Received {
  readonly headers: IncomingHttpHeaders
  readonly raw: Buffer
}

/** A loopback webhook receiver that answers 200. */
const startReceiver = async () => {
  const received: Array<Received> = []
  const server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      received.push({ headers: req.headers, raw: Buffer.concat(chunks) })
      res.writeHead(200, { "content-type": "text/plain" }).end("ok")
    })
  })
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()))
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`,
    received,
    close: () => new Promise<void>((r) => server.close(() => r()))
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))


let nonceCounter = 0
const nonce = () => `n${Date.now().toString(36)}${(nonceCounter++).toString(36)}${Math.random().toString(36).slice(2, 7)}`

const longPara = (topic: string, i = 0) =>
  `<p>${topic} paragraph ${i}: the committee met on Tuesday and discussed the long list of proposals, ` +
  `agreeing after a lengthy debate that the next steps would be published within a few weeks.</p>`

const TERMINAL = ["done", "dead", "cancelled"]

// ---------------------------------------------------------------------------------------------

describe.each(backends())("extractions over HTTP ($name)", (backend) => {
  let env: Record<string, string>
  let server: RunningServer
  let api: ReturnType<typeof client>
  let llm: FakeLlm
  let pages: Awaited<ReturnType<typeof startPages>>
  let t: Awaited<ReturnType<ReturnType<typeof client>["createTenant"]>>
  // The crash test has its own server (it is SIGKILLed); started alongside the main one.
  let crashEnv: Record<string, string>
  let crashServer: RunningServer | undefined

  const create = (body: Record<string, unknown>, key = t.apiKey, headers: Record<string, string> = {}) =>
    api.call("POST", "/v1/extractor/extractions", { key, body, headers })

  const get = async (id: string, key = t.apiKey) => {
    const res = await api.get(`/v1/extractor/extractions/${id}`, key)
    expect(res.status).toBe(200)
    return res.json.data
  }

  const waitFinal = (id: string, key = t.apiKey, timeoutMs = 30_000) =>
    until(`extraction ${id} to end`, async () => {
      const e = await get(id, key)
      return TERMINAL.includes(e.status) ? e : undefined
    }, timeoutMs)

  /** Creates an extraction, expects 201, waits for its end and expects `done`. */
  const extractDone = async (body: Record<string, unknown>, key = t.apiKey) => {
    const res = await create(body, key)
    expect(res.status, res.text).toBe(201)
    const e = await waitFinal(res.json.data.id, key)
    expect(e.status, JSON.stringify(e)).toBe("done")
    return e
  }

  beforeAll(async () => {
    llm = await startFakeLlm()
    pages = await startPages()
    const common = { ALLOW_PRIVATE_TARGETS: "true", LLM_BASE_URL: llm.baseUrl, LLM_MODEL: "test-model", LLM_MODELS: "cfg-model", WEBHOOK_RETRY_SCALE: "0.001" }
    env = { ...common, ...(await backend.env()) }
    crashEnv = { ...common, ...(await backend.env()) }
    // Generous start timeouts: the machine is shared and two servers boot at once.
    const [main, crash] = await Promise.all([
      startServer(env, { timeoutMs: 110_000 }),
      startServer(crashEnv, { keepDataDir: true, timeoutMs: 110_000 })
    ])
    server = main
    crashServer = crash
    api = client(server.baseUrl)
    t = await api.createTenant()
  })
  afterAll(async () => {
    await server?.stop()
    if (crashServer) {
      await crashServer.stop()
      rmSync(crashServer.dataDir, { recursive: true, force: true })
    }
    await llm?.close()
    await pages?.close()
  })

  // ---------------------------------------------------------------- articles

  describe("articles", () => {
    it("reads an article's JSON-LD (headline, author, dates) and its body from the page", async () => {
      const n = nonce()
      const html = `<!doctype html><html lang="en"><head><title>Tab title ${n} | Site</title>
        <script type="application/ld+json">{"@context":"https://schema.org","@type":"NewsArticle","headline":"JSON-LD headline ${n}",
          "author":{"@type":"Person","name":"Ada Lovelace"},"datePublished":"2024-03-05T10:00:00Z","dateModified":"2024-03-06T08:30:00Z",
          "description":"A description from structured data.","keywords":"engines, history"}</script></head>
        <body><article><h1>Visible heading ${n}</h1>${[1, 2, 3, 4].map((i) => longPara("Council", i)).join("")}</article></body></html>`
      const e = await extractDone({ type: "article", input: html })
      expect(e).toMatchObject({ type: "article", inputFormat: "html", url: null, domainId: null, errorClass: null, cacheHits: 0, recycleCount: 0 })
      expect(e.data.title).toBe(`JSON-LD headline ${n}`)
      expect(e.data.author).toBe("Ada Lovelace")
      expect(Date.parse(e.data.publishedAt)).toBe(Date.parse("2024-03-05T10:00:00Z"))
      expect(Date.parse(e.data.modifiedAt)).toBe(Date.parse("2024-03-06T08:30:00Z"))
      expect(e.data.description).toBe("A description from structured data.")
      expect(e.data.content).toContain("Council paragraph 1")
      expect(e.data.content).toContain("Council paragraph 4")
      expect(e.metadata.strategiesUsed).toContain("json-ld")
      expect(e.metadata.strategiesUsed).toContain("main-content")
      expect(e.metadata).toMatchObject({ inputFormat: "html", configsApplied: [] })
      expect(e.metadata.durationMs).toBeGreaterThanOrEqual(0)
      expect(Date.parse(e.finishedAt)).toBeGreaterThanOrEqual(Date.parse(e.createdAt))
      expect(e.attempts).toBe(1)
    })

    it("extracts an article without JSON-LD from h1, meta tags and the body", async () => {
      const n = nonce()
      const html = `<html lang="en"><head><title>Plain page ${n} - Example News</title><meta name="author" content="Grace Hopper">
        <meta name="description" content="Meta description ${n}"></head>
        <body><div class="story"><h1>Heading without structured data ${n}</h1>${[1, 2, 3].map((i) => longPara("Harbour", i)).join("")}</div></body></html>`
      const e = await extractDone({ type: "article", input: html })
      expect(e.data.title).toBe(`Heading without structured data ${n}`)
      expect(e.data.author).toBe("Grace Hopper")
      expect(e.data.description).toBe(`Meta description ${n}`)
      expect(e.data.content).toContain("Harbour paragraph 3")
      expect(e.data.content).not.toContain(`Heading without structured data`) // the title is not repeated
      expect(e.metadata.strategiesUsed).not.toContain("json-ld")
      expect(e.metadata.strategiesUsed).toContain("main-content")
      expect(e.data.lang).toBe("en")
    })

    it("keeps navigation, footer, sidebar and comments out of a boilerplate-heavy page's content", async () => {
      const n = nonce()
      const html = `<html><head><title>Boilerplate ${n}</title></head><body>
        <header><a href="/">Logo</a><nav><ul><li><a href="/news">NavNews</a></li><li><a href="/sport">NavSport</a></li><li><a href="/weather">NavWeather</a></li></ul></nav></header>
        <aside class="sidebar"><h3>Related stories</h3><ul><li><a href="/r1">SidebarTeaser one is a headline about things</a></li><li><a href="/r2">SidebarTeaser two is another headline</a></li><li><a href="/r3">SidebarTeaser three</a></li></ul></aside>
        <main><article><h1>The real story ${n}</h1>${[1, 2, 3, 4, 5].map((i) => longPara("Budget", i)).join("")}</article>
        <section id="comments" class="comments"><h2>Comments</h2>
          <div class="comment"><p>CommentText: I really enjoyed this piece, thanks for writing such a detailed article about the budget.</p></div>
          <div class="comment"><p>CommentText: I disagree with most of it, but it was still an interesting read on a Sunday.</p></div></section></main>
        <footer><p>FooterText Copyright 2024 Example Media. All rights reserved.</p><a href="/privacy">Privacy</a></footer>
        </body></html>`
      const e = await extractDone({ type: "article", input: html })
      expect(e.data.title).toBe(`The real story ${n}`)
      for (let i = 1; i <= 5; i++) expect(e.data.content).toContain(`Budget paragraph ${i}`)
      for (const junk of ["NavNews", "NavSport", "SidebarTeaser", "CommentText", "FooterText", "Privacy", "Logo"]) {
        expect(e.data.content, junk).not.toContain(junk)
      }
    })
  })

  // ---------------------------------------------------------------- products

  describe("products", () => {
    it("reads a JSON-LD Product with its offer", async () => {
      const n = nonce()
      const html = `<html><head><script type="application/ld+json">{"@context":"https://schema.org","@type":"Product","name":"Espresso Machine ${n}",
        "sku":"EM-${n}","brand":{"@type":"Brand","name":"Brewmaster"},"description":"Makes coffee.","image":"https://cdn.example.com/em.jpg",
        "offers":{"@type":"Offer","price":"1234.56","priceCurrency":"EUR","availability":"https://schema.org/InStock"}}</script></head>
        <body><h1>Espresso Machine ${n}</h1></body></html>`
      const e = await extractDone({ type: "product", input: html })
      expect(e.data).toMatchObject({ name: `Espresso Machine ${n}`, sku: `EM-${n}`, brand: "Brewmaster", price: 1234.56, currency: "EUR", availability: "InStock" })
      expect(e.data.images?.[0]?.url).toBe("https://cdn.example.com/em.jpg")
      expect(e.metadata.strategiesUsed).toContain("json-ld")
    })

    it("reads microdata when there is no JSON-LD", async () => {
      const n = nonce()
      const html = `<html><body><div itemscope itemtype="https://schema.org/Product">
        <h1 itemprop="name">Micro Kettle ${n}</h1><span itemprop="brand">KettleCo</span><meta itemprop="sku" content="MK-${n}">
        <div itemprop="offers" itemscope itemtype="https://schema.org/Offer"><span itemprop="price" content="19.99">19,99 €</span>
        <meta itemprop="priceCurrency" content="EUR"><link itemprop="availability" href="https://schema.org/OutOfStock"></div></div></body></html>`
      const e = await extractDone({ type: "product", input: html })
      expect(e.data).toMatchObject({ name: `Micro Kettle ${n}`, sku: `MK-${n}`, brand: "KettleCo", price: 19.99, currency: "EUR", availability: "OutOfStock" })
      expect(e.metadata.strategiesUsed).toContain("microdata")
      expect(e.metadata.strategiesUsed).not.toContain("json-ld")
    })

    it("reads OpenGraph product tags alone", async () => {
      const n = nonce()
      const html = `<html><head><meta property="og:type" content="product"><meta property="og:title" content="OG Gadget ${n}">
        <meta property="og:description" content="A gadget described by OpenGraph."><meta property="og:image" content="https://cdn.example.com/og-${n}.jpg">
        <meta property="product:price:amount" content="49.90"><meta property="product:price:currency" content="USD"></head>
        <body><p>Nothing else here.</p></body></html>`
      const e = await extractDone({ type: "product", input: html })
      expect(e.data).toMatchObject({ name: `OG Gadget ${n}`, price: 49.9, currency: "USD", description: "A gadget described by OpenGraph." })
      expect(e.data.images.map((i: any) => i.url)).toContain(`https://cdn.example.com/og-${n}.jpg`)
      expect(e.metadata.strategiesUsed).toContain("opengraph")
      expect(e.metadata.strategiesUsed).not.toContain("json-ld")
      expect(e.metadata.strategiesUsed).not.toContain("microdata")
    })

    it("reads a product through a config's selectors only (configId)", async () => {
      const tenant = await api.createTenant()
      const cfg = await api.post("/v1/extractor/configs", {
        scope: "tenant",
        type: "product",
        payload: {
          selectors: {
            name: [{ css: ".p-title" }],
            price: [{ css: ".p-cost" }],
            sku: [{ css: "[data-ref]", attr: "data-ref" }],
            color: [{ css: ".p-color" }]
          }
        }
      }, tenant.apiKey)
      expect(cfg.status, cfg.text).toBe(201)
      const n = nonce()
      const html = `<html><body><div class="p-title">Selector Lamp ${n}</div><div class="p-cost">CHF 1'234.50</div>
        <div data-ref="SL-${n}">ref</div><div class="p-color">teal</div></body></html>`
      const e = await extractDone({ type: "product", input: html, configId: cfg.json.data.id }, tenant.apiKey)
      expect(e.data).toMatchObject({ name: `Selector Lamp ${n}`, price: 1234.5, currency: "CHF", sku: `SL-${n}` })
      expect(e.data.attributes).toMatchObject({ color: "teal" })
      expect(e.metadata.strategiesUsed).toContain("selectors")
      expect(e.metadata.configsApplied).toEqual([cfg.json.data.id])
    })

    it.each([
      ["1.234,56 €", 1234.56, "EUR"],
      ["$1,234.56", 1234.56, "USD"]
    ])("parses the price %s", async (text, price, currency) => {
      const n = nonce()
      const html = `<html><body><div class="product"><h1>Price probe ${n}</h1><div class="price">${text}</div>
        <button class="add-to-cart">Add to cart</button></div></body></html>`
      const e = await extractDone({ type: "product", input: html })
      expect(e.data.name).toBe(`Price probe ${n}`)
      expect(e.data.price).toBe(price)
      expect(e.data.currency).toBe(currency)
    })
  })

  // ---------------------------------------------------------------- other inputs

  describe("inputs", () => {
    it("extracts an article from markdown", async () => {
      const n = nonce()
      const md = `# Markdown title ${n}\n\nFirst paragraph with **bold** text and a [link](https://example.com/x).\n\n- item one\n- item two\n\n![A picture](https://example.com/pic-${n}.png)\n`
      const e = await extractDone({ type: "article", input: md, inputFormat: "markdown" })
      expect(e.inputFormat).toBe("markdown")
      expect(e.metadata.inputFormat).toBe("markdown")
      expect(e.data.title).toBe(`Markdown title ${n}`)
      expect(e.data.content).toContain("First paragraph with bold text and a link.")
      expect(e.data.content).toContain("item one")
      expect(e.data.content).not.toMatch(/\*\*|\]\(|^#/m)
      expect(e.data.images?.map((i: any) => i.url)).toContain(`https://example.com/pic-${n}.png`)
    })

    it("extracts from HTML nested 100 000 elements deep while the node keeps answering", async () => {
      const n = nonce()
      const depth = 100_000
      const body = `<p>Deep paragraph ${n}: the council said on Tuesday that the works, which began in spring, will continue until the end of the year.</p>`.repeat(3)
      const res = await create({ type: "article", input: `<html><body>${"<div>".repeat(depth)}${body}${"</div>".repeat(depth)}</body></html>` })
      expect(res.status, res.text).toBe(201)
      expect((await api.call("GET", "/readyz")).status).toBe(200)
      const e = await waitFinal(res.json.data.id)
      expect(e.status, JSON.stringify(e)).toBe("done")
      expect(e.data.content).toContain(`Deep paragraph ${n}`)
    })

    it("extracts an article from plain text", async () => {
      const n = nonce()
      const text = `Text title ${n}\n\nThe first paragraph of plain text. It has two sentences.\n\nThe second paragraph follows here.`
      // optional fields given as null count as absent (docs/api.md)
      const e = await extractDone({ type: "article", input: text, inputFormat: "text", configId: null, webhookUrl: null, webhookSecret: null })
      expect(e.inputFormat).toBe("text")
      expect(e.data.title).toBe(`Text title ${n}`)
      expect(e.data.content).toContain("The first paragraph of plain text.")
      expect(e.data.content).toContain("The second paragraph follows here.")
    })

    it("extracts from JSON objects, and refuses JSON input it cannot read (400)", async () => {
      const n = nonce()
      const art = await extractDone({
        type: "article",
        inputFormat: "json",
        input: JSON.stringify({ headline: `JSON headline ${n}`, articleBody: "The body of a JSON article. It is short.", author: "Bob Writer", datePublished: "2023-01-02T03:04:05Z" })
      })
      expect(art.data).toMatchObject({ title: `JSON headline ${n}`, author: "Bob Writer" })
      expect(art.data.content).toContain("The body of a JSON article.")
      const prod = await extractDone({
        type: "product",
        inputFormat: "json",
        input: JSON.stringify({ "@context": "https://schema.org", "@type": "Product", name: `JSON product ${n}`, sku: "JP-1", offers: { price: 12.5, priceCurrency: "EUR" } })
      })
      expect(prod.data).toMatchObject({ name: `JSON product ${n}`, sku: "JP-1", price: 12.5, currency: "EUR" })
      // What the input says can hold text the database cannot store (an escaped NUL, half a surrogate
      // pair): it is stored with U+FFFD in its place, instead of failing every attempt.
      const odd = await extractDone({
        type: "article",
        inputFormat: "json",
        input: `{"headline": "odd \\u0000 and \\ud800 ${n}", "articleBody": "The body of an odd JSON article. It is short."}`
      })
      expect(odd.data.title).toBe(`odd \uFFFD and \uFFFD ${n}`)
      // JSON the engine reads leniently (a trailing comma) is accepted; JSON it cannot read, or that
      // is no object or array, is refused at once instead of ending dead
      const lenient = await extractDone({ type: "article", inputFormat: "json", input: `{"headline": "lenient ${n}", "articleBody": "A body.",}` })
      expect(lenient.data.title).toBe(`lenient ${n}`)
      for (const input of [`{"headline": "broken ${n}", oops`, "42", "\"just a string\""]) {
        const bad = await create({ type: "article", inputFormat: "json", input })
        expect(bad.status, bad.text).toBe(400)
        expect(bad.json.code).toBe("validation_error")
        expect(bad.json.error.details).toEqual([expect.objectContaining({ path: "input", code: "invalid_json" })])
      }
    })

    it("fetches a url input through a scraper job (loopback fixture page)", async () => {
      const n = nonce()
      const url = pages.put(`/article-${n}`, `<html lang="en"><head><title>Fetched ${n}</title></head><body><article><h1>Fetched article ${n}</h1>${[1, 2, 3].map((i) => longPara("Fetched", i)).join("")}</article></body></html>`)
      const res = await create({ type: "article", url })
      expect(res.status, res.text).toBe(201)
      expect(res.json.data).toMatchObject({ status: "queued", url, domainId: "127.0.0.1", inputFormat: "html" })
      expect(res.json.data.jobId).toMatch(/^job_/)
      const e = await waitFinal(res.json.data.id)
      expect(e.status).toBe("done")
      expect(e.data.title).toBe(`Fetched article ${n}`)
      expect(e.data.content).toContain("Fetched paragraph 3")
      expect(pages.hits(`/article-${n}`)).toBe(1)
      // The crawl job is the tenant's own and visible.
      const job = await api.get(`/v1/scraper/jobs/${e.jobId}`, t.apiKey)
      expect(job.json.data).toMatchObject({ status: "done", url })
    })

    it("ends an extraction of a page that answered 404 dead with invalid_input, uncharged: the site's error page is not the page", async () => {
      const n = nonce()
      const res = await create({ type: "article", url: `${pages.base}/gone-${n}` })
      expect(res.status, res.text).toBe(201)
      const e = await waitFinal(res.json.data.id)
      expect([e.status, e.errorClass]).toEqual(["dead", "invalid_input"])
      expect(e.errorMessage).toContain("not_found")
      // the job itself tells the story: done, with the 404 it met
      const job = (await api.get(`/v1/scraper/jobs/${e.jobId}`, t.apiKey)).json.data
      expect(job).toMatchObject({ status: "done" })
      expect(JSON.stringify(job)).toContain("not_found")
      await sleep(500)
      const debits = (await api.get("/v1/billing/me/transactions?type=debit&limit=200", t.apiKey)).json.data.items as Array<any>
      expect(debits.filter((d) => d.resourceId === e.id)).toEqual([])
    })

    it("reads a fetched page in the charset its type or <meta> names, as a browser does", async () => {
      const n = nonce()
      const latin1 = (text: string) => Buffer.from(text, "latin1")
      const article = (title: string) => `<html><head><title>${title}</title></head><body><article><h1>${title}</h1>${[1, 2, 3].map((i) => longPara("Encoded", i)).join("")}</article></body></html>`
      const byType = pages.put(`/latin1-${n}`, latin1(article(`Caf\u00e9 cr\u00e8me ${n}`)), { contentType: "text/html; charset=iso-8859-1" })
      const byMeta = pages.put(`/meta-${n}`, latin1(article(`Br\u00fbl\u00e9e ${n}`).replace("<head>", `<head><meta charset="windows-1252">`)), { contentType: "text/html" })
      for (const [url, title] of [[byType, `Caf\u00e9 cr\u00e8me ${n}`], [byMeta, `Br\u00fbl\u00e9e ${n}`]] as const) {
        const res = await create({ type: "article", url })
        expect(res.status, res.text).toBe(201)
        const e = await waitFinal(res.json.data.id)
        expect(e.status).toBe("done")
        expect(e.data.title).toBe(title)
      }
    })

    it("extracts from a finished job's HTML (jobId), and refuses a job of another tenant (422)", async () => {
      const n = nonce()
      const url = pages.put(`/job-${n}`, `<html><head><title>Job page</title></head><body><article><h1>From a job ${n}</h1>${[1, 2].map((i) => longPara("Job", i)).join("")}</article></body></html>`)
      const job = await api.post("/v1/scraper/jobs", { url }, t.apiKey)
      expect(job.status).toBe(201)
      await until("job done", async () => (await api.get(`/v1/scraper/jobs/${job.json.data.id}`, t.apiKey)).json.data.status === "done")
      const e = await extractDone({ type: "article", jobId: job.json.data.id })
      expect(e).toMatchObject({ jobId: job.json.data.id, url, domainId: "127.0.0.1" })
      expect(e.data.title).toBe(`From a job ${n}`)
      expect(pages.hits(`/job-${n}`)).toBe(1) // not fetched again
      const other = await api.createTenant()
      const refused = await create({ type: "article", jobId: job.json.data.id }, other.apiKey)
      expect(refused.status).toBe(422)
      expect(refused.json.error.details[0].path).toBe("jobId")
      expect((await create({ type: "article", jobId: "job_doesnotexist" })).status).toBe(422)
      // a job that ended without a page (nothing listens on the port) has nothing to extract from
      const closed = await api.post("/v1/scraper/jobs", { url: "http://127.0.0.1:9/nothing", escalation: [{ engine: "http", attempts: 1, timeoutMs: 1000 }] }, t.apiKey)
      expect(closed.status, closed.text).toBe(201)
      await until("job failed", async () => ["failed", "dead"].includes((await api.get(`/v1/scraper/jobs/${closed.json.data.id}`, t.apiKey)).json.data.status))
      const pageless = await create({ type: "article", jobId: closed.json.data.id })
      expect(pageless.status, pageless.text).toBe(422)
      expect(pageless.json.code).toBe("invalid_job")
      expect(pageless.json.error.details).toEqual([expect.objectContaining({ path: "jobId", code: "no_page" })])
    })

    it("requires exactly one of url, input and jobId (400)", async () => {
      const cases: Array<Record<string, unknown>> = [
        { type: "article" },
        { type: "article", url: "https://example.com/a", input: "<p>x</p>" },
        { type: "article", input: "<p>x</p>", jobId: "job_x" },
        { type: "article", url: "https://example.com/a", jobId: "job_x" },
        { type: "article", url: "https://example.com/a", input: "<p>x</p>", jobId: "job_x" },
        { type: "article", url: "https://example.com/a", inputFormat: "markdown" } // inputFormat goes with input only
      ]
      for (const body of cases) {
        const res = await create(body)
        expect(res.status, JSON.stringify(body)).toBe(400)
        expect(res.json).toMatchObject({ status: "error", code: "validation_error" })
        expect(res.json.error.details.length).toBeGreaterThan(0)
      }
      // Other malformed bodies; a rule across fields is named with the schema's faults in one answer.
      expect((await create({ type: "video", input: "x" })).status).toBe(400)
      const twoKinds = await create({ type: "video", input: "x", jobId: "job_y", webhookEventTypes: ["done"] })
      expect(twoKinds.json.error.details.map((d: any) => [d.path, d.code])).toEqual([
        ["type", "invalid_value"], ["jobId", "exactly_one_source"], ["webhookEventTypes", "invalid_value"]
      ])
      expect((await create({ type: "article", input: "x", inputFormat: "pdf" })).status).toBe(400)
      // An event type listed twice is a mistake worth telling (uniqueItems in the document).
      const twice = await create({ type: "article", input: "<p>x</p>", webhookUrl: "http://127.0.0.1:9/hook", webhookEventTypes: ["done", "done"] })
      expect(twice.status, twice.text).toBe(400)
      expect(twice.json.error.details.map((d: any) => d.path)).toEqual(["webhookEventTypes"])
      // A scheme other than http(s) is an unsafe URL (docs/crawling.md, "SSRF guard"), as for jobs, also as the webhook.
      for (const body of [{ url: "ftp://127.0.0.1/a" }, { url: "file:///etc/passwd" }, { input: "<p>x</p>", webhookUrl: "ftp://127.0.0.1/hook" }]) {
        const refused = await create({ type: "article", ...body })
        expect(refused.status, JSON.stringify(body)).toBe(422)
        expect(refused.json.code).toBe("unsafe_url")
      }
      const portZero = await create({ type: "article", url: "http://127.0.0.1:0/a" })
      expect(portZero.status).toBe(400)
      expect(portZero.json.error.details.map((d: any) => d.path)).toContain("url")
      const unknown = await create({ type: "article", input: "<p>x</p>", colour: "red" })
      expect(unknown.status).toBe(400)
      expect(unknown.json.error.details.map((d: any) => d.path)).toContain("colour")
      expect((await create({ type: "article", input: "   " })).status).toBe(400)
    })

    it("caps inline input at 5 MB (413 payload_too_large), counted in UTF-8 bytes", async () => {
      const limit = 5 * 1024 * 1024
      const over = await create({ type: "article", inputFormat: "text", input: "a".repeat(limit + 1) })
      expect(over.status).toBe(413)
      expect(over.json.code).toBe("payload_too_large")
      // 2.7 M two-byte characters: fewer than 5 M characters, more than 5 MB.
      const wide = await create({ type: "article", inputFormat: "text", input: "é".repeat(2_700_000) })
      expect(wide.status).toBe(413)
      const at = await create({ type: "article", inputFormat: "text", input: `Big ${nonce()}\n\n` + "b".repeat(limit - 100) })
      expect(at.status, at.text.slice(0, 300)).toBe(201)
      // Not needed any further: cancel it (saves CPU), best effort.
      await api.call("DELETE", `/v1/extractor/extractions/${at.json.data.id}`, { key: t.apiKey })
    })

    it("refuses a NUL character in inline input (400), which no text column can hold", async () => {
      const res = await create({ type: "article", input: `<h1>Nul ${nonce()}</h1><p>a\u0000b</p>` })
      expect(res.status, res.text).toBe(400)
      expect(res.json.code).toBe("validation_error")
      expect(res.json.error.details[0].path).toBe("input")
    })

    it("sanitizes: no script, event handler or javascript: URL reaches the output", async () => {
      const n = nonce()
      const html = `<html><head><title>Sanitize ${n}</title><script>window.evil = "alert(document.cookie)"</script>
        <script type="application/ld+json">{"@context":"https://schema.org","@type":"Article","headline":"Sanitize ${n}","image":"javascript:alert('ld')"}</script></head>
        <body onload="alert('body')"><article><h1>Sanitize ${n}</h1>
        <p onclick="alert('p')">Safe paragraph one with enough words to be the body of the article, really. <a href="javascript:alert('a')">click me</a></p>
        <script>document.write("injected-by-script")</script><noscript>noscript text</noscript>
        <img src="javascript:alert('img')" alt="bad"><img src="https://cdn.example.com/ok-${n}.jpg" onerror="alert('onerror')" alt="fine" width="600" height="400">
        <iframe src="javascript:alert('iframe')"></iframe><style>.x{background:url(javascript:alert('css'))}</style>
        ${longPara("Sanitized", 2)}${longPara("Sanitized", 3)}</article></body></html>`
      const e = await extractDone({ type: "article", input: html })
      const out = JSON.stringify({ data: e.data, metadata: e.metadata })
      expect(out).not.toMatch(/<script|javascript:|alert\(|onerror|onclick|injected-by-script|document\.cookie/i)
      expect(e.data.content).toContain("Safe paragraph one")
      expect(e.data.images.map((i: { url: string }) => i.url)).toContain(`https://cdn.example.com/ok-${n}.jpg`)
      for (const img of e.data.images) expect(img.url).toMatch(/^https?:\/\//)
      const prod = await extractDone({
        type: "product",
        inputFormat: "json",
        input: JSON.stringify({ "@context": "https://schema.org", "@type": "Product", name: `Safe product ${n}`, image: ["javascript:alert(1)", "https://cdn.example.com/p.jpg"] })
      })
      expect(JSON.stringify(prod.data)).not.toContain("javascript:")
      expect(prod.data.images.map((i: any) => i.url)).toEqual(["https://cdn.example.com/p.jpg"])
    })
  })

  // ---------------------------------------------------------------- list and search

  describe("list and search", () => {
    let tenant: Awaited<ReturnType<ReturnType<typeof client>["createTenant"]>>
    const ids: Record<string, string> = {}

    beforeAll(async () => {
      tenant = await api.createTenant()
      const n = nonce()
      for (const [name, body] of [
        ["a1", { type: "article", input: `<h1>List one ${n}</h1>${longPara("L1")}` }],
        ["p1", { type: "product", input: `<h1>List product ${n}</h1><div class="price">$5.00</div>` }],
        ["a2", { type: "article", url: pages.put(`/list-${n}`, `<h1>List two ${n}</h1>${longPara("L2")}`) }]
      ] as const) {
        const res = await create(body as Record<string, unknown>, tenant.apiKey)
        expect(res.status).toBe(201)
        ids[name] = res.json.data.id
        await sleep(15) // distinct createdAt
      }
      for (const id of Object.values(ids)) await waitFinal(id, tenant.apiKey)
    })

    const list = (qs: string) => api.get(`/v1/extractor/extractions${qs}`, tenant.apiKey)

    it("lists the tenant's extractions newest first, paged", async () => {
      const all = await list("")
      expect(all.status).toBe(200)
      expect(all.json.data.items.map((e: any) => e.id)).toEqual([ids.a2, ids.p1, ids.a1])
      expect(all.json.data.pagination).toEqual({ offset: 0, limit: 50, total: 3, hasMore: false })
      const page = await list("?limit=1&offset=1")
      expect(page.json.data.items.map((e: any) => e.id)).toEqual([ids.p1])
      expect(page.json.data.pagination).toEqual({ offset: 1, limit: 1, total: 3, hasMore: true })
    })

    it("sorts and filters by status, type and domainId", async () => {
      const asc = await list("?sort=createdAt:asc")
      expect(asc.json.data.items.map((e: any) => e.id)).toEqual([ids.a1, ids.p1, ids.a2])
      // The echo names the order applied, with the id that breaks ties.
      expect(asc.json.data.sort).toEqual([{ field: "createdAt", dir: "asc" }, { field: "id", dir: "asc" }])
      const byType = await list("?sort=type:desc,createdAt:asc")
      expect(byType.json.data.items.map((e: any) => e.id)).toEqual([ids.p1, ids.a1, ids.a2])
      expect((await list("?type=product")).json.data.items.map((e: any) => e.id)).toEqual([ids.p1])
      expect((await list("?status=done")).json.data.pagination.total).toBe(3)
      expect((await list("?status=cancelled,dead")).json.data.items).toEqual([])
      expect((await list("?domainId=127.0.0.1")).json.data.items.map((e: any) => e.id)).toEqual([ids.a2])
    })

    it("refuses an unknown sort field (invalid_sort_field) and bad filters (invalid_filter)", async () => {
      const badSort = await list("?sort=title:asc")
      expect(badSort.status).toBe(400)
      expect(badSort.json.code).toBe("invalid_sort_field")
      expect(badSort.json.error.details[0].path).toMatch(/^sort/)
      for (const qs of ["?status=finished", "?type=video", "?status=done,bogus", "?domainId=", "?domainId=%20%20"]) {
        const res = await list(qs)
        expect(res.status, qs).toBe(400)
        expect(res.json.code, qs).toBe("invalid_filter")
      }
      // Every bad filter is named, in one invalid_filter.
      const twoFilters = await list("?status=finished&type=video")
      expect([twoFilters.status, twoFilters.json.code]).toEqual([400, "invalid_filter"])
      expect(twoFilters.json.error.details.map((d: any) => d.path).sort()).toEqual(["status", "type"])
      const badDir = await list("?sort=createdAt:up")
      expect(badDir.status).toBe(400)
      for (const qs of ["?limit=0", "?offset=-1", "?limit=abc"]) expect((await list(qs)).status, qs).toBe(400)
    })

    it("searches with combined filters, sort and pagination", async () => {
      const search = (body: unknown) => api.post("/v1/extractor/extractions/search", body, tenant.apiKey)
      const res = await search({ where: { type: "article", status: ["done"] }, sort: [{ field: "createdAt", dir: "asc" }], pagination: { offset: 0, limit: 1 } })
      expect(res.json.data.sort).toEqual([{ field: "createdAt", dir: "asc" }, { field: "id", dir: "asc" }])
      // No sort, or an empty one, is the default order, echoed as applied.
      for (const body of [{}, { sort: [] }]) {
        expect((await search(body)).json.data.sort, JSON.stringify(body)).toEqual([{ field: "createdAt", dir: "desc" }, { field: "id", dir: "desc" }])
      }
      expect(res.status).toBe(200)
      expect(res.json.data.items.map((e: any) => e.id)).toEqual([ids.a1])
      expect(res.json.data.pagination).toEqual({ offset: 0, limit: 1, total: 2, hasMore: true })
      const future = await search({ where: { createdAt: { gte: new Date(Date.now() + 3_600_000).toISOString() } } })
      expect(future.json.data.items).toEqual([])
      // url.prefix as in the job search: matched literally against the url as answered; inline input has none.
      const a2Url: string = (await api.get(`/v1/extractor/extractions/${ids.a2}`, tenant.apiKey)).json.data.url
      const byUrl = (prefix: string) => search({ where: { url: { prefix } } }).then((r) => r.json.data.items.map((e: any) => e.id))
      expect(await byUrl(a2Url.slice(0, a2Url.indexOf("/list-") + 6))).toEqual([ids.a2])
      expect(await byUrl(a2Url.slice(0, a2Url.indexOf("/list-")) + "/l%")).toEqual([])
      expect(await byUrl(a2Url.slice(0, a2Url.indexOf("/list-")) + "/_ist")).toEqual([])
      expect(await byUrl(a2Url + "x")).toEqual([])
      const noPrefix = await search({ where: { url: { prefix: "" } } })
      expect([noPrefix.status, noPrefix.json.code]).toEqual([400, "invalid_filter"])
      const badSort = await search({ sort: [{ field: "title", dir: "asc" }] })
      expect(badSort.status).toBe(400)
      expect(badSort.json.code).toBe("invalid_sort_field")
      const badDate = await search({ where: { createdAt: { gte: "yesterday" } } })
      expect(badDate.status).toBe(400)
      expect(badDate.json.code).toBe("invalid_filter")
      // Every bad bound is named, as in the job search.
      const bothBad = await search({ where: { createdAt: { gte: "yesterday", lt: "2021-02-29" } } })
      expect(bothBad.status).toBe(400)
      expect(bothBad.json.error.details.map((d: { path: string }) => d.path)).toEqual(["where.createdAt.gte", "where.createdAt.lt"])
      expect((await search({ where: { colour: "red" } })).status).toBe(400)
      expect((await search({ pagination: { limit: 201 } })).status).toBe(400)
    })
  })

  // ---------------------------------------------------------------- cancel and replay

  describe("cancel and replay", () => {
    it("cancels a queued or claimed extraction: 200 cancelled, readable as cancelled, never finished later", async () => {
      const n = nonce()
      const url = pages.put(`/slow-cancel-${n}`, `<h1>Too late ${n}</h1>${longPara("Late")}`, { delayMs: 3000 })
      const res = await create({ type: "article", url })
      expect(res.status).toBe(201)
      const id = res.json.data.id
      const cancel = await api.call("DELETE", `/v1/extractor/extractions/${id}`, { key: t.apiKey })
      expect(cancel.status).toBe(200)
      expect(cancel.json).toMatchObject({ status: "success", data: { id, status: "cancelled", cancelled: true } })
      expect(Number.isNaN(Date.parse(cancel.json.data.cancelledAt))).toBe(false)
      const e = await get(id)
      expect(e.status).toBe("cancelled")
      expect(e.cancelledAt).toBe(cancel.json.data.cancelledAt)
      // After the page would have arrived, it is still cancelled with no result (the type's empty one).
      await sleep(4500)
      const later = await get(id)
      expect(later.status).toBe("cancelled")
      expect(later.data).toEqual({ title: "Untitled", content: "" })
      // The job it made to fetch its URL was cancelled with it, instead of crawling on for nobody.
      const job = await api.get(`/v1/scraper/jobs/${res.json.data.jobId}`, t.apiKey)
      expect(job.json.data).toMatchObject({ status: "dead", result: { classification: "cancelled" } })
      // A second DELETE is a no-op success.
      const again = await api.call("DELETE", `/v1/extractor/extractions/${id}`, { key: t.apiKey })
      expect(again.status).toBe(200)
      expect(again.json.data).toMatchObject({ id, status: "cancelled", cancelled: false, cancelledAt: later.cancelledAt })
    })

    it("announces each change on the tenant's event stream, written with the change itself", async () => {
      const own = await api.createTenant()
      const controller = new AbortController()
      const res = await fetch(`${server.baseUrl}/v1/scraper/events`, { headers: { "x-api-key": own.apiKey }, signal: controller.signal })
      let text = ""
      const pump = (async () => {
        for await (const chunk of res.body!.pipeThrough(new TextDecoderStream())) text += chunk
      })().catch(() => undefined)
      const seen = () => [...text.matchAll(/event: (\S+)\ndata: (.*)\n/g)].map((m) => ({ event: m[1]!, data: JSON.parse(m[2]!) }))
      try {
        await until("the stream to connect", () => text.includes(": connected"))
        const done = await extractDone({ type: "article", input: `<h1>Announced ${nonce()}</h1>${longPara("Announced")}` }, own.apiKey)
        const slow = await create({ type: "article", url: pages.put(`/announce-cancel-${nonce()}`, `<h1>Slow</h1>${longPara("Slow")}`, { delayMs: 3000 }) }, own.apiKey)
        expect((await api.call("DELETE", `/v1/extractor/extractions/${slow.json.data.id}`, { key: own.apiKey })).status).toBe(200)
        await until("the events", () => seen().some((e) => e.event === "extraction.cancelled"))
        await until("the done event", () => seen().some((e) => e.event === "extraction.done"))
        const of = (id: string) => seen().filter((e) => e.data.id === id)
        expect(of(done.id).map((e) => e.event)).toEqual(["extraction.created", "extraction.claimed", "extraction.done"])
        for (const e of of(done.id)) expect(e.data).toMatchObject({ id: done.id, tenantId: own.tenantId, type: "article" })
        expect(of(slow.json.data.id).map((e) => e.event).at(-1)).toBe("extraction.cancelled")
        expect(of(slow.json.data.id).at(-1)!.data).toMatchObject({ status: "cancelled" })
      } finally {
        controller.abort()
        await pump
      }
    })

    it("leaves a terminal extraction unchanged on DELETE (200, cancelled: false)", async () => {
      const e = await extractDone({ type: "article", input: `<h1>Done ${nonce()}</h1>${longPara("Done")}` })
      const res = await api.call("DELETE", `/v1/extractor/extractions/${e.id}`, { key: t.apiKey })
      expect(res.status).toBe(200)
      expect(res.json.status).toBe("success")
      expect(res.json.data).toMatchObject({ id: e.id, status: "done", cancelled: false, reason: "already done" })
      // always a date-time (the spec's type): here when the refused cancel was answered
      const answeredAt = Date.parse(res.json.data.cancelledAt)
      expect(answeredAt).toBeGreaterThanOrEqual(Date.parse(e.createdAt))
      expect(answeredAt).toBeLessThanOrEqual(Date.now())
      const after = await get(e.id)
      expect(after).toEqual(e)
    })

    it("replays a terminal extraction into a new one (replayOf, recycleCount + 1)", async () => {
      const e = await extractDone({ type: "article", input: `<h1>Replay me ${nonce()}</h1>${longPara("Replay")}` })
      const r1 = await api.post(`/v1/extractor/extractions/${e.id}/replay`, {}, t.apiKey)
      expect(r1.status, r1.text).toBe(201)
      expect(r1.json.data.id).not.toBe(e.id)
      expect(r1.json.data).toMatchObject({ replayOf: e.id, recycleCount: 1, type: "article", inputFormat: "html" })
      const done1 = await waitFinal(r1.json.data.id)
      expect(done1.status).toBe("done")
      expect(done1.data).toEqual(e.data)
      const r2 = await api.post(`/v1/extractor/extractions/${r1.json.data.id}/replay`, {}, t.apiKey)
      expect(r2.status, r2.text).toBe(201)
      expect(r2.json.data).toMatchObject({ replayOf: r1.json.data.id, recycleCount: 2 })
      // The original is untouched.
      expect((await get(e.id)).recycleCount).toBe(0)
    })

    it("replays a url extraction by fetching the page again", async () => {
      const n = nonce()
      const url = pages.put(`/replay-url-${n}`, `<h1>Replay url ${n}</h1>${longPara("RU")}`)
      const e = await extractDone({ type: "article", url })
      const r = await api.post(`/v1/extractor/extractions/${e.id}/replay`, {}, t.apiKey)
      expect(r.status, r.text).toBe(201)
      expect(r.json.data).toMatchObject({ replayOf: e.id, recycleCount: 1, url })
      expect((await waitFinal(r.json.data.id)).status).toBe("done")
    })

    it("replays an extraction of a job the client named by reading that job again, not by fetching its URL", async () => {
      const n = nonce()
      const url = pages.put(`/replay-job-${n}`, `<h1>Replay job ${n}</h1>${longPara("RJ")}`)
      const first = await extractDone({ type: "article", url })
      const e = await extractDone({ type: "article", jobId: first.jobId })
      const r = await api.post(`/v1/extractor/extractions/${e.id}/replay`, {}, t.apiKey)
      expect(r.status, r.text).toBe(201)
      expect(r.json.data).toMatchObject({ replayOf: e.id, jobId: first.jobId })
      expect((await waitFinal(r.json.data.id)).status).toBe("done")
      // The replay of the URL extraction itself fetches again: a job of its own.
      const u = await api.post(`/v1/extractor/extractions/${first.id}/replay`, {}, t.apiKey)
      expect(u.json.data.jobId).not.toBe(first.jobId)
    })

    it("refuses to replay an extraction that has not ended (409 cannot_replay_<status>)", async () => {
      const n = nonce()
      const url = pages.put(`/slow-replay-${n}`, `<h1>Slow ${n}</h1>`, { delayMs: 3000 })
      const res = await create({ type: "article", url })
      const replay = await api.post(`/v1/extractor/extractions/${res.json.data.id}/replay`, {}, t.apiKey)
      expect(replay.status).toBe(409)
      expect(replay.json.code).toMatch(/^cannot_replay_(queued|claimed)$/)
      await api.call("DELETE", `/v1/extractor/extractions/${res.json.data.id}`, { key: t.apiKey })
    })
  })

  // ---------------------------------------------------------------- cache and idempotency

  describe("cache and idempotency", () => {
    it("answers an identical input + type + config from the cache (cacheHits 1)", async () => {
      const input = `<h1>Cached ${nonce()}</h1>${longPara("Cache", 1)}${longPara("Cache", 2)}`
      const first = await extractDone({ type: "article", input })
      expect(first.cacheHits).toBe(0)
      const second = await extractDone({ type: "article", input })
      expect(second.id).not.toBe(first.id)
      expect(second.cacheHits).toBe(1)
      expect(second.data).toEqual(first.data)
      // Another type is another extraction.
      const product = await extractDone({ type: "product", input })
      expect(product.cacheHits).toBe(0)
    })

    it("replays the stored response for the same Idempotency-Key and body, 409 for another body", async () => {
      const key = `idem-${nonce()}`
      const body = { type: "article", input: `<h1>Idem ${nonce()}</h1>${longPara("Idem")}` }
      const first = await create(body, t.apiKey, { "Idempotency-Key": key })
      expect(first.status).toBe(201)
      const second = await create(body, t.apiKey, { "Idempotency-Key": key })
      expect(second.status).toBe(201)
      expect(second.json).toEqual(first.json)
      const list = await api.get("/v1/extractor/extractions?limit=200", t.apiKey)
      expect(list.json.data.items.filter((e: any) => e.id === first.json.data.id)).toHaveLength(1)
      const other = await create({ ...body, type: "product" }, t.apiKey, { "Idempotency-Key": key })
      expect(other.status).toBe(409)
      expect(other.json.code).toBe("idempotency_mismatch")
      const bad = await create(body, t.apiKey, { "Idempotency-Key": "x".repeat(256) })
      expect(bad.status).toBe(400)
      expect(bad.json.code).toBe("invalid_idempotency_key")
      // A body that breaks a rule across its fields (no source) is the answer, naming the bad key too.
      const both = await create({ type: "product" }, t.apiKey, { "Idempotency-Key": "x".repeat(256) })
      expect(both.status, both.text).toBe(400)
      expect(both.json.code).toBe("validation_error")
      expect(both.json.error.details.map((d: any) => [d.path, d.code])).toEqual([["url", "exactly_one_source"], ["Idempotency-Key", expect.any(String)]])
      // Concurrent duplicates create one extraction.
      const raceKey = `race-${nonce()}`
      const raceBody = { type: "article", input: `<h1>Race ${nonce()}</h1>${longPara("Race")}` }
      const racers = await Promise.all(Array.from({ length: 5 }, () => create(raceBody, t.apiKey, { "Idempotency-Key": raceKey })))
      expect(racers.map((r) => r.status)).toEqual([201, 201, 201, 201, 201])
      expect(new Set(racers.map((r) => r.json.data.id)).size).toBe(1)
      // Keys are per tenant: another tenant's same key is a fresh creation.
      const otherTenant = await api.createTenant()
      const theirs = await create(body, otherTenant.apiKey, { "Idempotency-Key": key })
      expect(theirs.status).toBe(201)
      expect(theirs.json.data.id).not.toBe(first.json.data.id)
    })
  })

  // ---------------------------------------------------------------- LLM refinement

  describe("LLM refinement (fake OpenAI-compatible server)", () => {
    // The client timeout is 20 s (src/extract/llm.ts, not configurable per request). The timeout
    // extraction is started here so its 20 s run in parallel with the other LLM tests; the last test
    // of this block checks it.
    const timeoutMarker = `LLMCASE-timeout-${nonce()}`
    let timeoutId: string

    beforeAll(async () => {
      llm.when(timeoutMarker, { delayMs: 26_000, then: { json: { price: 1 } } })
      const res = await create({ type: "product", llm: { enabled: true }, input: `<h1>Slow model ${timeoutMarker}</h1>` })
      expect(res.status).toBe(201)
      timeoutId = res.json.data.id
    })

    const productPage = (marker: string, extra = "") => `<html><body><h1>Refined widget ${marker}</h1>${extra}<p>Sold by the best shop.</p></body></html>`

    it("fill-missing fills a missing field and sends model, messages and a json_schema response_format", async () => {
      const marker = `LLMCASE-fill-${nonce()}`
      llm.when(marker, { json: { price: 19.5, currency: "EUR", name: "Something else entirely" }, usage: { prompt: 321, completion: 12 } })
      const e = await extractDone({ type: "product", llm: { enabled: true, mode: "fill-missing" }, input: productPage(marker) })
      expect(e.data.name).toBe(`Refined widget ${marker}`) // present, so not overwritten
      expect(e.data.price).toBe(19.5)
      expect(e.data.currency).toBe("EUR")
      expect(e.metadata.llm).toMatchObject({ model: "test-model", status: "ok", promptTokens: 321, completionTokens: 12 })
      expect([...e.metadata.llm.refinedFields].sort()).toEqual(["currency", "price"])
      expect(e.metadata.llm.correctedFields).toEqual([])
      expect(e.metadata.llm.durationMs).toBeGreaterThanOrEqual(0)
      expect(e.errorClass).toBeNull()
      const [req] = llm.requestsFor(marker)
      expect(req).toBeDefined()
      expect(req!.path).toBe("/v1/chat/completions")
      expect(req!.headers["content-type"]).toMatch(/application\/json/)
      expect(req!.body.model).toBe("test-model")
      expect(Array.isArray(req!.body.messages)).toBe(true)
      expect(req!.body.messages.length).toBeGreaterThan(0)
      for (const m of req!.body.messages) expect(typeof m.role === "string" && typeof m.content === "string").toBe(true)
      expect(req!.body.response_format.type).toBe("json_schema")
      expect(req!.body.response_format.json_schema.schema.properties).toHaveProperty("price")
    })

    it("correct mode changes a wrong field (correctedFields)", async () => {
      const marker = `LLMCASE-correct-${nonce()}`
      llm.when(marker, { json: { name: `Corrected name ${marker}` } })
      const e = await extractDone({ type: "product", llm: { enabled: true, mode: "correct" }, input: productPage(marker) })
      expect(e.data.name).toBe(`Corrected name ${marker}`)
      expect(e.metadata.llm).toMatchObject({ status: "ok", correctedFields: ["name"], refinedFields: [] })
      expect(llm.requestsFor(marker)).toHaveLength(1)
    })

    it("keeps the heuristic data when the answer is not JSON (failed_validation, errorClass llm_validation)", async () => {
      const marker = `LLMCASE-badjson-${nonce()}`
      llm.when(marker, { content: "Sure! Here is the product: {name: oops" })
      const e = await extractDone({ type: "product", llm: { enabled: true }, input: productPage(marker) })
      expect(e.status).toBe("done")
      expect(e.data.name).toBe(`Refined widget ${marker}`)
      expect(e.metadata.llm.status).toBe("failed_validation")
      expect(e.errorClass).toBe("llm_validation")
    })

    it("reports an HTTP 500 from the model as failed_request (errorClass llm_request)", async () => {
      const marker = `LLMCASE-500-${nonce()}`
      llm.when(marker, { status: 500 })
      const e = await extractDone({ type: "product", llm: { enabled: true }, input: productPage(marker) })
      expect(e.data.name).toBe(`Refined widget ${marker}`)
      expect(e.metadata.llm.status).toBe("failed_request")
      expect(e.errorClass).toBe("llm_request")
      expect(typeof e.errorMessage).toBe("string")
    })

    it("rejects a field of the wrong type (rejectedRefines) and keeps the valid ones", async () => {
      const marker = `LLMCASE-type-${nonce()}`
      llm.when(marker, { json: { price: "very cheap", currency: "USD", images: [{ url: "javascript:alert(1)" }] } })
      const e = await extractDone({ type: "product", llm: { enabled: true }, input: productPage(marker) })
      expect(e.data.price).toBeUndefined()
      expect(e.data.currency).toBe("USD")
      expect(e.data.images ?? []).toEqual([])
      expect(e.metadata.llm.status).toBe("ok")
      expect(e.metadata.llm.rejectedRefines).toEqual(expect.arrayContaining(["price", "images"]))
      expect(e.metadata.llm.refinedFields).toEqual(["currency"])
    })

    it("does not let the model put script markup into the output", async () => {
      const marker = `LLMCASE-script-${nonce()}`
      llm.when(marker, { json: { description: `Nice lamp <script>alert('llm')</script><img src=x onerror=alert(1)>` } })
      const e = await extractDone({ type: "product", llm: { enabled: true }, input: productPage(marker) })
      expect(llm.requestsFor(marker)).toHaveLength(1)
      expect(e.data.description).toMatch(/^Nice lamp/)
      expect(JSON.stringify(e.data)).not.toMatch(/<script|onerror=|javascript:/i)
    })

    it("sets errorClass llm_* only when the request itself enabled the LLM (not when a config did)", async () => {
      const tenant = await api.createTenant()
      const cfg = await api.post("/v1/extractor/configs", { scope: "tenant", type: "product", payload: { llm: { enabled: true, mode: "fill-missing" } } }, tenant.apiKey)
      expect(cfg.status, cfg.text).toBe(201)
      const marker = `LLMCASE-cfg500-${nonce()}`
      llm.when(marker, { status: 500 })
      const byConfig = await extractDone({ type: "product", input: productPage(marker) }, tenant.apiKey)
      expect(byConfig.metadata.llm.status).toBe("failed_request")
      expect(byConfig.errorClass).toBeNull()
      expect(byConfig.errorMessage).toBeNull()
      expect(llm.requestsFor(marker)).toHaveLength(1)
      // The request can switch the config's LLM off.
      const marker2 = `LLMCASE-off-${nonce()}`
      llm.when(marker2, { json: { price: 3 } })
      const off = await extractDone({ type: "product", llm: { enabled: false }, input: productPage(marker2) }, tenant.apiKey)
      expect(llm.requestsFor(marker2)).toHaveLength(0)
      expect(off.metadata.llm).toBeUndefined()
      // Without any LLM wish, no call and no llm metadata.
      const marker3 = `LLMCASE-none-${nonce()}`
      llm.when(marker3, { json: { price: 3 } })
      const none = await extractDone({ type: "product", input: productPage(marker3) })
      expect(llm.requestsFor(marker3)).toHaveLength(0)
      expect(none.metadata.llm).toBeUndefined()
      expect(none.errorClass).toBeNull()
    })

    it("uses a config's model, temperature, prompt and mode for the request", async () => {
      const tenant = await api.createTenant()
      const cfg = await api.post("/v1/extractor/configs", {
        scope: "tenant",
        type: "product",
        payload: { llm: { enabled: true, model: "cfg-model", temperature: 0.7, promptOverride: "CUSTOM PROMPT: fix the product.", mode: "correct" } }
      }, tenant.apiKey)
      expect(cfg.status, cfg.text).toBe(201)
      const marker = `LLMCASE-cfgmodel-${nonce()}`
      llm.when(marker, { json: { name: `Config-corrected ${marker}` } })
      const e = await extractDone({ type: "product", input: productPage(marker) }, tenant.apiKey)
      const [req] = llm.requestsFor(marker)
      expect(req!.body.model).toBe("cfg-model")
      expect(req!.body.temperature).toBe(0.7)
      expect(req!.body.messages.map((m: any) => m.content).join("\n")).toContain("CUSTOM PROMPT: fix the product.")
      expect(e.metadata.llm).toMatchObject({ model: "cfg-model", status: "ok", correctedFields: ["name"] })
      expect(e.data.name).toBe(`Config-corrected ${marker}`)
    })

    it("refuses a config that names a model the operator does not offer (LLM_MODELS)", async () => {
      const tenant = await api.createTenant()
      const res = await api.post("/v1/extractor/configs", { scope: "tenant", type: "product", payload: { llm: { enabled: true, model: "costly-model" } } }, tenant.apiKey)
      expect(res.status, res.text).toBe(400)
      expect(res.json.error.details).toEqual([expect.objectContaining({ path: "payload.llm.model", code: "invalid_value", message: expect.stringContaining("test-model, cfg-model") })])
      // The default model is always offered.
      expect((await api.post("/v1/extractor/configs", { scope: "tenant", type: "product", payload: { llm: { enabled: true, model: "test-model" } } }, tenant.apiKey)).status).toBe(201)
    })

    it("caches a refined result: the identical request is answered without a second model call", async () => {
      const marker = `LLMCASE-cache-${nonce()}`
      llm.when(marker, { json: { sku: `SKU-${marker}` } })
      const body = { type: "product", llm: { enabled: true }, input: productPage(marker) }
      const first = await extractDone(body)
      const second = await extractDone(body)
      expect(first.data.sku).toBe(`SKU-${marker}`)
      expect(second.data).toEqual(first.data)
      expect(second.cacheHits).toBe(1)
      expect(llm.requestsFor(marker)).toHaveLength(1)
    })

    it("cancelling during the model call stops it and the extraction stays cancelled", async () => {
      const marker = `LLMCASE-cancel-${nonce()}`
      llm.when(marker, { delayMs: 8000, then: { json: { price: 5 } } })
      const res = await create({ type: "product", llm: { enabled: true }, input: productPage(marker) })
      expect(res.status).toBe(201)
      const req = await until("the model call", () => llm.requestsFor(marker)[0], 15_000)
      const cancel = await api.call("DELETE", `/v1/extractor/extractions/${res.json.data.id}`, { key: t.apiKey })
      expect(cancel.json.data).toMatchObject({ status: "cancelled", cancelled: true })
      // The claimed run is told to stop (best effort): the model call is dropped well before its 8 s.
      await until("the model call to be dropped", () => req.abandoned, 5000)
      await sleep(500)
      const e = await get(res.json.data.id)
      expect(e.status).toBe("cancelled")
      expect(e.data).toEqual({ name: "Untitled product" })
    })

    it("gives up on a model slower than the client timeout (failed_timeout, errorClass llm_timeout)", async () => {
      const e = await waitFinal(timeoutId, t.apiKey, 45_000)
      expect(e.status).toBe("done")
      expect(e.data.name).toBe(`Slow model ${timeoutMarker}`)
      expect(e.metadata.llm.status).toBe("failed_timeout")
      expect(e.metadata.llm.durationMs).toBeGreaterThanOrEqual(19_000)
      expect(e.errorClass).toBe("llm_timeout")
      const [req] = llm.requestsFor(timeoutMarker)
      expect(req?.abandoned).toBe(true)
    }, 60_000)
  })

  // ---------------------------------------------------------------- webhooks

  describe("extraction webhooks", () => {
    it("refuses a webhook secret or event types without a webhook URL", async () => {
      const res = await create({ type: "article", input: `<h1>Orphan ${nonce()}</h1>`, webhookSecret: "s".repeat(16), webhookEventTypes: ["done"] })
      expect(res.status, res.text).toBe(400)
      expect(res.json.code).toBe("validation_error")
      expect(res.json.error.details.map((d: any) => d.path).sort()).toEqual(["webhookEventTypes", "webhookSecret"])
    })

    it("delivers done with the extraction headers and body, signed", async () => {
      const hook = await startReceiver()
      try {
        const secret = "extraction-secret-0123456789"
        const n = nonce()
        const res = await create({ type: "article", input: `<h1>Hooked ${n}</h1>${longPara("Hook")}`, webhookUrl: hook.url, webhookSecret: secret })
        expect(res.status).toBe(201)
        expect(res.json.data.webhookSecret).toBeUndefined()
        const id = res.json.data.id
        const got = await until("delivery", () => hook.received[0])
        const h = got.headers
        expect(h["content-type"]).toBe("application/json")
        expect(h["user-agent"]).toBe("service-webhook/1.0")
        expect(h["x-service-extraction-webhook-version"]).toBe("1")
        expect(h["x-service-extractionid"]).toBe(id)
        expect(h["x-service-timestamp"]).toMatch(/^\d{10}$/)
        expect(h["x-service-signature"]).toMatch(/^sha256=[0-9a-f]{64}$/)
        const body = JSON.parse(got.raw.toString("utf8"))
        expect(Object.keys(body)).toEqual(["extractionId", "type", "status", "url", "data", "metadata", "requestId", "deliveredAt"])
        const e = await get(id)
        expect(body).toMatchObject({ extractionId: id, type: "article", status: "done", url: null })
        expect(body.data).toEqual(e.data)
        expect(body.metadata.inputFormat).toBe("html")
        expect(body.requestId).toBe(res.headers.get("x-request-id"))
        expect(Number.isNaN(Date.parse(body.deliveredAt))).toBe(false)
        expect(verifyWebhookSignature({ rawBody: got.raw, headers: h as Record<string, string>, secret }).ok).toBe(true)
        const log = await until("delivered log", async () => {
          const r = await api.get(`/v1/extractor/extractions/${id}/webhook-deliveries`, t.apiKey)
          return r.json.data.items[0]?.status === "delivered" ? r.json.data.items : undefined
        })
        expect(log).toHaveLength(1)
        await sleep(300)
        expect(hook.received).toHaveLength(1) // once, on the terminal state
        // A replay repeats the original's options: the same webhook, signed with the same secret.
        const replay = await api.post(`/v1/extractor/extractions/${id}/replay`, {}, t.apiKey)
        expect(replay.status, replay.text).toBe(201)
        const again = await until("the replay's delivery", () => hook.received[1])
        expect(JSON.parse(again.raw.toString("utf8")).extractionId).toBe(replay.json.data.id)
        expect(verifyWebhookSignature({ rawBody: again.raw, headers: again.headers as Record<string, string>, secret }).ok).toBe(true)
      } finally {
        await hook.close()
      }
    })

    it("generates a secret when none is given and signs with it", async () => {
      const hook = await startReceiver()
      try {
        const res = await create({ type: "product", input: `<h1>Gen secret ${nonce()}</h1>`, webhookUrl: hook.url })
        const secret = res.json.data.webhookSecret as string
        expect(typeof secret).toBe("string")
        expect(secret.length).toBeGreaterThanOrEqual(16)
        expect(JSON.stringify(await get(res.json.data.id))).not.toContain(secret)
        const got = await until("delivery", () => hook.received[0])
        expect(verifyWebhookSignature({ rawBody: got.raw, headers: got.headers as Record<string, string>, secret }).ok).toBe(true)
      } finally {
        await hook.close()
      }
    })

    it("delivers only the listed states: dead by default, not when only done is listed", async () => {
      // There is no HTTP-visible way to provoke the transient `failed` state (only unexpected faults
      // are transient), so the filter is checked with `dead` (a page that cannot be fetched) and `done`.
      const hook = await startReceiver()
      try {
        const deadDefault = await create({ type: "article", url: "http://127.0.0.1:9/closed-default", webhookUrl: hook.url })
        const deadUnlisted = await create({ type: "article", url: "http://127.0.0.1:9/closed-unlisted", webhookUrl: hook.url, webhookEventTypes: ["done"] })
        const doneUnlisted = await create({ type: "article", input: `<h1>Unlisted ${nonce()}</h1>`, webhookUrl: hook.url, webhookEventTypes: ["dead", "failed"] })
        for (const r of [deadDefault, deadUnlisted, doneUnlisted]) expect(r.status, r.text).toBe(201)
        const a = await waitFinal(deadDefault.json.data.id)
        const b = await waitFinal(deadUnlisted.json.data.id)
        const c = await waitFinal(doneUnlisted.json.data.id)
        expect([a.status, b.status, c.status]).toEqual(["dead", "dead", "done"])
        expect(a.errorClass).toBe("invalid_input")
        await until("dead delivery", () => hook.received.length >= 1)
        await sleep(1000)
        expect(hook.received.map((r) => r.headers["x-service-extractionid"])).toEqual([a.id])
        const body = JSON.parse(hook.received[0]!.raw.toString("utf8"))
        expect(body).toMatchObject({ extractionId: a.id, status: "dead", type: "article" })
      } finally {
        await hook.close()
      }
    })

    it("refuses an invalid webhookEventTypes value (400)", async () => {
      for (const webhookEventTypes of [["claimed"], ["done", "finished"], [], "done"]) {
        const res = await create({ type: "article", input: "<h1>x</h1>", webhookUrl: "http://127.0.0.1:9/hook", webhookEventTypes })
        expect(res.status, JSON.stringify(webhookEventTypes)).toBe(400)
        expect(res.json.code).toBe("validation_error")
      }
    })
  })

  // ---------------------------------------------------------------- isolation

  it("hides another tenant's extraction (404 on get, cancel, replay and deliveries; absent from lists)", async () => {
    const e = await extractDone({ type: "article", input: `<h1>Mine ${nonce()}</h1>${longPara("Mine")}` })
    const other = await api.createTenant()
    for (const [method, path] of [
      ["GET", `/v1/extractor/extractions/${e.id}`],
      ["DELETE", `/v1/extractor/extractions/${e.id}`],
      ["POST", `/v1/extractor/extractions/${e.id}/replay`],
      ["GET", `/v1/extractor/extractions/${e.id}/webhook-deliveries`]
    ] as const) {
      const res = await api.call(method, path, { key: other.apiKey, ...(method === "POST" ? { body: {} } : {}) })
      expect(res.status, `${method} ${path}`).toBe(404)
      expect(res.json.code).toBe("not_found")
    }
    const list = await api.get("/v1/extractor/extractions", other.apiKey)
    expect(list.json.data.items).toEqual([])
    expect((await get(e.id)).status).toBe("done")
    expect((await api.get(`/v1/extractor/extractions/ext_missing`, t.apiKey)).status).toBe(404)
  })

  // ---------------------------------------------------------------- crash

  it("finishes an extraction whose node was SIGKILLed while it waited for a slow url page", async () => {
    const n = nonce()
    // Only the first fetch is slow: the one the killed node was doing.
    const path = `/crash-${n}`
    const url = pages.put(path, `<html><body><article><h1>Survivor ${n}</h1>${longPara("Survivor", 1)}${longPara("Survivor", 2)}</article></body></html>`, {
      delayMs: 30_000,
      delayFirstOnly: true
    })
    let node = crashServer!
    let capi = client(node.baseUrl)
    const tenant = await capi.createTenant()
    const res = await capi.call("POST", "/v1/extractor/extractions", { key: tenant.apiKey, body: { type: "article", url } })
    expect(res.status).toBe(201)
    const id = res.json.data.id
    await until("the page request", () => pages.hits(path) >= 1, 15_000)
    expect(TERMINAL).not.toContain((await capi.get(`/v1/extractor/extractions/${id}`, tenant.apiKey)).json.data.status)
    await node.stop("SIGKILL")
    node = await startServer(crashEnv, { dataDir: node.dataDir, timeoutMs: 45_000 })
    crashServer = node
    capi = client(node.baseUrl)
    const e = await until("the extraction to end after the restart", async () => {
      const r = await capi.get(`/v1/extractor/extractions/${id}`, tenant.apiKey)
      return TERMINAL.includes(r.json.data.status) ? r.json.data : undefined
    }, 40_000)
    expect(e.status).toBe("done")
    expect(e.data.title).toBe(`Survivor ${n}`)
  }, 60_000)
})
