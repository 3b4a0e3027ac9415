/**
 * Site crawl benchmark: a whole generated site crawled from one seed URL by Trawl's crawl API and
 * by Crawlee's CheerioCrawler, in one run, on the same site at the same concurrency.
 *
 *   npm run bench:sitecrawl
 *   npm run bench:sitecrawl -- --pages 1000 --warm 200 --rounds 3
 *   npm run bench:sitecrawl -- --only crawlee      # or --only trawl: one side, no ratio
 *
 * Site (bench/sitecrawl-support/site.ts, own process): `--pages` HTML pages of ~1 KB to ~60 KB on
 * one loopback address, a fixed link graph in which every page is reachable from page 0 (each page
 * links to five children, its parent, page 0, three PRNG-picked pages, and two of those again with
 * a fragment or as an absolute URL). The site counts fetches per path; each crawl gets a section of
 * its own (`/s/<k>/`), so nothing it fetches was fetched before and its counts are its own.
 *
 * Concurrency: one site is one domain, which Trawl fetches at most `perDomainConcurrency` pages at
 * a time (config/crawl.json, its politeness limit); Crawlee runs at exactly that concurrency.
 *
 * (a) Trawl: the real server process (ALLOW_PRIVATE_TARGETS=true for the loopback site; embedded
 *     PGlite, or DATABASE_URL [+ REDIS_URL] on a fresh test database), one tenant on the "pro" plan
 *     with credit for every page. `POST /v1/scraper/crawls {url: page 0, limit: pages, maxDepth: 20,
 *     maxPagesPerPattern: pages (the site's pages all share one path pattern, /s/<k>/<n>),
 *     sitemap: "skip"}`, then `GET /v1/scraper/crawls/{id}` every 250 ms until the crawl is done,
 *     failed or cancelled. Time: from the POST to the poll that saw it terminal. CPU: the server
 *     process's utime + stime from /proc over that time (the polls included). One warm-up crawl of
 *     `--warm` pages first (a cold server mostly measures its JIT).
 * (b) Crawlee: CheerioCrawler with `enqueueLinks()` in a child process
 *     (bench/sitecrawl-support/crawlee-runner.ts), min = max concurrency, maxRequestsPerCrawl =
 *     pages, in-memory storage; a warm-up crawl of `--warm` pages, then the measured one. Time and
 *     CPU are the child's own (process.cpuUsage) over `crawler.run`.
 *
 * pages/s = distinct pages the site served in the crawl's section / time; CPU ms per page = the
 * crawler's CPU / those pages; duplicates = fetches beyond one per page, from the site's counts.
 * With `--rounds` > 1 the two take turns (a b, b a, ...) and the medians are reported.
 *
 * Last line: `sitecrawl ratio_crawlee=<a pages/s / b pages/s> pages=<a's pages> duplicates=<a's duplicates>`
 * (with `--only crawlee`, ratio_crawlee=NaN and b's pages and duplicates).
 */
import { mkdtempSync, rmSync } from "node:fs"
import { cpus, loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { bootstrap } from "./support/bootstrap.ts"
import { runComparison, startTrawl } from "./support/compare.ts"
import { median } from "./support/load.ts"
import { numberOption, optionalString } from "./support/options.ts"
import { checkInterrupted, cleanupAll, cpuMs, installExitHandlers, spawnTs } from "./support/processes.ts"
import { loadCrawlConfig } from "../src/crawl/config.ts"

// ---------------------------------------------------------------------------------------------
// Options

const pages = Math.round(numberOption("pages", 1000))
const warmPages = Math.round(numberOption("warm", 200, true))
const rounds = Math.max(1, Math.round(numberOption("rounds", 1)))
const crawlTimeoutS = numberOption("timeout", 900)
const only = optionalString("only")
if (only !== undefined && only !== "trawl" && only !== "crawlee") throw new Error("--only must be trawl or crawlee")
if (pages > 10_000) throw new Error("--pages is at most 10000 (the crawl API's limit)")
const runTrawl = only !== "crawlee"
const runCrawlee = only !== "trawl"

const perDomain = loadCrawlConfig().perDomainConcurrency
const concurrency = perDomain

const log = (line = "") => console.log(line)
const f = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : String(x))
const loud = (msg: string) => log(`\n!!!!!!!! ${msg} !!!!!!!!\n`)
const load = () => `load ${loadavg().map((x) => x.toFixed(1)).join(" ")} on ${cpus().length} cores`
const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms))

