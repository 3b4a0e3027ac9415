import { Cause, Duration, Effect, Exit, Formatter, Option, Tracer, Version } from "effect"
import { HttpBody } from "effect/http"
import { OtlpExporter, OtlpResource, OtlpSerialization } from "effect/observability"

/**
 * The node's OTLP span exporter (docs/observability.md, "Cost"). It speaks the same OTLP as
 * `effect/observability`'s `OtlpTracer`, at less CPU per span: an ended span waits in the batch as
 * it is, and the batch is written straight to OTLP/JSON text when it goes out, instead of each span
 * being copied into OTLP objects when it ends and the objects serialized again. For
 * `http/protobuf` the same text is read back and encoded by the library.
 */

const KIND: Record<Tracer.SpanKind, number> = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 }
const STATUS = { unset: 0, ok: 1, error: 2 } as const
const INT64 = 2 ** 63

/** A span that, once ended and sampled, joins the batch unconverted. */
class ExportedSpan extends Tracer.NativeSpan {
  private readonly batch: (span: ExportedSpan) => void
  constructor(options: ConstructorParameters<typeof Tracer.NativeSpan>[0], batch: (span: ExportedSpan) => void) {
    super(options)
    this.batch = batch
  }
  override end(endTime: bigint, exit: Exit.Exit<unknown, unknown>): void {
    if (this.status._tag === "Ended") return
    super.end(endTime, exit)
    if (this.sampled) this.batch(this)
  }
}

const str = JSON.stringify

/** An OTLP/JSON `AnyValue`, as the library writes it (`OtlpResource.unknownToAttributeValue`). */
export const anyValueJson = (value: unknown): string => {
  if (Array.isArray(value)) return `{"arrayValue":{"values":[${value.map(anyValueJson).join(",")}]}}`
  switch (typeof value) {
    case "string":
      return `{"stringValue":${str(value)}}`
    case "boolean":
      return `{"boolValue":${value}}`
    case "bigint":
      return BigInt.asIntN(64, value) === value ? `{"intValue":"${value}"}` : `{"stringValue":"${value}"}`
    case "number":
      if (Number.isInteger(value) && value >= -INT64 && value < INT64) {
        return Number.isSafeInteger(value) ? `{"intValue":${value}}` : `{"intValue":"${BigInt(value)}"}`
      }
      // OTLP/JSON writes NaN and the infinities as strings; JSON would make them null.
      return Number.isFinite(value) ? `{"doubleValue":${value}}` : `{"doubleValue":"${value}"}`
    default:
      return `{"stringValue":${str(Formatter.format(value))}}`
  }
}

/** The `KeyValue`s of an OTLP attribute list, without its brackets. */
const attributesJson = (entries: Iterable<readonly [string, unknown]>): string => {
  let out = ""
  for (const [key, value] of entries) out += `${out === "" ? "" : ","}{"key":${str(key)},"value":${anyValueJson(value)}}`
  return out
}

const eventJson = (name: string, at: bigint, attributes: string) =>
  `{"name":${str(name)},"timeUnixNano":"${at}","attributes":${attributes},"droppedAttributesCount":0}`

/** One span in OTLP/JSON; its status and exception events from its exit, as the library does. */
export const spanJson = (span: Tracer.NativeSpan): string => {
  const status = span.status as Extract<Tracer.SpanStatus, { _tag: "Ended" }>
  // The common span has attributes and nothing else: no copies of empty collections for it.
  let attributes = span._attributes === undefined ? "" : attributesJson(span._attributes)
  let events = span._events === undefined ? "" : span._events.map(([name, at, attrs]) => eventJson(name, at, `[${attributesJson(Object.entries(attrs ?? {}))}]`)).join(",")
  let code: number = STATUS.ok
  let message = ""
  if (Exit.isFailure(status.exit)) {
    if (Cause.hasInterruptsOnly(status.exit.cause)) {
      code = STATUS.unset
      attributes += `${attributes === "" ? "" : ","}${attributesJson([["effect.fiber.interrupted", true]])}`
    } else {
      const errors = Cause.prettyErrors(status.exit.cause)
      if (errors.length > 0) {
        code = STATUS.error
        message = `,"message":${str(errors[0]!.message)}`
      }
      for (const error of errors) {
        const exception = eventJson("exception", status.endTime, `[${attributesJson([
          ["exception.type", error.name],
          ["exception.message", error.message],
          ["exception.stacktrace", error.stack ?? "No stack trace available"]
        ])}]`)
        events += `${events === "" ? "" : ","}${exception}`
      }
    }
  }
  const links = span.links.length === 0 ? "" : span.links.map((link) =>
    `{"traceId":"${link.span.traceId.padStart(32, "0")}","spanId":"${link.span.spanId}","attributes":[${attributesJson(Object.entries(link.attributes))}],"droppedAttributesCount":0}`
  ).join(",")
  const parent = Option.isSome(span.parent) ? `"parentSpanId":"${span.parent.value.spanId}",` : ""
  return `{"traceId":"${span.traceId.padStart(32, "0")}","spanId":"${span.spanId}",${parent}"name":${str(span.name)},"kind":${KIND[span.kind]},` +
    `"startTimeUnixNano":"${status.startTime}","endTimeUnixNano":"${status.endTime}","attributes":[${attributes}],"droppedAttributesCount":0,` +
    `"events":[${events}],"droppedEventsCount":0,"status":{"code":${code}${message}},"links":[${links}],"droppedLinksCount":0}`
}

/**
 * A tracer whose sampled spans go to `url` as OTLP (`protocol`, the serialization provided being
 * the same protocol's), every `exportInterval` or per 1000 spans, as `OtlpTracer.make` does.
 */
export const makeSpanExporter = (options: {
  readonly url: string
  readonly resource: { readonly serviceName: string }
  readonly exportInterval: Duration.Input
  readonly protocol: "http/json" | "http/protobuf"
}) =>
  Effect.gen(function*() {
    const resource = str(yield* OtlpResource.fromConfig(options.resource))
    const scope = str({ name: "effect", version: Version.getCurrentVersion() })
    const serialization = yield* OtlpSerialization.OtlpSerialization
    const exporter = yield* OtlpExporter.make({
      label: "OtlpTracer",
      url: options.url,
      headers: undefined,
      exportInterval: options.exportInterval,
      maxBatchSize: 1000,
      shutdownTimeout: Duration.seconds(3),
      body: (spans: Array<ExportedSpan>) => {
        const json = `{"resourceSpans":[{"resource":${resource},"scopeSpans":[{"scope":${scope},"spans":[${spans.map(spanJson).join(",")}]}]}]}`
        return [options.protocol === "http/json" ? HttpBody.text(json, "application/json") : serialization.traces(JSON.parse(json)), Effect.void] as const
      }
    })
    const batch = (span: ExportedSpan) => exporter.push(span)
    return Tracer.make({ span: (spanOptions) => new ExportedSpan(spanOptions, batch) })
  })
