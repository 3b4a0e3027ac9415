import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ClusterInfo } from "../actors/cluster-info.ts"
import { Config } from "../config.ts"
import { Kv } from "../kv/kv.ts"
import { fail } from "../schema/errors.ts"
import { HealthRepo } from "../sql/health-repo.ts"
import { Api } from "./api.ts"

export const SystemHandlers = HttpApiBuilder.group(
  Api,
  "system",
  Effect.fn(function*(handlers) {
    const health = yield* HealthRepo
    const kv = yield* Kv
    const config = yield* Config
    const cluster = yield* ClusterInfo
    return handlers
      .handle("healthz", () => Effect.succeed({ alive: true }))
      .handle("readyz", () =>
        Effect.gen(function*() {
          const [database, redisUp, member] = yield* Effect.all([
            health.ping.pipe(Effect.timeout("2 seconds"), Effect.as(true), Effect.orElseSucceed(() => false)),
            config.redisUrl ? kv.ping : Effect.succeed(true),
            cluster.isMember.pipe(Effect.timeout("2 seconds"), Effect.orElseSucceed(() => false))
          ], { concurrency: "unbounded" })
          const checks = {
            database,
            redis: config.redisUrl ? (redisUp ? "ok" as const : "down" as const) : "not_configured" as const,
            cluster: member
          }
          if (!database || !member || checks.redis === "down") {
            return yield* fail(503, "dependency_unavailable", "not ready", { retryAfter: 5, extra: { checks } })
          }
          return { ready: true, checks }
        }))
  })
)
