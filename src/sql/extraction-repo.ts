import { createHash } from "node:crypto"
import { gunzipSync, gzipSync } from "node:zlib"
import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import { domainIdFilter } from "../crawl/domain.ts"
import { createdBetween } from "./created-between.ts"
import { appendEventCtes, TestEventAppender } from "./event-repo.ts"
import { iso } from "../schema/common.ts"
import { type ConfigPayload, type configSortFields, type Extraction, extractionErrorClass, type ExtractionStatus, type ExtractorConfig, type SearchExtractionsBody } from "../schema/extraction.ts"
import { orderByTerms, type SortTerm, sortLikeSql } from "./order-by.ts"
import { pageOfRows, renewExpiredLeases, searchCondition } from "./memory-search.ts"
import { pageWithTotal } from "./page-with-total.ts"
import { lockTenantRow } from "./tenant-lock.ts"
import { type NewDelivery, WebhookRepo } from "./webhook-repo.ts"
import type { JobId } from "../schema/ids.ts"

export interface ExtractionRow {
  readonly id: string
  readonly tenant_id: string
  readonly type: "article" | "product"
  readonly status: ExtractionStatus
  readonly url: string | null
  readonly domain_id: string | null
  readonly input_format: "html" | "markdown" | "text" | "json"
  readonly input_id: string | null
  readonly job_id: JobId | null
  readonly config_id: string | null
  readonly llm: { enabled?: boolean; mode?: "fill-missing" | "correct" } | null
  readonly webhook_url: string | null
  readonly webhook_secret_enc: string | null
  readonly webhook_event_types: ReadonlyArray<string>
  readonly data: Record<string, unknown>
  readonly metadata: Record<string, unknown> & { inputFormat: string }
  readonly error_class: string | null
  readonly error_message: string | null
  readonly attempts: number
  readonly cache_hits: number
  readonly recycle_count: number
  readonly replay_of: string | null
  readonly request_id: string | null
  /** The extraction made its job to fetch its url (null: written before this was recorded). */
  readonly made_own_job: boolean | null
  readonly created_at: Date
  readonly finished_at: Date | null
  readonly cancelled_at: Date | null
}

/**
 * What `data` holds before an extraction is done, and for good when it never is (cancelled, dead): the
 * type's empty result, the one the extractor gives a page where it finds nothing, so `data` is an
 * Article or a Product object in every state, as the spec's resource has it (docs/api.md, "Extractions").
 */
const NO_RESULT = {
  article: { title: "Untitled", content: "" },
  product: { name: "Untitled product" }
} as const

export const toExtraction = (r: ExtractionRow): Extraction => ({
  id: r.id,
  type: r.type,
  status: r.status,
  url: r.url,
  domainId: r.domain_id,
  tenantId: r.tenant_id,
  inputFormat: r.input_format,
  data: Object.keys(r.data ?? {}).length > 0 ? r.data : { ...NO_RESULT[r.type] },
  metadata: { strategiesUsed: [], configsApplied: [], ...r.metadata, inputFormat: r.input_format } as Extraction["metadata"],
  errorMessage: r.error_message,
  errorClass: extractionErrorClass(r.error_class),
  attempts: r.attempts,
  cacheHits: r.cache_hits,
  recycleCount: r.recycle_count,
  jobId: r.job_id,
  replayOf: r.replay_of,
  createdAt: iso(r.created_at)!,
  finishedAt: iso(r.finished_at),
  cancelledAt: iso(r.cancelled_at)
})

export interface ConfigRow {
  readonly id: string
  readonly tenant_id: string | null
  readonly scope: "tenant" | "global"
  readonly type: "article" | "product" | null
  readonly domain_id: string | null
  readonly url_pattern: string | null
  readonly priority: number
  readonly enabled: boolean
  readonly payload: ConfigPayload
  readonly notes: string | null
  readonly created_at: Date
  readonly updated_at: Date
}

