import { NodeHttpClient } from "@effect/platform-node"
import { Effect, Layer, Logger, References, Tracer } from "effect"
import { OtlpExporter, OtlpLogger, OtlpMetrics, OtlpSerialization } from "effect/observability"
import type { OtelConfig } from "../config.ts"
import { RequestId } from "../schema/errors.ts"
import { makeSpanExporter } from "./span-export.ts"

/**
 * Logs, traces and metrics of a node (docs/observability.md).
 *
 * Logs are one JSON object a line on stdout, with the request id of the request they were written
 * in and, when traces are exported, the trace and span ids. With OTEL_EXPORTER_OTLP_ENDPOINT set,
 * the same records, every span and the metrics go out over OTLP/HTTP too; without it no tracer is
 * installed and spans are not even built (`References.TracerEnabled` is false), so tracing costs
 * nothing when it is off.
 */

const formatted = Logger.formatStructured

/** The JSON log line: timestamp, level, message, requestId, traceId, spanId, annotations, cause. */
export const jsonLogger = Logger.make<unknown, void>((options) => {
  const s = formatted.log(options)
  const requestId = options.fiber.getRef(RequestId)
  const span = options.fiber.cache.span
  const traced = span !== undefined && span.traceId !== "noop"
  const peerLost = isPeerConnectionLost(s.message, s.cause)
  process.stdout.write(JSON.stringify({
    timestamp: s.timestamp,
    level: peerLost ? "WARN" : s.level,
    message: peerLost ? "a cluster peer's connection to this runner ended abruptly (its node stopped or the network failed)" : s.message,
    ...(requestId !== "none" ? { requestId } : {}),
    ...(traced ? { traceId: span.traceId, spanId: span.spanId } : {}),
    ...(Object.keys(s.annotations).length > 0 ? { annotations: s.annotations } : {}),
    ...(s.cause !== undefined ? { cause: s.cause } : {}),
    fiberId: s.fiberId
  }) + "\n")
})

/**
 * The runner's socket server (the library's) logs a peer's connection that breaks off, as when the
 * peer's node is killed, as an unhandled ERROR with a stack trace. It is a node leaving, which the
 * cluster handles (its shards move): a warning, said as such.
 */
const isPeerConnectionLost = (message: unknown, cause: unknown): boolean =>
  message === "Unhandled error in SocketServer" && /SocketError|ECONNRESET|EPIPE/.test(String(cause))

/**
 * Only work that comes from outside starts a trace: a span without a parent is sampled when it is
 * a server span (an HTTP request, an entity message that arrived without a trace), and then with
 * the probability `ratio` (OTEL_TRACES_SAMPLER_ARG). The cluster's own polling, heartbeats and
 * sweeps, whose SQL would otherwise each be a trace of their own every half second, are not
 * exported. A span with a parent follows its parent's decision, so a trace is whole or absent.
 */
export const rootsFromOutside = (tracer: Tracer.Tracer, ratio: number, random: () => number = Math.random): Tracer.Tracer =>
  Tracer.make({
    span: (options) =>
      tracer.span(
        options.parent._tag === "None" && options.sampled && (options.kind !== "server" || !(ratio >= 1 || random() < ratio))
          ? { ...options, sampled: false }
          : options
      ),
    ...(tracer.context ? { context: tracer.context } : {})
  })

const otlp = (config: OtelConfig) => {
  const resource = { serviceName: config.serviceName }
  const url = (signal: string) => `${config.endpoint}/v1/${signal}`
  const Tracing = Layer.effect(
    Tracer.Tracer,
    Effect.map(
      makeSpanExporter({ url: url("traces"), resource, exportInterval: config.traceExportMs, protocol: config.protocol }),
      (tracer) => rootsFromOutside(tracer, config.sampleRatio)
    )
  )
  const Metrics = Layer.effectDiscard(OtlpMetrics.make({ url: url("metrics"), resource, exportInterval: config.metricExportMs }))
  const Logs = Logger.layer([jsonLogger, OtlpLogger.make({ url: url("logs"), resource, exportInterval: config.logExportMs })])
  return Layer.mergeAll(Tracing, Metrics, Logs, Layer.succeed(References.TracerEnabled, true)).pipe(
    Layer.provide(OtlpExporter.layerFlusher),
    Layer.provide(config.protocol === "http/json" ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf),
    // node:http rather than fetch: undici copies each export's body into a web stream
    // (cloneAsUint8Array) and costs more CPU per export on the node's main thread (docs/performance.md).
    Layer.provide(NodeHttpClient.layerNodeHttpOptions({ keepAlive: true }))
  )
}

/** The node's telemetry: JSON logs always; OTLP export of all three signals when configured. */
export const TelemetryLive = (config: OtelConfig | undefined): Layer.Layer<never> =>
  config === undefined
    ? Layer.mergeAll(Logger.layer([jsonLogger]), Layer.succeed(References.TracerEnabled, false))
    : otlp(config)
