import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import { iso } from "../schema/common.ts"
import { makeGroupCommit } from "./group-commit.ts"
import { OID, pgArray } from "./pg-array.ts"
import { pageWithTotal } from "./page-with-total.ts"
import { storableText } from "./storable-json.ts"

export interface DeliveryRow {
  readonly id: string
  readonly tenant_id: string
  readonly resource_type: "job" | "extraction" | "crawl"
  readonly resource_id: string
  readonly event_status: string
  readonly url: string
  readonly secret_enc: string
  readonly body: string
  readonly status: "pending" | "delivered" | "failed"
  readonly attempts: number
  readonly next_attempt_at: Date | null
  readonly first_attempt_at: Date | null
  readonly created_at: Date
  readonly delivered_at: Date | null
}

export interface NewDelivery {
  readonly id: string
  readonly tenantId: string
  readonly resourceType: "job" | "extraction"
  readonly resourceId: string
  readonly eventStatus: string
  /** Which occurrence of `eventStatus` (an extraction's failed attempt); 0 for once-only states. */
  readonly eventSeq?: number
  readonly url: string
  readonly secretEnc: string
  readonly body: string
}

export interface AttemptRecord {
  readonly attempt: number
  readonly manual: boolean
  readonly httpStatus: number | null
  readonly error: string | null
  readonly durationMs: number
  readonly responseBody: string
}

/** An endpoint no request has given for this many days no longer counts against `webhooks.endpoints.total`. */
export const ENDPOINT_IDLE_DAYS = 30

/** The condition on a `webhook_endpoints` row that it is in use, so counts against `webhooks.endpoints.total`. */
export const endpointInUse = (sql: SqlClient.SqlClient): Statement.Fragment =>
  sql`last_used_at > now() - ${ENDPOINT_IDLE_DAYS} * interval '1 day'`

export const WebhookDeliveryView = (d: DeliveryRow, attempts: ReadonlyArray<any>) => ({
  id: d.id,
  status: d.status,
  url: d.url,
  event: d.event_status,
  createdAt: iso(d.created_at)!,
  deliveredAt: iso(d.delivered_at),
  nextAttemptAt: d.status === "pending" ? iso(d.next_attempt_at) : null,
  attempts: attempts.map((a) => ({
    attempt: a.attempt,
    manual: a.manual,
    at: iso(a.at)!,
    httpStatus: a.http_status,
    error: a.error,
    durationMs: a.duration_ms,
    responseBody: a.response_body
  }))
})

export interface WebhookRepoShape {
  /** Inserts a delivery; called inside the transaction that records the terminal state. */
  readonly insert: (d: NewDelivery) => Effect.Effect<void>
  /** Concurrent reads share one statement. */
  readonly byId: (id: string) => Effect.Effect<DeliveryRow | undefined>
  /**
   * Records one attempt and the delivery's new state in one statement; idempotent per attempt
   * number. Scheduled attempts are numbered 1, 2, ...; manual redeliveries have their own
   * numbering. Concurrent records of different deliveries share one statement.
   */
  readonly recordAttempt: (
    id: string,
    a: AttemptRecord,
    next: { status: "pending" | "delivered" | "failed"; nextAttemptAt: Date | null }
  ) => Effect.Effect<void>
  /** A page of the resource's deliveries, oldest first, and how many it has. */
  readonly forResource: (
    tenantId: string,
    type: "job" | "extraction",
    resourceId: string,
    page: { readonly offset: number; readonly limit: number }
  ) => Effect.Effect<{ readonly items: ReadonlyArray<ReturnType<typeof WebhookDeliveryView>>; readonly total: number }>
  /** Pending deliveries whose next attempt is long overdue: their scheduled message was lost. */
  readonly overdue: (graceMs: number, limit: number) => Effect.Effect<ReadonlyArray<DeliveryRow>>
  readonly manualCount: (id: string) => Effect.Effect<number>
  /**
   * Registers a webhook URL of the tenant unless it would make more than `limit`; true when the URL
   * is (now) registered. Only the tenant's entity calls this, one call at a time.
   */
  readonly addEndpoint: (tenantId: string, url: string, limit: number) => Effect.Effect<boolean>
}

