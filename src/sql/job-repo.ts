import { createHash } from "node:crypto"
import { brotliCompressSync, brotliDecompressSync, constants as zlibConstants, gunzipSync } from "node:zlib"
import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import { domainIdFilter } from "../crawl/domain.ts"
import { createdBetween } from "./created-between.ts"
import { newId } from "../ids.ts"
import { iso } from "../schema/common.ts"
import type { Job, JobResult, JobStatus, PageVersion, SearchJobsBody } from "../schema/job.ts"
import { orderByTerms, sortLikeSql } from "./order-by.ts"
import { appendEventCtes, TestEventAppender } from "./event-repo.ts"
import { makeGroupCommit } from "./group-commit.ts"
import { pageOfRows, renewExpiredLeases, searchCondition } from "./memory-search.ts"
import { pageWithTotal } from "./page-with-total.ts"
import { OID, pgArray } from "./pg-array.ts"
import { storableJson } from "./storable-json.ts"
import { retryTransient } from "./transient.ts"
import { insertDeliveriesSql, type NewDelivery, WebhookRepo } from "./webhook-repo.ts"

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
  readonly screenshot: { format?: string; quality?: number; fullPage?: boolean; loadResources?: boolean } | boolean | null
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
  /** Inserts new jobs with their `job.created` events; concurrent requests share one statement. Notify when it returns rows. */
  readonly insert: (jobs: ReadonlyArray<NewJob>) => Effect.Effect<ReadonlyArray<JobRow>>
  readonly find: (tenantId: string, id: string) => Effect.Effect<JobRow | undefined>
  /** The tenant's jobs among `ids` that exist, in no particular order. */
  readonly findMany: (tenantId: string, ids: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<JobRow>>
  readonly byId: (id: string) => Effect.Effect<JobRow | undefined>
  readonly query: (q: JobQuery) => Effect.Effect<{ items: ReadonlyArray<JobRow>; total: number }>
  /**
   * Marks a job claimed for one more run, leased for its `timeoutMs` plus `CLAIM_GRACE_MS`;
   * undefined when it is terminal or missing. A job is claimed when its fetch can begin (its slots
   * held), so `runs` counts the runs that got that far. The job's first claim ever also records
   * `job.claimed` (a re-run is not news to clients) and answers `firstClaim`: `claimed_at` keeps the
   * time of that first claim, so the claim that sets it is the first. Concurrent claims on a node
   * share one statement.
   */
  readonly claim: (id: string) => Effect.Effect<(JobRow & { readonly firstClaim: boolean }) | undefined>
  /**
   * Undoes a claim's count of runs for a run stopped by its own node (not lost to a crash), the
   * first run's too. `runs` is the count this run's own claim made: if another node has claimed the
   * job since, nothing is undone.
   */
  readonly giveBackRun: (id: string, runs: number) => Effect.Effect<void>
  /**
   * Moves a non-terminal job to its end state with its artifacts, page version, webhook delivery
   * and `job.<status>` event, atomically; true when this call ended it (then call
   * `EventLog.notify`). Concurrent finishes on a node share one statement.
   */
  readonly finish: (job: Pick<JobRow, "id" | "tenant_id" | "normalized_url">, f: JobFinish) => Effect.Effect<boolean>
  /**
   * Non-terminal → dead (cancelled), with its `job.dead` event; returns the row as it is afterwards,
   * and whether this call changed it (then call `EventLog.notify`).
   */
  readonly cancel: (tenantId: string, id: string) => Effect.Effect<{ row: JobRow; changed: boolean } | undefined>
  /** What the run of a job cancelled mid-fetch did (its attempts), in place of the cancel's empty result. */
  readonly recordCancelledRun: (id: string, result: JobResult, attempts: number) => Effect.Effect<void>
  /** A running job's attempts so far (never lowered; the terminal write sets the final count). */
  readonly recordAttempts: (id: string, attempts: number) => Effect.Effect<void>
  /** The tenant's jobs that have not ended (by id), and the number created since `dayStart`. */
  readonly counts: (tenantId: string, dayStart: Date) => Effect.Effect<{ runningIds: ReadonlySet<string>; today: number }>
  readonly existing: (ids: ReadonlyArray<string>) => Effect.Effect<ReadonlySet<string>>
  /**
   * Non-terminal jobs whose lease ran out (their hand-off or their runner may be lost), oldest
   * lease first, each with its lease renewed as a claim or creation would: a job that is only
   * waiting (for a busy domain, say) is sent again once per lease, and the next sweep reaches others.
   */
  readonly stale: (limit: number) => Effect.Effect<ReadonlyArray<{ id: string; tenant_id: string }>>
  readonly html: (tenantId: string, id: string) => Effect.Effect<{ body: Buffer; contentType: string | null } | undefined>
  readonly screenshot: (tenantId: string, id: string) => Effect.Effect<{ bytes: Buffer; type: string } | undefined>
  readonly timeline: (tenantId: string, normalizedUrl: string, offset: number, limit: number) => Effect.Effect<{ items: ReadonlyArray<PageVersion>; total: number }>
  readonly version: (tenantId: string, versionId: string) => Effect.Effect<PageVersion | undefined>
  readonly previousVersion: (tenantId: string, v: PageVersion) => Effect.Effect<PageVersion | undefined>
  readonly versionContent: (tenantId: string, hash: string) => Effect.Effect<Buffer | undefined>
}

