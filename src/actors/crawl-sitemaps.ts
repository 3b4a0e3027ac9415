import { Effect } from "effect"
import type { Accepted, Candidate, makeFrontier } from "../crawl/frontier.ts"
import { DEFAULT_SITEMAP_BOUNDS, walkSitemaps } from "../crawl/sitemaps.ts"
import { CrawlRepo, type CrawlRow } from "../sql/crawl-repo.ts"
import type { SiteFetcherShape } from "./site-fetcher.ts"

/** How long one sitemap or robots.txt fetch may take. */
const SITEMAP_FETCH_TIMEOUT_MS = 15_000
/** Sitemap URLs judged and written together. */
const SITEMAP_BATCH = 500

/**
 * Reads a crawl's sitemaps into its frontier, once per crawl (docs/site-crawls.md, "Sitemaps"):
 * their URLs join at depth 1 (0 with `sitemap: "only"`: they are its seeds).
 *
 * More than one reading can run for a crawl: a node that lost the crawl's shard may still be
 * reading when the new owner starts, and a reading cut short by a crash is started again. Each
 * writes the same rows (a URL already there is kept), and none counts duplicates as it goes; the
 * reading that marks the sitemaps read settles the count once, from the tables: the entries it
 * read minus the distinct URLs the sitemaps added. Interrupted, a reading stops fetching and
 * writing at once.
 */
export const readSitemaps = (
  crawl: CrawlRow,
  frontier: ReturnType<typeof makeFrontier>,
  accepted: Accepted,
  fetcher: SiteFetcherShape
) =>
  Effect.gen(function*() {
    const repo = yield* CrawlRepo
    const runPromise = Effect.runPromiseWith(yield* Effect.context<never>())
    const opts = crawl.options
    const seed = new URL(crawl.url)
    const depth = opts.sitemap === "only" ? 0 : 1
    const known = (keys: ReadonlyArray<string>) => runPromise(repo.known(crawl.id, keys))
    const entries = yield* Effect.promise(async (signal) => {
      const seedRobots = await fetcher.robots.get(seed)
      const named = new Set(seedRobots.sitemaps)
      const isSafe = fetcher.makeIsSafe()
      let entries = 0
      let buffer: Array<Candidate> = []
      const flush = async () => {
        const batch = buffer
        buffer = []
        if (batch.length === 0 || signal.aborted) return
        const { rows } = await frontier.judge(batch, known, accepted)
        if (!signal.aborted) await runPromise(repo.addUrls(crawl.id, rows))
      }
      await walkSitemaps(
        [...seedRobots.sitemaps, `${seed.protocol}//${seed.host}/sitemap.xml`],
        async (sitemapUrl) => {
          const u = new URL(sitemapUrl)
          if (!named.has(sitemapUrl) && opts.respectRobots && !(await fetcher.robots.get(u)).isAllowed(sitemapUrl)) return null
          if (signal.aborted || !(await isSafe(u))) return null
          const fetched = await fetcher.fetch(sitemapUrl, SITEMAP_FETCH_TIMEOUT_MS, signal)
          return fetched !== null && fetched.status >= 200 && fetched.status < 300 ? fetched.body : null
        },
        {
          bounds: DEFAULT_SITEMAP_BOUNDS,
          accept: (u) => {
            try {
              const parsed = new URL(u)
              return (parsed.protocol === "http:" || parsed.protocol === "https:") && frontier.inScope(parsed)
            } catch {
              return false
            }
          },
          onPage: async (u) => {
            if (frontier.keyOf(u) === null) return
            entries++
            buffer.push({ url: u, depth, parentUrl: null, parentJobId: null })
            if (buffer.length >= SITEMAP_BATCH) await flush()
          },
          // Reading stops once the limit is met: further URLs could only be over it.
          wantMore: () => !signal.aborted && accepted.total < crawl.page_limit
        }
      )
      await flush()
      return entries
    })
    yield* repo.markSitemapsRead(crawl, entries)
  })
