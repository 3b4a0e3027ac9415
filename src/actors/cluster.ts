import { NodeClusterSocket, NodeCrypto } from "@effect/platform-node"
import { Effect, Layer, Option } from "effect"
import { RunnerAddress, RunnerHealth, Runners, Sharding, ShardingConfig, SqlRunnerStorage } from "effect/cluster"
import { Config } from "../config.ts"
import { makeClusterTables } from "../sql/cluster-tables.ts"
import { MessageStorageLive } from "../sql/message-storage.ts"

/**
 * Fail-over tuning: a runner whose heartbeat is older than 6 s is considered gone,
 * so its shards move within about 5-10 s (the defaults take about 30 s).
 */
export const shardingTuning = {
  shardLockExpiration: "6 seconds",
  shardLockRefreshInterval: "2 seconds",
  refreshAssignmentsInterval: "1 second",
  runnerHealthCheckInterval: "2 seconds",
  entityMessagePollInterval: "500 millis",
  entityTerminationTimeout: "5 seconds"
} as const

/**
 * How long an entity of one job, extraction or delivery stays in memory without messages. A runner
 * keeps at most 10 000 entities (the library's `maxResidentEntities`); one per job kept for a minute
 * after its end would cap a node at about 170 jobs a second (10 000 / 60 s), and jobs beyond the cap
 * wait in storage until old entities go. Such an entity has nothing left to do once its resource has
 * ended; a later message (a re-sent run, a scheduled retry) starts it again.
 */
export const RESOURCE_ENTITY_IDLE = "5 seconds"

/**
 * Settings for every runner. 16 shards, not the library's 300: before a persisted message's reply
 * is stored, the runner confirms it still holds the shard's lock, on one lock connection, and
 * concurrent replies of a shard share one check. With 300 shards a burst of jobs queued hundreds
 * of checks behind each other until they passed their 2 s deadline; each reply was then abandoned
 * and its job run again (measured: 3000 jobs at once gave 8630 abandoned replies with 300 shards,
 * 3589 with 64, none with 32, 16 or 8; `npm run bench:crawl -- --pages 3000` on PostgreSQL).
 * 16 shards still spread work over any realistic number of nodes. Local entity messages skip the
 * JSON round trip that only simulates a remote hop (messages to other runners are serialized).
 */
export const shardingCommon = {
  shardsPerGroup: 16,
  simulateRemoteSerialization: false
} as const

/**
 * One process is one runner. With DATABASE_URL, processes sharing it form one
 * cluster (runners, shards and durable messages in PostgreSQL); without it, the
 * embedded database serves a single runner with the same SQL message storage.
 */
const ClearStaleLocks = Layer.effectDiscard(makeClusterTables.pipe(Effect.flatMap((tables) => tables.clearStaleLocks), Effect.orDie))

export const ClusterLive = Layer.unwrap(
  Effect.gen(function*() {
    const config = yield* Config
    if (config.databaseUrl === undefined) {
      // A single runner has nobody to hand shards to, so it keeps the library's patient lock
      // timings: a busy embedded database must not make it drop its own shards. The embedded
      // database belongs to this process alone, so locks left by a killed predecessor are
      // cleared at start instead of waiting for them to expire.
      return Sharding.layer.pipe(
        Layer.provideMerge(Runners.layerNoop),
        Layer.provideMerge(MessageStorageLive),
        Layer.provide([Layer.orDie(SqlRunnerStorage.layer), RunnerHealth.layerNoop]),
        Layer.provide(ShardingConfig.layerFromEnv({ ...shardingCommon, entityMessagePollInterval: shardingTuning.entityMessagePollInterval })),
        Layer.provide(NodeCrypto.layerDigest),
        Layer.provide(ClearStaleLocks)
      )
    }
    const address = RunnerAddress.make(config.runnerHost, config.runnerPort!)
    const shardingConfig = { ...shardingTuning, ...shardingCommon, runnerAddress: Option.some(address) }
    return NodeClusterSocket.layer({ storage: "byo", shardingConfig }).pipe(
      Layer.provideMerge(MessageStorageLive),
      Layer.provide(Layer.orDie(SqlRunnerStorage.layer).pipe(Layer.provide(ShardingConfig.layerFromEnv(shardingConfig)))),
      Layer.provide(NodeCrypto.layerDigest)
    )
  })
)