export class JobRepo extends Context.Service<JobRepo, JobRepoShape>()("trawl/JobRepo") {}

const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex")

/**
 * A new job's lease: if it is still queued after this, its hand-off (the `Run` sent after the row
 * is written) may have been lost with the node that wrote it, and the sweeper sends it again.
 * Short, so such a job waits about a minute, not ten; a job only waiting for capacity gets one
 * harmless `Run` more.
 */
const HANDOFF_LEASE_MS = 60_000

/** The lease the sweeper gives a job it found still queued: it is sent again if it still waits after this. */
const QUEUED_LEASE_MS = 10 * 60_000

/** A claim's lease lasts the job's `timeoutMs` plus this. */
export const CLAIM_GRACE_MS = 60_000

/** The most jobs one batched claim or finish statement carries. */
const MAX_BATCH = 64

/**
 * Pages are stored as brotli at quality 0: on HTML it compresses about 3.5 times, at a fraction of
 * the CPU of gzip's fastest level (measured on the crawl benchmark's pages). Synchronous: for a
 * page of tens of KB this costs less than handing it to the thread pool.
 */
const compressPage = (body: Buffer) =>
  brotliCompressSync(body, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 0, [zlibConstants.BROTLI_PARAM_SIZE_HINT]: body.length } })

/** A stored page's bytes, by the encoding its row names. */
const decompressPage = (compressed: Uint8Array, encoding: string) =>
  encoding === "br" ? brotliDecompressSync(compressed) : gunzipSync(compressed)

/** A finish with its page compressed and hashed, ready for the batch statement. */
interface PackedFinish {
  readonly id: string
  /** The page's history key: two versions of one page never share a statement. */
  readonly page: string
  readonly f: JobFinish
  readonly hash: string | null
  readonly compressed: Buffer | null
  readonly versionId: string | null
}

const pack = (job: Pick<JobRow, "id" | "tenant_id" | "normalized_url">, f: JobFinish): PackedFinish => ({
  id: job.id,
  page: `${job.tenant_id} ${job.normalized_url}`,
  f,
  hash: f.content ? sha256(f.content.body) : null,
  compressed: f.content ? compressPage(f.content.body) : null,
  versionId: f.content ? newId("pv") : null
})

