import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient, type SqlError, type Statement } from "effect/sql"

export interface StoredEvent {
  /** The tenant's event sequence number, as a string (the SSE `id`). */
  readonly id: string
  readonly type: string
  readonly data: Record<string, unknown>
}

/**
 * CTEs (`ev_src`, `ev_seq`, `ev_rows`) that append one event per row of `source` (a CTE with a
 * `tenant_id` column; its rows may belong to several tenants) for the rows where `when` holds,
 * numbered per tenant in `order`. A resource change and its events then commit in one statement:
 * no separate transaction, and each tenant's sequence row is locked only for that statement (in
 * tenant order, so concurrent statements cannot deadlock on them), so events still commit in
 * sequence order. `data` is a jsonb expression over `ev_src` (the source's columns); the tenant
 * and time are added to it. Call `EventLog.notify` after the statement committed an event.
 */
export const appendEventCtes = (
  sql: SqlClient.SqlClient,
  o: { source: string; type: string | Statement.Fragment; data: Statement.Fragment; when?: Statement.Fragment; order?: Statement.Fragment }
): Statement.Fragment => {
  const source = sql.literal(o.source)
  const order = o.order ?? sql.literal("1")
  return sql`
    ev_src AS (
      SELECT ${source}.*, row_number() OVER (PARTITION BY ${source}.tenant_id ORDER BY ${order}) AS ev_i,
             count(*) OVER (PARTITION BY ${source}.tenant_id) AS ev_n
      FROM ${source} ${o.when ? sql`WHERE ${o.when}` : sql.literal("")}
    ),
    ev_seq AS (
      INSERT INTO event_sequences (tenant_id, seq)
      SELECT tenant_id, ev_n FROM ev_src WHERE ev_i = 1 ORDER BY tenant_id
      ON CONFLICT (tenant_id) DO UPDATE SET seq = event_sequences.seq + EXCLUDED.seq
      RETURNING tenant_id, seq
    ),
    ev_rows AS (
      INSERT INTO events (tenant_id, seq, type, data)
      SELECT ev_seq.tenant_id, ev_seq.seq - ev_src.ev_n + ev_src.ev_i,
             ${typeof o.type === "string" ? sql`${o.type}::text` : o.type},
             (${o.data}) || jsonb_build_object('tenantId', ev_seq.tenant_id, 'at', ${new Date().toISOString()}::text)
      FROM ev_src JOIN ev_seq ON ev_seq.tenant_id = ev_src.tenant_id
      RETURNING seq
    )`
}

/** The tenant event log's table (the statements that append to it are built with `appendEventCtes`). */
export interface EventRepoShape {
  /** Events after sequence number `afterId`, oldest first. */
  readonly since: (tenantId: string, afterId: string, limit: number) => Effect.Effect<ReadonlyArray<StoredEvent>>
  /** The tenant's latest sequence number ("0" when it has none). */
  readonly latest: (tenantId: string) => Effect.Effect<string>
  /** Deletes the events older than `hours`. */
  readonly deleteOlderThan: (hours: number) => Effect.Effect<void, SqlError.SqlError>
}

export class EventRepo extends Context.Service<EventRepo, EventRepoShape>()("trawl/EventRepo") {}

export const EventRepoLive = Layer.effect(
  EventRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return EventRepo.of({
      since: (tenantId, afterId, limit) =>
        sql<{ seq: string; type: string; data: Record<string, unknown> }>`
          SELECT seq, type, data FROM events WHERE tenant_id = ${tenantId} AND seq > ${afterId}::bigint
          ORDER BY seq LIMIT ${limit}`.pipe(
          Effect.orDie,
          Effect.map((rows) => rows.map((r) => ({ id: String(r.seq), type: r.type, data: r.data })))
        ),
      latest: (tenantId) =>
        sql<{ seq: string }>`SELECT seq FROM event_sequences WHERE tenant_id = ${tenantId}`.pipe(
          Effect.orDie,
          Effect.map((rows) => String(rows[0]?.seq ?? "0"))
        ),
      deleteOlderThan: (hours) => sql`DELETE FROM events WHERE created_at < now() - ${hours} * interval '1 hour'`.pipe(Effect.asVoid)
    })
  })
)

/** Appends to the in-memory event log of `EventRepoTest` (what `appendEventCtes` does in SQL). */
export class TestEventAppender extends Context.Service<TestEventAppender, {
  readonly append: (tenantId: string, type: string, data: Record<string, unknown>) => Effect.Effect<StoredEvent>
}>()("trawl/TestEventAppender") {}

/** The event log in memory, stamped with Effect's Clock (a TestClock ages it); each build starts empty. */
export const EventRepoTest: Layer.Layer<EventRepo | TestEventAppender> = Layer.unwrap(Effect.sync(() => {
  const events: Array<StoredEvent & { readonly tenantId: string; readonly seq: number; readonly createdAt: number }> = []
  const sequences = new Map<string, number>()
  return Layer.mergeAll(
    Layer.succeed(EventRepo, EventRepo.of({
      since: (tenantId, afterId, limit) =>
        Effect.sync(() =>
          events.filter((e) => e.tenantId === tenantId && e.seq > Number(afterId)).slice(0, limit).map(({ id, type, data }) => ({ id, type, data }))
        ),
      latest: (tenantId) => Effect.sync(() => String(sequences.get(tenantId) ?? 0)),
      deleteOlderThan: (hours) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          const kept = events.filter((e) => e.createdAt >= now - hours * 3_600_000)
          events.splice(0, events.length, ...kept)
        })
    })),
    Layer.succeed(TestEventAppender, TestEventAppender.of({
      append: (tenantId, type, data) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          const seq = (sequences.get(tenantId) ?? 0) + 1
          sequences.set(tenantId, seq)
          const event = { id: String(seq), type, data: { ...data, tenantId, at: new Date(now).toISOString() } }
          events.push({ ...event, tenantId, seq, createdAt: now })
          return event
        })
    }))
  )
}))