export const toConfig = (r: ConfigRow): ExtractorConfig => ({
  id: r.id,
  tenantId: r.tenant_id,
  scope: r.scope,
  type: r.type,
  domainId: r.domain_id,
  urlPattern: r.url_pattern,
  priority: r.priority,
  enabled: r.enabled,
  payload: r.payload,
  notes: r.notes,
  createdAt: iso(r.created_at)!,
  updatedAt: iso(r.updated_at)!
})

export interface NewExtraction {
  readonly id: string
  readonly tenantId: string
  readonly type: "article" | "product"
  readonly url: string | null
  readonly domainId: string | null
  readonly inputFormat: string
  readonly inputId: string | null
  readonly jobId: string | null
  readonly configId: string | null
  readonly llm: unknown
  readonly webhookUrl: string | null
  readonly webhookSecretEnc: string | null
  readonly webhookEventTypes: ReadonlyArray<string>
  readonly replayOf: string | null
  readonly requestId: string | null
  /** The extraction makes its job itself, to fetch its url. */
  readonly madeOwnJob: boolean
}

export interface ExtractionFinish {
  readonly status: "done" | "failed" | "dead"
  readonly data: Record<string, unknown>
  readonly metadata: Record<string, unknown>
  readonly errorClass: string | null
  readonly errorMessage: string | null
  readonly cacheHit: boolean
  /** For `failed`: when the retry is due. */
  readonly retryAt: Date | null
  readonly delivery?: NewDelivery
}

export const extractionSortColumns: Record<string, string> = {
  createdAt: "created_at",
  id: "id",
  status: "status",
  type: "type",
  attempts: "attempts"
}

/** The extractor config list's sort fields and their columns. */
export const configSortColumns: Record<(typeof configSortFields)[number], string> = {
  createdAt: "created_at",
  updatedAt: "updated_at",
  priority: "priority",
  id: "id"
}

export interface ExtractionQuery {
  readonly tenantId: string
  readonly where: NonNullable<SearchExtractionsBody["where"]>
  readonly sort: ReadonlyArray<{ field: string; dir: "asc" | "desc" }>
  readonly offset: number
  readonly limit: number
}

export interface ExtractionRepoShape {
  readonly stash: (tenantId: string, id: string, content: string) => Effect.Effect<string>
  readonly input: (id: string) => Effect.Effect<{ content: string; hash: string } | undefined>
  /**
   * Writes a new extraction with its `extraction.created` event, in one statement (notify after);
   * undefined when a row with its id exists (an earlier try of its keyed request wrote it).
   */
  readonly insert: (e: NewExtraction) => Effect.Effect<ExtractionRow | undefined>
  readonly find: (tenantId: string, id: string) => Effect.Effect<ExtractionRow | undefined>
  readonly byId: (id: string) => Effect.Effect<ExtractionRow | undefined>
  readonly query: (q: ExtractionQuery) => Effect.Effect<{ items: ReadonlyArray<ExtractionRow>; total: number }>
  readonly claim: (id: string, leaseMs: number) => Effect.Effect<ExtractionRow | undefined>
  readonly finish: (id: string, f: ExtractionFinish) => Effect.Effect<ExtractionRow | undefined>
  readonly cancel: (tenantId: string, id: string) => Effect.Effect<{ row: ExtractionRow; changed: boolean } | undefined>
  readonly setRecycleCount: (id: string, n: number) => Effect.Effect<void>
  readonly createdSince: (tenantId: string, since: Date) => Effect.Effect<number>
  /**
   * Extractions whose lease ran out (a lost hand-off or runner), oldest first, each with its lease
   * renewed by `STALE_RESEND_MS`: one that is only waiting is sent again once per that time, and
   * the next sweep reaches others.
   */
  readonly stale: (limit: number) => Effect.Effect<ReadonlyArray<{ id: string }>>
  readonly cacheGet: (key: string) => Effect.Effect<{ data: Record<string, unknown>; metadata: Record<string, unknown> } | undefined>
  readonly cachePut: (key: string, data: unknown, metadata: unknown) => Effect.Effect<void>
  readonly configs: {
    /**
     * Writes a config; a tenant's own only while the tenant has fewer than `limit` (counted with the
     * tenant's row locked, so concurrent creations cannot together pass it), else undefined.
     */
    readonly insert: (c: Omit<ConfigRow, "created_at" | "updated_at">, limit: number) => Effect.Effect<ConfigRow | undefined>
    readonly find: (tenantId: string, id: string) => Effect.Effect<ConfigRow | undefined>
    readonly update: (id: string, patch: Record<string, unknown>) => Effect.Effect<ConfigRow | undefined>
    readonly remove: (id: string) => Effect.Effect<boolean>
    readonly list: (tenantId: string, sort: ReadonlyArray<SortTerm>, offset: number, limit: number) => Effect.Effect<{ items: ReadonlyArray<ConfigRow>; total: number }>
    /** Enabled configs that may apply to an extraction: the tenant's and global ones. */
    readonly candidates: (tenantId: string, type: string) => Effect.Effect<ReadonlyArray<ConfigRow>>
  }
}

