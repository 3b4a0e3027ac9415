import { Context, Effect, Layer } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import type { CrawlCounts, CrawlOptions, CrawlPageStatus, CrawlStatus } from "../schema/crawl.ts"
import { appendEventCtes } from "./event-repo.ts"
import { orderByTerms } from "./order-by.ts"
import { pageWithTotal } from "./page-with-total.ts"
import { OID, pgArray } from "./pg-array.ts"
import { insertDeliveriesSql } from "./webhook-repo.ts"

export interface CrawlRow {
  readonly id: string
  readonly tenant_id: string
  readonly url: string
  readonly status: CrawlStatus
  readonly status_reason: string | null
  readonly options: CrawlOptions
  readonly page_limit: number
  readonly max_depth: number
  readonly webhook_url: string | null
  readonly webhook_secret_enc: string | null
  readonly request_id: string | null
  readonly duplicates: number
  readonly sitemaps_read: boolean
  readonly paused_until: Date | null
  readonly created_at: Date
  readonly started_at: Date | null
  readonly finished_at: Date | null
}

export interface NewCrawl {
  readonly id: string
  readonly tenantId: string
  readonly url: string
  readonly options: CrawlOptions
  readonly webhookUrl: string | null
  readonly webhookSecretEnc: string | null
  readonly requestId: string | null
}

export type UrlStatus = "queued" | "fetching" | "done" | "failed" | "cancelled" | "skipped" | "over_limit"
export type SkipReason = "robots" | "filtered" | "depth" | "pattern" | "offsite" | "unsafe"

/** A URL judged by a crawl: accepted (`queued`, with its job's id), over the limit, or skipped for a reason. */
export interface NewCrawlUrl {
  /** The URL's key. */
  readonly url: string
  /** What is fetched, when it is not the key (`ignoreQueryParameters` keeps the query of the URL as found). */
  readonly fetchUrl: string | null
  readonly depth: number
  readonly pattern: string
  readonly status: "queued" | "skipped" | "over_limit"
  readonly skipReason: SkipReason | null
  readonly jobId: string | null
  readonly parentUrl: string | null
  readonly parentJobId: string | null
}

export interface FrontierRow {
  /** The URL's key. */
  readonly url: string
  /** The URL its job fetches (the key, or the URL as found when the key ignores its query). */
  readonly fetch_url: string
  readonly seq: string
  readonly depth: number
  readonly pattern: string
  readonly job_id: string
}

export interface EndedPage {
  /** The URL its job fetched. */
  readonly url: string
  readonly seq: string
  readonly depth: number
  readonly job_id: string
  readonly job_status: "done" | "failed" | "dead"
  /** The job's classification (`cancelled` for a job a cancel stopped). */
  readonly classification: string | null
  readonly http_status: number | null
  readonly final_url: string | null
}

export interface CrawlPageRow {
  /** The page's job id, chosen when it was accepted. */
  readonly id: string
  /** Whether its job has been made (not while it waits for its turn, nor when cancelled before it). */
  readonly job_made: boolean
  readonly url: string
  readonly status: UrlStatus
  readonly depth: number
  readonly parent_url: string | null
  readonly parent_job_id: string | null
  readonly created_at: Date
  readonly finished_at: Date | null
}

/** A webhook delivery of a crawl event, written with the event (see `insertDeliveriesSql`). */
export interface CrawlDelivery {
  readonly id: string
  readonly eventStatus: string
  readonly eventSeq: number
  readonly url: string
  readonly secretEnc: string
  readonly body: string
}

export const crawlSortColumns: Record<string, string> = { createdAt: "created_at", id: "id", status: "status" }

/** A page's status as the API names it, from its row. */
export const pageStatusOf = (s: UrlStatus): CrawlPageStatus => (s === "fetching" ? "running" : s === "queued" ? "queued" : s === "done" ? "done" : s === "failed" ? "failed" : "cancelled")
const rowStatusesOf: Record<CrawlPageStatus, ReadonlyArray<UrlStatus>> = {
  queued: ["queued"],
  running: ["fetching"],
  done: ["done"],
  failed: ["failed"],
  cancelled: ["cancelled"]
}

