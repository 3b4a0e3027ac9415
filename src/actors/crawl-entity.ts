import { Effect } from "effect"
import { ClusterSchema, Entity, Singleton } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { type Candidate, CRAWL_MAX_LINKS_PER_PAGE, makeFrontier } from "../crawl/frontier.ts"
import { readLinks } from "../crawl/link-reader.ts"
import type { Robots } from "../crawl/robots.ts"
import { EventLog } from "../events/event-log.ts"
import { newId } from "../ids.ts"
import type { ApiError } from "../schema/errors.ts"
import { CRAWL_PATTERN_CAP } from "../schema/crawl.ts"
import { JobId } from "../schema/ids.ts"
import type { CreateJobBody } from "../schema/job.ts"
import { CrawlRepo, type CrawlDelivery, type CrawlRow, type EndedPage } from "../sql/crawl-repo.ts"
import { JobRepo } from "../sql/job-repo.ts"
import { crawlWebhookBody } from "../webhooks/sender.ts"
import { RESOURCE_ENTITY_IDLE } from "./cluster.ts"
import { readSitemaps } from "./crawl-sitemaps.ts"
import { sendOneWay } from "./entity-call.ts"
import { JobCreation } from "./job-creation.ts"
import { SiteFetcher } from "./site-fetcher.ts"
import { sweepLoop } from "./sweep.ts"
import { DueAttempt, WebhookDeliveryEntity } from "./webhook-delivery-entity.ts"

/** Pages of one crawl in flight at once (jobs created and not ended); the tenant's own concurrency limit applies as well. */
export const CRAWL_MAX_IN_FLIGHT = 16
/** How often a crawl looks at its pages when no event of its tenant woke it. */
const POLL_MS = 500
/** How often a paused crawl (daily quota, credit) tries again: a raised quota or a top-up resumes it within this. */
export const CRAWL_PAUSE_RETRY_MS = 30_000

/**
 * One entity per site crawl (docs/site-crawls.md, "Crawls"). `Drive` runs the crawl to its end:
 * it reads the sitemaps once, then ends the pages whose jobs ended (reading their links into the
 * frontier) and hands the next queued URLs to jobs, keeping at most `CRAWL_MAX_IN_FLIGHT` in
 * flight. Everything it knows is in SQL (`crawls`, `crawl_urls`), so a `Drive` that is run again on
 * another node after its node died takes the crawl up where the tables say it is. Persisted: the
 * message of a lost node is delivered again; the crawl sweeper re-sends it for crawls whose message
 * was never stored.
 */
export const CrawlEntity = Entity.make("Crawl", [
  Rpc.make("Drive").annotate(ClusterSchema.Persisted, true).annotate(ClusterSchema.InterruptOnTermination, true)
])

/** The delivery of a crawl event, when the crawl has a webhook. */
export const crawlDelivery = (crawl: CrawlRow, event: string, eventSeq: number, body: Record<string, unknown>): CrawlDelivery | undefined =>
  crawl.webhook_url && crawl.webhook_secret_enc
    ? {
      id: newId("whd"),
      eventStatus: event,
      eventSeq,
      url: crawl.webhook_url,
      secretEnc: crawl.webhook_secret_enc,
      body: crawlWebhookBody({ crawlId: crawl.id, event: `crawl.${event}`, requestId: crawl.request_id ?? "", deliveredAt: new Date(), ...body })
    }
    : undefined

/** Sends a crawl event's delivery (written with the event) for its first attempt now. */
export const deliverCrawlEvent = (deliveries: Effect.Success<typeof WebhookDeliveryEntity.client>, d: CrawlDelivery | undefined) =>
  d ? sendOneWay(deliveries(d.id).AttemptNow(new DueAttempt({ attempt: 1, dueAt: Date.now() }), { discard: true })) : Effect.void

/** How a page ends with its job: a job a crawl's cancel stopped is `cancelled`; every other failed or dead job is `failed`. */
const pageEndOf = (page: EndedPage, cancelling: boolean): "done" | "failed" | "cancelled" =>
  page.job_status === "done" ? "done" : cancelling && page.job_status === "dead" && page.classification === "cancelled" ? "cancelled" : "failed"

/** What ending the pages of a cancelled crawl needs, from the service or the entity that runs it. */
export interface SettleDeps {
  readonly repo: typeof CrawlRepo.Service
  readonly creation: typeof JobCreation.Service
  readonly events: typeof EventLog.Service
  readonly deliver: (d: CrawlDelivery | undefined) => Effect.Effect<void>
}