export class ExtractionRepo extends Context.Service<ExtractionRepo, ExtractionRepoShape>()("trawl/ExtractionRepo") {}

/** How long after a sweep re-sends an extraction it may be re-sent again. */
const STALE_RESEND_MS = 5 * 60_000

export const ExtractionRepoLive = Layer.effect(
  ExtractionRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const webhooks = yield* WebhookRepo

    const where = (q: ExtractionQuery) => {
      const parts: Array<Statement.Fragment> = [sql`tenant_id = ${q.tenantId}`]
      const w = q.where
      if (w.status) parts.push(sql`status IN ${sql.in(w.status)}`)
      if (w.type) parts.push(sql`type = ${w.type}`)
      // Extractions of inline input have no url, so no prefix matches them.
      if (w.url) parts.push(sql`starts_with(url, ${w.url.prefix})`)
      if (w.domainId) parts.push(sql`domain_id = ${domainIdFilter(w.domainId)}`)
      parts.push(...createdBetween(sql, w.createdAt))
      return sql.and(parts)
    }
    const orderBy = (sort: ExtractionQuery["sort"]) => sql.literal(orderByTerms(sort, extractionSortColumns))

    return ExtractionRepo.of({
      stash: (tenantId, id, content) =>
        Effect.gen(function*() {
          const bytes = Buffer.from(content, "utf8")
          const hash = createHash("sha256").update(bytes).digest("hex")
          // A retry under an Idempotency-Key stashes under the id its dead try used: the same input.
          const written = yield* sql`INSERT INTO extraction_inputs (id, tenant_id, compressed, size, hash)
                     VALUES (${id}, ${tenantId}, ${gzipSync(bytes)}, ${bytes.length}, ${hash})
                     ON CONFLICT (id) DO NOTHING RETURNING id`
          if (written.length === 0) {
            const [same] = yield* sql`SELECT 1 FROM extraction_inputs WHERE id = ${id} AND tenant_id = ${tenantId} AND hash = ${hash}`
            if (!same) return yield* Effect.die(new Error(`input ${id} exists with other content`))
          }
          return hash
        }).pipe(Effect.orDie),
      input: (id) =>
        sql<{ compressed: Uint8Array; hash: string }>`SELECT compressed, hash FROM extraction_inputs WHERE id = ${id}`.pipe(
          Effect.orDie,
          Effect.map(([r]) => r && { content: gunzipSync(Buffer.from(r.compressed)).toString("utf8"), hash: r.hash })
        ),
      // A new row's lease is the hand-off's: its entity claims it at once, and one whose Run was lost
      // with its node is sent again by the sweeper a minute later.
      insert: (e) =>
        sql<ExtractionRow>`
          WITH x AS (
          INSERT INTO extractions (id, tenant_id, type, status, url, domain_id, input_format, input_id, job_id, config_id, llm,
                                   webhook_url, webhook_secret_enc, webhook_event_types, metadata, replay_of, request_id, made_own_job,
                                   lease_until)
          VALUES (${e.id}, ${e.tenantId}, ${e.type}, 'queued', ${e.url}, ${e.domainId}, ${e.inputFormat}, ${e.inputId}, ${e.jobId},
                  ${e.configId}, ${e.llm === undefined ? null : JSON.stringify(e.llm)}::jsonb, ${e.webhookUrl}, ${e.webhookSecretEnc},
                  ${JSON.stringify(e.webhookEventTypes)}::jsonb,
                  ${JSON.stringify({ inputFormat: e.inputFormat, strategiesUsed: [], configsApplied: [] })}::jsonb,
                  ${e.replayOf}, ${e.requestId}, ${e.madeOwnJob}, now() + interval '1 minute')
          ON CONFLICT (id) DO NOTHING
          RETURNING *
          ),
          ${appendEventCtes(sql, { source: "x", type: "extraction.created", data: sql`jsonb_build_object('id', ev_src.id, 'status', ev_src.status, 'type', ev_src.type)` })}
          SELECT * FROM x`.pipe(Effect.orDie, Effect.map((r) => r[0])),
      find: (tenantId, id) =>
        sql<ExtractionRow>`SELECT * FROM extractions WHERE id = ${id} AND tenant_id = ${tenantId}`.pipe(Effect.orDie, Effect.map((r) => r[0])),
      byId: (id) => sql<ExtractionRow>`SELECT * FROM extractions WHERE id = ${id}`.pipe(Effect.orDie, Effect.map((r) => r[0])),
      query: (q) =>
        pageWithTotal<ExtractionRow>(
          sql,
          sql`SELECT * FROM extractions WHERE ${where(q)} ORDER BY ${orderBy(q.sort)} OFFSET ${q.offset} LIMIT ${q.limit}`,
          sql`SELECT count(*) FROM extractions WHERE ${where(q)}`
        ),
      // Each state change writes its event in the same statement: a change is never without its event.
      claim: (id, leaseMs) =>
        sql<ExtractionRow>`
          WITH x AS (
          UPDATE extractions SET status = 'claimed', claimed_at = now(), attempts = attempts + 1,
                                 lease_until = now() + ${leaseMs} * interval '1 millisecond'
          WHERE id = ${id} AND status IN ('queued', 'claimed', 'failed')
            -- a failed one waits for its retry: a Run that was queued behind its last one must not skip
            -- the backoff (a few seconds' slack for the clocks of the node that scheduled it)
            AND (status <> 'failed' OR next_retry_at IS NULL OR next_retry_at <= now() + interval '5 seconds')
          RETURNING *
          ),
          -- The first claim is announced; a retry's claim is not.
          ${appendEventCtes(sql, { source: "x", type: "extraction.claimed", data: sql`jsonb_build_object('id', ev_src.id, 'status', ev_src.status, 'type', ev_src.type)`, when: sql`x.attempts = 1` })}
          SELECT * FROM x`.pipe(Effect.orDie, Effect.map((r) => r[0])),
      finish: (id, f) =>
        sql.withTransaction(Effect.gen(function*() {
          const [row] = yield* sql<ExtractionRow>`
            WITH x AS (
            UPDATE extractions SET status = ${f.status}, data = ${JSON.stringify(f.data)}::jsonb,
              metadata = ${JSON.stringify(f.metadata)}::jsonb, error_class = ${f.errorClass}, error_message = ${f.errorMessage},
              cache_hits = cache_hits + ${f.cacheHit ? 1 : 0},
              finished_at = CASE WHEN ${f.status} = 'failed' THEN NULL ELSE now() END,
              next_retry_at = ${f.retryAt}, lease_until = ${f.retryAt ? new Date(f.retryAt.getTime() + 60_000) : null}
            WHERE id = ${id} AND status = 'claimed'
            RETURNING *
            ),
            ${appendEventCtes(sql, {
              source: "x",
              type: sql`'extraction.' || ev_src.status`,
              data: sql`jsonb_build_object('id', ev_src.id, 'status', ev_src.status, 'type', ev_src.type, 'errorClass', ev_src.error_class)`
            })}
            SELECT * FROM x`
          if (row && f.delivery) yield* webhooks.insert(f.delivery)
          return row
        })).pipe(Effect.orDie),
      cancel: (tenantId, id) =>
        Effect.gen(function*() {
          const [changed] = yield* sql<ExtractionRow>`
            WITH x AS (
            UPDATE extractions SET status = 'cancelled', cancelled_at = now(), finished_at = now(), lease_until = NULL
            WHERE id = ${id} AND tenant_id = ${tenantId} AND status IN ('queued', 'claimed', 'failed')
            RETURNING *
            ),
            ${appendEventCtes(sql, { source: "x", type: "extraction.cancelled", data: sql`jsonb_build_object('id', ev_src.id, 'status', ev_src.status, 'type', ev_src.type)` })}
            SELECT * FROM x`
          if (changed) return { row: changed, changed: true }
          const [row] = yield* sql<ExtractionRow>`SELECT * FROM extractions WHERE id = ${id} AND tenant_id = ${tenantId}`
          return row ? { row, changed: false } : undefined
        }).pipe(Effect.orDie),
      setRecycleCount: (id, n) => sql`UPDATE extractions SET recycle_count = ${n} WHERE id = ${id}`.pipe(Effect.orDie, Effect.asVoid),
      createdSince: (tenantId, since) =>
        sql<{ n: string }>`SELECT count(*) AS n FROM extractions WHERE tenant_id = ${tenantId} AND created_at >= ${since}`.pipe(
          Effect.orDie,
          Effect.map((r) => Number(r[0]!.n))
        ),
      stale: (limit) =>
        sql<{ id: string }>`
          UPDATE extractions SET lease_until = now() + ${STALE_RESEND_MS} * interval '1 millisecond'
          WHERE id IN (SELECT id FROM extractions WHERE status IN ('queued', 'claimed', 'failed') AND lease_until < now()
                       ORDER BY lease_until LIMIT ${limit} FOR UPDATE SKIP LOCKED)
          RETURNING id`.pipe(Effect.orDie),
      cacheGet: (key) =>
        sql<{ data: Record<string, unknown>; metadata: Record<string, unknown> }>`
          SELECT data, metadata FROM extraction_cache WHERE cache_key = ${key}`.pipe(Effect.orDie, Effect.map((r) => r[0])),
      cachePut: (key, data, metadata) =>
        sql`INSERT INTO extraction_cache (cache_key, data, metadata) VALUES (${key}, ${JSON.stringify(data)}::jsonb, ${JSON.stringify(metadata)}::jsonb)
            ON CONFLICT (cache_key) DO NOTHING`.pipe(Effect.orDie, Effect.asVoid),
      configs: {
        insert: (c, limit) =>
          sql.withTransaction(Effect.gen(function*() {
            if (c.tenant_id !== null) {
              yield* lockTenantRow(sql, c.tenant_id)
              const [own] = yield* sql<{ n: string }>`SELECT count(*) AS n FROM extractor_configs WHERE tenant_id = ${c.tenant_id}`
              if (Number(own!.n) >= limit) return undefined
            }
            const [row] = yield* sql<ConfigRow>`
              INSERT INTO extractor_configs (id, tenant_id, scope, type, domain_id, url_pattern, priority, enabled, payload, notes)
              VALUES (${c.id}, ${c.tenant_id}, ${c.scope}, ${c.type}, ${c.domain_id}, ${c.url_pattern}, ${c.priority}, ${c.enabled},
                      ${JSON.stringify(c.payload)}::json, ${c.notes})
              RETURNING *`
            return row!
          })).pipe(Effect.orDie),
        find: (tenantId, id) =>
          sql<ConfigRow>`SELECT * FROM extractor_configs WHERE id = ${id} AND (tenant_id = ${tenantId} OR tenant_id IS NULL)`.pipe(
            Effect.orDie,
            Effect.map((r) => r[0])
          ),
        update: (id, patch) =>
          Object.keys(patch).length === 0
            ? sql<ConfigRow>`SELECT * FROM extractor_configs WHERE id = ${id}`.pipe(Effect.orDie, Effect.map((r) => r[0]))
            : sql<ConfigRow>`UPDATE extractor_configs SET ${sql.update({ ...patch, updated_at: new Date() })} WHERE id = ${id} RETURNING *`.pipe(
              Effect.orDie,
              Effect.map((r) => r[0])
            ),
        remove: (id) => sql`DELETE FROM extractor_configs WHERE id = ${id} RETURNING id`.pipe(Effect.orDie, Effect.map((r) => r.length > 0)),
        list: (tenantId, sort, offset, limit) =>
          pageWithTotal<ConfigRow>(
            sql,
            sql`SELECT * FROM extractor_configs WHERE tenant_id = ${tenantId} OR tenant_id IS NULL
                ORDER BY ${sql.literal(orderByTerms(sort, configSortColumns))} OFFSET ${offset} LIMIT ${limit}`,
            sql`SELECT count(*) FROM extractor_configs WHERE tenant_id = ${tenantId} OR tenant_id IS NULL`
          ),
        candidates: (tenantId, type) =>
          sql<ConfigRow>`
            SELECT * FROM extractor_configs
            WHERE enabled AND (tenant_id = ${tenantId} OR tenant_id IS NULL) AND (type IS NULL OR type = ${type})
            ORDER BY priority DESC, (tenant_id IS NULL) ASC, created_at ASC`.pipe(Effect.orDie)
      }
    })
  })
)

