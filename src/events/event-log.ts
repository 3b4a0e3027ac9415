import { Context, Effect, Layer, Schedule, type Scope } from "effect"
import { Kv } from "../kv/kv.ts"
import { EventRepo, type StoredEvent } from "../sql/event-repo.ts"

export type { StoredEvent } from "../sql/event-repo.ts"

export interface EventLogShape {
  /**
   * Wakes the tenant's stream subscribers after a statement built with `appendEventCtes`
   * (sql/event-repo.ts) committed an event.
   */
  readonly notify: (tenantId: string) => Effect.Effect<void>
  /** Events after sequence number `afterId`, oldest first. */
  readonly since: (tenantId: string, afterId: string, limit: number) => Effect.Effect<ReadonlyArray<StoredEvent>>
  /** The tenant's latest sequence number ("0" when it has none): where a fresh stream starts. */
  readonly latest: (tenantId: string) => Effect.Effect<string>
  /** Calls `onAppended` whenever the tenant's log may have grown. */
  readonly subscribe: (tenantId: string, onAppended: () => void) => Effect.Effect<void, never, Scope.Scope>
}

export class EventLog extends Context.Service<EventLog, EventLogShape>()("trawl/EventLog") {}

/** Events are kept at least this long, so `Last-Event-ID` resumes work within it. */
export const EVENT_RETENTION_HOURS = 48

const channelOf = (tenantId: string) => `trawl:events:${tenantId}`

export const EventLogLive = Layer.effect(
  EventLog,
  Effect.gen(function*() {
    const repo = yield* EventRepo
    const kv = yield* Kv

    yield* repo.deleteOlderThan(EVENT_RETENTION_HOURS).pipe(
      Effect.ignore,
      Effect.repeat(Schedule.spaced("1 hour")),
      Effect.forkScoped
    )

    return EventLog.of({
      // Best effort, whatever the failure (Redis out of reach is a defect of the Kv): streams also
      // read on every keep-alive tick, and the change it wakes them for is already written.
      notify: (tenantId) => kv.publish(channelOf(tenantId), "1").pipe(Effect.ignoreCause({ log: "Warn", message: "event wake-up not published" })),
      since: repo.since,
      latest: repo.latest,
      subscribe: (tenantId, onAppended) => kv.subscribe(channelOf(tenantId), () => onAppended())
    })
  })
)