// ---------------------------------------------------------------------------------------------
// The site

interface Site {
  readonly origin: string
  readonly cpuMs: () => number | undefined
  /** A fresh section: its seed URL and its prefix. */
  readonly section: () => { seed: string; prefix: string }
  readonly counts: (prefix: string) => Promise<{ distinct: number; fetches: number; duplicates: number; other: number }>
}

const startSite = async (): Promise<Site> => {
  const child = spawnTs("site", "bench/sitecrawl-support/site.ts", { SITE_PAGES: String(pages), SITE_HOST: "127.0.0.2" })
  const ready = JSON.parse(await child.line("site ready", 60_000)) as { origin: string; minBytes: number; maxBytes: number }
  log(`site: ${pages} pages at ${ready.origin}, ${ready.minBytes} to ${ready.maxBytes} bytes each`)
  let next = 0
  return {
    origin: ready.origin,
    cpuMs: () => cpuMs(child.process.pid),
    section: () => {
      const prefix = `/s/${next++}/`
      return { seed: `${ready.origin}${prefix}0`, prefix }
    },
    counts: async (prefix) => {
      const res = await fetch(`${ready.origin}/__counts?prefix=${encodeURIComponent(prefix)}`)
      return (await res.json()) as { distinct: number; fetches: number; duplicates: number; other: number }
    }
  }
}

interface Figures {
  readonly label: string
  /** Distinct pages the site served in the crawl's section. */
  readonly pages: number
  readonly duplicates: number
  readonly wallMs: number
  readonly cpuMs: number
  readonly note: string
}
const pps = (r: Figures) => (r.pages / r.wallMs) * 1000
const cpuPerPage = (r: Figures) => r.cpuMs / r.pages

const checkComplete = (r: Figures, expected: number) => {
  if (r.pages !== expected) loud(`${r.label.toUpperCase()}: ${r.pages} OF ${expected} PAGES FETCHED: FIGURES NOT VALID`)
  if (r.duplicates > 0) loud(`${r.label.toUpperCase()}: ${r.duplicates} DUPLICATE FETCHES`)
}

// ---------------------------------------------------------------------------------------------
// (a) Trawl's crawl API

interface CrawlJson {
  id: string
  status: string
  statusReason?: string | null
  counts: { discovered: number; queued: number; done: number; failed: number; skipped: Record<string, number> }
}

const TERMINAL = new Set(["done", "failed", "cancelled"])