/** A page of a tenant's crawls: status filter, sort terms, offset and limit. */
export interface CrawlListQuery {
  readonly tenantId: string
  readonly statuses: ReadonlyArray<CrawlStatus> | undefined
  readonly sort: ReadonlyArray<{ field: string; dir: "asc" | "desc" }>
  readonly offset: number
  readonly limit: number
}

export interface CrawlRepoShape {
  /** Writes a crawl and its seed's row (accepted, with its job's id); a crawl already written is found, not written again. */
  readonly insert: (c: NewCrawl, seed: NewCrawlUrl | undefined) => Effect.Effect<CrawlRow>
  readonly find: (tenantId: string, id: string) => Effect.Effect<CrawlRow | undefined>
  readonly byId: (id: string) => Effect.Effect<CrawlRow | undefined>
  readonly counts: (crawls: ReadonlyArray<Pick<CrawlRow, "id" | "duplicates">>) => Effect.Effect<ReadonlyMap<string, CrawlCounts>>
  readonly list: (q: CrawlListQuery) => Effect.Effect<{ readonly items: ReadonlyArray<CrawlRow>; readonly total: number }>
  readonly pages: (q: {
    readonly crawlId: string
    readonly statuses: ReadonlyArray<CrawlPageStatus> | undefined
    readonly depth: number | undefined
    readonly parentJobId: string | undefined
    readonly offset: number
    readonly limit: number
  }) => Effect.Effect<{ readonly items: ReadonlyArray<CrawlPageRow>; readonly total: number }>
  /** queued → running, with `crawl.started` (and its delivery); false when it was not queued. */
  readonly start: (crawl: CrawlRow, delivery: CrawlDelivery | undefined) => Effect.Effect<boolean>
  /**
   * Marks the crawl's sitemaps read and counts their duplicates: `entries` (the sitemap entries the
   * reading judged) minus the distinct URLs the sitemaps added (the rows with no parent, the seed
   * row aside). Only the first marking counts; false when the sitemaps were read already.
   */
  readonly markSitemapsRead: (crawl: CrawlRow, entries: number) => Effect.Effect<boolean>
  /** Pages being fetched whose job has ended. */
  readonly endedPages: (id: string) => Effect.Effect<ReadonlyArray<EndedPage>>
  /**
   * Ends one page (fetching → done | failed | cancelled) with the URLs its links found, its
   * `crawl.page` event and delivery, in one transaction; false when it had been ended already (a
   * re-run after a lost node), and then nothing is written.
   */
  readonly recordPage: (
    crawl: CrawlRow,
    page: { readonly jobId: string; readonly url: string; readonly depth: number; readonly status: "done" | "failed" | "cancelled" },
    found: ReadonlyArray<NewCrawlUrl>,
    extraDuplicates: number,
    delivery: CrawlDelivery | undefined
  ) => Effect.Effect<boolean>
  /** Adds a sitemap's URLs; one already there is kept as it is (duplicates are counted by `markSitemapsRead`). */
  readonly addUrls: (crawlId: string, found: ReadonlyArray<NewCrawlUrl>) => Effect.Effect<void>
  /** Keys of `urls` the crawl has judged already. */
  readonly known: (crawlId: string, urls: ReadonlyArray<string>) => Effect.Effect<ReadonlySet<string>>
  /** Accepted pages (ever) in all, and by path pattern. */
  readonly accepted: (crawlId: string) => Effect.Effect<{ readonly total: number; readonly byPattern: ReadonlyMap<string, number> }>
  readonly nextQueued: (crawlId: string, n: number) => Effect.Effect<ReadonlyArray<FrontierRow>>
  /** The pages whose jobs are under way: those waiting for their turn first, then those fetching. */
  readonly inFlight: (crawlId: string) => Effect.Effect<ReadonlyArray<{ readonly url: string; readonly job_id: string }>>
  /** queued → fetching for the jobs created; answers the ids moved (a cancelled crawl's rows are not). */
  readonly markFetching: (crawlId: string, jobIds: ReadonlyArray<string>) => Effect.Effect<ReadonlySet<string>>
  /** A queued URL refused at its turn (robots.txt read again): skipped, its job never made. */
  readonly skipQueued: (crawlId: string, url: string, reason: SkipReason) => Effect.Effect<void>
  readonly pause: (crawlId: string, reason: string | null, until: Date | null) => Effect.Effect<void>
  /** running → done | failed with its event (and delivery); false when the crawl had ended already. */
  readonly finish: (crawl: CrawlRow, status: "done" | "failed", data: Record<string, unknown>, delivery: CrawlDelivery | undefined) => Effect.Effect<boolean>
  /**
   * Cancels a crawl of the tenant that has not ended, with its event (and delivery), and its queued
   * pages; answers the row and whether it changed. Undefined when the tenant has no such crawl.
   */
  readonly cancel: (
    tenantId: string,
    id: string,
    data: (row: CrawlRow) => Record<string, unknown>,
    delivery: (row: CrawlRow) => CrawlDelivery | undefined
  ) => Effect.Effect<{ readonly row: CrawlRow; readonly changed: boolean } | undefined>
  /** A cancelled crawl's pages still waiting for their turn (their job never made): cancelled. */
  readonly cancelQueued: (crawlId: string) => Effect.Effect<void>
  /** Crawls not ended: what the sweeper hands to their entities again. */
  readonly active: (limit: number) => Effect.Effect<ReadonlyArray<{ readonly id: string }>>
}

