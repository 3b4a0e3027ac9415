import { Context, Effect, Layer } from "effect"
import { Config } from "../config.ts"
import { loadCrawlConfig } from "../crawl/config.ts"
import { createHttpEngine } from "../crawl/engines/http.ts"
import { RobotsCache } from "../crawl/robots.ts"
import type { Fetched } from "../crawl/site-map.ts"
import { DEFAULT_SITEMAP_BOUNDS } from "../crawl/sitemaps.ts"
import { type CheckResult, checkUrl } from "../crawl/ssrf.ts"
import { classifierFor } from "../crawl/ssrf-policy.ts"

export interface SiteFetcherShape {
  /** One guarded fetch (every hop checked) with the crawl settings; null when no answer came. */
  readonly fetch: (url: string, timeoutMs: number, signal?: AbortSignal) => Promise<Fetched>
  /** robots.txt per origin, cached on this node (docs/site-crawls.md, "robots.txt"). */
  readonly robots: RobotsCache
  /** The SSRF guard's verdict on a URL, with one name resolution per origin for the life of the returned function. */
  readonly makeIsSafe: () => (url: URL) => Promise<boolean>
  /** The guard's full verdict on one URL (for error details). */
  readonly check: (url: string) => Promise<CheckResult>
}

/**
 * What site maps and site crawls fetch robots.txt, sitemaps and (for maps) pages with: the
 * crawler's own guarded `http` engine, one per node, and the node's robots.txt cache.
 */
export class SiteFetcher extends Context.Service<SiteFetcher, SiteFetcherShape>()("trawl/SiteFetcher") {}

export const SiteFetcherLive = Layer.effect(
  SiteFetcher,
  Effect.gen(function*() {
    const config = yield* Config
    const classify = classifierFor(config)
    const guard = { allowPrivate: config.allowPrivateTargets, classify }
    // The crawl settings of config/crawl.json (redirects, transport, sockets, header pool), and the
    // sitemap size bound as the body cap.
    const crawl = loadCrawlConfig()
    const engine = yield* Effect.acquireRelease(
      Effect.sync(() =>
        createHttpEngine({
          name: "http",
          classify,
          maxBodyBytes: DEFAULT_SITEMAP_BOUNDS.maxBytes,
          maxRedirects: crawl.maxRedirects,
          transport: crawl.http.transport,
          maxSocketsPerOrigin: crawl.http.maxSocketsPerOrigin,
          headerPoolSize: crawl.http.headerPoolSize
        })
      ),
      (e) => Effect.promise(() => e.close?.() ?? Promise.resolve())
    )
    const fetch = async (url: string, timeoutMs: number, signal?: AbortSignal): Promise<Fetched> => {
      const attempt = await engine.fetch({ url, timeoutMs, allowPrivate: config.allowPrivateTargets, ...(signal ? { signal } : {}) })
      if (attempt.httpStatus === null) return null
      return { status: attempt.httpStatus, finalUrl: attempt.finalUrl ?? url, contentType: attempt.contentType, body: attempt.body }
    }
    const robots = new RobotsCache(async (robotsUrl) => {
      const safe = await checkUrl(robotsUrl, guard)
      if (!safe.ok) return null
      const fetched = await fetch(robotsUrl, 10_000)
      return fetched && { status: fetched.status, body: fetched.body }
    })
    const makeIsSafe = () => {
      const verdicts = new Map<string, Promise<boolean>>()
      return (url: URL): Promise<boolean> => {
        if (url.username !== "" || url.password !== "") return checkUrl(url, guard).then((r) => r.ok, () => false)
        let verdict = verdicts.get(url.origin)
        if (!verdict) {
          verdict = checkUrl(url, guard).then((r) => r.ok, () => false)
          verdicts.set(url.origin, verdict)
        }
        return verdict
      }
    }
    return SiteFetcher.of({ fetch, robots, makeIsSafe, check: (url) => checkUrl(url, guard) })
  })
)

/**
 * A site fetcher answering from `pages` (URL → answer; anything else: no answer) with every URL
 * judged safe: no socket, no name resolution. robots.txt comes from `pages` too.
 */
export const makeSiteFetcherTest = (pages: Readonly<Record<string, NonNullable<Fetched>>> = {}) => {
  const fetch = async (url: string): Promise<Fetched> => pages[url] ?? null
  const robots = new RobotsCache(async (robotsUrl) => {
    const fetched = await fetch(robotsUrl)
    return fetched && { status: fetched.status, body: fetched.body }
  })
  const check = async (url: string): Promise<CheckResult> => ({ ok: true, url: new URL(url), addresses: [] })
  return Layer.succeed(SiteFetcher, SiteFetcher.of({ fetch, robots, makeIsSafe: () => async () => true, check }))
}
