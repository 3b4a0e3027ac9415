import { Context, Effect, Layer } from "effect"
import { Sharding } from "effect/cluster"
import { SqlClient } from "effect/sql"
import { Config } from "../config.ts"
import { iso } from "../schema/common.ts"

export interface ClusterSnapshot {
  readonly mode: "single" | "cluster"
  readonly runners: ReadonlyArray<{ address: string; healthy: boolean; lastHeartbeat: string | null }>
  readonly shards: ReadonlyArray<{ group: string; runner: string | null; count: number }>
  readonly entities: Record<string, number>
}

export interface ClusterInfoShape {
  /** Runners, shard assignment and entity counts, read from the cluster's own tables. */
  readonly snapshot: Effect.Effect<ClusterSnapshot>
  /** This node is a member: its runner is registered and healthy (always true for the single runner). */
  readonly isMember: Effect.Effect<boolean>
}

export class ClusterInfo extends Context.Service<ClusterInfo, ClusterInfoShape>()("trawl/ClusterInfo") {}

export const ClusterInfoLive = Layer.effect(
  ClusterInfo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* Config
    const sharding = yield* Sharding.Sharding
    const single = config.databaseUrl === undefined

    const runners = sql<{ address: string; healthy: boolean; last_heartbeat: Date }>`
      SELECT address, healthy, last_heartbeat FROM cluster_runners ORDER BY address`.pipe(
      Effect.catch(() => Effect.succeed([]))
    )

    const snapshot = Effect.gen(function*() {
      const runnerRows = yield* runners
      const shardRows = yield* sql<{ shard_group: string; address: string; n: string }>`
        SELECT split_part(shard_id, ':', 1) AS shard_group, address, count(*) AS n
        FROM cluster_locks GROUP BY 1, 2 ORDER BY 1, 2`.pipe(Effect.catch(() => Effect.succeed([])))
      const entityRows = yield* sql<{ entity_type: string; n: string }>`
        SELECT entity_type, count(DISTINCT entity_id) AS n FROM cluster_messages GROUP BY 1`.pipe(
        Effect.catch(() => Effect.succeed([]))
      )
      const active = yield* sharding.activeEntityCount
      return {
        mode: single ? "single" as const : "cluster" as const,
        runners: single && runnerRows.length === 0
          ? [{ address: "embedded", healthy: true, lastHeartbeat: null }]
          : runnerRows.map((r) => ({ address: r.address, healthy: r.healthy, lastHeartbeat: iso(r.last_heartbeat) })),
        shards: shardRows.map((r) => ({ group: r.shard_group, runner: r.address, count: Number(r.n) })),
        entities: {
          ...Object.fromEntries(entityRows.map((r) => [r.entity_type, Number(r.n)])),
          activeOnThisNode: active
        }
      }
    }).pipe(Effect.orDie)

    const me = `${config.runnerHost}:${config.runnerPort}`
    const isMember = single
      ? Effect.succeed(true)
      : runners.pipe(Effect.map((rows) => rows.some((r) => r.healthy && r.address === me)))

    return ClusterInfo.of({ snapshot, isMember })
  })
)