export class CrawlRepo extends Context.Service<CrawlRepo, CrawlRepoShape>()("trawl/CrawlRepo") {}

const emptyCounts = (duplicates: number): CrawlCounts => ({
  discovered: 0,
  queued: 0,
  done: 0,
  failed: 0,
  skipped: { robots: 0, filtered: 0, duplicate: duplicates, offsite: 0, unsafe: 0 }
})

export const CrawlRepoLive = Layer.effect(
  CrawlRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const deliverySql = (crawl: CrawlRow, d: CrawlDelivery): Statement.Fragment =>
      insertDeliveriesSql(
        sql,
        sql`SELECT ${d.id}::text, ${crawl.tenant_id}::text, 'crawl'::text, ${crawl.id}::text, ${d.eventStatus}::text,
                   ${d.eventSeq}::int, ${d.url}::text, ${d.secretEnc}::text, ${d.body}::text`
      )

    /** One event row (and its delivery) for `crawl`, in one statement. */
    const emit = (crawl: CrawlRow, type: string, data: Record<string, unknown>, delivery: CrawlDelivery | undefined) =>
      Effect.gen(function*() {
        yield* sql`
          WITH src AS (SELECT ${crawl.tenant_id}::text AS tenant_id),
          ${appendEventCtes(sql, { source: "src", type, data: sql`${JSON.stringify(data)}::jsonb` })}
          SELECT count(*) FROM ev_rows`
        if (delivery) yield* sql`${deliverySql(crawl, delivery)}`
      })

    const insertUrls = (crawlId: string, found: ReadonlyArray<NewCrawlUrl>) =>
      found.length === 0
        ? Effect.succeed(0)
        : sql<{ inserted: boolean }>`
          INSERT INTO crawl_urls (crawl_id, url, fetch_url, depth, pattern, status, skip_reason, job_id, parent_url, parent_job_id)
          SELECT ${crawlId}, u.url, u.fetch_url, u.depth, u.pattern, u.status, u.skip_reason, u.job_id, u.parent_url, u.parent_job_id
          FROM unnest(
            ${pgArray(found.map((f) => f.url), OID.text)}, ${pgArray(found.map((f) => f.fetchUrl), OID.text)}, ${pgArray(found.map((f) => f.depth), OID.int4)},
            ${pgArray(found.map((f) => f.pattern), OID.text)}, ${pgArray(found.map((f) => f.status), OID.text)},
            ${pgArray(found.map((f) => f.skipReason), OID.text)}, ${pgArray(found.map((f) => f.jobId), OID.text)},
            ${pgArray(found.map((f) => f.parentUrl), OID.text)}, ${pgArray(found.map((f) => f.parentJobId), OID.text)}
          ) AS u(url, fetch_url, depth, pattern, status, skip_reason, job_id, parent_url, parent_job_id)
          -- A URL seen again is kept as it was; a queued one takes the shorter distance (depth is
          -- the shortest link distance seen).
          ON CONFLICT (crawl_id, url) DO UPDATE SET depth = EXCLUDED.depth, parent_url = EXCLUDED.parent_url, parent_job_id = EXCLUDED.parent_job_id
            WHERE crawl_urls.status = 'queued' AND EXCLUDED.depth < crawl_urls.depth
          RETURNING (xmax = 0) AS inserted`.pipe(Effect.map((rows) => rows.filter((r) => r.inserted).length))

    const addDuplicates = (crawlId: string, n: number) =>
      n > 0 ? sql`UPDATE crawls SET duplicates = duplicates + ${n} WHERE id = ${crawlId}`.pipe(Effect.asVoid) : Effect.void

    return CrawlRepo.of({
      insert: (c, seed) =>
        sql.withTransaction(Effect.gen(function*() {
          const [row] = yield* sql<CrawlRow>`
            INSERT INTO crawls (id, tenant_id, url, status, options, page_limit, max_depth, webhook_url, webhook_secret_enc, request_id)
            VALUES (${c.id}, ${c.tenantId}, ${c.url}, 'queued', ${JSON.stringify(c.options)}::jsonb, ${c.options.limit}, ${c.options.maxDepth},
                    ${c.webhookUrl}, ${c.webhookSecretEnc}, ${c.requestId})
            ON CONFLICT (id) DO NOTHING
            RETURNING *`
          if (!row) return (yield* sql<CrawlRow>`SELECT * FROM crawls WHERE id = ${c.id}`)[0]!
          if (seed) yield* insertUrls(c.id, [seed])
          return row
        })).pipe(Effect.orDie),
      find: (tenantId, id) =>
        sql<CrawlRow>`SELECT * FROM crawls WHERE id = ${id} AND tenant_id = ${tenantId}`.pipe(Effect.orDie, Effect.map((r) => r[0])),
      byId: (id) => sql<CrawlRow>`SELECT * FROM crawls WHERE id = ${id}`.pipe(Effect.orDie, Effect.map((r) => r[0])),
      counts: (crawls) =>
        Effect.gen(function*() {
          const out = new Map<string, CrawlCounts>()
          if (crawls.length === 0) return out
          for (const c of crawls) out.set(c.id, emptyCounts(c.duplicates))
          const rows = yield* sql<{ crawl_id: string; status: UrlStatus; skip_reason: SkipReason | null; n: string }>`
            SELECT crawl_id, status, skip_reason, count(*) AS n FROM crawl_urls
            WHERE crawl_id = ANY(${pgArray(crawls.map((c) => c.id), OID.text)})
            GROUP BY crawl_id, status, skip_reason`
          for (const r of rows) {
            const c = out.get(r.crawl_id) as { discovered: number; queued: number; done: number; failed: number; skipped: Record<string, number> }
            const n = Number(r.n)
            c.discovered += n
            if (r.status === "queued" || r.status === "fetching") c.queued += n
            else if (r.status === "done") c.done += n
            else if (r.status === "failed") c.failed += n
            else if (r.status === "skipped" && r.skip_reason) {
              // Depth and the per-pattern cap are filters of the crawl's own, as the path globs are.
              const key = r.skip_reason === "depth" || r.skip_reason === "pattern" ? "filtered" : r.skip_reason
              c.skipped[key] = (c.skipped[key] ?? 0) + n
            }
          }
          return out
        }).pipe(Effect.orDie),
      list: (q) => {
        const where = sql.and([
          sql`tenant_id = ${q.tenantId}`,
          ...(q.statuses ? [sql`status = ANY(${pgArray(q.statuses, OID.text)})`] : [])
        ])
        return pageWithTotal<CrawlRow>(
          sql,
          sql`SELECT * FROM crawls WHERE ${where} ORDER BY ${sql.literal(orderByTerms(q.sort, crawlSortColumns))} OFFSET ${q.offset} LIMIT ${q.limit}`,
          sql`SELECT count(*) FROM crawls WHERE ${where}`
        )
      },
      pages: (q) => {
        const where = sql.and([
          sql`u.crawl_id = ${q.crawlId}`,
          sql`u.job_id IS NOT NULL`,
          sql`u.status <> 'over_limit'`,
          sql`u.status <> 'skipped'`,
          ...(q.statuses ? [sql`u.status = ANY(${pgArray(q.statuses.flatMap((s) => rowStatusesOf[s]), OID.text)})`] : []),
          ...(q.depth !== undefined ? [sql`u.depth = ${q.depth}`] : []),
          ...(q.parentJobId !== undefined ? [sql`u.parent_job_id = ${q.parentJobId}`] : [])
        ])
        // In the order the crawl accepted them: a page accepted later comes after every page listed
        // before, so paging through a running crawl neither repeats nor skips one.
        return pageWithTotal<CrawlPageRow>(
          sql,
          sql`SELECT u.job_id AS id, j.id IS NOT NULL AS job_made, coalesce(u.fetch_url, u.url) AS url, u.status, u.depth, u.parent_url, u.parent_job_id, u.created_at, u.finished_at
              FROM crawl_urls u LEFT JOIN jobs j ON j.id = u.job_id
              WHERE ${where} ORDER BY u.seq OFFSET ${q.offset} LIMIT ${q.limit}`,
          sql`SELECT count(*) FROM crawl_urls u WHERE ${where}`
        )
      },
      start: (crawl, delivery) =>
        sql.withTransaction(Effect.gen(function*() {
          const [row] = yield* sql<CrawlRow>`UPDATE crawls SET status = 'running', started_at = now() WHERE id = ${crawl.id} AND status = 'queued' RETURNING *`
          if (!row) return false
          yield* emit(crawl, "crawl.started", { id: crawl.id, url: crawl.url, status: "running" }, delivery)
          return true
        })).pipe(Effect.orDie),
      markSitemapsRead: (crawl, entries) => {
        // With `sitemap: "only"` there is no seed row: a parentless row is a sitemap's, the seed's URL too.
        const seedRow = crawl.options.sitemap !== "only"
        return sql<{ id: string }>`
          UPDATE crawls SET sitemaps_read = true, duplicates = duplicates + GREATEST(0, ${entries}::int - (
            SELECT count(*) FROM crawl_urls
            WHERE crawl_id = ${crawl.id} AND parent_url IS NULL AND (${!seedRow}::boolean OR url <> ${crawl.url})
          ))
          WHERE id = ${crawl.id} AND NOT sitemaps_read
          RETURNING id`.pipe(Effect.orDie, Effect.map((rows) => rows.length > 0))
      },
      endedPages: (id) =>
        sql<EndedPage>`
          SELECT coalesce(u.fetch_url, u.url) AS url, u.seq, u.depth, u.job_id, j.status AS job_status,
                 j.result->>'classification' AS classification, (j.result->>'httpStatus')::int AS http_status, j.result->>'finalUrl' AS final_url
          FROM crawl_urls u JOIN jobs j ON j.id = u.job_id
          WHERE u.crawl_id = ${id} AND u.status = 'fetching' AND j.status IN ('done', 'failed', 'dead')
          ORDER BY u.seq`.pipe(Effect.orDie),
      recordPage: (crawl, page, found, extraDuplicates, delivery) =>
        sql.withTransaction(Effect.gen(function*() {
          const [ended] = yield* sql<{ seq: string }>`
            UPDATE crawl_urls SET status = ${page.status}, finished_at = now()
            WHERE crawl_id = ${crawl.id} AND job_id = ${page.jobId} AND status = 'fetching'
            RETURNING seq`
          if (!ended) return false
          // The crawl's row is locked, so a cancel is either before this (no new URL is queued
          // then) or after it (and cancels what this queued).
          const [current] = yield* sql<{ status: CrawlStatus }>`SELECT status FROM crawls WHERE id = ${crawl.id} FOR UPDATE`
          const inserted = current?.status === "running" ? yield* insertUrls(crawl.id, found) : found.length
          yield* addDuplicates(crawl.id, found.length - inserted + extraDuplicates)
          yield* emit(crawl, "crawl.page", { id: crawl.id, crawlId: crawl.id, jobId: page.jobId, url: page.url, depth: page.depth, status: page.status }, delivery)
          return true
        })).pipe(Effect.orDie),
      addUrls: (crawlId, found) => insertUrls(crawlId, found).pipe(Effect.orDie, Effect.asVoid),
      known: (crawlId, urls) =>
        urls.length === 0
          ? Effect.succeed(new Set<string>())
          : sql<{ url: string }>`SELECT url FROM crawl_urls WHERE crawl_id = ${crawlId} AND url = ANY(${pgArray(urls, OID.text)})`.pipe(
            Effect.orDie,
            Effect.map((rows) => new Set(rows.map((r) => r.url)))
          ),
      accepted: (crawlId) =>
        sql<{ pattern: string; n: string }>`
          SELECT pattern, count(*) AS n FROM crawl_urls WHERE crawl_id = ${crawlId} AND job_id IS NOT NULL GROUP BY pattern`.pipe(
          Effect.orDie,
          Effect.map((rows) => ({
            total: rows.reduce((sum, r) => sum + Number(r.n), 0),
            byPattern: new Map(rows.map((r) => [r.pattern, Number(r.n)]))
          }))
        ),
      nextQueued: (crawlId, n) =>
        sql<FrontierRow>`
          SELECT url, coalesce(fetch_url, url) AS fetch_url, seq, depth, pattern, job_id FROM crawl_urls
          WHERE crawl_id = ${crawlId} AND status = 'queued' ORDER BY depth, seq LIMIT ${n}`.pipe(Effect.orDie),
      inFlight: (crawlId) =>
        // Jobs still waiting for their turn first, then those fetching (claimed): cancelled in this
        // order, a fetching job's freed domain slot finds no job of the crawl left to start.
        sql<{ url: string; job_id: string }>`
          SELECT coalesce(u.fetch_url, u.url) AS url, u.job_id FROM crawl_urls u LEFT JOIN jobs j ON j.id = u.job_id
          WHERE u.crawl_id = ${crawlId} AND u.status = 'fetching'
          ORDER BY (j.status = 'claimed') NULLS FIRST, u.job_id`.pipe(Effect.orDie),
      markFetching: (crawlId, jobIds) =>
        jobIds.length === 0
          ? Effect.succeed(new Set<string>())
          : sql<{ job_id: string }>`
            UPDATE crawl_urls SET status = 'fetching'
            WHERE crawl_id = ${crawlId} AND job_id = ANY(${pgArray(jobIds, OID.text)}) AND status = 'queued'
            RETURNING job_id`.pipe(Effect.orDie, Effect.map((rows) => new Set(rows.map((r) => r.job_id)))),
      skipQueued: (crawlId, url, reason) =>
        sql`UPDATE crawl_urls SET status = 'skipped', skip_reason = ${reason}, job_id = NULL, finished_at = now()
            WHERE crawl_id = ${crawlId} AND url = ${url} AND status = 'queued'`.pipe(Effect.orDie, Effect.asVoid),
      pause: (crawlId, reason, until) =>
        sql`UPDATE crawls SET status_reason = ${reason}, paused_until = ${until} WHERE id = ${crawlId}`.pipe(Effect.orDie, Effect.asVoid),
      finish: (crawl, status, data, delivery) =>
        sql.withTransaction(Effect.gen(function*() {
          const [row] = yield* sql<CrawlRow>`
            UPDATE crawls SET status = ${status}, status_reason = NULL, paused_until = NULL, finished_at = now()
            WHERE id = ${crawl.id} AND status IN ('queued', 'running') RETURNING *`
          if (!row) return false
          yield* emit(crawl, `crawl.${status}`, data, delivery)
          return true
        })).pipe(Effect.orDie),
      cancel: (tenantId, id, data, delivery) =>
        sql.withTransaction(Effect.gen(function*() {
          const [row] = yield* sql<CrawlRow>`
            UPDATE crawls SET status = 'cancelled', status_reason = NULL, paused_until = NULL, finished_at = now()
            WHERE id = ${id} AND tenant_id = ${tenantId} AND status IN ('queued', 'running') RETURNING *`
          if (!row) {
            const [existing] = yield* sql<CrawlRow>`SELECT * FROM crawls WHERE id = ${id} AND tenant_id = ${tenantId}`
            return existing ? { row: existing, changed: false } : undefined
          }
          yield* sql`UPDATE crawl_urls SET status = 'cancelled', finished_at = now() WHERE crawl_id = ${id} AND status = 'queued'`
          yield* emit(row, "crawl.cancelled", data(row), delivery(row))
          return { row, changed: true }
        })).pipe(Effect.orDie),
      cancelQueued: (crawlId) =>
        sql`UPDATE crawl_urls SET status = 'cancelled', finished_at = now() WHERE crawl_id = ${crawlId} AND status = 'queued'`.pipe(Effect.orDie, Effect.asVoid),
      active: (limit) =>
        sql<{ id: string }>`SELECT id FROM crawls WHERE status IN ('queued', 'running') ORDER BY created_at LIMIT ${limit}`.pipe(Effect.orDie)
    })
  })
)
