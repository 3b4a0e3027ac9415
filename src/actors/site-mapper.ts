import { Context, Effect, Layer } from "effect"
import { MAP_SERVICE_KEY, mapUnits } from "../billing/pricing.ts"
import { Config } from "../config.ts"
import { loadCrawlConfig } from "../crawl/config.ts"
import { createHttpEngine } from "../crawl/engines/http.ts"
import { crawlKey } from "../crawl/links.ts"
import { RobotsCache } from "../crawl/robots.ts"
import { type Fetched, mapSite } from "../crawl/site-map.ts"
import { DEFAULT_SITEMAP_BOUNDS } from "../crawl/sitemaps.ts"
import { checkUrl } from "../crawl/ssrf.ts"
import { classifierFor } from "../crawl/ssrf-policy.ts"
import { newId } from "../ids.ts"
import { fail, type PaymentRequired, type Unavailable, type Unprocessable } from "../schema/errors.ts"
import { MAP_BUDGET_MS, type MapBody, type SiteMap } from "../schema/map.ts"
import { CallDebitor } from "./tenant-entity.ts"

export interface SiteMapperShape {
  /** Maps a site for a tenant: checks the seed, debits the map's price, then fetches within the body's bounds. */
  readonly map: (tenantId: string, body: MapBody) => Effect.Effect<SiteMap, PaymentRequired | Unavailable | Unprocessable>
}

/** `POST /v1/scraper/map` (docs/site-crawls.md, "Map"). */
export class SiteMapper extends Context.Service<SiteMapper, SiteMapperShape>()("trawl/SiteMapper") {}

export const SiteMapperLive = Layer.effect(
  SiteMapper,
  Effect.gen(function*() {
    const config = yield* Config
    const debitor = yield* CallDebitor
    const classify = classifierFor(config)
    const guard = { allowPrivate: config.allowPrivateTargets, classify }
    // The crawler's own guarded HTTP engine (every hop checked) with the crawl settings of config/crawl.json,
    // and the sitemap size bound as its body cap.
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

    return SiteMapper.of({
      map: (tenantId, body) =>
        Effect.gen(function*() {
          const target = yield* Effect.promise(() => checkUrl(body.url, guard))
          if (!target.ok) {
            return yield* fail(422, "unsafe_url", `refused: url (${target.detail})`, {
              details: [{ path: "url", code: target.reason, message: target.detail }]
            })
          }
          const seed = crawlKey(body.url)!
          yield* debitor.debit(tenantId, {
            entryId: newId("txn"),
            units: mapUnits,
            serviceKey: MAP_SERVICE_KEY,
            resourceType: "site_map",
            resourceId: seed.slice(0, 2048),
            note: null
          }).pipe(
            Effect.catchTag("InsufficientCredit", (e) =>
              fail(402, "insufficient_credit", `the balance of ${e.balance} EUR does not leave the ${e.required} EUR free that this map and the tenant's uncharged work need (see GET /v1/billing/pricing)`))
          )
          // The guard's verdict per origin: one name resolution per host and map, not one per URL.
          const verdicts = new Map<string, Promise<boolean>>()
          const isSafe = (url: URL): Promise<boolean> => {
            if (url.username !== "" || url.password !== "") return checkUrl(url, guard).then((r) => r.ok)
            let verdict = verdicts.get(url.origin)
            if (!verdict) {
              verdict = checkUrl(url, guard).then((r) => r.ok, () => false)
              verdicts.set(url.origin, verdict)
            }
            return verdict
          }
          const result = yield* Effect.promise((signal) =>
            mapSite({
              url: seed,
              limit: body.limit ?? 100,
              includePaths: body.includePaths ?? [],
              excludePaths: body.excludePaths ?? [],
              allowSubdomains: body.allowSubdomains ?? false,
              ignoreQueryParameters: body.ignoreQueryParameters ?? false,
              sitemap: body.sitemap ?? "include",
              budgetMs: body.budgetMs ?? MAP_BUDGET_MS.default
            }, { fetch, robots, isSafe }, signal)
          )
          return { url: seed, count: result.urls.length, ...result }
        })
    })
  })
)