/**
 * The one statement that records new deliveries, due now: one per row of `rows`, a query whose
 * columns are, in this order, id, tenant_id, resource_type, resource_id, event_status, event_seq,
 * url, secret_enc, body. A delivery of an event already recorded is skipped. It can sit in a CTE of
 * the statement that ends the resources (`rows` then reads that statement's other CTEs).
 */
export const insertDeliveriesSql = (sql: SqlClient.SqlClient, rows: Statement.Fragment): Statement.Fragment => sql`
  INSERT INTO webhook_deliveries (id, tenant_id, resource_type, resource_id, event_status, event_seq, url, secret_enc, body, next_attempt_at)
  SELECT id, tenant_id, resource_type, resource_id, event_status, event_seq, url, secret_enc, body, now()
  FROM (${rows}) AS new_delivery(id, tenant_id, resource_type, resource_id, event_status, event_seq, url, secret_enc, body)
  ON CONFLICT (resource_type, resource_id, event_status, event_seq) DO NOTHING`

/** The statement that records one new delivery (see `insertDeliveriesSql`). */
const insertDeliverySql = (sql: SqlClient.SqlClient, d: NewDelivery): Statement.Fragment =>
  insertDeliveriesSql(
    sql,
    sql`SELECT ${d.id}::text, ${d.tenantId}::text, ${d.resourceType}::text, ${d.resourceId}::text, ${d.eventStatus}::text,
               ${d.eventSeq ?? 0}::int, ${d.url}::text, ${d.secretEnc}::text, ${d.body}::text`
  )

export class WebhookRepo extends Context.Service<WebhookRepo, WebhookRepoShape>()("trawl/WebhookRepo") {}

