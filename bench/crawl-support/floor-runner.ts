/**
 * Floor (e) of `npm run bench:crawl`: what the fixed design costs per job before any work is done.
 * Every job is a sharded entity and its creation a persisted message, so each job costs at least
 * one persisted message to a fresh entity. This runner sends exactly that, on Trawl's own cluster
 * wiring and message storage (embedded PGlite, or DATABASE_URL), to an entity that does nothing,
 * `concurrency` sends at a time as job creation hands jobs on.
 *
 * Env: MESSAGES, WARM, CONCURRENCY, DATA_DIR, and DATABASE_URL + RUNNER_PORT for PostgreSQL.
 * Prints `result <json>` for the measured run (after a warm-up run): wall time, process CPU and
 * CPU by thread, in ms.
 */
import { Deferred, Effect, Layer } from "effect"
import { ClusterSchema, Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { ClusterLive, RESOURCE_ENTITY_IDLE } from "../../src/actors/cluster.ts"
import { Config, loadConfig } from "../../src/config.ts"
import { DatabaseLive } from "../../src/sql/database.ts"
import { MigrationsLive } from "../../src/sql/migrate.ts"
import { exitWithParent, threadCpuMs } from "../support/processes.ts"

const messages = Number(process.env.MESSAGES ?? 2000)
const warm = Number(process.env.WARM ?? 500)
const concurrency = Number(process.env.CONCURRENCY ?? 32)

// The same settings as a job's entity: one persisted message, idle after RESOURCE_ENTITY_IDLE.
const FloorJob = Entity.make("FloorJob", [Rpc.make("Run").annotate(ClusterSchema.Persisted, true)])

let handled = 0
let target = Infinity
let reached: Deferred.Deferred<void> | undefined
const FloorJobLive = FloorJob.toLayer(
  Effect.succeed({
    Run: () =>
      Effect.sync(() => {
        if (++handled === target && reached) Deferred.doneUnsafe(reached, Effect.void)
      })
  }),
  { maxIdleTime: RESOURCE_ENTITY_IDLE }
)

const program = Effect.gen(function*() {
  const client = yield* FloorJob.client
  /** Sends `count` Run messages to fresh entities and waits until every one was handled. */
  const run = (prefix: string, count: number) =>
    Effect.gen(function*() {
      reached = yield* Deferred.make<void>()
      target = handled + count
      yield* Effect.forEach(Array.from({ length: count }, (_, i) => `${prefix}-${i}`), (id) => client(id).Run(undefined, { discard: true }), {
        concurrency,
        discard: true
      })
      yield* Deferred.await(reached)
    })
  if (warm > 0) yield* run("warm", warm)
  const threads0 = threadCpuMs(process.pid)
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  yield* run("measured", messages)
  const wallMs = performance.now() - t0
  const cpu = process.cpuUsage(cpu0)
  const threads1 = threadCpuMs(process.pid)
  const byThread = Object.fromEntries([...threads1].map(([name, ms]) => [name, ms - (threads0.get(name) ?? 0)]))
  console.log(`result ${JSON.stringify({ messages, wallMs, cpuMs: (cpu.user + cpu.system) / 1000, byThread })}`)
})

const config = loadConfig({ ...process.env, PORT: "0", INTERNAL_TOKEN: "floor-runner-token-0123456789" })
const layer = FloorJobLive.pipe(
  Layer.provideMerge(ClusterLive),
  Layer.provideMerge(MigrationsLive.pipe(Layer.provideMerge(DatabaseLive))),
  Layer.provideMerge(Layer.succeed(Config, config))
)

exitWithParent(() => {})
Effect.runPromise(program.pipe(Effect.provide(layer), Effect.scoped, Effect.withTracerEnabled(false))).then(
  () => process.exit(0),
  (error) => {
    console.error("floor runner failed:", error)
    process.exit(1)
  }
)
