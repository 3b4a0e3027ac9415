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
    return { prometheusText: refresh.pipe(Effect.andThen(PrometheusMetrics.format())) }
  })
)
