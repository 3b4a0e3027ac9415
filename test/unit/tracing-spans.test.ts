import { Effect, Fiber, Layer, Tracer } from "effect"
import { HttpClient, HttpClientResponse, HttpServerRequest, HttpServerResponse } from "effect/http"
import { OtlpExporter, OtlpSerialization, OtlpTracer } from "effect/observability"
import { describe, expect, it } from "vitest"
import { withServerSpan } from "../../src/observability/server-span.ts"
import { makeSpanExporter } from "../../src/observability/span-export.ts"

/**
 * The node's span exporter writes the very OTLP that effect's own OtlpTracer writes for the same
 * spans (docs/observability.md, "Cost"): both export the same program's spans to an HTTP client
 * that keeps the bodies, and the bodies are compared with ids, times and stacks taken out.
 */
const capture = () => {
  const bodies: Array<{ readonly type: string; readonly bytes: Uint8Array }> = []
  const client = HttpClient.make((request) => {
    const body = request.body
    if (body._tag !== "Uint8Array") return Effect.die(new Error(`unexpected body ${body._tag}`))
    bodies.push({ type: body.contentType, bytes: body.body })
    return Effect.succeed(HttpClientResponse.fromWeb(request, new Response("{}", { status: 200, headers: { "content-type": "application/json" } })))
  })
  return { bodies, layer: Layer.succeed(HttpClient.HttpClient, client) }
}

/** Spans of every shape: attributes of each type, an event, a link, a failure, an interruption. */
const program = Effect.gen(function*() {
  const linked = yield* Effect.makeSpan("linked")
  yield* Effect.gen(function*() {
    yield* Effect.annotateCurrentSpan({ s: "text \"quoted\" \u00e9", i: 42, neg: -7, f: 1.5, nan: Number.NaN, inf: Number.POSITIVE_INFINITY, b: true, big: 2n ** 70n, small: 5n, arr: [1, "a", false], obj: { a: 1 }, huge: 2 ** 60 })
    yield* Effect.currentSpan.pipe(Effect.tap((span) => Effect.sync(() => span.event("happened", 123n, { k: "v", n: 1 }))))
    yield* Effect.fail(new Error("it broke")).pipe(Effect.withSpan("failing", { kind: "client" }), Effect.ignore)
    const fiber = yield* Effect.never.pipe(Effect.withSpan("interrupted"), Effect.forkChild)
    yield* Effect.yieldNow
    yield* Fiber.interrupt(fiber)
  }).pipe(Effect.withSpan("root", { kind: "server", links: [{ span: linked, attributes: { why: "test" } }] }))
  linked.end(1n, { _tag: "Success" } as never)
})

type Json = Record<string, unknown>
const normalize = (body: Uint8Array, protobuf: boolean): Json => {
  if (protobuf) return { bytes: body.length }
  const data = JSON.parse(new TextDecoder().decode(body)) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<Json> }> }> }
  const spans = data.resourceSpans[0]!.scopeSpans[0]!.spans
  const names = new Map(spans.map((s) => [s.spanId, s.name]))
  for (const s of spans) {
    s.parent = s.parentSpanId === undefined ? null : names.get(s.parentSpanId) ?? "?"
    for (const k of ["traceId", "spanId", "parentSpanId", "startTimeUnixNano", "endTimeUnixNano"]) delete s[k]
    for (const e of s.events as Array<{ name: string; timeUnixNano?: string; attributes: Array<{ key: string; value: Json }> }>) {
      if (e.name === "exception") delete e.timeUnixNano
      for (const a of e.attributes) if (a.key === "exception.stacktrace") a.value = { stringValue: "(stack)" }
    }
    for (const l of s.links as Array<Json>) delete l.traceId, delete l.spanId
  }
  return { ...data, resourceSpans: [{ ...data.resourceSpans[0], scopeSpans: [{ ...data.resourceSpans[0]!.scopeSpans[0], spans: spans.sort((a, b) => String(a.name).localeCompare(String(b.name))) }] }] }
}

