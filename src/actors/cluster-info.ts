import { Context, Duration, Effect, Layer } from "effect"
import { Sharding, ShardingConfig, ShardId } from "effect/cluster"
import { Config } from "../config.ts"
import { iso } from "../schema/common.ts"
import { makeClusterTables } from "../sql/cluster-tables.ts"
import { shardingCommon, shardingTuning } from "./cluster.ts"

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

/**
 * The advisory-lock namespace under which the library takes shard locks on PostgreSQL: FNV-1a of
 * "effect-cluster:cluster" (its `cluster` table prefix), as the library computes it; the library
 * calls this a wire format that never changes. pg_locks shows it as `classid`, unsigned.
 */
export const shardLockNamespace = (() => {
  let hash = 0x811c9dc5
  for (const byte of new TextEncoder().encode("effect-cluster:cluster")) hash = Math.imul(hash ^ byte, 0x01000193)
  return hash >>> 0
})()

export const ClusterInfoLive = Layer.effect(
  ClusterInfo,
  Effect.gen(function*() {
    const tables = yield* makeClusterTables
    const config = yield* Config
    const sharding = yield* Sharding.Sharding
    const single = config.databaseUrl === undefined

    // A runner is healthy while its heartbeat is younger than a shard lock's life: a killed runner's
    // row keeps its last `healthy` flag until someone removes it. The embedded runner keeps the
    // library's defaults (a heartbeat every 10 s, locks of 35 s): 6 s read it as unhealthy 4 s in 10.
    const lockLife = single ? ShardingConfig.defaults.shardLockExpiration : Duration.fromInputUnsafe(shardingTuning.shardLockExpiration)
    const heartbeatSeconds = Duration.toMillis(lockLife) / 1000
    const runners = tables.runners(heartbeatSeconds).pipe(
      Effect.catch(() => Effect.succeed([]))
    )
    // The library's advisory lock number of a shard: (index of its group, groups sorted, + 1) × 10⁶ + shard.
    const shardByLock = new Map([...ShardingConfig.defaults.availableShardGroups].sort().flatMap((group, g) =>
      Array.from({ length: shardingCommon.shardsPerGroup }, (_, i) => [(g + 1) * 1_000_000 + i + 1, ShardId.make(group, i + 1)] as const)
    ))
    const me = `${config.runnerHost}:${config.runnerPort}`

    /**
     * Shards by holder. The embedded runner is the only one (named as `runnerRows` name it), and
     * this node knows its own shards; on PostgreSQL the library holds advisory locks instead, one
     * database session per runner, and this node knows which shards are its own: so its session is
     * named by its address, and each other runner by its session.
     */
    const shardHolders = (runnerRows: ReadonlyArray<{ readonly address: string }>) => single
      ? Effect.succeed(ownShards(runnerRows.length === 1 ? runnerRows[0]!.address : "embedded"))
      : tables.shardAdvisoryLocks(shardLockNamespace).pipe(
          Effect.map((rows) => {
            const myPid = rows.find((r) => {
              const shard = shardByLock.get(Number(r.objid))
              return shard !== undefined && sharding.hasShardId(shard)
            })?.pid
            const counts = new Map<string, { group: string; runner: string | null; count: number }>()
            for (const r of rows) {
              const shard = shardByLock.get(Number(r.objid))
              if (!shard) continue
              const runner = r.pid === myPid ? me : `another runner (database session ${r.pid})`
              const key = `${shard.group} ${runner}`
              const entry = counts.get(key) ?? { group: shard.group, runner, count: 0 }
              entry.count++
              counts.set(key, entry)
            }
            return [...counts.values()].sort((a, b) => a.group.localeCompare(b.group) || String(a.runner).localeCompare(String(b.runner)))
          })
        )

    /** The shards this node's runner holds, by group, under `address`. */
    const ownShards = (address: string) =>
      [...ShardingConfig.defaults.availableShardGroups].sort().flatMap((group) => {
        const count = [...shardByLock.values()].filter((shard) => shard.group === group && sharding.hasShardId(shard)).length
        return count > 0 ? [{ group, runner: address as string | null, count }] : []
      })

    /** The shards no runner holds now (their runner died, or they are moving): `runner: null`. */
    const withUnheld = (held: ReadonlyArray<{ group: string; runner: string | null; count: number }>) => [
      ...held,
      ...[...ShardingConfig.defaults.availableShardGroups].sort().flatMap((group) => {
        const count = shardingCommon.shardsPerGroup - held.filter((h) => h.group === group).reduce((n, h) => n + h.count, 0)
        return count > 0 ? [{ group, runner: null, count }] : []
      })
    ]

    const snapshot = Effect.gen(function*() {
      const runnerRows = yield* runners
      // A read that failed shows no shards, rather than every shard as held by no runner.
      const shards = yield* shardHolders(runnerRows).pipe(Effect.map(withUnheld), Effect.catch(() => Effect.succeed([])))
      const entityRows = yield* tables.entityCounts.pipe(
        Effect.catch(() => Effect.succeed([]))
      )
      const active = yield* sharding.activeEntityCount
      return {
        mode: single ? "single" as const : "cluster" as const,
        runners: single && runnerRows.length === 0
          ? [{ address: "embedded", healthy: true, lastHeartbeat: null }]
          : runnerRows.map((r) => ({ address: r.address, healthy: r.healthy, lastHeartbeat: iso(r.last_heartbeat) })),
        shards,
        entities: {
          ...Object.fromEntries(entityRows.map((r) => [r.entity_type, Number(r.n)])),
          activeOnThisNode: active
        }
      }
    }).pipe(Effect.orDie)

    const isMember = single
      ? Effect.succeed(true)
      : runners.pipe(Effect.map((rows) => rows.some((r) => r.healthy && r.address === me)))

    return ClusterInfo.of({ snapshot, isMember })
  })
)

/**
 * A cluster snapshot as given, for unit tests of what reports or waits on it (readiness, the
 * cluster endpoint): by default this node alone, a member, with no shards held yet.
 */
export const makeClusterInfoTest = (
  snapshot: ClusterSnapshot = { mode: "single", runners: [], shards: [], entities: {} },
  member = true
): Layer.Layer<ClusterInfo> => Layer.succeed(ClusterInfo, ClusterInfo.of({ snapshot: Effect.succeed(snapshot), isMember: Effect.succeed(member) }))
