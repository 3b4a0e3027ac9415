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
