import { Context, Effect, Layer } from "effect"
import { Config } from "../config.ts"
import { pathPattern } from "../crawl/frontier.ts"
import { crawlKey } from "../crawl/links.ts"
import { EventLog } from "../events/event-log.ts"
import type { KeyedAttempt } from "../http/idempotency.ts"
import { itemId, newId } from "../ids.ts"
import { CRAWL_PATTERN_CAP, type Crawl, type CrawlCounts, type CrawlPage, type CrawlPageStatus, type CreateCrawlBody, crawlOptionsOf } from "../schema/crawl.ts"
import { iso } from "../schema/common.ts"
import { type ErrorDetail, fail, type InvalidRequest, type PaymentRequired, type TooManyRequests, type Unavailable, type Unprocessable } from "../schema/errors.ts"
import { type CrawlDelivery, type CrawlListQuery, CrawlRepo, type CrawlRow, pageStatusOf } from "../sql/crawl-repo.ts"
import { encryptSecret } from "../webhooks/secret-box.ts"
import { itemWebhookSecret } from "../webhooks/signing.ts"
import { CrawlEntity, crawlDelivery, deliverCrawlEvent, settleCancelledPages } from "./crawl-entity.ts"
import { entityCall, sendOneWay } from "./entity-call.ts"
import { JobCreation, reservationRefusal } from "./job-creation.ts"
import { SiteFetcher } from "./site-fetcher.ts"
import { TenantEntity } from "./tenant-entity.ts"
import { WebhookDeliveryEntity } from "./webhook-delivery-entity.ts"
import { canonicalWebhookUrl, WebhookEndpoints } from "./webhook-endpoints.ts"
import { webhookSecretFaults } from "../schema/webhook.ts"

export type CreatedCrawl = Crawl & { webhookSecret?: string }
type Paged<A> = { readonly items: ReadonlyArray<A>; readonly total: number }

export interface SiteCrawlServiceShape {
  /** Checks and writes a crawl (its seed accepted), then hands it to its entity. */
  readonly create: (
    tenantId: string,
    body: CreateCrawlBody,
    origin: { readonly requestId: string | null; readonly keyed: KeyedAttempt | undefined }
  ) => Effect.Effect<CreatedCrawl, InvalidRequest | Unprocessable | PaymentRequired | TooManyRequests | Unavailable>
  readonly get: (tenantId: string, id: string) => Effect.Effect<Crawl | undefined>
  readonly list: (q: CrawlListQuery) => Effect.Effect<Paged<Crawl>>
  /** The crawl's pages (its jobs), undefined when the tenant has no such crawl. */
  readonly pages: (
    tenantId: string,
    id: string,
    q: { readonly statuses: ReadonlyArray<CrawlPageStatus> | undefined; readonly depth: number | undefined; readonly parentJobId: string | undefined; readonly offset: number; readonly limit: number }
  ) => Effect.Effect<Paged<CrawlPage> | undefined>
  /** Stops discovery, cancels queued and running pages, keeps finished ones; undefined when the tenant has no such crawl. */
  readonly cancel: (tenantId: string, id: string) => Effect.Effect<{ readonly crawl: Crawl; readonly changed: boolean } | undefined>
}

/** Site crawls (docs/site-crawls.md, "Crawls"): the use cases behind `/v1/scraper/crawls`. */
export class SiteCrawlService extends Context.Service<SiteCrawlService, SiteCrawlServiceShape>()("trawl/SiteCrawlService") {}

export const toCrawl = (row: CrawlRow, counts: CrawlCounts): Crawl => ({
  id: row.id,
  url: row.url,
  status: row.status,
  statusReason: row.status_reason,
  limit: row.page_limit,
  maxDepth: row.max_depth,
  // Crawls stored before an option existed ran with its default.
  maxPagesPerPattern: row.options.maxPagesPerPattern ?? CRAWL_PATTERN_CAP.default,
  includePaths: row.options.includePaths,
  excludePaths: row.options.excludePaths,
  allowSubdomains: row.options.allowSubdomains,
  allowExternal: row.options.allowExternal,
  sitemap: row.options.sitemap,
  ignoreQueryParameters: row.options.ignoreQueryParameters,
  respectRobots: row.options.respectRobots,
  page: row.options.page,
  webhookUrl: row.webhook_url,
  counts,
  createdAt: iso(row.created_at)!,
  finishedAt: iso(row.finished_at)
})

