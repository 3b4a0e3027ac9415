/**
 * A crawl's sitemap reading on the real database (src/actors/crawl-sitemaps.ts): its duplicates are
 * counted once however many readings run (two at once, as when a node that lost the crawl's shard
 * still reads while the new owner starts; one cut short and started again), and an interrupted
 * reading stops writing. The sitemaps come from a fake fetcher (no network); the crawl's rows and
 * counts are the real repository's.
 */
import { Effect, Fiber, Layer } from "effect"
import { describe, expect, it } from "vitest"
import { readSitemaps } from "../../src/actors/crawl-sitemaps.ts"
import type { SiteFetcherShape } from "../../src/actors/site-fetcher.ts"
import type { loadConfig } from "../../src/config.ts"
import { makeFrontier, pathPattern } from "../../src/crawl/frontier.ts"
import { RobotsCache } from "../../src/crawl/robots.ts"
import type { Fetched } from "../../src/crawl/site-map.ts"
import { newId } from "../../src/ids.ts"
import { crawlOptionsOf } from "../../src/schema/crawl.ts"
import { CrawlRepo, CrawlRepoLive, type CrawlRow } from "../../src/sql/crawl-repo.ts"
import { databaseLayer, onMigratedTenants, testDatabases } from "../support/databases.ts"

const origin = "http://site.test"
const urlset = (paths: ReadonlyArray<string>) =>
  `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${paths.map((p) => `<url><loc>${origin}${p}</loc></url>`).join("")}</urlset>`
/**
 * 609 entries: 606 distinct new URLs, and the seed, /a0 and /s again. Sitemap-a is longer than one
 * batch (500), so a reading writes its first part before it fetches sitemap-b.
 */
const aPaths = Array.from({ length: 600 }, (_, i) => `/a${i}`)
const sitemaps: Record<string, string> = {
  [`${origin}/sitemap-a.xml`]: urlset([...aPaths, "/s", "/", "/a0"]),
  [`${origin}/sitemap-b.xml`]: urlset(["/b0", "/b1", "/b2", "/b3", "/b4", "/s"])
}

/** A fetcher of the two sitemaps; `hold` makes a fetch of sitemap-b wait until it is aborted. */
const fakeFetcher = (hold = false): SiteFetcherShape & { readonly fetched: Array<string> } => {
  const fetched: Array<string> = []
  return {
    fetched,
    fetch: (url, _timeout, signal) => {
      fetched.push(url)
      if (hold && url.endsWith("sitemap-b.xml")) {
        return new Promise<Fetched>((resolve) => signal?.addEventListener("abort", () => resolve(null)))
      }
      const body = sitemaps[url]
      return Promise.resolve(body === undefined ? { status: 404, body: Buffer.from(""), headers: {} } as unknown as Fetched : { status: 200, body: Buffer.from(body), headers: {} } as unknown as Fetched)
    },
    robots: new RobotsCache(async () => ({ status: 200, body: Buffer.from(`User-agent: *\nAllow: /\nSitemap: ${origin}/sitemap-a.xml\nSitemap: ${origin}/sitemap-b.xml\n`) })),
    makeIsSafe: () => async () => true,
    check: async () => ({ ok: true }) as never
  }
}

const layerFor = (config: ReturnType<typeof loadConfig>) => CrawlRepoLive.pipe(Layer.provideMerge(databaseLayer(config)))

