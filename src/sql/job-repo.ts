import { createHash } from "node:crypto"
import { promisify } from "node:util"
import { gunzipSync, gzip } from "node:zlib"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { newId } from "../ids.ts"
import { iso } from "../schema/common.ts"
import type { Job, JobResult, JobStatus, PageVersion, SearchJobsBody } from "../schema/job.ts"
import { orderByTerms } from "./order-by.ts"
import { appendEventCtes } from "../events/event-log.ts"
import { insertDeliverySql, type NewDelivery } from "./webhook-repo.ts"

export interface JobRow {
  readonly id: string
  readonly tenant_id: string
  readonly url: string
  readonly normalized_url: string
  readonly domain_id: string
  readonly status: JobStatus
  readonly priority: number
  readonly attempts: number
  readonly timeout_ms: number
  readonly escalation: ReadonlyArray<{ engine: string; attempts: number; timeoutMs: number }> | null
  readonly screenshot: { format?: string; quality?: number; fullPage?: boolean } | boolean | null
  readonly webhook_url: string | null
  readonly webhook_secret_enc: string | null
  readonly result: JobResult | null
  readonly replay_of: string | null
  readonly request_id: string | null
  readonly runs: number
  readonly created_at: Date
  readonly finished_at: Date | null
}

export interface NewJob {
  readonly id: string
  readonly tenantId: string
  readonly url: string
  readonly normalizedUrl: string
  readonly domainId: string
  readonly priority: number
  readonly timeoutMs: number
  readonly escalation: ReadonlyArray<unknown> | null
  readonly screenshot: unknown
  readonly webhookUrl: string | null
  readonly webhookSecretEnc: string | null
  readonly replayOf: string | null
  readonly requestId: string | null
}

export const toJob = (r: JobRow): Job => ({
  id: r.id,
  url: r.url,
  status: r.status,
  priority: r.priority,
  attempts: r.attempts,
  createdAt: iso(r.created_at)!,
  finishedAt: iso(r.finished_at),
  domainId: r.domain_id,
  tenantId: r.tenant_id
})

export const toPageVersion = (r: any): PageVersion => ({
  id: r.id,
  url: r.url,
  normalizedUrl: r.normalized_url,
  jobId: r.job_id,
  fetchedAt: iso(r.fetched_at)!,
  httpStatus: r.http_status,
  contentType: r.content_type,
  size: r.size,
  contentHash: r.content_hash,
  changed: r.changed
})

export interface JobFinish {
  readonly status: "done" | "failed" | "dead"
  readonly result: JobResult
  readonly attempts: number
  readonly content?: { readonly body: Buffer; readonly contentType: string | null; readonly httpStatus: number | null; readonly finalUrl: string | null }
  readonly screenshot?: { readonly bytes: Buffer; readonly type: string }
  /** A webhook delivery created atomically with the terminal state. */
  readonly delivery?: NewDelivery
}

/** Column names the list and search may sort by (API field → column). */
export const sortColumns: Record<string, string> = {
  createdAt: "created_at",
  id: "id",
  priority: "priority",
  attempts: "attempts",
  status: "status"
}

export interface JobQuery {
  readonly tenantId: string
  readonly where: NonNullable<SearchJobsBody["where"]>
  readonly sort: ReadonlyArray<{ field: string; dir: "asc" | "desc" }>
  readonly offset: number
  readonly limit: number
}

