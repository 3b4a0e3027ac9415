import { Effect, Schedule } from "effect"
import { MachineId, Singleton, Snowflake } from "effect/cluster"
import { Config } from "../config.ts"
import { makeClusterTables } from "../sql/cluster-tables.ts"

/** Answered cluster messages are kept this long (a re-sent message within it is still recognized). */
export const MESSAGE_RETENTION_HOURS = 24

/** Rows deleted per statement, so a large backlog never holds locks (or the embedded session) for long. */
const DELETE_CHUNK = 5_000

/**
 * Tables that change with every job, extraction or delivery. The embedded database runs in
 * PGlite's single-user mode, where autovacuum never runs: without this, dead rows would pile up
 * and the planner would never see statistics.
 */
const BUSY_TABLES = [
  "jobs", "events", "event_sequences", "page_versions", "page_contents", "job_artifacts", "domain_engine_history",
  "webhook_deliveries", "webhook_attempts", "extractions", "extraction_inputs", "idempotency_keys",
  "cluster_messages", "cluster_replies"
]

/** How often the maintenance round runs; the first round waits this long after the start. */
const EVERY = "10 minutes"

/**
 * One round: deletes answered cluster messages (every job, attempt and delivery leaves one, with
 * its reply) once they are older than MESSAGE_RETENTION_HOURS, and domains' lease marks an hour
 * past, and on the embedded database
 * vacuums and analyzes the busy tables, one at a time. Answers the number of messages deleted.
 */
export const maintainStorage = Effect.gen(function*() {
  const tables = yield* makeClusterTables
  const config = yield* Config

  const deleteAnsweredMessages = Effect.gen(function*() {
    // Message ids are snowflakes: ids below this one were made before the cut-off.
    const cutoff = String(Snowflake.make({ timestamp: Date.now() - MESSAGE_RETENTION_HOURS * 3_600_000, machineId: MachineId.make(0), sequence: 0 }))
    let deleted = 0
    for (;;) {
      const n = yield* tables.deleteAnsweredMessages(cutoff, DELETE_CHUNK)
      deleted += n
      if (n < DELETE_CHUNK) return deleted
    }
  })

  const deleted = yield* deleteAnsweredMessages
  // Lease marks of domains whose entity did not stop cleanly (its node died): long past, they mean nothing.
  yield* tables.deleteStaleDomainLeases
  if (config.databaseUrl === undefined) yield* tables.vacuum(BUSY_TABLES)
  return deleted
})

/** The maintenance loop, once in the whole cluster. */
export const StorageMaintenanceLive = Singleton.make(
  "StorageMaintenance",
  Effect.sleep(EVERY).pipe(
    Effect.andThen(maintainStorage.pipe(
      Effect.tap((deleted) => deleted > 0 ? Effect.logInfo(`storage maintenance deleted ${deleted} answered cluster messages`) : Effect.void),
      Effect.catchCause(Effect.logWarning),
      Effect.repeat(Schedule.spaced(EVERY))
    ))
  )
)
