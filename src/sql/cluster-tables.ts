import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export interface RunnerRow {
  readonly address: string
  readonly healthy: boolean
  readonly last_heartbeat: Date
}

/**
 * What Trawl reads and writes of the cluster's own tables (`cluster_*`, made by the library) and of
 * the probe's, and the storage upkeep: the statements of the cluster wiring (actors/cluster.ts), its
 * snapshot (actors/cluster-info.ts), the probe entity and actors/storage-maintenance.ts. Made from the SqlClient where it
 * is needed rather than provided as a service, because the cluster layer is built before the
 * repositories (and the benchmarks build it alone).
 */
export const makeClusterTables = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return {
    /** Empties the shard locks and runners left by a killed predecessor (the embedded single runner only). */
    clearStaleLocks: Effect.gen(function*() {
      const [exists] = yield* sql<{ found: boolean }>`SELECT to_regclass('cluster_locks') IS NOT NULL AS found`
      if (exists?.found) {
        yield* sql`DELETE FROM cluster_locks`
        yield* sql`DELETE FROM cluster_runners`
      }
    }),

    /** The registered runners, healthy while their heartbeat is younger than `heartbeatSeconds`. */
    runners: (heartbeatSeconds: number) =>
      sql<RunnerRow>`
        SELECT address, healthy AND last_heartbeat > now() - ${heartbeatSeconds} * interval '1 second' AS healthy, last_heartbeat
        FROM cluster_runners ORDER BY address`,

    /** The granted shard advisory locks (namespace `namespace`) of this database, with the session holding each. */
    shardAdvisoryLocks: (namespace: number) =>
      sql<{ pid: number; objid: number }>`
        SELECT pid, objid::int8 AS objid FROM pg_locks
        WHERE locktype = 'advisory' AND granted AND classid = ${namespace}::int8::oid AND objsubid = 2
          AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,

    /** How many entities of each type have messages stored. */
    entityCounts: sql<{ entity_type: string; n: string }>`
      SELECT entity_type, count(DISTINCT entity_id) AS n FROM cluster_messages GROUP BY 1`,

    /** A probe's run started on `runner`. */
    recordProbeRun: (probeId: string, runner: string) =>
      sql`INSERT INTO cluster_probe_runs (probe_id, runner) VALUES (${probeId}, ${runner})`.pipe(Effect.asVoid),

    /** A probe's effect, applied once however often its message is delivered. */
    recordProbeEffect: (probeId: string, runner: string) =>
      sql`INSERT INTO cluster_probe_effects (probe_id, runner) VALUES (${probeId}, ${runner})
          ON CONFLICT (probe_id) DO NOTHING`.pipe(Effect.asVoid),

    /**
     * Deletes up to `limit` processed messages made before the snowflake `cutoff`, with their
     * replies; answers how many messages went.
     */
    deleteAnsweredMessages: (cutoff: string, limit: number) =>
      sql<{ n: string }>`
        WITH old AS (
          SELECT id FROM cluster_messages WHERE processed AND id < ${cutoff}::bigint LIMIT ${limit}
        ),
        replies AS (DELETE FROM cluster_replies WHERE request_id IN (SELECT id FROM old)),
        messages AS (DELETE FROM cluster_messages WHERE id IN (SELECT id FROM old) RETURNING 1)
        SELECT count(*) AS n FROM messages`.pipe(Effect.map(([row]) => Number(row?.n ?? 0))),

    /** Domains' lease marks long past (their entity did not stop cleanly): they mean nothing any more. */
    deleteStaleDomainLeases: sql`DELETE FROM domain_leases WHERE held_until < now() - interval '1 hour'`.pipe(Effect.asVoid),

    /** VACUUM (ANALYZE) of each table, one at a time; a table that fails is skipped. */
    vacuum: (tables: ReadonlyArray<string>) =>
      Effect.forEach(tables, (table) => sql.unsafe(`VACUUM (ANALYZE) ${table}`).pipe(Effect.ignore), { discard: true })
  }
})