export const WebhookRepoLive = Layer.effect(
  WebhookRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const attemptsOf = (ids: ReadonlyArray<string>) =>
      ids.length === 0 ? Effect.succeed([]) : sql`SELECT * FROM webhook_attempts WHERE delivery_id IN ${sql.in(ids)} ORDER BY id`
    const readBatch = (ids: ReadonlyArray<string>) =>
      sql<DeliveryRow>`SELECT * FROM webhook_deliveries WHERE id = ANY(${pgArray(ids, OID.text)})`.pipe(
        Effect.orDie,
        Effect.map((rows) => {
          const byId = new Map(rows.map((r) => [r.id, r]))
          return ids.map((id) => byId.get(id))
        })
      )
    const readOne = yield* makeGroupCommit(readBatch, { maxBatch: 256 })

    type AttemptToRecord = { readonly id: string; readonly a: AttemptRecord; readonly next: { status: string; nextAttemptAt: Date | null } }
    /** The attempt rows, and for each one that is new, the delivery's new state. */
    const recordBatch = (records: ReadonlyArray<AttemptToRecord>) => {
      const col = (f: (r: AttemptToRecord) => unknown, oid: number) => pgArray(records.map(f), oid)
      return sql`
        WITH input AS (
          SELECT * FROM unnest(
            ${col((r) => r.id, OID.text)}, ${col((r) => r.a.attempt, OID.int4)}, ${col((r) => r.a.manual, OID.bool)},
            ${col((r) => r.a.httpStatus, OID.int4)}, ${col((r) => r.a.error === null ? null : storableText(r.a.error), OID.text)},
            ${col((r) => r.a.durationMs, OID.int4)},
            ${col((r) => storableText(r.a.responseBody), OID.text)}, ${col((r) => r.next.status, OID.text)},
            ${col((r) => r.next.nextAttemptAt, OID.timestamptz)}
          ) AS i(delivery_id, attempt, manual, http_status, error, duration_ms, response_body, next_status, next_at)
        ),
        inserted AS (
          -- at: when the request went out, not when its result is written
          INSERT INTO webhook_attempts (delivery_id, attempt, manual, http_status, error, duration_ms, response_body, at)
          SELECT delivery_id, attempt, manual, http_status, error, duration_ms, response_body,
                 now() - duration_ms * interval '1 millisecond' FROM input
          ON CONFLICT (delivery_id, attempt, manual) DO NOTHING
          RETURNING delivery_id, attempt, manual
        )
        UPDATE webhook_deliveries d SET
          attempts = CASE WHEN i.manual THEN d.attempts ELSE GREATEST(d.attempts, i.attempt) END,
          status = CASE WHEN d.status = 'delivered' THEN d.status ELSE i.next_status END,
          next_attempt_at = i.next_at,
          first_attempt_at = COALESCE(d.first_attempt_at, now() - i.duration_ms * interval '1 millisecond'),
          delivered_at = CASE WHEN i.next_status = 'delivered' THEN COALESCE(d.delivered_at, now()) ELSE d.delivered_at END
        FROM input i JOIN inserted x ON x.delivery_id = i.delivery_id AND x.attempt = i.attempt AND x.manual = i.manual
        WHERE d.id = i.delivery_id`.pipe(Effect.orDie, Effect.as(records.map(() => undefined)))
    }
    // One delivery's records never share a statement (each would update the same row).
    const recordOne = yield* makeGroupCommit(recordBatch, { maxBatch: 256, key: (r) => r.id })

    return WebhookRepo.of({
      insert: (d) => sql`${insertDeliverySql(sql, d)}`.pipe(Effect.orDie, Effect.asVoid),
      byId: readOne,
      recordAttempt: (id, a, next) => recordOne({ id, a, next }),
      forResource: (tenantId, type, resourceId, page) =>
        Effect.gen(function*() {
          const ofResource = sql`tenant_id = ${tenantId} AND resource_type = ${type} AND resource_id = ${resourceId}`
          const { items: deliveries, total } = yield* pageWithTotal<DeliveryRow>(
            sql,
            sql`SELECT * FROM webhook_deliveries WHERE ${ofResource} ORDER BY created_at, id OFFSET ${page.offset} LIMIT ${page.limit}`,
            sql`SELECT count(*) FROM webhook_deliveries WHERE ${ofResource}`
          )
          const attempts = yield* attemptsOf(deliveries.map((d) => d.id))
          return { items: deliveries.map((d) => WebhookDeliveryView(d, attempts.filter((a: any) => a.delivery_id === d.id))), total }
        }).pipe(Effect.orDie),
      overdue: (graceMs, limit) =>
        sql<DeliveryRow>`
          SELECT * FROM webhook_deliveries WHERE status = 'pending'
            AND next_attempt_at < now() - ${graceMs} * interval '1 millisecond'
          ORDER BY next_attempt_at LIMIT ${limit}`.pipe(Effect.orDie),
      manualCount: (id) =>
        sql<{ n: string }>`SELECT count(*) AS n FROM webhook_attempts WHERE delivery_id = ${id} AND manual`.pipe(
          Effect.orDie,
          Effect.map((r) => Number(r[0]!.n))
        ),
      addEndpoint: (tenantId, url, limit) =>
        // An endpoint in use is marked used at most once a day (not a write per request); one idle
        // for ENDPOINT_IDLE_DAYS takes a place again when it comes back, like a new one.
        sql<{ ok: boolean }>`
          WITH known AS (
            SELECT last_used_at FROM webhook_endpoints
            WHERE tenant_id = ${tenantId} AND url = ${url} AND ${endpointInUse(sql)}
          ),
          touched AS (
            UPDATE webhook_endpoints SET last_used_at = now()
            WHERE tenant_id = ${tenantId} AND url = ${url} AND EXISTS (SELECT 1 FROM known) AND last_used_at < now() - interval '1 day'
            RETURNING 1
          ),
          added AS (
            INSERT INTO webhook_endpoints (tenant_id, url)
            SELECT ${tenantId}, ${url}
            WHERE NOT EXISTS (SELECT 1 FROM known)
              AND (SELECT count(*) FROM webhook_endpoints WHERE tenant_id = ${tenantId} AND ${endpointInUse(sql)}) < ${limit}
            ON CONFLICT (tenant_id, url) DO UPDATE SET last_used_at = now()
            RETURNING 1
          )
          SELECT EXISTS (SELECT 1 FROM known) OR EXISTS (SELECT 1 FROM added) AS ok`.pipe(
          Effect.orDie,
          Effect.map(([row]) => row?.ok === true)
        )
    })
  })
)