const exportWith = async (which: "library" | "node", protocol: "http/json" | "http/protobuf") => {
  const { bodies, layer } = capture()
  const options = { url: "http://127.0.0.1:9/v1/traces", resource: { serviceName: "parity" }, exportInterval: "1 hour" as const }
  const serialization = protocol === "http/json" ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf
  const tracer = Layer.effect(Tracer.Tracer, which === "library" ? OtlpTracer.make(options) : makeSpanExporter({ ...options, protocol })).pipe(
    Layer.provide([layer, OtlpExporter.layerFlusher, serialization])
  )
  // The exporter sends what it holds when its scope closes.
  await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    yield* Layer.build(Layer.mergeAll(tracer, layer))
    yield* program.pipe(Effect.provide(tracer))
  })))
  expect(bodies).toHaveLength(1)
  return { type: bodies[0]!.type, body: normalize(bodies[0]!.bytes, protocol === "http/protobuf") }
}

describe("makeSpanExporter", () => {
  it("writes the OTLP/JSON that effect's OtlpTracer writes for the same spans", async () => {
    const library = await exportWith("library", "http/json")
    const node = await exportWith("node", "http/json")
    expect(node.type).toBe("application/json")
    expect(node).toEqual(library)
    const spans = (node.body as { resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<{ name: string }> }> }> }).resourceSpans[0]!.scopeSpans[0]!.spans
    expect(spans.map((s) => s.name)).toEqual(["failing", "interrupted", "linked", "root"])
  })

  it("encodes the same spans as protobuf for http/protobuf", async () => {
    const library = await exportWith("library", "http/protobuf")
    const node = await exportWith("node", "http/protobuf")
    expect(node).toEqual({ type: "application/x-protobuf", body: library.body })
  })
})

describe("withServerSpan", () => {
  const run = async (status: number, headers: Record<string, string> = {}) => {
    const spans: Array<Tracer.NativeSpan> = []
    const tracer = Tracer.make({ span: (options) => { const span = new Tracer.NativeSpan(options); spans.push(span); return span } })
    const request = HttpServerRequest.fromWeb(new Request("http://node.test/v1/scraper/jobs?limit=2", { method: "POST", headers: { "user-agent": "ua/1", ...headers } }))
    const inner = Effect.currentSpan.pipe(Effect.map((span) => span.name), Effect.orElseSucceed(() => "none"))
    const seen = await Effect.runPromise(
      withServerSpan(request, inner.pipe(Effect.map((parent) => HttpServerResponse.text(parent, { status })))).pipe(
        Effect.map((response) => response.body),
        Effect.provideService(Tracer.Tracer, tracer)
      )
    )
    return { span: spans[0]!, innerSaw: seen._tag === "Uint8Array" ? new TextDecoder().decode(seen.body) : "?" }
  }

  it("is the request's span, with the HTTP server attributes, and the parent of what the request does", async () => {
    const { span, innerSaw } = await run(201)
    expect(innerSaw).toBe("POST")
    expect(span.kind).toBe("server")
    expect(Object.fromEntries(span.attributes)).toEqual({
      "http.request.method": "POST",
      "url.path": "/v1/scraper/jobs",
      "url.scheme": "http",
      "user_agent.original": "ua/1",
      "http.response.status_code": 201
    })
    expect(span.status._tag === "Ended" && span.status.exit._tag).toBe("Success")
  })

  it("ends failed for a 5xx answer, and continues a caller's traceparent", async () => {
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736"
    const { span } = await run(503, { traceparent: `00-${traceId}-00f067aa0ba902b7-01` })
    expect(span.status._tag === "Ended" && span.status.exit._tag).toBe("Failure")
    expect(span.traceId).toBe(traceId)
    expect(span.parent._tag === "Some" && span.parent.value.spanId).toBe("00f067aa0ba902b7")
  })
})
