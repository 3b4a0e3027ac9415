import { Context, Effect, Layer, Schedule, type Scope } from "effect"
import { SqlClient } from "effect/sql"
import { Kv } from "../kv/kv.ts"

export interface StoredEvent {
  readonly id: string
  readonly type: string
  readonly data: Record<string, unknown>
}

export interface EventLogShape {
  /** Appends a lifecycle event of a tenant and fans it out to every node's stream subscribers. */
  readonly emit: (tenantId: string, type: string, data: { id: string; status: string } & Record<string, unknown>) => Effect.Effect<void>
  /** Events after `afterId`, oldest first. */
  readonly since: (tenantId: string, afterId: string, limit: number) => Effect.Effect<ReadonlyArray<StoredEvent>>
  readonly subscribe: (tenantId: string, onEvent: (e: StoredEvent) => void) => Effect.Effect<void, never, Scope.Scope>
}

export class EventLog extends Context.Service<EventLog, EventLogShape>()("trawl/EventLog") {}

/** Events are kept at least this long, so `Last-Event-ID` resumes work within it. */
export const EVENT_RETENTION_HOURS = 48

const channelOf = (tenantId: string) => `trawl:events:${tenantId}`

export const EventLogLive = Layer.effect(
  EventLog,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const kv = yield* Kv

    yield* sql`DELETE FROM events WHERE created_at < now() - ${EVENT_RETENTION_HOURS} * interval '1 hour'`.pipe(
      Effect.ignore,
      Effect.repeat(Schedule.spaced("1 hour")),
      Effect.forkScoped
    )

    return EventLog.of({
      emit: (tenantId, type, data) =>
        Effect.gen(function*() {
          const payload = { ...data, tenantId, at: new Date().toISOString() }
          const [row] = yield* sql<{ id: string }>`
            INSERT INTO events (tenant_id, type, data) VALUES (${tenantId}, ${type}, ${JSON.stringify(payload)}::jsonb)
            RETURNING id`
          yield* kv.publish(channelOf(tenantId), JSON.stringify({ id: String(row!.id), type, data: payload }))
        }).pipe(Effect.catchCause((cause) => Effect.logWarning("event not recorded", cause))),
      since: (tenantId, afterId, limit) =>
        sql<{ id: string; type: string; data: Record<string, unknown> }>`
          SELECT id, type, data FROM events WHERE tenant_id = ${tenantId} AND id > ${afterId}::bigint
          ORDER BY id LIMIT ${limit}`.pipe(
          Effect.orDie,
          Effect.map((rows) => rows.map((r) => ({ id: String(r.id), type: r.type, data: r.data })))
        ),
      subscribe: (tenantId, onEvent) => kv.subscribe(channelOf(tenantId), (m) => onEvent(JSON.parse(m)))
    })
  })
)