export interface JobRepoShape {
  /** Inserts new jobs with their `job.created` events in one statement; notify when it returns rows. */
  readonly insert: (jobs: ReadonlyArray<NewJob>) => Effect.Effect<ReadonlyArray<JobRow>>
  readonly find: (tenantId: string, id: string) => Effect.Effect<JobRow | undefined>
  readonly byId: (id: string) => Effect.Effect<JobRow | undefined>
  readonly query: (q: JobQuery) => Effect.Effect<{ items: ReadonlyArray<JobRow>; total: number }>
  /**
   * Marks a job claimed for one more run, leased for its `timeoutMs` plus `graceMs`;
   * undefined when it is terminal or missing. The first run also records `job.claimed`
   * (a re-run after a lost node is not news to clients): notify when `runs` is 1.
   */
  readonly claim: (id: string, graceMs: number) => Effect.Effect<JobRow | undefined>
  /**
   * Moves a non-terminal job to its end state with its artifacts, page version, webhook delivery
   * and `job.<status>` event, atomically; call `EventLog.notify` when it returns the row.
   */
  readonly finish: (id: string, f: JobFinish) => Effect.Effect<JobRow | undefined>
  /** Non-terminal → dead (cancelled); returns the row as it is afterwards, and whether this call changed it. */
  readonly cancel: (tenantId: string, id: string) => Effect.Effect<{ row: JobRow; changed: boolean } | undefined>
  readonly counts: (tenantId: string, dayStart: Date) => Effect.Effect<{ active: number; today: number; ids: ReadonlySet<string> }>
  readonly existing: (ids: ReadonlyArray<string>) => Effect.Effect<ReadonlySet<string>>
  /** Non-terminal jobs whose lease ran out: their runner is gone. */
  readonly stale: (limit: number) => Effect.Effect<ReadonlyArray<{ id: string; tenant_id: string }>>
  readonly html: (tenantId: string, id: string) => Effect.Effect<{ body: Buffer; contentType: string | null } | undefined>
  readonly screenshot: (tenantId: string, id: string) => Effect.Effect<{ bytes: Buffer; type: string } | undefined>
  readonly timeline: (tenantId: string, normalizedUrl: string, offset: number, limit: number) => Effect.Effect<{ items: ReadonlyArray<PageVersion>; total: number }>
  readonly version: (tenantId: string, versionId: string) => Effect.Effect<PageVersion | undefined>
  readonly previousVersion: (tenantId: string, v: PageVersion) => Effect.Effect<PageVersion | undefined>
  readonly versionContent: (tenantId: string, hash: string) => Effect.Effect<Buffer | undefined>
}

export class JobRepo extends Context.Service<JobRepo, JobRepoShape>()("trawl/JobRepo") {}

const gzipAsync = promisify(gzip)

const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex")

