/**
 * A site's URLs from its sitemaps and the links of its pages, without storing any page
 * (`POST /v1/scraper/map`; docs/site-crawls.md, "Map"). Every fetch goes through the caller's
 * guarded fetch; every URL listed has passed scope, path filters, robots.txt and the SSRF guard,
 * and is listed and fetched at most once.
 */
import { sleep } from "./escalation.ts"
import { readLinks } from "./link-reader.ts"
import { crawlKey, pathFilter, siteScope } from "./links.ts"
import type { Robots, RobotsCache } from "./robots.ts"
import { DEFAULT_SITEMAP_BOUNDS, type SitemapBounds, walkSitemaps } from "./sitemaps.ts"

export interface MapOptions {
  readonly url: string
  readonly limit: number
  readonly includePaths: ReadonlyArray<string>
  readonly excludePaths: ReadonlyArray<string>
  readonly allowSubdomains: boolean
  readonly ignoreQueryParameters: boolean
  readonly sitemap: "include" | "only" | "skip"
  readonly budgetMs: number
}

/** What a guarded fetch gave: the final response, or null when none came (refused, unreachable, timed out). */
export type Fetched = {
  readonly status: number
  readonly finalUrl: string
  readonly contentType: string | null
  readonly body: Buffer | null
} | null

export interface MapDeps {
  readonly fetch: (url: string, timeoutMs: number, signal: AbortSignal) => Promise<Fetched>
  readonly robots: RobotsCache
  /** The SSRF guard's verdict on a URL (syntax and, unless private targets are allowed, its addresses). */
  readonly isSafe: (url: URL) => Promise<boolean>
  readonly sitemapBounds?: SitemapBounds
  /** Pages fetched at once. */
  readonly concurrency?: number
}

export interface MapResult {
  readonly urls: ReadonlyArray<string>
  /** `done`: nothing more was found; `limit` or `budget`: stopped there, more may exist. */
  readonly stoppedBy: "done" | "limit" | "budget"
  readonly pagesFetched: number
  readonly sitemapsFetched: number
  readonly skipped: {
    readonly robots: number
    readonly filtered: number
    readonly offsite: number
    readonly unsafe: number
    readonly duplicate: number
  }
}

/** The longest one fetch may take; the budget's signal stops it sooner (and is then what ended the map). */
const FETCH_TIMEOUT_MS = 15_000