describe.each(testDatabases)("crawl sitemap reading ($name)", (db) => {
  const run = async (sitemap: "include" | "only", body: (ctx: { crawl: CrawlRow; read: (f: SiteFetcherShape) => Effect.Effect<void, never, CrawlRepo> }) => Effect.Effect<void, never, CrawlRepo>) => {
    const tenantId = newId("ten")
    const config = await db.config()
    await Effect.runPromise(onMigratedTenants([tenantId], Effect.gen(function*() {
      const repo = yield* CrawlRepo
      const options = crawlOptionsOf({ url: `${origin}/`, sitemap, limit: 10_000, maxPagesPerPattern: 10_000 })
      const seedKey = `${origin}/`
      const crawl = yield* repo.insert(
        { id: newId("crawl"), tenantId, url: seedKey, options, webhookUrl: null, webhookSecretEnc: null, requestId: null },
        sitemap === "only" ? undefined : {
          url: seedKey,
          fetchUrl: null,
          depth: 0,
          pattern: pathPattern(new URL(seedKey)),
          status: "queued",
          skipReason: null,
          jobId: newId("job"),
          parentUrl: null,
          parentJobId: null
        }
      )
      // Each reading has its own frontier and view of what was accepted, as each node's drive does.
      const read = (fetcher: SiteFetcherShape) =>
        Effect.gen(function*() {
          const accepted = yield* repo.accepted(crawl.id)
          const frontier = makeFrontier({ ...options, limit: crawl.page_limit, seed: new URL(seedKey) }, {
            robots: (u) => fetcher.robots.get(u),
            isSafe: async () => true,
            newJobId: () => newId("job")
          })
          yield* readSitemaps(crawl, frontier, { total: accepted.total, byPattern: new Map(accepted.byPattern) }, fetcher)
        })
      yield* body({ crawl, read })
    })).pipe(Effect.provide(layerFor(config)), Effect.scoped))
  }

  const countsOf = (crawl: CrawlRow) =>
    Effect.gen(function*() {
      const repo = yield* CrawlRepo
      const row = (yield* repo.byId(crawl.id))!
      const counts = (yield* repo.counts([row])).get(crawl.id)!
      return { discovered: counts.discovered, queued: counts.queued, duplicate: counts.skipped.duplicate, sitemapsRead: row.sitemaps_read }
    })

  it("counts a sitemap's repeated URLs and the seed it lists as duplicates, once", () =>
    run("include", ({ crawl, read }) =>
      Effect.gen(function*() {
        yield* read(fakeFetcher())
        expect(yield* countsOf(crawl)).toEqual({ discovered: 607, queued: 607, duplicate: 3, sitemapsRead: true })
        // A reading after the sitemaps were marked read (a Drive replayed late) counts nothing.
        yield* read(fakeFetcher())
        expect(yield* countsOf(crawl)).toEqual({ discovered: 607, queued: 607, duplicate: 3, sitemapsRead: true })
      })))

  it("counts duplicates once when two readings of one crawl run at the same time", () =>
    run("include", ({ crawl, read }) =>
      Effect.gen(function*() {
        yield* Effect.all([read(fakeFetcher()), read(fakeFetcher())], { concurrency: 2 })
        expect(yield* countsOf(crawl)).toEqual({ discovered: 607, queued: 607, duplicate: 3, sitemapsRead: true })
      })))

  it("stops an interrupted reading and counts the reading started again as if it were the only one", () =>
    run("include", ({ crawl, read }) =>
      Effect.gen(function*() {
        const held = fakeFetcher(true)
        const first = yield* Effect.forkChild(read(held))
        // Sitemap-a's first 500 URLs are written; the reading waits on sitemap-b.
        while ((yield* countsOf(crawl)).discovered < 501 || !held.fetched.some((u) => u.endsWith("sitemap-b.xml"))) yield* Effect.sleep("10 millis")
        yield* Fiber.interrupt(first)
        expect(yield* countsOf(crawl)).toEqual({ discovered: 501, queued: 501, duplicate: 0, sitemapsRead: false })
        yield* read(fakeFetcher())
        expect(yield* countsOf(crawl)).toEqual({ discovered: 607, queued: 607, duplicate: 3, sitemapsRead: true })
        // The interrupted reading fetched nothing after its abort.
        expect(held.fetched.filter((u) => u.includes("sitemap"))).toHaveLength(2)
      })))

  it("with sitemap \"only\" counts the seed a sitemap lists as a URL of its own", () =>
    run("only", ({ crawl, read }) =>
      Effect.gen(function*() {
        yield* Effect.all([read(fakeFetcher()), read(fakeFetcher())], { concurrency: 2 })
        expect(yield* countsOf(crawl)).toEqual({ discovered: 607, queued: 607, duplicate: 2, sitemapsRead: true })
      })))
})