export const JobRepoLive = Layer.effect(
  JobRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const where = (q: JobQuery) => {
      const parts = [sql`tenant_id = ${q.tenantId}`]
      const w = q.where
      if (w.status) parts.push(sql`status IN ${sql.in(w.status)}`)
      if (w.url?.prefix) parts.push(sql`starts_with(url, ${w.url.prefix})`)
      if (w.domainId) parts.push(sql`domain_id = ${w.domainId.toLowerCase()}`)
      if (w.createdAt?.gte) parts.push(sql`created_at >= ${w.createdAt.gte}::timestamptz`)
      if (w.createdAt?.lt) parts.push(sql`created_at < ${w.createdAt.lt}::timestamptz`)
      if (w.priority?.gte !== undefined) parts.push(sql`priority >= ${w.priority.gte}`)
      if (w.priority?.lte !== undefined) parts.push(sql`priority <= ${w.priority.lte}`)
      return sql.and(parts)
    }

    const orderBy = (sort: JobQuery["sort"]) => sql.literal(orderByTerms(sort, sortColumns))

    return JobRepo.of({
      insert: (jobs) =>
        jobs.length === 0 ? Effect.succeed([]) : sql<JobRow>`
          WITH j AS (
          INSERT INTO jobs ${sql.insert(jobs.map((j): Record<string, unknown> => ({
            id: j.id,
            tenant_id: j.tenantId,
            url: j.url,
            normalized_url: j.normalizedUrl,
            domain_id: j.domainId,
            status: "queued",
            priority: j.priority,
            timeout_ms: j.timeoutMs,
            escalation: j.escalation === null ? null : JSON.stringify(j.escalation),
            screenshot: j.screenshot === undefined || j.screenshot === false ? null : JSON.stringify(j.screenshot),
            webhook_url: j.webhookUrl,
            webhook_secret_enc: j.webhookSecretEnc,
            replay_of: j.replayOf,
            request_id: j.requestId,
            lease_until: new Date(Date.now() + 10 * 60_000)
          })) as [Record<string, unknown>, ...Array<Record<string, unknown>>])}
          ON CONFLICT (id) DO NOTHING
          RETURNING *
          ),
          ${appendEventCtes(sql, {
            source: "j",
            type: "job.created",
            data: sql`jsonb_build_object('id', ev_src.id, 'status', ev_src.status, 'url', ev_src.url)`,
            // Ids increase in the order the request listed the jobs.
            order: sql`j.id COLLATE "C"`
          })}
          SELECT * FROM j`.pipe(Effect.orDie),
      find: (tenantId, id) =>
        sql<JobRow>`SELECT * FROM jobs WHERE id = ${id} AND tenant_id = ${tenantId}`.pipe(Effect.orDie, Effect.map((r) => r[0])),
      byId: (id) => sql<JobRow>`SELECT * FROM jobs WHERE id = ${id}`.pipe(Effect.orDie, Effect.map((r) => r[0])),
      query: (q) =>
        Effect.all([
          sql<JobRow>`SELECT * FROM jobs WHERE ${where(q)} ORDER BY ${orderBy(q.sort)} OFFSET ${q.offset} LIMIT ${q.limit}`,
          sql<{ n: string }>`SELECT count(*) AS n FROM jobs WHERE ${where(q)}`
        ], { concurrency: 2 }).pipe(Effect.orDie, Effect.map(([items, [c]]) => ({ items, total: Number(c!.n) }))),
      claim: (id, graceMs) =>
        sql<JobRow>`
          WITH j AS (
            UPDATE jobs SET status = 'claimed', claimed_at = now(), runs = runs + 1,
                            lease_until = now() + (timeout_ms + ${graceMs}) * interval '1 millisecond'
            WHERE id = ${id} AND status IN ('queued', 'claimed')
            RETURNING *
          ),
          ${appendEventCtes(sql, {
            source: "j",
            type: "job.claimed",
            data: sql`jsonb_build_object('id', ev_src.id, 'status', 'claimed', 'url', ev_src.url)`,
            when: sql`j.runs = 1`
          })}
          SELECT * FROM j`.pipe(Effect.orDie, Effect.map((r) => r[0])),
      finish: (id, f) =>
        Effect.gen(function*() {
          // Hashing and compression happen before the statement, off the event loop (gzip level 1).
          const packed = f.content
            ? { hash: sha256(f.content.body), compressed: yield* Effect.promise(() => gzipAsync(f.content!.body, { level: 1 })) }
            : undefined
          const jobEnded = sql`EXISTS (SELECT 1 FROM j)`
          const contentCtes = f.content && packed
            ? sql`
              stored AS (
                INSERT INTO page_contents (tenant_id, hash, compressed, size)
                SELECT j.tenant_id, ${packed.hash}::text, ${packed.compressed}::bytea, ${f.content.body.length}::integer FROM j
                ON CONFLICT (tenant_id, hash) DO NOTHING
              ),
              previous AS (
                SELECT pv.content_hash FROM page_versions pv JOIN j ON pv.tenant_id = j.tenant_id AND pv.normalized_url = j.normalized_url
                ORDER BY pv.fetched_at DESC, pv.id DESC LIMIT 1
              ),
              version AS (
                INSERT INTO page_versions (id, tenant_id, normalized_url, url, job_id, fetched_at, http_status, content_type, size,
                                           content_hash, changed)
                SELECT ${newId("pv")}::text, j.tenant_id, j.normalized_url, COALESCE(${f.content.finalUrl}::text, j.url), j.id, now(),
                       ${f.content.httpStatus}::integer, ${f.content.contentType}::text, ${f.content.body.length}::integer,
                       ${packed.hash}::text, (SELECT content_hash FROM previous) IS DISTINCT FROM ${packed.hash}::text
                FROM j
                ON CONFLICT (job_id) DO NOTHING
              ),`
            : sql.literal("")
          const artifactCte = packed || f.screenshot
            ? sql`
              artifact AS (
                INSERT INTO job_artifacts (job_id, tenant_id, content_hash, content_type, screenshot, screenshot_type)
                SELECT j.id, j.tenant_id, ${packed?.hash ?? null}::text, ${f.content?.contentType ?? null}::text,
                       ${f.screenshot?.bytes ?? null}::bytea, ${f.screenshot?.type ?? null}::text
                FROM j
                ON CONFLICT (job_id) DO NOTHING
              ),`
            : sql.literal("")
          const deliveryCte = f.delivery ? sql`delivery AS (${insertDeliverySql(sql, f.delivery, jobEnded)}),` : sql.literal("")
          // One statement: the terminal state, its page version, artifacts, webhook delivery and
          // event commit together or not at all.
          const [row] = yield* sql<JobRow>`
            WITH j AS (
              UPDATE jobs SET status = ${f.status}, result = ${JSON.stringify(f.result)}::jsonb, attempts = ${f.attempts},
                              finished_at = now(), lease_until = NULL
              WHERE id = ${id} AND status IN ('queued', 'claimed')
              RETURNING *
            ),
            ${contentCtes}
            ${artifactCte}
            ${deliveryCte}
            ${appendEventCtes(sql, {
              source: "j",
              type: `job.${f.status}`,
              data: sql`jsonb_build_object('id', ev_src.id, 'status', ev_src.status, 'url', ev_src.url, 'classification', ${f.result.classification}::text)`
            })}
            SELECT * FROM j`
          return row
        }).pipe(Effect.orDie),
      cancel: (tenantId, id) =>
        Effect.gen(function*() {
          const result: JobResult = {
            httpStatus: null,
            finalUrl: null,
            classification: "cancelled",
            engine: null,
            durationMs: 0,
            contentType: null,
            bytes: 0,
            startedWith: { engine: "none", reason: "cancelled before it finished" },
            screenshot: { taken: false, reason: "cancelled" },
            attempts: []
          }
          const [changed] = yield* sql<JobRow>`
            UPDATE jobs SET status = 'dead', finished_at = now(), lease_until = NULL,
                            result = COALESCE(result, ${JSON.stringify(result)}::jsonb)
            WHERE id = ${id} AND tenant_id = ${tenantId} AND status IN ('queued', 'claimed')
            RETURNING *`
          if (changed) return { row: changed, changed: true }
          const [row] = yield* sql<JobRow>`SELECT * FROM jobs WHERE id = ${id} AND tenant_id = ${tenantId}`
          return row ? { row, changed: false } : undefined
        }).pipe(Effect.orDie),
      counts: (tenantId, dayStart) =>
        Effect.all([
          sql<{ id: string }>`SELECT id FROM jobs WHERE tenant_id = ${tenantId} AND status IN ('queued', 'claimed')`,
          sql<{ n: string }>`SELECT count(*) AS n FROM jobs WHERE tenant_id = ${tenantId} AND created_at >= ${dayStart}`
        ]).pipe(
          Effect.orDie,
          Effect.map(([active, [today]]) => ({ active: active.length, today: Number(today!.n), ids: new Set(active.map((r) => r.id)) }))
        ),
      existing: (ids) =>
        ids.length === 0 ? Effect.succeed(new Set()) : sql<{ id: string }>`SELECT id FROM jobs WHERE id IN ${sql.in(ids)}`.pipe(
          Effect.orDie,
          Effect.map((rows) => new Set(rows.map((r) => r.id)))
        ),
      stale: (limit) =>
        sql<{ id: string; tenant_id: string }>`
          SELECT id, tenant_id FROM jobs WHERE status IN ('queued', 'claimed') AND lease_until < now()
          ORDER BY lease_until LIMIT ${limit}`.pipe(Effect.orDie),
      html: (tenantId, id) =>
        sql<{ compressed: Uint8Array; content_type: string | null }>`
          SELECT c.compressed, a.content_type FROM job_artifacts a
          JOIN page_contents c ON c.tenant_id = a.tenant_id AND c.hash = a.content_hash
          WHERE a.job_id = ${id} AND a.tenant_id = ${tenantId}`.pipe(
          Effect.orDie,
          Effect.map(([r]) => r && { body: gunzipSync(Buffer.from(r.compressed)), contentType: r.content_type })
        ),
      screenshot: (tenantId, id) =>
        sql<{ screenshot: Uint8Array | null; screenshot_type: string | null }>`
          SELECT screenshot, screenshot_type FROM job_artifacts WHERE job_id = ${id} AND tenant_id = ${tenantId}`.pipe(
          Effect.orDie,
          Effect.map(([r]) => r?.screenshot ? { bytes: Buffer.from(r.screenshot), type: r.screenshot_type ?? "image/png" } : undefined)
        ),
      timeline: (tenantId, normalizedUrl, offset, limit) =>
        Effect.all([
          sql`SELECT * FROM page_versions WHERE tenant_id = ${tenantId} AND normalized_url = ${normalizedUrl}
              ORDER BY fetched_at DESC, id DESC OFFSET ${offset} LIMIT ${limit}`,
          sql<{ n: string }>`SELECT count(*) AS n FROM page_versions WHERE tenant_id = ${tenantId} AND normalized_url = ${normalizedUrl}`
        ]).pipe(Effect.orDie, Effect.map(([rows, [c]]) => ({ items: rows.map(toPageVersion), total: Number(c!.n) }))),
      version: (tenantId, versionId) =>
        sql`SELECT * FROM page_versions WHERE id = ${versionId} AND tenant_id = ${tenantId}`.pipe(
          Effect.orDie,
          Effect.map(([r]) => r && toPageVersion(r))
        ),
      previousVersion: (tenantId, v) =>
        sql`SELECT * FROM page_versions WHERE tenant_id = ${tenantId} AND normalized_url = ${v.normalizedUrl}
              AND (fetched_at, id) < (${v.fetchedAt}::timestamptz, ${v.id})
            ORDER BY fetched_at DESC, id DESC LIMIT 1`.pipe(Effect.orDie, Effect.map(([r]) => r && toPageVersion(r))),
      versionContent: (tenantId, hash) =>
        sql<{ compressed: Uint8Array }>`SELECT compressed FROM page_contents WHERE tenant_id = ${tenantId} AND hash = ${hash}`.pipe(
          Effect.orDie,
          Effect.map(([r]) => r && gunzipSync(Buffer.from(r.compressed)))
        )
    })
  })
)