/**
 * A cancelled crawl's pages: the jobs still under way are cancelled, and every page whose job ended
 * takes that end with its `crawl.page` event (and delivery), as a running crawl ends its pages: a
 * page whose job was done just before the cancel is `done`, and announced, like any other.
 */
export const settleCancelledPages = (deps: SettleDeps, crawl: CrawlRow) =>
  Effect.gen(function*() {
    for (const page of yield* deps.repo.inFlight(crawl.id)) yield* deps.creation.cancel(crawl.tenant_id, JobId.make(page.job_id))
    for (const page of yield* deps.repo.endedPages(crawl.id)) {
      const status = pageEndOf(page, true)
      const delivery = crawlDelivery(crawl, "page", Number(page.seq), { jobId: page.job_id, url: page.url, depth: page.depth, status })
      if (yield* deps.repo.recordPage(crawl, { jobId: page.job_id, url: page.url, depth: page.depth, status }, [], 0, delivery)) yield* deps.deliver(delivery)
    }
    yield* deps.repo.cancelQueued(crawl.id)
    yield* deps.events.notify(crawl.tenant_id)
  })

export const CrawlEntityLive = CrawlEntity.toLayer(
  Effect.gen(function*() {
    const crawlId = (yield* Entity.CurrentAddress).entityId
    const repo = yield* CrawlRepo
    const jobs = yield* JobRepo
    const creation = yield* JobCreation
    const fetcher = yield* SiteFetcher
    const events = yield* EventLog
    const deliveries = yield* WebhookDeliveryEntity.client
    const services = yield* Effect.context<never>()
    const runPromise = Effect.runPromiseWith(services)
    let driving = false

    const deliver = (d: CrawlDelivery | undefined) => deliverCrawlEvent(deliveries, d)

    const drive = Effect.gen(function*() {
      const first = yield* repo.byId(crawlId)
      if (!first || first.status === "done" || first.status === "failed") return
      const tenantId = first.tenant_id
      const opts = first.options
      const seed = new URL(first.url)
      const robotsOf = (url: URL): Promise<Robots> => fetcher.robots.get(url)
      const frontier = makeFrontier(
        {
          seed,
          limit: first.page_limit,
          maxDepth: first.max_depth,
          // Crawls stored before the option existed ran with the default.
          maxPagesPerPattern: opts.maxPagesPerPattern ?? CRAWL_PATTERN_CAP.default,
          includePaths: opts.includePaths,
          excludePaths: opts.excludePaths,
          allowSubdomains: opts.allowSubdomains,
          allowExternal: opts.allowExternal,
          ignoreQueryParameters: opts.ignoreQueryParameters,
          respectRobots: opts.respectRobots
        },
        { robots: robotsOf, isSafe: fetcher.makeIsSafe(), newJobId: () => newId("job") }
      )
      const known = (keys: ReadonlyArray<string>) => runPromise(repo.known(crawlId, keys))
      const loadAccepted = repo.accepted(crawlId).pipe(Effect.map((a) => ({ total: a.total, byPattern: new Map(a.byPattern) })))
      let accepted = yield* loadAccepted

      // Woken by every event of the tenant (a page's job ending is one), else every POLL_MS.
      let wake: () => void = () => {}
      let woken = false
      yield* events.subscribe(tenantId, () => {
        woken = true
        wake()
      })
      const nap = (ms: number) =>
        Effect.promise(() =>
          new Promise<void>((resolve) => {
            if (woken) return resolve()
            const timer = setTimeout(resolve, ms)
            wake = () => {
              clearTimeout(timer)
              resolve()
            }
          })
        ).pipe(Effect.ensuring(Effect.sync(() => {
          woken = false
          wake = () => {}
        })))

      const settleCancelled = (crawl: CrawlRow) => settleCancelledPages({ repo, creation, events, deliver }, crawl)

      if (first.status === "cancelled") return yield* settleCancelled(first)
      if (first.status === "queued") {
        const delivery = crawlDelivery(first, "started", 0, { status: "running", url: first.url })
        if (yield* repo.start(first, delivery)) {
          yield* events.notify(tenantId)
          yield* deliver(delivery)
        }
      }

      if (opts.sitemap !== "skip" && !first.sitemaps_read) {
        yield* readSitemaps(first, frontier, accepted, fetcher)
        // Another reading of the same sitemaps may have accepted URLs meanwhile.
        accepted = yield* loadAccepted
      }

      /** When each origin with a `Crawl-delay` may have its next page fetched (after its last page ended). */
      const nextAllowedAt = new Map<string, number>()

      /** Ends one page whose job ended: its links (if it is HTML and may have any) join the frontier. */
      const endPage = (crawl: CrawlRow, page: EndedPage) =>
        Effect.gen(function*() {
          const status = pageEndOf(page, false)
          let candidates: Array<Candidate> = []
          // A page at maxDepth is not read for links: they could only be deeper than the crawl goes.
          // Nor is an error page (a 404's "see also"): only a 2xx answer's links are the site's, as for maps.
          const answered = page.http_status === null || (page.http_status >= 200 && page.http_status < 300)
          if (status === "done" && answered && opts.sitemap !== "only" && page.depth < crawl.max_depth) {
            const content = yield* jobs.html(tenantId, page.job_id)
            const finalUrl = page.final_url ?? page.url
            const isHtml = content && (content.contentType === null || /html/i.test(content.contentType))
            // A page that redirected off the crawl's site is not read: its links are another site's.
            // Nor is one that redirected to a URL its robots.txt disallows: the engine followed the
            // redirect within its fetch (docs/site-crawls.md, "robots.txt and redirects"), but the
            // crawl goes no further into what the site asked crawlers to leave alone.
            const redirectedInto = opts.respectRobots && finalUrl !== page.url
              ? !(yield* Effect.promise(() => robotsOf(new URL(finalUrl)))).isAllowed(finalUrl)
              : false
            if (content && isHtml && !redirectedInto && frontier.inScope(new URL(finalUrl))) {
              const links = yield* Effect.promise(() => readLinks(content.body.toString("utf8"), finalUrl, tenantId))
              candidates = links
                .slice(0, CRAWL_MAX_LINKS_PER_PAGE)
                .map((url) => ({ url, depth: page.depth + 1, parentUrl: page.url, parentJobId: page.job_id }))
            }
          }
          const { rows, duplicates } = yield* Effect.promise(() => frontier.judge(candidates, known, accepted))
          const delivery = crawlDelivery(crawl, "page", Number(page.seq), { jobId: page.job_id, url: page.url, depth: page.depth, status })
          const recorded = yield* repo.recordPage(crawl, { jobId: page.job_id, url: page.url, depth: page.depth, status }, rows, duplicates, delivery)
          nextAllowedAt.set(new URL(page.url).origin, Date.now())
          if (!recorded) {
            // Ended by an earlier run: what this one judged was not written.
            accepted = yield* loadAccepted
            return
          }
          yield* events.notify(tenantId)
          yield* deliver(delivery)
        })

      /** Pauses the crawl (daily quota, credit) with a reason its clients read, for `CRAWL_PAUSE_RETRY_MS`. */
      const pauseFor = (e: ApiError) => {
        const retry = `${CRAWL_PAUSE_RETRY_MS / 1000} s`
        const resumes = e.code === "quota_exceeded" ? `on the next UTC day, or within ${retry} of the quota being raised`
          : e.code === "insufficient_credit" ? `within ${retry} of the balance covering its next page`
          : undefined
        // a full concurrency limit or a passing outage: the next round tries again
        if (resumes === undefined) return Effect.void
        const now = Date.now()
        return repo.pause(crawlId, `paused at ${new Date(now).toISOString()}: ${e.message}; the crawl tries again every ${retry} and resumes ${resumes}`, new Date(now + CRAWL_PAUSE_RETRY_MS))
      }

      /** Hands the next queued URLs to jobs, up to the in-flight bound and each origin's `Crawl-delay`. */
      const dispatch = (crawl: CrawlRow) =>
        Effect.gen(function*() {
          const flying = yield* repo.inFlight(crawlId)
          const room = CRAWL_MAX_IN_FLIGHT - flying.length
          if (room <= 0) return
          const busyOrigins = new Map<string, number>()
          for (const f of flying) {
            const o = new URL(f.url).origin
            busyOrigins.set(o, (busyOrigins.get(o) ?? 0) + 1)
          }
          const queued = yield* repo.nextQueued(crawlId, room * 4)
          const chosen: Array<(typeof queued)[number]> = []
          for (const row of queued) {
            if (chosen.length >= room) break
            const url = new URL(row.fetch_url)
            if (opts.respectRobots) {
              // Read again at the URL's turn (a seed, or a file that changed since): a refusal skips it.
              const robots = yield* Effect.promise(() => robotsOf(url))
              if (!robots.isAllowed(row.fetch_url)) {
                yield* repo.skipQueued(crawlId, row.url, "robots")
                continue
              }
              const delay = robots.crawlDelayMs ?? 0
              if (delay > 0) {
                // One page at a time on such an origin, `Crawl-delay` after the last one ended.
                if ((busyOrigins.get(url.origin) ?? 0) > 0) continue
                if (Date.now() < (nextAllowedAt.get(url.origin) ?? 0) + delay) continue
                busyOrigins.set(url.origin, 1)
              }
            }
            chosen.push(row)
          }
          if (chosen.length === 0) return
          const prepared = []
          for (const row of chosen) {
            const body: CreateJobBody = { url: row.fetch_url, ...crawl.options.page }
            const p = yield* Effect.result(creation.prepare(tenantId, body, { requestId: crawl.request_id }))
            if (p._tag === "Failure") {
              yield* repo.skipQueued(crawlId, row.url, "unsafe")
              continue
            }
            // The page's job id was chosen when its URL was accepted: a re-run meets the job an earlier run made.
            prepared.push({ ...p.success, job: { ...p.success.job, id: row.job_id }, resumed: true, generatedSecret: undefined })
          }
          if (prepared.length === 0) return
          const made = yield* Effect.result(creation.createWhatFits(tenantId, prepared))
          if (made._tag === "Failure") return yield* pauseFor(made.failure)
          const created = made.success.created.map((j) => j.id)
          const moved = yield* repo.markFetching(crawlId, created)
          // Cancelled meanwhile: the jobs made for its queued pages are cancelled too.
          for (const id of created) if (!moved.has(id)) yield* creation.cancel(tenantId, JobId.make(id))
          const refused = made.success.refused[0]
          if (refused) yield* pauseFor(refused.error)
          else if (crawl.status_reason !== null) yield* repo.pause(crawlId, null, null)
        })

      while (true) {
        const crawl = yield* repo.byId(crawlId)
        if (!crawl || crawl.status === "done" || crawl.status === "failed") return
        if (crawl.status === "cancelled") return yield* settleCancelled(crawl)
        for (const page of yield* repo.endedPages(crawlId)) yield* endPage(crawl, page)
        if (!crawl.paused_until || crawl.paused_until.getTime() <= Date.now()) yield* dispatch(crawl)
        const flying = yield* repo.inFlight(crawlId)
        const next = flying.length === 0 ? yield* repo.nextQueued(crawlId, 1) : []
        if (flying.length === 0 && next.length === 0) {
          const counts = (yield* repo.counts([crawl])).get(crawlId)!
          // Failed: no page could be fetched (all that were tried failed).
          const status = counts.done === 0 && counts.failed > 0 ? "failed" as const : "done" as const
          const data = { id: crawlId, url: crawl.url, status, counts }
          const delivery = crawlDelivery(crawl, status, 0, { status, url: crawl.url, counts })
          if (yield* repo.finish(crawl, status, data, delivery)) {
            yield* events.notify(tenantId)
            yield* deliver(delivery)
          }
          return
        }
        // Paused with nothing in flight: nothing can change before the pause ends (or a wake-up).
        const paused = crawl.paused_until !== null && crawl.paused_until.getTime() > Date.now()
        yield* nap(paused && flying.length === 0 ? Math.min(crawl.paused_until!.getTime() - Date.now(), 5_000) : POLL_MS)
      }
    }).pipe(Effect.scoped)

    return CrawlEntity.of({
      // One drive at a time: a Drive sent again while the crawl runs here has nothing to add.
      Drive: () =>
        Effect.suspend(() => {
          if (driving) return Effect.void
          driving = true
          return drive.pipe(Effect.ensuring(Effect.sync(() => (driving = false))))
        }).pipe(Effect.orDie, Rpc.fork)
    })
  }),
  { maxIdleTime: RESOURCE_ENTITY_IDLE }
)

/** Re-sends `Drive` to crawls that have not ended, for a crawl whose message was lost before it was stored. */
export const CrawlSweeperLive = Singleton.make(
  "CrawlSweeper",
  Effect.gen(function*() {
    const repo = yield* CrawlRepo
    const crawls = yield* CrawlEntity.client
    yield* sweepLoop("crawl drives", "60 seconds", repo.active(500), (c) => crawls(c.id).Drive(undefined, { discard: true }))
  })
)