/**
 * Extractions, stashed inputs, the result cache and extractor configs in memory, for unit tests of
 * the services above; times come from Effect's Clock. Each build starts empty. As in `JobRepoTest`,
 * events are appended only when `TestEventAppender` (EventRepoTest) is provided, and a finish's
 * delivery goes to the `WebhookRepo` given. test/integration/extraction-repo-parity.test.ts runs the
 * same moves on both layers and compares the answers.
 */
export const ExtractionRepoTest: Layer.Layer<ExtractionRepo, never, WebhookRepo> = Layer.effect(
  ExtractionRepo,
  Effect.gen(function*() {
    const webhooks = yield* WebhookRepo
    const appender = yield* Effect.serviceOption(TestEventAppender)
    const event = (r: ExtractionRow, type: string, extra: Record<string, unknown> = {}) =>
      appender._tag === "Some" ? Effect.asVoid(appender.value.append(r.tenant_id, type, { id: r.id, status: r.status, type: r.type, ...extra })) : Effect.void
    type Stored = { -readonly [K in keyof ExtractionRow]: ExtractionRow[K] } & { nextRetryAt: Date | null; leaseUntil: Date | null }
    const rows = new Map<string, Stored>()
    const inputs = new Map<string, { tenantId: string; content: string; hash: string }>()
    const cache = new Map<string, { data: Record<string, unknown>; metadata: Record<string, unknown> }>()
    const configs = new Map<string, { -readonly [K in keyof ConfigRow]: ConfigRow[K] }>()
    const now = Clock.currentTimeMillis
    const json = <A>(value: A): A => (value === null || value === undefined ? value : JSON.parse(JSON.stringify(value)))
    // Copies, as rows read again are: the caller's changes do not reach the store.
    const view = ({ nextRetryAt: _n, leaseUntil: _l, ...r }: Stored): ExtractionRow => ({
      ...json(r),
      created_at: r.created_at,
      finished_at: r.finished_at,
      cancelled_at: r.cancelled_at
    })
    const configView = (c: ConfigRow): ConfigRow => ({ ...json(c), created_at: c.created_at, updated_at: c.updated_at })
    const open = (r: Stored) => r.status === "queued" || r.status === "claimed" || r.status === "failed"
    const ofTenant = (tenantId: string, id: string) => {
      const r = rows.get(id)
      return r && r.tenant_id === tenantId ? r : undefined
    }
    const sortKey = (r: Stored, field: string) =>
      field === "createdAt" ? r.created_at.getTime() : field === "status" ? r.status : field === "type" ? r.type : field === "attempts" ? r.attempts : r.id
    const configKey = (c: ConfigRow, field: string) =>
      field === "createdAt" ? c.created_at.getTime() : field === "updatedAt" ? c.updated_at.getTime() : field === "priority" ? c.priority : c.id
    const visible = (tenantId: string) => [...configs.values()].filter((c) => c.tenant_id === tenantId || c.tenant_id === null)

    return ExtractionRepo.of({
      stash: (tenantId, id, content) =>
        Effect.suspend(() => {
          const hash = createHash("sha256").update(Buffer.from(content, "utf8")).digest("hex")
          const known = inputs.get(id)
          if (known && (known.tenantId !== tenantId || known.hash !== hash)) return Effect.die(new Error(`input ${id} exists with other content`))
          if (!known) inputs.set(id, { tenantId, content, hash })
          return Effect.succeed(hash)
        }),
      input: (id) => Effect.sync(() => {
        const i = inputs.get(id)
        return i && { content: i.content, hash: i.hash }
      }),
      insert: (e) =>
        Effect.gen(function*() {
          if (rows.has(e.id)) return undefined
          const at = yield* now
          const row: Stored = {
            id: e.id,
            tenant_id: e.tenantId,
            type: e.type,
            status: "queued",
            url: e.url,
            domain_id: e.domainId,
            input_format: e.inputFormat as ExtractionRow["input_format"],
            input_id: e.inputId,
            job_id: e.jobId as ExtractionRow["job_id"],
            config_id: e.configId,
            llm: (json(e.llm) ?? null) as ExtractionRow["llm"],
            webhook_url: e.webhookUrl,
            webhook_secret_enc: e.webhookSecretEnc,
            webhook_event_types: [...e.webhookEventTypes],
            data: {},
            metadata: { inputFormat: e.inputFormat, strategiesUsed: [], configsApplied: [] },
            error_class: null,
            error_message: null,
            attempts: 0,
            cache_hits: 0,
            recycle_count: 0,
            replay_of: e.replayOf,
            request_id: e.requestId,
            made_own_job: e.madeOwnJob,
            created_at: new Date(at),
            finished_at: null,
            cancelled_at: null,
            nextRetryAt: null,
            leaseUntil: new Date(at + 60_000)
          }
          rows.set(e.id, row)
          yield* event(row, "extraction.created")
          return view(row)
        }),
      find: (tenantId, id) => Effect.sync(() => { const r = ofTenant(tenantId, id); return r && view(r) }),
      byId: (id) => Effect.sync(() => { const r = rows.get(id); return r && view(r) }),
      query: (q) =>
        Effect.sync(() => {
          const common = searchCondition(q.tenantId, { ...q.where, domainId: q.where.domainId === undefined ? undefined : domainIdFilter(q.where.domainId) })
          const matching = [...rows.values()].filter((r) =>
            common({ tenantId: r.tenant_id, status: r.status, url: r.url, domainId: r.domain_id, createdMs: r.created_at.getTime() }) &&
            (q.where.type === undefined || r.type === q.where.type)
          )
          return pageOfRows(sortLikeSql(matching, q.sort, sortKey), q.offset, q.limit, view)
        }),
      claim: (id, leaseMs) =>
        Effect.gen(function*() {
          const r = rows.get(id)
          const at = yield* now
          // A failed one waits for its retry (with the live statement's 5 s of slack).
          if (!r || !open(r) || (r.status === "failed" && r.nextRetryAt !== null && r.nextRetryAt.getTime() > at + 5_000)) return undefined
          r.status = "claimed"
          r.attempts += 1
          r.leaseUntil = new Date(at + leaseMs)
          if (r.attempts === 1) yield* event(r, "extraction.claimed")
          return view(r)
        }),
      finish: (id, f) =>
        Effect.gen(function*() {
          const r = rows.get(id)
          if (!r || r.status !== "claimed") return undefined
          const at = yield* now
          r.status = f.status
          r.data = json(f.data)
          r.metadata = json(f.metadata) as ExtractionRow["metadata"]
          r.error_class = f.errorClass
          r.error_message = f.errorMessage
          r.cache_hits += f.cacheHit ? 1 : 0
          r.finished_at = f.status === "failed" ? null : new Date(at)
          r.nextRetryAt = f.retryAt
          r.leaseUntil = f.retryAt ? new Date(f.retryAt.getTime() + 60_000) : null
          yield* event(r, `extraction.${f.status}`, { errorClass: r.error_class })
          if (f.delivery) yield* webhooks.insert(f.delivery)
          return view(r)
        }),
      cancel: (tenantId, id) =>
        Effect.gen(function*() {
          const r = ofTenant(tenantId, id)
          if (!r) return undefined
          if (!open(r)) return { row: view(r), changed: false }
          const at = new Date(yield* now)
          r.status = "cancelled"
          r.cancelled_at = at
          r.finished_at = at
          r.leaseUntil = null
          yield* event(r, "extraction.cancelled")
          return { row: view(r), changed: true }
        }),
      setRecycleCount: (id, n) => Effect.sync(() => {
        const r = rows.get(id)
        if (r) r.recycle_count = n
      }),
      createdSince: (tenantId, since) => Effect.sync(() => [...rows.values()].filter((r) => r.tenant_id === tenantId && r.created_at >= since).length),
      stale: (limit) =>
        Effect.map(now, (at) => renewExpiredLeases(rows.values(), open, at, limit, () => STALE_RESEND_MS).map((r) => ({ id: r.id }))),
      cacheGet: (key) => Effect.sync(() => json(cache.get(key))),
      cachePut: (key, data, metadata) => Effect.sync(() => {
        if (!cache.has(key)) cache.set(key, json({ data: data as Record<string, unknown>, metadata: metadata as Record<string, unknown> }))
      }),
      configs: {
        insert: (c, limit) =>
          Effect.map(now, (at) => {
            if (c.tenant_id !== null && [...configs.values()].filter((x) => x.tenant_id === c.tenant_id).length >= limit) return undefined
            if (configs.has(c.id)) throw new Error(`config ${c.id} written twice (a unique violation in the live layer)`)
            const row = { ...json(c), created_at: new Date(at), updated_at: new Date(at) }
            configs.set(c.id, row)
            return configView(row)
          }),
        find: (tenantId, id) => Effect.sync(() => {
          const c = configs.get(id)
          return c && (c.tenant_id === tenantId || c.tenant_id === null) ? configView(c) : undefined
        }),
        update: (id, patch) =>
          Effect.map(now, (at) => {
            const c = configs.get(id)
            if (!c) return undefined
            if (Object.keys(patch).length > 0) {
              // The handler sends the payload as JSON text, as the live UPDATE writes it.
              const { payload, ...rest } = patch
              Object.assign(c, rest, payload === undefined ? {} : { payload: typeof payload === "string" ? JSON.parse(payload) : payload })
              c.updated_at = new Date(at)
            }
            return configView(c)
          }),
        remove: (id) => Effect.sync(() => configs.delete(id)),
        list: (tenantId, sort, offset, limit) =>
          Effect.sync(() => {
            return pageOfRows(sortLikeSql(visible(tenantId), sort, configKey), offset, limit, configView)
          }),
        candidates: (tenantId, type) =>
          Effect.sync(() =>
            visible(tenantId)
              .filter((c) => c.enabled && (c.type === null || c.type === type))
              .sort((a, b) => b.priority - a.priority || Number(a.tenant_id === null) - Number(b.tenant_id === null) || a.created_at.getTime() - b.created_at.getTime())
              .map(configView))
      }
    })
  })
)
