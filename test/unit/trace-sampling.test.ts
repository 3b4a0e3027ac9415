import { Context, Option, Tracer } from "effect"
import { describe, expect, it } from "vitest"
import { rootsFromOutside } from "../../src/observability/telemetry.ts"

/** The sampling of exported traces (docs/observability.md, "Traces"), on a tracer that only records its calls. */
describe("rootsFromOutside", () => {
  const recording = () => {
    const sampled: Array<boolean> = []
    const tracer = Tracer.make({
      span: (options) => {
        sampled.push(options.sampled)
        return Tracer.nativeTracer.span(options)
      }
    })
    return { tracer, sampled }
  }
  const options = (kind: Tracer.SpanKind, parent?: Tracer.AnySpan) => ({
    name: "s",
    parent: parent ? Option.some(parent) : Option.none(),
    annotations: Context.empty(),
    links: [],
    startTime: 0n,
    kind,
    root: false,
    sampled: parent ? parent.sampled : true
  })
  const parent = (sampled: boolean) => Tracer.externalSpan({ traceId: "a".repeat(32), spanId: "b".repeat(16), sampled })

  it("starts traces only at server spans, and keeps a parent's decision below", () => {
    const { tracer, sampled } = recording()
    const t = rootsFromOutside(tracer, 1)
    t.span(options("server"))
    t.span(options("client"))
    t.span(options("internal"))
    t.span(options("client", parent(true)))
    t.span(options("server", parent(false)))
    expect(sampled).toEqual([true, false, false, true, false])
  })

  it("samples the traces it starts by the ratio", () => {
    const { tracer, sampled } = recording()
    const draws = [0.1, 0.3, 0.29, 0.9]
    const t = rootsFromOutside(tracer, 0.3, () => draws.shift()!)
    for (let i = 0; i < 4; i++) t.span(options("server"))
    // A span below follows its parent: one of a picked request is exported.
    t.span(options("internal", parent(true)))
    expect(sampled).toEqual([true, false, true, false, true])
    const none = recording()
    rootsFromOutside(none.tracer, 0).span(options("server"))
    expect(none.sampled).toEqual([false])
  })
})
