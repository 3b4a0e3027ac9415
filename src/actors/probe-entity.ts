import { Effect, Schema } from "effect"
import { ClusterSchema, Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { Config } from "../config.ts"
import { makeClusterTables } from "../sql/cluster-tables.ts"
import { ProbeResult } from "../schema/tenant.ts"


/**
 * An operator's probe of the cluster: a durable message that works for a while
 * and then applies an effect exactly once. Used to check routing between nodes
 * and fail-over (`POST /internal/v1/cluster/probe`).
 */
export const ProbeEntity = Entity.make("ClusterProbe", [
  Rpc.make("Work", {
    payload: Schema.Struct({ probeId: Schema.String, durationMs: Schema.Int }),
    success: ProbeResult
  }).annotate(ClusterSchema.Persisted, true)
])

export const ProbeEntityLive = ProbeEntity.toLayer(
  Effect.gen(function*() {
    const tables = yield* makeClusterTables
    const config = yield* Config
    const runner = config.databaseUrl ? `${config.runnerHost}:${config.runnerPort}` : "embedded"
    const address = yield* Entity.CurrentAddress
    return ProbeEntity.of({
      Work: ({ payload }) =>
        Effect.gen(function*() {
          const startedAt = new Date().toISOString()
          yield* tables.recordProbeRun(payload.probeId, runner)
          yield* Effect.sleep(payload.durationMs)
          // Delivery is at least once: the effect is keyed by the probe id so a re-run applies nothing twice.
          yield* tables.recordProbeEffect(payload.probeId, runner)
          return { probeId: payload.probeId, entityId: address.entityId, runner, startedAt, finishedAt: new Date().toISOString() }
        }).pipe(Effect.orDie)
    })
  })
)