/**
 * Deliveries, attempts and endpoints in memory, for unit tests of what drives deliveries; times come
 * from Effect's Clock, so a TestClock moves them. Each build starts empty.
 */
export const WebhookRepoTest: Layer.Layer<WebhookRepo> = Layer.sync(WebhookRepo, () => {
  type Attempt = AttemptRecord & { readonly delivery_id: string; readonly at: Date }
  const deliveries = new Map<string, { -readonly [K in keyof DeliveryRow]: DeliveryRow[K] } & { event_seq: number }>()
  const attempts: Array<Attempt> = []
  const endpoints = new Map<string, Set<string>>()
  const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))
  const view = ({ event_seq: _seq, ...d }: DeliveryRow & { event_seq: number }): DeliveryRow => ({ ...d })
  return WebhookRepo.of({
    insert: (d) =>
      Effect.map(now, (at) => {
        const seq = d.eventSeq ?? 0
        const known = [...deliveries.values()].some((x) =>
          x.resource_type === d.resourceType && x.resource_id === d.resourceId && x.event_status === d.eventStatus && x.event_seq === seq
        )
        if (known) return
        deliveries.set(d.id, {
          id: d.id,
          tenant_id: d.tenantId,
          resource_type: d.resourceType,
          resource_id: d.resourceId,
          event_status: d.eventStatus,
          event_seq: seq,
          url: d.url,
          secret_enc: d.secretEnc,
          body: d.body,
          status: "pending",
          attempts: 0,
          next_attempt_at: at,
          first_attempt_at: null,
          created_at: at,
          delivered_at: null
        })
      }),
    byId: (id) => Effect.sync(() => {
      const d = deliveries.get(id)
      return d && view(d)
    }),
    recordAttempt: (id, a, next) =>
      Effect.map(now, (at) => {
        const d = deliveries.get(id)
        if (!d || attempts.some((x) => x.delivery_id === id && x.attempt === a.attempt && x.manual === a.manual)) return
        attempts.push({ ...a, delivery_id: id, at: new Date(at.getTime() - a.durationMs) })
        if (!a.manual) d.attempts = Math.max(d.attempts, a.attempt)
        if (d.status !== "delivered") d.status = next.status
        d.next_attempt_at = next.nextAttemptAt
        d.first_attempt_at ??= new Date(at.getTime() - a.durationMs)
        if (next.status === "delivered") d.delivered_at ??= at
      }),
    forResource: (tenantId, type, resourceId, page) =>
      Effect.sync(() => {
        const all = [...deliveries.values()]
          .filter((d) => d.tenant_id === tenantId && d.resource_type === type && d.resource_id === resourceId)
          .sort((x, y) => x.created_at.getTime() - y.created_at.getTime() || x.id.localeCompare(y.id))
        const items = all.slice(page.offset, page.offset + page.limit).map((d) =>
          WebhookDeliveryView(d, attempts.filter((a) => a.delivery_id === d.id).map((a) => ({
            attempt: a.attempt,
            manual: a.manual,
            at: a.at,
            http_status: a.httpStatus,
            error: a.error,
            duration_ms: a.durationMs,
            response_body: a.responseBody
          }))))
        return { items, total: all.length }
      }),
    overdue: (graceMs, limit) =>
      Effect.map(now, (at) =>
        [...deliveries.values()]
          .filter((d) => d.status === "pending" && d.next_attempt_at !== null && d.next_attempt_at.getTime() < at.getTime() - graceMs)
          .sort((x, y) => x.next_attempt_at!.getTime() - y.next_attempt_at!.getTime())
          .slice(0, limit)
          .map(view)),
    manualCount: (id) => Effect.sync(() => attempts.filter((a) => a.delivery_id === id && a.manual).length),
    addEndpoint: (tenantId, url, limit) =>
      Effect.sync(() => {
        const urls = endpoints.get(tenantId) ?? new Set<string>()
        endpoints.set(tenantId, urls)
        if (urls.has(url)) return true
        if (urls.size >= limit) return false
        urls.add(url)
        return true
      })
  })
})