export const SiteCrawlServiceLive = Layer.effect(
  SiteCrawlService,
  Effect.gen(function*() {
    const config = yield* Config
    const repo = yield* CrawlRepo
    const fetcher = yield* SiteFetcher
    const endpoints = yield* WebhookEndpoints
    const creation = yield* JobCreation
    const events = yield* EventLog
    const tenants = yield* TenantEntity.client
    const crawls = yield* CrawlEntity.client
    const deliveries = yield* WebhookDeliveryEntity.client
    const deliver = (d: CrawlDelivery | undefined) => deliverCrawlEvent(deliveries, d)

    const withCounts = (rows: ReadonlyArray<CrawlRow>) =>
      Effect.map(repo.counts(rows), (counts) => rows.map((r) => toCrawl(r, counts.get(r.id)!)))

    /**
     * Whether the tenant's credit covers a crawl's first page: a job's reservation is made and given
     * back at once. Only the credit answers here (402); a full daily quota or concurrency limit
     * lets the crawl be created, and it waits (or pauses) for them.
     */
    const coversFirstPage = (tenantId: string) =>
      Effect.gen(function*() {
        const probe = newId("job")
        const result = yield* Effect.result(entityCall(tenants(tenantId).ReserveJobs({ jobIds: [probe] })))
        if (result._tag === "Success") {
          yield* sendOneWay(tenants(tenantId).ReleaseJobs({ jobIds: [probe], unwritten: true }, { discard: true }))
          return
        }
        const e = result.failure
        if (e._tag === "InsufficientCredit") return yield* reservationRefusal(e, "this crawl's first page").pipe(Effect.catchTag("TooManyRequests", () => Effect.void))
        if (e._tag === "Unavailable") return yield* Effect.fail(e)
      })

    const create: SiteCrawlServiceShape["create"] = (tenantId, body, origin) =>
      Effect.gen(function*() {
        const lonely = webhookSecretFaults(body)
        if (lonely.length > 0) return yield* fail(400, "validation_error", "webhookSecret goes with webhookUrl", { details: lonely })
        const [target, hook] = yield* Effect.promise(() => Promise.all([fetcher.check(body.url), body.webhookUrl ? fetcher.check(body.webhookUrl) : undefined]))
        const refused: Array<ErrorDetail> = []
        if (!target.ok) refused.push({ path: "url", code: target.reason, message: target.detail })
        if (hook && !hook.ok && hook.reason !== "dns_error") refused.push({ path: "webhookUrl", code: hook.reason, message: hook.detail })
        if (refused.length > 0) {
          return yield* fail(422, "unsafe_url", `refused: ${refused.map((r) => `${r.path} (${r.message})`).join("; ")}`, { details: refused })
        }
        const options = crawlOptionsOf(body)
        const seedKey = crawlKey(body.url, { ignoreQueryParameters: options.ignoreQueryParameters })!
        // fetched as given, query and all, even when its key ignores the query
        const seedFetchUrl = crawlKey(body.url, { ignoreQueryParameters: false })!
        const keyed = origin.keyed
        const id = itemId("crawl", keyed && { seed: keyed.seed, index: 0 })
        // A retry of a request whose crawl was written answers it as it is now.
        if (keyed?.resumed) {
          const existing = yield* repo.byId(id)
          if (existing) return (yield* withCounts([existing]))[0]!
        }
        yield* coversFirstPage(tenantId)
        const webhookUrl = body.webhookUrl ? canonicalWebhookUrl(body.webhookUrl) : null
        if (webhookUrl) yield* endpoints.register(tenantId, webhookUrl)
        const generatedSecret = webhookUrl && !body.webhookSecret ? itemWebhookSecret(config.secretKey, keyed && { seed: keyed.seed, index: 1 }) : undefined
        const secret = body.webhookSecret ?? generatedSecret
        const seedUrl = new URL(seedKey)
        const row = yield* repo.insert(
          {
            id,
            tenantId,
            url: seedKey,
            options,
            webhookUrl,
            webhookSecretEnc: secret ? encryptSecret(config.secretKey, secret, "webhook") : null,
            requestId: origin.requestId
          },
          // With `sitemap: "only"` the seed is no page of its own: only what the sitemaps list is crawled.
          options.sitemap === "only" ? undefined : {
            url: seedKey,
            fetchUrl: seedFetchUrl !== seedKey ? seedFetchUrl : null,
            depth: 0,
            pattern: pathPattern(seedUrl),
            status: "queued",
            skipReason: null,
            jobId: itemId("job", keyed && { seed: keyed.seed, index: 2 }),
            parentUrl: null,
            parentJobId: null
          }
        )
        // Lost, it is re-sent by the crawl sweeper.
        yield* sendOneWay(crawls(id).Drive(undefined, { discard: true }))
        const [crawl] = yield* withCounts([row])
        return { ...crawl!, ...(generatedSecret ? { webhookSecret: generatedSecret } : {}) }
      })

    const cancel: SiteCrawlServiceShape["cancel"] = (tenantId, id) =>
      Effect.uninterruptible(Effect.gen(function*() {
        let delivery: ReturnType<typeof crawlDelivery>
        const result = yield* repo.cancel(
          tenantId,
          id,
          (row) => ({ id: row.id, url: row.url, status: "cancelled" }),
          (row) => (delivery = crawlDelivery(row, "cancelled", 0, { status: "cancelled", url: row.url }))
        )
        if (!result) return undefined
        if (result.changed) {
          // The pages being fetched are cancelled now; the entity does it again for any it hands on meanwhile.
          yield* settleCancelledPages({ repo, creation, events, deliver }, result.row)
          yield* deliver(delivery)
          yield* sendOneWay(crawls(id).Drive(undefined, { discard: true }))
        }
        const row = (yield* repo.byId(id)) ?? result.row
        return { crawl: (yield* withCounts([row]))[0]!, changed: result.changed }
      }))

    return SiteCrawlService.of({
      create,
      get: (tenantId, id) =>
        Effect.gen(function*() {
          const row = yield* repo.find(tenantId, id)
          return row ? (yield* withCounts([row]))[0] : undefined
        }),
      list: (q) =>
        Effect.gen(function*() {
          const page = yield* repo.list(q)
          return { items: yield* withCounts(page.items), total: page.total }
        }),
      pages: (tenantId, id, q) =>
        Effect.gen(function*() {
          const crawl = yield* repo.find(tenantId, id)
          if (!crawl) return undefined
          const page = yield* repo.pages({ crawlId: id, ...q })
          return {
            total: page.total,
            items: page.items.map((r) => ({
              jobId: r.job_made ? r.id : null,
              url: r.url,
              status: pageStatusOf(r.status),
              depth: r.depth,
              parentUrl: r.parent_url,
              parentJobId: r.parent_job_id,
              createdAt: iso(r.created_at)!,
              finishedAt: iso(r.finished_at)
            }))
          }
        }),
      cancel
    })
  })
)