export const mapSite = async (options: MapOptions, deps: MapDeps, outer?: AbortSignal): Promise<MapResult> => {
  const seed = new URL(options.url)
  const budget = AbortSignal.timeout(options.budgetMs)
  const signal = outer ? AbortSignal.any([outer, budget]) : budget
  const inScope = siteScope(seed, { allowSubdomains: options.allowSubdomains })
  const passesPaths = pathFilter(options.includePaths, options.excludePaths)
  const keyOf = (u: string) => crawlKey(u, { ignoreQueryParameters: options.ignoreQueryParameters })
  const skipped = { robots: 0, filtered: 0, offsite: 0, unsafe: 0, duplicate: 0 }
  const urls: Array<string> = []
  /** Every key considered, listed or not: none is looked at (or fetched) twice. */
  const seen = new Set<string>()
  const frontier: Array<string> = []
  let pagesFetched = 0

  // A robots.txt still being fetched when the budget runs out allows nothing: the map is over anyway.
  const outOfTime = new Promise<Robots>((resolve) => {
    const none: Robots = { kind: "unavailable", isAllowed: () => false, sitemaps: [] }
    if (signal.aborted) resolve(none)
    else signal.addEventListener("abort", () => resolve(none), { once: true })
  })
  const robotsOf = (url: URL) => Promise.race([deps.robots.get(url), outOfTime])

  const full = () => urls.length >= options.limit
  const wantMore = () => !full() && !signal.aborted

  /**
   * Lists a URL when it passes every rule, and queues it for its links (`follow`). Rules are checked
   * from the cheapest: the key, scope, paths, then the guard (which may resolve) and robots.txt (which may fetch).
   */
  const consider = async (raw: string, follow: boolean): Promise<void> => {
    const key = keyOf(raw)
    if (key === null) return
    if (seen.has(key)) {
      skipped.duplicate++
      return
    }
    seen.add(key)
    const url = new URL(key)
    if (!inScope(url)) {
      skipped.offsite++
      return
    }
    if (!passesPaths(url)) {
      skipped.filtered++
      return
    }
    // The guard before robots.txt: an unsafe host's robots.txt is never asked for, and its URLs
    // count as unsafe, not as disallowed by a robots.txt the guard kept from being read.
    if (!(await deps.isSafe(url))) {
      skipped.unsafe++
      return
    }
    if (!(await robotsOf(url)).isAllowed(key)) {
      skipped.robots++
      return
    }
    if (!wantMore()) return
    urls.push(key)
    if (follow) frontier.push(key)
  }

  /**
   * An origin whose robots.txt asks for a `Crawl-delay` is fetched one page at a time, that long
   * after the last one ended, as a crawl does (the other origins go on meanwhile).
   */
  const turns = new Map<string, Promise<void>>()
  const politely = async <A>(url: URL, fetchPage: () => Promise<A>): Promise<A> => {
    const delayMs = (await robotsOf(url)).crawlDelayMs ?? 0
    if (delayMs <= 0) return fetchPage()
    const before = turns.get(url.origin) ?? Promise.resolve()
    let ended!: () => void
    const mine = new Promise<void>((resolve) => (ended = resolve))
    // (an aborted signal ends the wait: the map is over then)
    turns.set(url.origin, mine.then(() => sleep(delayMs, signal)))
    await before
    try {
      return await fetchPage()
    } finally {
      ended()
    }
  }

  /** Fetches one page and considers its links; pages that are not HTML have none. */
  const visit = async (pageUrl: string): Promise<void> => {
    const fetched = await politely(new URL(pageUrl), () => deps.fetch(pageUrl, FETCH_TIMEOUT_MS, signal))
    pagesFetched++
    if (fetched === null || fetched.body === null || fetched.status < 200 || fetched.status >= 300) return
    if (fetched.contentType !== null && !/html/i.test(fetched.contentType)) return
    // A page that redirected off the site is not read: its links are another site's. Nor is one
    // whose final URL its robots.txt disallows (as in a crawl): the redirect led where Trawl may not read.
    const final = new URL(fetched.finalUrl)
    if (!inScope(final)) return
    const finalKey = keyOf(fetched.finalUrl)
    if (finalKey !== null && finalKey !== pageUrl && !(await robotsOf(final)).isAllowed(finalKey)) return
    for (const link of await readLinks(fetched.body.toString("utf8"), fetched.finalUrl)) {
      if (!wantMore()) return
      await consider(link, true)
    }
  }

  const seedKey = keyOf(seed.href)!
  const seedRobots = await robotsOf(seed)

  // The seed is listed first (unless only sitemaps are wanted), and fetched for its links even when
  // the path filters leave it out: it is where the site starts.
  if (options.sitemap !== "only") {
    await consider(seed.href, false)
  }

  let sitemapsFetched = 0
  if (options.sitemap !== "skip" && wantMore()) {
    const named = new Set(seedRobots.sitemaps)
    const roots = [...seedRobots.sitemaps, `${seed.protocol}//${seed.host}/sitemap.xml`]
    const walk = await walkSitemaps(
      roots,
      async (sitemapUrl) => {
        const u = new URL(sitemapUrl)
        if (!named.has(sitemapUrl) && !(await robotsOf(u)).isAllowed(sitemapUrl)) return null
        if (!(await deps.isSafe(u))) return null
        const fetched = await deps.fetch(sitemapUrl, FETCH_TIMEOUT_MS, signal)
        return fetched !== null && fetched.status >= 200 && fetched.status < 300 ? fetched.body : null
      },
      {
        bounds: deps.sitemapBounds ?? DEFAULT_SITEMAP_BOUNDS,
        accept: (u) => {
          try {
            const parsed = new URL(u)
            return (parsed.protocol === "http:" || parsed.protocol === "https:") && inScope(parsed)
          } catch {
            return false
          }
        },
        // Each page is judged as it is read, so reading stops once the limit is met.
        onPage: (u) => consider(u, options.sitemap === "include"),
        wantMore
      }
    )
    sitemapsFetched = walk.fetched
  }

  if (options.sitemap !== "only" && seedRobots.isAllowed(seedKey)) {
    // The seed's links first, then the pages found (sitemap pages first), breadth first, a few at a time.
    frontier.unshift(seedKey)
    const concurrency = deps.concurrency ?? 4
    const inFlight = new Set<Promise<void>>()
    while (wantMore() && (frontier.length > 0 || inFlight.size > 0)) {
      while (wantMore() && frontier.length > 0 && inFlight.size < concurrency) {
        const visiting: Promise<void> = visit(frontier.shift()!).catch(() => {}).finally(() => inFlight.delete(visiting))
        inFlight.add(visiting)
      }
      if (inFlight.size > 0) await Promise.race(inFlight)
    }
    await Promise.all(inFlight)
  }

  return {
    urls,
    stoppedBy: full() ? "limit" : budget.aborted ? "budget" : "done",
    pagesFetched,
    sitemapsFetched,
    skipped
  }
}