/** The result a job cancelled before its run recorded one keeps. */
const cancelledResult: JobResult = {
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

export const JobRepoLive = Layer.effect(
  JobRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const where = (q: JobQuery) => {
      const parts: Array<Statement.Fragment> = [sql`tenant_id = ${q.tenantId}`]
      const w = q.where
      if (w.status) parts.push(sql`status IN ${sql.in(w.status)}`)
      if (w.url?.prefix) parts.push(sql`starts_with(url, ${w.url.prefix})`)
      if (w.domainId) parts.push(sql`domain_id = ${domainIdFilter(w.domainId)}`)
      parts.push(...createdBetween(sql, w.createdAt))
      if (w.priority?.gte !== undefined) parts.push(sql`priority >= ${w.priority.gte}`)
      if (w.priority?.lte !== undefined) parts.push(sql`priority <= ${w.priority.lte}`)
      return sql.and(parts)
    }

    const orderBy = (sort: JobQuery["sort"]) => sql.literal(orderByTerms(sort, sortColumns))

    /**
     * A version's columns (as `pv`) with `changed`: whether its content differs from the version
     * before it in the timeline, read from that row, so the flag always agrees with the timeline
     * and the diff (a flag stored when the version was written could not, with two nodes finishing
     * the same page at once).
     */
    const versionColumns = sql`pv.*, pv.content_hash IS DISTINCT FROM (
      SELECT p.content_hash FROM page_versions p
      WHERE p.tenant_id = pv.tenant_id AND p.normalized_url = pv.normalized_url AND (p.fetched_at, p.id) < (pv.fetched_at, pv.id)
      ORDER BY p.fetched_at DESC, p.id DESC LIMIT 1) AS changed`

    // Batches find their jobs by primary key. Spelled "not terminal" rather than "queued or
    // claimed", so the planner cannot prefer the partial index of active jobs (it reads them all).
    const terminal = sql.literal("('done', 'failed', 'dead')")

    /**
     * New jobs of concurrent requests (of any tenants) in one statement with their `job.created`
     * events. The rows travel as parallel arrays, so the statement has one shape and is prepared once.
     */
    const insertBatch = (requests: ReadonlyArray<ReadonlyArray<NewJob>>) => {
      const jobs = requests.flat()
      const col = (f: (j: NewJob) => unknown, oid: number) => pgArray(jobs.map(f), oid)
      const leaseUntil = new Date(Date.now() + HANDOFF_LEASE_MS)
      return sql<JobRow>`
        WITH j AS (
          INSERT INTO jobs (id, tenant_id, url, normalized_url, domain_id, status, priority, timeout_ms, escalation, screenshot,
                            webhook_url, webhook_secret_enc, replay_of, request_id, lease_until)
          SELECT id, tenant_id, url, normalized_url, domain_id, 'queued', priority, timeout_ms, escalation::jsonb, screenshot::jsonb,
                 webhook_url, webhook_secret_enc, replay_of, request_id, ${leaseUntil}
          FROM unnest(
            ${col((j) => j.id, OID.text)}, ${col((j) => j.tenantId, OID.text)}, ${col((j) => j.url, OID.text)},
            ${col((j) => j.normalizedUrl, OID.text)}, ${col((j) => j.domainId, OID.text)}, ${col((j) => j.priority, OID.int4)},
            ${col((j) => j.timeoutMs, OID.int4)}, ${col((j) => (j.escalation === null ? null : JSON.stringify(j.escalation)), OID.text)},
            ${col((j) => (j.screenshot === undefined || j.screenshot === false ? null : JSON.stringify(j.screenshot)), OID.text)},
            ${col((j) => j.webhookUrl, OID.text)}, ${col((j) => j.webhookSecretEnc, OID.text)}, ${col((j) => j.replayOf, OID.text)},
            ${col((j) => j.requestId, OID.text)}
          ) AS n(id, tenant_id, url, normalized_url, domain_id, priority, timeout_ms, escalation, screenshot, webhook_url,
                 webhook_secret_enc, replay_of, request_id)
          ON CONFLICT (id) DO NOTHING
          RETURNING *
        ),
        ${appendEventCtes(sql, {
          source: "j",
          type: "job.created",
          data: sql`jsonb_build_object('id', ev_src.id, 'status', ev_src.status, 'url', ev_src.url)`,
          // Ids increase in the order the requests listed the jobs.
          order: sql`j.id COLLATE "C"`
        })}
        SELECT * FROM j`.pipe(
        Effect.orDie,
        Effect.map((rows) => {
          const byId = new Map(rows.map((r) => [r.id, r]))
          return requests.map((request) => request.flatMap((job) => byId.get(job.id) ?? []))
        })
      )
    }
    // A bulk request's jobs are one item; batches stop at a few thousand rows.
    const insertOne = yield* makeGroupCommit(insertBatch, { maxBatch: MAX_BATCH, weight: (jobs) => jobs.length, maxWeight: 2_000 })

    const claimBatch = (ids: ReadonlyArray<string>) =>
      sql<JobRow & { readonly first_claim: boolean }>`
        WITH j AS (
          UPDATE jobs SET status = 'claimed', claimed_at = COALESCE(claimed_at, now()), runs = runs + 1,
                          lease_until = now() + (timeout_ms + ${CLAIM_GRACE_MS}) * interval '1 millisecond'
          WHERE id = ANY(${pgArray(ids, OID.text)}) AND status NOT IN ${terminal}
          RETURNING *
        ),
        ${appendEventCtes(sql, {
          source: "j",
          type: "job.claimed",
          data: sql`jsonb_build_object('id', ev_src.id, 'status', 'claimed', 'url', ev_src.url)`,
          // A claim before this statement's transaction set claimed_at earlier than its now().
          when: sql`j.claimed_at = now()`,
          order: sql`j.id COLLATE "C"`
        })}
        SELECT *, j.claimed_at = now() AS first_claim FROM j`.pipe(
        retryTransient,
        Effect.orDie,
        Effect.map((rows) => {
          const byId = new Map(rows.map(({ first_claim, ...row }) => [row.id, { ...row, firstClaim: first_claim === true }]))
          return ids.map((id) => byId.get(id))
        })
      )
    const claimOne = yield* makeGroupCommit(claimBatch, { maxBatch: MAX_BATCH })

    /**
     * One statement ends every job of the batch: the terminal state, page content
     * (content-addressed, stored once per tenant), page version, artifacts, webhook
     * delivery and event commit together or not at all. The inputs travel as parallel
     * arrays, so the statement has one shape whatever the batch and is prepared once.
     */
    const finishBatch = (batch: ReadonlyArray<PackedFinish>) => {
      const col = <A>(f: (p: PackedFinish) => A) => batch.map(f)
      const d = (f: (d: NewDelivery) => unknown) => col((p) => (p.f.delivery ? f(p.f.delivery) : null))
      return sql<{ id: string }>`
        WITH input AS (
          SELECT * FROM unnest(
            ${pgArray(col((p) => p.id), OID.text)}, ${pgArray(col((p) => p.f.status), OID.text)},
            ${pgArray(col((p) => JSON.stringify(storableJson(p.f.result))), OID.text)}, ${pgArray(col((p) => p.f.attempts), OID.int4)},
            ${pgArray(col((p) => p.f.result.classification), OID.text)},
            ${pgArray(col((p) => p.hash), OID.text)}, ${pgArray(col((p) => p.compressed), OID.bytea)},
            ${pgArray(col((p) => p.f.content?.body.length ?? null), OID.int4)},
            ${pgArray(col((p) => p.f.content?.contentType ?? null), OID.text)},
            ${pgArray(col((p) => p.f.content?.httpStatus ?? null), OID.int4)},
            ${pgArray(col((p) => p.f.content?.finalUrl ?? null), OID.text)}, ${pgArray(col((p) => p.versionId), OID.text)},
            ${pgArray(col((p) => p.f.screenshot?.bytes ?? null), OID.bytea)}, ${pgArray(col((p) => p.f.screenshot?.type ?? null), OID.text)},
            ${pgArray(d((x) => x.id), OID.text)}, ${pgArray(d((x) => x.url), OID.text)},
            ${pgArray(d((x) => x.secretEnc), OID.text)}, ${pgArray(d((x) => x.body), OID.text)}
          ) AS i(id, status, result, attempts, classification, hash, compressed, size, content_type, http_status, final_url,
                 version_id, shot, shot_type, delivery_id, delivery_url, delivery_secret, delivery_body)
        ),
        j AS (
          UPDATE jobs SET status = i.status, result = i.result::jsonb, attempts = i.attempts, finished_at = now(), lease_until = NULL
          FROM input i
          WHERE jobs.id = ANY(${pgArray(col((p) => p.id), OID.text)}) AND jobs.id = i.id AND jobs.status NOT IN ${terminal}
          RETURNING jobs.id, jobs.tenant_id, jobs.url, jobs.normalized_url, jobs.status, i.classification, i.hash, i.compressed,
                    i.size, i.content_type, i.http_status, i.final_url, i.version_id, i.shot, i.shot_type,
                    i.delivery_id, i.delivery_url, i.delivery_secret, i.delivery_body
        ),
        stored AS (
          INSERT INTO page_contents (tenant_id, hash, compressed, size, encoding)
          SELECT tenant_id, hash, compressed, size, 'br' FROM j WHERE hash IS NOT NULL
          ON CONFLICT (tenant_id, hash) DO NOTHING
        ),
        version AS (
          INSERT INTO page_versions (id, tenant_id, normalized_url, url, job_id, fetched_at, http_status, content_type, size,
                                     content_hash)
          SELECT j.version_id, j.tenant_id, j.normalized_url, COALESCE(j.final_url, j.url), j.id, now(), j.http_status,
                 j.content_type, j.size, j.hash
          FROM j WHERE j.hash IS NOT NULL AND j.status = 'done'
          ON CONFLICT (job_id) DO NOTHING
        ),
        artifact AS (
          INSERT INTO job_artifacts (job_id, tenant_id, content_hash, content_type, screenshot, screenshot_type)
          SELECT id, tenant_id, hash, content_type, shot, shot_type FROM j WHERE hash IS NOT NULL OR shot IS NOT NULL
          ON CONFLICT (job_id) DO NOTHING
        ),
        delivery AS (${insertDeliveriesSql(
          sql,
          sql`SELECT delivery_id, tenant_id, 'job'::text, id, status, 0, delivery_url, delivery_secret, delivery_body
              FROM j WHERE delivery_id IS NOT NULL`
        )}),
        ${appendEventCtes(sql, {
          source: "j",
          type: sql`'job.' || ev_src.status`,
          data: sql`jsonb_build_object('id', ev_src.id, 'status', ev_src.status, 'url', ev_src.url, 'classification', ev_src.classification)`,
          order: sql`j.id COLLATE "C"`
        })}
        SELECT id FROM j`.pipe(
        retryTransient,
        Effect.orDie,
        Effect.map((rows) => {
          const ended = new Set(rows.map((r) => r.id))
          return batch.map((p) => ended.has(p.id))
        })
      )
    }
    // Rows of one statement share its now(): a finish whose page is already in the batch waits for
    // the next one, so each version of a page has a fetched time of its own.
    const finishOne = yield* makeGroupCommit(finishBatch, { maxBatch: MAX_BATCH, key: (p) => p.page })

    return JobRepo.of({
      insert: (jobs) => (jobs.length === 0 ? Effect.succeed([]) : insertOne(jobs)),
      find: (tenantId, id) =>
        sql<JobRow>`SELECT * FROM jobs WHERE id = ${id} AND tenant_id = ${tenantId}`.pipe(Effect.orDie, Effect.map((r) => r[0])),
      findMany: (tenantId, ids) =>
        ids.length === 0 ? Effect.succeed([]) : sql<JobRow>`SELECT * FROM jobs WHERE id IN ${sql.in(ids)} AND tenant_id = ${tenantId}`.pipe(Effect.orDie),
      byId: (id) => sql<JobRow>`SELECT * FROM jobs WHERE id = ${id}`.pipe(Effect.orDie, Effect.map((r) => r[0])),
      query: (q) =>
        pageWithTotal<JobRow>(
          sql,
          sql`SELECT * FROM jobs WHERE ${where(q)} ORDER BY ${orderBy(q.sort)} OFFSET ${q.offset} LIMIT ${q.limit}`,
          sql`SELECT count(*) FROM jobs WHERE ${where(q)}`
        ),
      claim: claimOne,
      finish: (job, f) => finishOne(pack(job, f)),
      giveBackRun: (id, runs) =>
        sql`UPDATE jobs SET runs = GREATEST(runs - 1, 0) WHERE id = ${id} AND status = 'claimed' AND runs = ${runs}`.pipe(Effect.orDie, Effect.asVoid),
      cancel: (tenantId, id) =>
        Effect.gen(function*() {
          // The state change and its job.dead event commit together.
          const [changed] = yield* sql<JobRow>`
            WITH j AS (
              UPDATE jobs SET status = 'dead', finished_at = now(), lease_until = NULL,
                              result = COALESCE(result, ${JSON.stringify(cancelledResult)}::jsonb)
              WHERE id = ${id} AND tenant_id = ${tenantId} AND status IN ('queued', 'claimed')
              RETURNING *
            ),
            ${appendEventCtes(sql, {
            source: "j",
            type: "job.dead",
            data: sql`jsonb_build_object('id', ev_src.id, 'status', 'dead', 'url', ev_src.url, 'classification', 'cancelled')`
          })}
            SELECT * FROM j`
          if (changed) return { row: changed, changed: true }
          const [row] = yield* sql<JobRow>`SELECT * FROM jobs WHERE id = ${id} AND tenant_id = ${tenantId}`
          return row ? { row, changed: false } : undefined
        }).pipe(Effect.orDie),
      recordCancelledRun: (id, result, attempts) =>
        sql`UPDATE jobs SET result = ${JSON.stringify(storableJson(result))}::jsonb, attempts = ${attempts}
            WHERE id = ${id} AND status = 'dead' AND result->>'classification' = 'cancelled'`.pipe(retryTransient, Effect.orDie, Effect.asVoid),
      recordAttempts: (id, attempts) =>
        sql`UPDATE jobs SET attempts = ${attempts} WHERE id = ${id} AND status = 'claimed' AND attempts < ${attempts}`.pipe(Effect.orDie, Effect.asVoid),
      counts: (tenantId, dayStart) =>
        Effect.all([
          sql<{ id: string }>`SELECT id FROM jobs WHERE tenant_id = ${tenantId} AND status IN ('queued', 'claimed')`,
          sql<{ n: string }>`SELECT count(*) AS n FROM jobs WHERE tenant_id = ${tenantId} AND created_at >= ${dayStart}`
        ]).pipe(
          Effect.orDie,
          Effect.map(([running, [today]]) => ({ runningIds: new Set(running.map((r) => r.id)), today: Number(today!.n) }))
        ),
      existing: (ids) =>
        ids.length === 0 ? Effect.succeed(new Set()) : sql<{ id: string }>`SELECT id FROM jobs WHERE id IN ${sql.in(ids)}`.pipe(
          Effect.orDie,
          Effect.map((rows) => new Set(rows.map((r) => r.id)))
        ),
      stale: (limit) =>
        sql<{ id: string; tenant_id: string }>`
          UPDATE jobs SET lease_until = now() + (CASE WHEN status = 'queued' THEN ${QUEUED_LEASE_MS} ELSE timeout_ms + ${CLAIM_GRACE_MS} END)
                                               * interval '1 millisecond'
          WHERE id IN (SELECT id FROM jobs WHERE status IN ('queued', 'claimed') AND lease_until < now()
                       ORDER BY lease_until LIMIT ${limit} FOR UPDATE SKIP LOCKED)
          RETURNING id, tenant_id`.pipe(Effect.orDie),
      html: (tenantId, id) =>
        sql<{ compressed: Uint8Array; encoding: string; content_type: string | null }>`
          SELECT c.compressed, c.encoding, a.content_type FROM job_artifacts a
          JOIN page_contents c ON c.tenant_id = a.tenant_id AND c.hash = a.content_hash
          WHERE a.job_id = ${id} AND a.tenant_id = ${tenantId}`.pipe(
          Effect.orDie,
          Effect.map(([r]) => r && { body: decompressPage(r.compressed, r.encoding), contentType: r.content_type })
        ),
      screenshot: (tenantId, id) =>
        sql<{ screenshot: Uint8Array | null; screenshot_type: string | null }>`
          SELECT screenshot, screenshot_type FROM job_artifacts WHERE job_id = ${id} AND tenant_id = ${tenantId}`.pipe(
          Effect.orDie,
          Effect.map(([r]) => r?.screenshot ? { bytes: Buffer.from(r.screenshot), type: r.screenshot_type ?? "image/png" } : undefined)
        ),
      timeline: (tenantId, normalizedUrl, offset, limit) =>
        pageWithTotal<{ id: string }>(
          sql,
          sql`SELECT ${versionColumns} FROM page_versions pv WHERE tenant_id = ${tenantId} AND normalized_url = ${normalizedUrl}
              ORDER BY fetched_at DESC, id DESC OFFSET ${offset} LIMIT ${limit}`,
          sql`SELECT count(*) FROM page_versions WHERE tenant_id = ${tenantId} AND normalized_url = ${normalizedUrl}`
        ).pipe(Effect.map((page) => ({ items: page.items.map(toPageVersion), total: page.total }))),
      version: (tenantId, versionId) =>
        sql`SELECT ${versionColumns} FROM page_versions pv WHERE id = ${versionId} AND tenant_id = ${tenantId}`.pipe(
          Effect.orDie,
          Effect.map(([r]) => r && toPageVersion(r))
        ),
      // Compared with the row itself: `fetchedAt` is cut to milliseconds, and versions a millisecond apart exist.
      previousVersion: (tenantId, v) =>
        sql`SELECT ${versionColumns} FROM page_versions pv WHERE tenant_id = ${tenantId} AND normalized_url = ${v.normalizedUrl}
              AND (fetched_at, id) < (SELECT fetched_at, id FROM page_versions WHERE id = ${v.id})
            ORDER BY fetched_at DESC, id DESC LIMIT 1`.pipe(Effect.orDie, Effect.map(([r]) => r && toPageVersion(r))),
      versionContent: (tenantId, hash) =>
        sql<{ compressed: Uint8Array; encoding: string }>`
          SELECT compressed, encoding FROM page_contents WHERE tenant_id = ${tenantId} AND hash = ${hash}`.pipe(
          Effect.orDie,
          Effect.map(([r]) => r && decompressPage(r.compressed, r.encoding))
        )
    })
  })
)

