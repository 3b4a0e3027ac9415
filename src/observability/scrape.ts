import { monitorEventLoopDelay } from "node:perf_hooks"
import { Context, Effect, Layer, Schedule } from "effect"
import { PrometheusMetrics } from "effect/observability"
import { Config } from "../config.ts"
import { NODE_APPLICATION_NAME, POOL_MAX_CONNECTIONS } from "../sql/database.ts"
import { MetricsRepo } from "../sql/metrics-repo.ts"
import { browserUsage } from "./browser-processes.ts"
import { setBrowsers, setEventLoopDelay, setPool, setQueue } from "./metrics.ts"

/**
 * The node's metrics in Prometheus text (`GET /metrics`, docs/observability.md). The counters and
 * histograms are kept as work happens; the gauges of what is true now (queues, database sessions,
 * browsers) are read at each scrape, and, with OTLP export on, before each export interval too.
 * A gauge whose source does not answer within 2 s keeps its last value: a scrape always answers.
 */
export class Scrape extends Context.Service<Scrape, { readonly prometheusText: Effect.Effect<string> }>()("trawl/Scrape") {}

const WITHIN = "2 seconds"

/** What the cluster library's gauges count: it defines them without a description. */
const LIBRARY_HELP: Record<string, string> = {
  effect_cluster_entities: "Entities running on this node's runner, by type",
  effect_cluster_entity_mailbox_size_max: "The fullest entity mailbox on this node's runner",
  effect_cluster_runners: "Runners registered in the cluster, as this node sees them",
  effect_cluster_runners_healthy: "Registered runners that answer their health checks, as this node sees them",
  effect_cluster_shards: "Shards this node's runner holds",
  effect_cluster_shards_releasing: "Shards this node's runner is handing off",
  effect_cluster_singletons: "Cluster singletons running on this node"
}

/** Every family with a `# HELP` line (scrapers and linters expect one): the library's from LIBRARY_HELP. */
export const withHelp = (text: string): string => {
  const helped = new Set<string>()
  const out: Array<string> = []
  for (const line of text.split("\n")) {
    const help = /^# HELP (\S+)/.exec(line)
    if (help) helped.add(help[1]!)
    const type = /^# TYPE (\S+)/.exec(line)
    if (type && !helped.has(type[1]!)) {
      out.push(`# HELP ${type[1]} ${LIBRARY_HELP[type[1]!] ?? "A metric of the Effect runtime"}`)
      helped.add(type[1]!)
    }
    out.push(line)
  }
  return out.join("\n")
}

export const ScrapeLive = Layer.effect(
  Scrape,
  Effect.gen(function*() {
    const repo = yield* MetricsRepo
    const config = yield* Config
    const poolMax = config.databaseUrl ? POOL_MAX_CONNECTIONS.postgres : POOL_MAX_CONNECTIONS.embedded
    const bounded = <A, E>(what: string, read: Effect.Effect<A, E>, set: (a: A) => void) =>
      read.pipe(
        Effect.timeout(WITHIN),
        Effect.map(set),
        Effect.catchCause((cause) => Effect.logDebug(`metrics: ${what} could not be read`, cause))
      )
    // The loop's delay, sampled every 10 ms; each reading covers the time since the one before.
    const loop = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const h = monitorEventLoopDelay({ resolution: 10 })
        h.enable()
        return h
      }),
      (h) => Effect.sync(() => h.disable())
    )
    const readLoop = Effect.sync(() => {
      // Nanoseconds; a histogram with no sample yet reads NaN for its percentiles.
      const s = (ns: number) => (Number.isFinite(ns) ? ns / 1e9 : 0)
      if (loop.count > 0) setEventLoopDelay(s(loop.percentile(50)), s(loop.percentile(99)), s(loop.max))
      loop.reset()
    })
    const refresh = Effect.all([
      readLoop,
      bounded("queue depth", repo.queues, setQueue),
      bounded("database sessions", repo.sessions(NODE_APPLICATION_NAME), (byState) => setPool(poolMax, byState)),
      bounded("browser processes", Effect.promise(() => browserUsage()), (u) => setBrowsers(u.processes, u.rssBytes))
    ], { concurrency: "unbounded", discard: true }).pipe(Effect.withTracerEnabled(false))
    if (config.otel) yield* refresh.pipe(Effect.repeat(Schedule.spaced(config.otel.metricExportMs)), Effect.forkScoped)
    return { prometheusText: refresh.pipe(Effect.andThen(PrometheusMetrics.format()), Effect.map(withHelp)) }
  })
)