const startTrawlSide = async () => {
  const trawl = await startTrawl("sitecrawl", { ALLOW_PRIVATE_TARGETS: "true" })
  // Credit for every page of every crawl, on the plan with the larger daily and concurrent job quotas.
  const { owners } = await bootstrap(trawl.baseUrl, { tenants: 1, keysPerTenant: 0, rateLimitPerMinute: 5000, credits: "100000.00", plan: "pro" })
  const key = owners[0]!.apiKey
  /** One request with the owner's key; a 429 is waited out (Retry-After) and sent again. */
  const call = async (method: "GET" | "POST", path: string, body?: unknown): Promise<{ status: number; text: string; json: { data: CrawlJson } | undefined }> => {
    for (;;) {
      const res = await fetch(trawl.baseUrl + path, {
        method,
        headers: { "x-api-key": key, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      })
      const text = await res.text()
      if (res.status === 429) {
        log(`  ... ${method} ${path}: 429, again after ${res.headers.get("retry-after") ?? "1"} s`)
        await sleep(1000 * Math.max(1, Number(res.headers.get("retry-after") ?? "1")))
        continue
      }
      return { status: res.status, text, json: text ? (JSON.parse(text) as { data: CrawlJson }) : undefined }
    }
  }

  /** One crawl of `limit` pages from `seed`, timed from the POST to the poll that saw it terminal. */
  const crawl = async (label: string, seed: string, limit: number): Promise<{ crawl: CrawlJson; wallMs: number; cpuMs: number }> => {
    checkInterrupted()
    const cpu0 = cpuMs(trawl.pid) ?? NaN
    const t0 = performance.now()
    const created = await call("POST", "/v1/scraper/crawls", { url: seed, limit, maxDepth: 20, maxPagesPerPattern: limit, sitemap: "skip" })
    if (created.status !== 201) throw new Error(`${label}: POST /v1/scraper/crawls answered ${created.status}: ${created.text.slice(0, 1000)}`)
    const id = created.json!.data.id
    let lastLog = t0
    for (;;) {
      await sleep(250)
      checkInterrupted()
      const got = await call("GET", `/v1/scraper/crawls/${id}`)
      if (got.status !== 200) throw new Error(`${label}: GET /v1/scraper/crawls/${id} answered ${got.status}: ${got.text.slice(0, 1000)}`)
      const c = got.json!.data
      const now = performance.now()
      if (TERMINAL.has(c.status)) return { crawl: c, wallMs: now - t0, cpuMs: (cpuMs(trawl.pid) ?? NaN) - cpu0 }
      if (now - t0 > crawlTimeoutS * 1000) throw new Error(`${label}: crawl ${id} not terminal after ${crawlTimeoutS} s: ${got.text.slice(0, 1000)}`)
      if (now - lastLog > 10_000) {
        lastLog = now
        log(`  ... ${label}: ${c.status}${c.statusReason ? ` (${c.statusReason})` : ""}, ${JSON.stringify(c.counts)}`)
      }
    }
  }
  return { crawl, stop: trawl.stop }
}

type TrawlSide = Awaited<ReturnType<typeof startTrawlSide>>

const trawlRound = async (trawl: TrawlSide, site: Site): Promise<Figures> => {
  const { seed, prefix } = site.section()
  const { crawl, wallMs, cpuMs } = await trawl.crawl("Trawl", seed, pages)
  const counts = await site.counts(prefix)
  if (crawl.status !== "done" || crawl.counts.done !== pages) {
    loud(`TRAWL: CRAWL ${crawl.status}${crawl.statusReason ? ` (${crawl.statusReason})` : ""} WITH ${crawl.counts.done} OF ${pages} PAGES DONE, ${crawl.counts.failed} FAILED`)
  }
  return {
    label: "Trawl",
    pages: counts.distinct,
    duplicates: counts.duplicates,
    wallMs,
    cpuMs,
    note: `crawl ${crawl.status}, counts ${JSON.stringify(crawl.counts)}`
  }
}

// ---------------------------------------------------------------------------------------------
// (b) Crawlee in a child process

const crawleeRound = async (site: Site): Promise<Figures> => {
  const warm = site.section()
  const measured = site.section()
  const crawls = [...(warmPages > 0 ? [{ seed: warm.seed, limit: warmPages }] : []), { seed: measured.seed, limit: pages }]
  // Its storage is in memory; a directory of its own all the same, so that nothing lands in the repo.
  const storage = mkdtempSync(join(tmpdir(), "trawl-bench-sitecrawl-storage-"))
  const child = spawnTs("crawlee", "bench/sitecrawl-support/crawlee-runner.ts", {
    CONCURRENCY: String(concurrency),
    CRAWLS: JSON.stringify(crawls),
    CRAWLEE_STORAGE_DIR: storage,
    CRAWLEE_PERSIST_STORAGE: "false"
  })
  try {
    await child.exited
    const results = child.output().split("\n").filter((l) => l.startsWith("result ")).map((l) => JSON.parse(l.slice(7)) as {
      seed: string
      pages: number
      failed: number
      wallMs: number
      cpuMs: number
    })
    const r = results.find((x) => x.seed === measured.seed)
    if (!r) throw new Error(`the Crawlee runner gave no result for ${measured.seed}:\n${child.output().slice(-4000)}`)
    const counts = await site.counts(measured.prefix)
    return {
      label: "Crawlee",
      pages: counts.distinct,
      duplicates: counts.duplicates,
      wallMs: r.wallMs,
      cpuMs: r.cpuMs,
      note: `${r.pages} pages handled, ${r.failed} failed`
    }
  } finally {
    await child.stop()
    rmSync(storage, { recursive: true, force: true })
  }
}

// ---------------------------------------------------------------------------------------------

const line = (phase: string, r: Figures) =>
  log(`${phase} ${r.label.padEnd(7)} ${f(pps(r), 1).padStart(7)} pages/s  ${f(cpuPerPage(r), 3).padStart(7)} CPU ms/page  ` +
    `${r.pages} pages, ${r.duplicates} duplicates in ${f(r.wallMs / 1000, 2)} s; ${r.note}  [${load()}]`)

const main = async () => {
  installExitHandlers()
  const backend = process.env.DATABASE_URL ? `postgres${process.env.REDIS_URL ? "+redis" : ""}` : "embedded"
  log(`bench:sitecrawl  backend=${backend}  pages=${pages}  warm-up=${warmPages}  rounds=${rounds}  concurrency=${concurrency} ` +
    `(Trawl's perDomainConcurrency for one site)${only ? `  only=${only}` : ""}`)
  const site = await startSite()
  const trawl = runTrawl ? await startTrawlSide() : undefined
  if (trawl && warmPages > 0) {
    const warm = site.section()
    const w = await trawl.crawl("Trawl warm-up", warm.seed, warmPages)
    log(`warm-up Trawl   ${warmPages} pages in ${f(w.wallMs / 1000, 2)} s (${w.crawl.status})`)
  }
  const a: Array<Figures> = []
  const b: Array<Figures> = []
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? (["a", "b"] as const) : (["b", "a"] as const)
    for (const side of order) {
      if (side === "a" && trawl) {
        const r = await trawlRound(trawl, site)
        checkComplete(r, pages)
        a.push(r)
        line(`round ${round + 1} (a)`, r)
      }
      if (side === "b" && runCrawlee) {
        const r = await crawleeRound(site)
        checkComplete(r, pages)
        b.push(r)
        line(`round ${round + 1} (b)`, r)
      }
    }
  }
  await trawl?.stop()

  const med = (xs: ReadonlyArray<Figures>, g: (r: Figures) => number) => median(xs.map(g))
  log("")
  log(`medians over ${rounds} round${rounds > 1 ? "s" : ""}        pages/s   CPU ms/page   pages   duplicates`)
  for (const [name, xs] of [["(a) Trawl crawl API", a], ["(b) Crawlee CheerioCrawler", b]] as const) {
    if (xs.length === 0) continue
    log(`${name.padEnd(27)} ${f(med(xs, pps), 1).padStart(9)} ${f(med(xs, cpuPerPage), 3).padStart(13)} ${String(med(xs, (r) => r.pages)).padStart(7)} ${String(Math.max(...xs.map((r) => r.duplicates))).padStart(12)}`)
  }
  const ratio = a.length && b.length ? med(a, pps) / med(b, pps) : NaN
  if (a.length && b.length) {
    log(`Trawl / Crawlee pages/s ${f(ratio, 3)} (goal >= 1.0: ${ratio >= 1 ? "met" : "NOT met"}); CPU per page Trawl / Crawlee ${f(med(a, cpuPerPage) / med(b, cpuPerPage), 2)}x`)
  }
  const shown = a.length ? a : b
  const shownPages = Math.min(...shown.map((r) => r.pages))
  const shownDuplicates = Math.max(...shown.map((r) => r.duplicates))
  await cleanupAll()
  log(`sitecrawl ratio_crawlee=${f(ratio, 3)} pages=${shownPages} duplicates=${shownDuplicates}`)
}

runComparison(main)
