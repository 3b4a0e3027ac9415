import { Context, Effect, Layer } from "effect"
import { MAP_SERVICE_KEY, mapUnits } from "../billing/pricing.ts"
import { domainIdOf } from "../crawl/domain.ts"
import { crawlKey } from "../crawl/links.ts"
import { type Fetched, mapSite } from "../crawl/site-map.ts"
import { newId } from "../ids.ts"
import { fail, type PaymentRequired, type Unavailable, type Unprocessable } from "../schema/errors.ts"
import { MAP_BUDGET_MS, type MapBody, type SiteMap } from "../schema/map.ts"
import { SLOT_LEASE_MS } from "./domain-entity.ts"
import { DomainSlots } from "./domain-slots.ts"
import { SiteFetcher } from "./site-fetcher.ts"
import { CallDebitor, creditShortfall } from "./tenant-entity.ts"

export interface SiteMapperShape {
  /** Maps a site for a tenant: checks the seed, debits the map's price, then fetches within the body's bounds. */
  readonly map: (tenantId: string, body: MapBody) => Effect.Effect<SiteMap, PaymentRequired | Unavailable | Unprocessable>
}

/** `POST /v1/scraper/map` (docs/site-crawls.md, "Map"). */
export class SiteMapper extends Context.Service<SiteMapper, SiteMapperShape>()("trawl/SiteMapper") {}

export const SiteMapperLive = Layer.effect(
  SiteMapper,
  Effect.gen(function*() {
    const debitor = yield* CallDebitor
    const { fetch, robots, makeIsSafe, check } = yield* SiteFetcher
    const domainSlots = yield* DomainSlots
    /**
     * A map's page fetch takes a politeness slot of its domain, as a job's does: the domain's
     * `perDomainConcurrency` holds across maps, crawls and jobs of every tenant and node (ten maps
     * at once had put 40 fetches on one site).
     */
    const politeFetch = (url: string, timeoutMs: number, signal: AbortSignal): Promise<Fetched> =>
      Effect.runPromise(
        domainSlots.withSlot(domainIdOf(url) ?? new URL(url).hostname.toLowerCase(), `${newId("map")}#${Date.now()}`, 0, SLOT_LEASE_MS, (_history, release) =>
          // A slot that comes after the map's budget ran out is given back unused.
          (signal.aborted ? Effect.succeed(null) : Effect.promise(() => fetch(url, timeoutMs, signal))).pipe(Effect.ensuring(release([])))),
        { signal }
      // The budget ran out while it waited for the slot: no answer, as a fetch cut by the budget gives.
      ).catch(() => null)

    return SiteMapper.of({
      map: (tenantId, body) =>
        Effect.gen(function*() {
          const target = yield* Effect.promise(() => check(body.url))
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
              fail(402, "insufficient_credit", `the balance of ${e.balance} EUR does not leave the ${e.required} EUR free that this map and the tenant's uncharged work need (see GET /v1/billing/pricing)`, { extra: creditShortfall(e) }))
          )
          // The guard's verdict per origin: one name resolution per host and map, not one per URL.
          const isSafe = makeIsSafe()
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
            }, { fetch: politeFetch, robots, isSafe }, signal)
          )
          return { url: seed, count: result.urls.length, ...result }
        })
    })
  })
)
