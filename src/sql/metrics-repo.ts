import { Context, Effect, Layer } from "effect"
import { SqlClient, type SqlError } from "effect/sql"

export interface QueueRow {
  readonly kind: "jobs" | "extractions" | "webhook_deliveries"
  readonly depth: number
  readonly oldestAgeSeconds: number
}

/** What `GET /metrics` reads from the database at each scrape (docs/observability.md). */
export interface MetricsRepoShape {
  /**
   * Jobs and extractions queued and webhook deliveries pending, each with the age of its oldest.
   * Each count reads a partial index of the unfinished rows (jobs_stale,
   * extractions_stale, webhook_deliveries_due), so it costs what is in flight, not the table.
   */
  readonly queues: Effect.Effect<ReadonlyArray<QueueRow>, SqlError.SqlError>
  /** This node's sessions (those opened with `applicationName`) by state. */
  readonly sessions: (applicationName: string) => Effect.Effect<ReadonlyMap<string, number>, SqlError.SqlError>
}

export class MetricsRepo extends Context.Service<MetricsRepo, MetricsRepoShape>()("trawl/MetricsRepo") {}

export const MetricsRepoLive = Layer.effect(
  MetricsRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return MetricsRepo.of({
      queues: sql<{ kind: QueueRow["kind"]; depth: string | number; oldest: string | number | null }>`
        SELECT 'jobs' AS kind, count(*) AS depth, EXTRACT(EPOCH FROM now() - min(created_at)) AS oldest
          FROM jobs WHERE status = 'queued'
        UNION ALL
        SELECT 'extractions', count(*), EXTRACT(EPOCH FROM now() - min(created_at))
          FROM extractions WHERE status = 'queued'
        UNION ALL
        SELECT 'webhook_deliveries', count(*), EXTRACT(EPOCH FROM now() - min(created_at))
          FROM webhook_deliveries WHERE status = 'pending'
      `.pipe(Effect.map((rows) => rows.map((r) => ({ kind: r.kind, depth: Number(r.depth), oldestAgeSeconds: Math.max(0, Number(r.oldest ?? 0)) })))),
      sessions: (applicationName) =>
        sql<{ state: string | null; n: string | number }>`
          SELECT coalesce(state, 'unknown') AS state, count(*) AS n FROM pg_stat_activity
          WHERE application_name = ${applicationName} AND datname = current_database() GROUP BY 1
        `.pipe(Effect.map((rows) => new Map(rows.map((r) => [r.state!.replace(/[^a-z]+/g, "_"), Number(r.n)]))))
    })
  })
)

/** The queues of an empty database: each kind, none waiting. */
export const emptyQueues: ReadonlyArray<QueueRow> = [
  { kind: "jobs", depth: 0, oldestAgeSeconds: 0 },
  { kind: "extractions", depth: 0, oldestAgeSeconds: 0 },
  { kind: "webhook_deliveries", depth: 0, oldestAgeSeconds: 0 }
]

/**
 * The scrape's figures as given (a gauge reads them; nothing is counted here), for unit tests of
 * the metrics endpoint: the queues of an empty database and no sessions unless told otherwise.
 * `setQueues` of the handle changes what the next scrape reads.
 */
export class TestMetricsFigures extends Context.Service<TestMetricsFigures, {
  readonly setQueues: (rows: ReadonlyArray<QueueRow>) => Effect.Effect<void>
  readonly setSessions: (byState: ReadonlyMap<string, number>) => Effect.Effect<void>
}>()("trawl/TestMetricsFigures") {}

export const MetricsRepoTest: Layer.Layer<MetricsRepo | TestMetricsFigures> = Layer.unwrap(Effect.sync(() => {
  let queues = emptyQueues
  let sessions: ReadonlyMap<string, number> = new Map()
  return Layer.mergeAll(
    Layer.succeed(MetricsRepo, MetricsRepo.of({ queues: Effect.sync(() => queues), sessions: () => Effect.sync(() => sessions) })),
    Layer.succeed(TestMetricsFigures, TestMetricsFigures.of({
      setQueues: (rows) => Effect.sync(() => void (queues = rows)),
      setSessions: (byState) => Effect.sync(() => void (sessions = byState))
    }))
  )
}))