/**
 * Jobs, their pages, versions and artifacts in memory, for unit tests of the services above; times
 * come from Effect's Clock. Each build starts empty. What differs from the live layer: events are
 * appended only when `TestEventAppender` (EventRepoTest) is provided, and a finish's webhook
 * delivery goes to the `WebhookRepo` given (WebhookRepoTest), not in the same transaction.
 * test/integration/job-repo-parity.test.ts runs the same moves on both and compares the answers.
 */
export const JobRepoTest: Layer.Layer<JobRepo, never, WebhookRepo> = Layer.effect(
  JobRepo,
  Effect.gen(function*() {
    const webhooks = yield* WebhookRepo
    const appender = yield* Effect.serviceOption(TestEventAppender)
    const event = (tenantId: string, type: string, data: Record<string, unknown>) =>
      appender._tag === "Some" ? Effect.asVoid(appender.value.append(tenantId, type, data)) : Effect.void
    type Stored = { -readonly [K in keyof JobRow]: JobRow[K] } & { claimedAt: Date | null; leaseUntil: Date | null }
    const jobs = new Map<string, Stored>()
    const contents = new Map<string, Buffer>()
    const versions: Array<Omit<PageVersion, "changed" | "fetchedAt"> & { readonly tenantId: string; readonly fetchedMs: number }> = []
    const artifacts = new Map<string, { tenantId: string; hash: string | null; contentType: string | null; shot: Buffer | null; shotType: string | null }>()
    const now = Clock.currentTimeMillis
    const json = <A>(value: A): A => (value === null || value === undefined ? value : JSON.parse(JSON.stringify(value)))
    // A copy, as a row read again is: the caller's changes do not reach the store.
    const view = ({ claimedAt: _c, leaseUntil: _l, ...row }: Stored): JobRow => ({
      ...row,
      escalation: json(row.escalation),
      screenshot: json(row.screenshot),
      result: json(row.result)
    })
    const active = (j: Stored) => j.status === "queued" || j.status === "claimed"
    const ofTenant = (tenantId: string, id: string) => {
      const j = jobs.get(id)
      return j && j.tenant_id === tenantId ? j : undefined
    }
    // A version's `changed`: its content differs from the version before it in its page's timeline.
    const before = (a: { fetchedMs: number; id: string }, b: { fetchedMs: number; id: string }) => a.fetchedMs < b.fetchedMs || (a.fetchedMs === b.fetchedMs && a.id < b.id)
    const timelineOf = (tenantId: string, normalizedUrl: string) =>
      versions.filter((v) => v.tenantId === tenantId && v.normalizedUrl === normalizedUrl).sort((a, b) => (before(a, b) ? 1 : before(b, a) ? -1 : 0))
    const toVersion = (v: (typeof versions)[number]): PageVersion => {
      const previous = timelineOf(v.tenantId, v.normalizedUrl).find((p) => before(p, v))
      const { tenantId: _t, fetchedMs, ...rest } = v
      return { ...rest, fetchedAt: new Date(fetchedMs).toISOString(), changed: previous?.contentHash !== v.contentHash }
    }
    const sortKey = (j: Stored, field: string) =>
      field === "createdAt" ? j.created_at.getTime() : field === "priority" ? j.priority : field === "attempts" ? j.attempts : field === "status" ? j.status : j.id

    return JobRepo.of({
      insert: (batch) =>
        Effect.gen(function*() {
          const at = yield* now
          const inserted: Array<JobRow> = []
          for (const n of batch) {
            if (jobs.has(n.id)) continue
            const row: Stored = {
              id: n.id,
              tenant_id: n.tenantId,
              url: n.url,
              normalized_url: n.normalizedUrl,
              domain_id: n.domainId,
              status: "queued",
              priority: n.priority,
              attempts: 0,
              timeout_ms: n.timeoutMs,
              escalation: json(n.escalation) as JobRow["escalation"],
              screenshot: n.screenshot === undefined || n.screenshot === false ? null : json(n.screenshot) as JobRow["screenshot"],
              webhook_url: n.webhookUrl,
              webhook_secret_enc: n.webhookSecretEnc,
              result: null,
              replay_of: n.replayOf,
              request_id: n.requestId,
              runs: 0,
              created_at: new Date(at),
              finished_at: null,
              claimedAt: null,
              leaseUntil: new Date(at + HANDOFF_LEASE_MS)
            }
            jobs.set(n.id, row)
            yield* event(n.tenantId, "job.created", { id: n.id, status: "queued", url: n.url })
            inserted.push(view(row))
          }
          return inserted
        }),
      find: (tenantId, id) => Effect.sync(() => { const j = ofTenant(tenantId, id); return j && view(j) }),
      findMany: (tenantId, ids) => Effect.sync(() => ids.flatMap((id) => { const j = ofTenant(tenantId, id); return j ? [view(j)] : [] })),
      byId: (id) => Effect.sync(() => { const j = jobs.get(id); return j && view(j) }),
      query: (q) =>
        Effect.sync(() => {
          const w = q.where
          const common = searchCondition(q.tenantId, { ...w, domainId: w.domainId === undefined ? undefined : domainIdFilter(w.domainId) })
          const matching = [...jobs.values()].filter((j) =>
            common({ tenantId: j.tenant_id, status: j.status, url: j.url, domainId: j.domain_id, createdMs: j.created_at.getTime() }) &&
            (w.priority?.gte === undefined || j.priority >= w.priority.gte) &&
            (w.priority?.lte === undefined || j.priority <= w.priority.lte)
          )
          return pageOfRows(sortLikeSql(matching, q.sort, sortKey), q.offset, q.limit, view)
        }),
      claim: (id) =>
        Effect.gen(function*() {
          const j = jobs.get(id)
          if (!j || !active(j)) return undefined
          const at = yield* now
          const firstClaim = j.claimedAt === null
          j.status = "claimed"
          j.claimedAt ??= new Date(at)
          j.runs += 1
          j.leaseUntil = new Date(at + j.timeout_ms + CLAIM_GRACE_MS)
          if (firstClaim) yield* event(j.tenant_id, "job.claimed", { id, status: "claimed", url: j.url })
          return { ...view(j), firstClaim }
        }),
      giveBackRun: (id, runs) =>
        Effect.sync(() => {
          const j = jobs.get(id)
          if (j && j.status === "claimed" && j.runs === runs) j.runs = Math.max(runs - 1, 0)
        }),
      finish: (job, f) =>
        Effect.gen(function*() {
          const j = jobs.get(job.id)
          if (!j || !active(j)) return false
          const at = yield* now
          j.status = f.status
          j.result = json(storableJson(f.result)) as JobResult
          j.attempts = f.attempts
          j.finished_at = new Date(at)
          j.leaseUntil = null
          const hash = f.content ? sha256(f.content.body) : null
          if (f.content && hash) {
            const key = `${j.tenant_id} ${hash}`
            if (!contents.has(key)) contents.set(key, Buffer.from(f.content.body))
            if (f.status === "done" && !versions.some((v) => v.jobId === j.id)) {
              versions.push({
                id: newId("pv"),
                tenantId: j.tenant_id,
                url: f.content.finalUrl ?? j.url,
                normalizedUrl: j.normalized_url,
                jobId: j.id,
                fetchedMs: at,
                httpStatus: f.content.httpStatus,
                contentType: f.content.contentType,
                size: f.content.body.length,
                contentHash: hash
              })
            }
          }
          if ((hash || f.screenshot) && !artifacts.has(j.id)) {
            artifacts.set(j.id, {
              tenantId: j.tenant_id,
              hash,
              contentType: f.content?.contentType ?? null,
              shot: f.screenshot ? Buffer.from(f.screenshot.bytes) : null,
              shotType: f.screenshot?.type ?? null
            })
          }
          if (f.delivery) yield* webhooks.insert(f.delivery)
          yield* event(j.tenant_id, `job.${f.status}`, { id: j.id, status: f.status, url: j.url, classification: f.result.classification })
          return true
        }),
      cancel: (tenantId, id) =>
        Effect.gen(function*() {
          const j = ofTenant(tenantId, id)
          if (!j) return undefined
          if (!active(j)) return { row: view(j), changed: false }
          j.status = "dead"
          j.finished_at = new Date(yield* now)
          j.leaseUntil = null
          j.result ??= json(cancelledResult)
          yield* event(tenantId, "job.dead", { id, status: "dead", url: j.url, classification: "cancelled" })
          return { row: view(j), changed: true }
        }),
      recordCancelledRun: (id, result, attempts) =>
        Effect.sync(() => {
          const j = jobs.get(id)
          if (!j || j.status !== "dead" || j.result?.classification !== "cancelled") return
          j.result = json(storableJson(result)) as JobResult
          j.attempts = attempts
        }),
      recordAttempts: (id, attempts) =>
        Effect.sync(() => {
          const j = jobs.get(id)
          if (j && j.status === "claimed" && j.attempts < attempts) j.attempts = attempts
        }),
      counts: (tenantId, dayStart) =>
        Effect.sync(() => {
          const own = [...jobs.values()].filter((j) => j.tenant_id === tenantId)
          return { runningIds: new Set(own.filter(active).map((j) => j.id)), today: own.filter((j) => j.created_at >= dayStart).length }
        }),
      existing: (ids) => Effect.sync(() => new Set(ids.filter((id) => jobs.has(id)))),
      stale: (limit) =>
        Effect.map(now, (at) =>
          renewExpiredLeases(jobs.values(), active, at, limit, (j) => (j.status === "queued" ? QUEUED_LEASE_MS : j.timeout_ms + CLAIM_GRACE_MS))
            .map((j) => ({ id: j.id, tenant_id: j.tenant_id }))),
      html: (tenantId, id) =>
        Effect.sync(() => {
          const a = artifacts.get(id)
          const body = a && a.tenantId === tenantId && a.hash ? contents.get(`${tenantId} ${a.hash}`) : undefined
          return body && { body: Buffer.from(body), contentType: a!.contentType }
        }),
      screenshot: (tenantId, id) =>
        Effect.sync(() => {
          const a = artifacts.get(id)
          return a && a.tenantId === tenantId && a.shot ? { bytes: Buffer.from(a.shot), type: a.shotType ?? "image/png" } : undefined
        }),
      timeline: (tenantId, normalizedUrl, offset, limit) =>
        Effect.sync(() => {
          return pageOfRows(timelineOf(tenantId, normalizedUrl), offset, limit, toVersion)
        }),
      version: (tenantId, versionId) =>
        Effect.sync(() => {
          const v = versions.find((x) => x.id === versionId && x.tenantId === tenantId)
          return v && toVersion(v)
        }),
      previousVersion: (tenantId, v) =>
        Effect.sync(() => {
          const self = versions.find((x) => x.id === v.id)
          const previous = self && timelineOf(tenantId, v.normalizedUrl).find((p) => before(p, self))
          return previous && toVersion(previous)
        }),
      versionContent: (tenantId, hash) =>
        Effect.sync(() => {
          const body = contents.get(`${tenantId} ${hash}`)
          return body && Buffer.from(body)
        })
    })
  })
)
