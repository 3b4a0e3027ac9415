import { createServer, type Server } from "node:http"

/**
 * An OTLP/HTTP receiver for tests, on loopback: it takes what an exporter POSTs to `/v1/traces`,
 * `/v1/metrics` and `/v1/logs`, in JSON (`application/json`) or protobuf
 * (`application/x-protobuf`), and keeps the spans, metric names and log records. The protobuf
 * reading is a small wire-format walk over the fields these tests look at (opentelemetry-proto's
 * trace, metrics and logs messages), not a general decoder.
 */

export interface ReceivedSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string
  readonly name: string
  readonly kind: number
  readonly attributes: Record<string, string | number | boolean>
  /** The resource attributes of the node that sent it (service.name, service.instance.id, ...). */
  readonly resource: Record<string, string | number | boolean>
}

export interface ReceivedLog {
  readonly traceId: string
  readonly body: unknown
}

export interface OtlpReceiver {
  readonly url: string
  readonly spans: Array<ReceivedSpan>
  readonly metricNames: Set<string>
  readonly logs: Array<ReceivedLog>
  /** Content types of the requests, per signal path. */
  readonly contentTypes: Map<string, Set<string>>
  readonly close: () => Promise<void>
}

// --- protobuf wire format ---------------------------------------------------------------------

type Field = { readonly no: number; readonly wire: number; readonly int: bigint; readonly bytes: Buffer }

const fields = (buf: Buffer): Array<Field> => {
  const out: Array<Field> = []
  let i = 0
  const varint = (): bigint => {
    let result = 0n
    let shift = 0n
    for (;;) {
      const b = buf[i++]!
      result |= BigInt(b & 0x7f) << shift
      if ((b & 0x80) === 0) return result
      shift += 7n
    }
  }
  while (i < buf.length) {
    const key = Number(varint())
    const no = key >>> 3
    const wire = key & 7
    if (wire === 0) out.push({ no, wire, int: varint(), bytes: Buffer.alloc(0) })
    else if (wire === 1) {
      out.push({ no, wire, int: buf.readBigUInt64LE(i), bytes: buf.subarray(i, i + 8) })
      i += 8
    } else if (wire === 2) {
      const len = Number(varint())
      out.push({ no, wire, int: 0n, bytes: buf.subarray(i, i + len) })
      i += len
    } else if (wire === 5) {
      out.push({ no, wire, int: BigInt(buf.readUInt32LE(i)), bytes: buf.subarray(i, i + 4) })
      i += 4
    } else throw new Error(`unsupported protobuf wire type ${wire}`)
  }
  return out
}

const all = (buf: Buffer, no: number) => fields(buf).filter((f) => f.no === no)
const one = (buf: Buffer, no: number) => fields(buf).find((f) => f.no === no)

/** opentelemetry.proto.common.v1.AnyValue */
const anyValue = (buf: Buffer): unknown => {
  const f = fields(buf)[0]
  if (!f) return undefined
  switch (f.no) {
    case 1: return f.bytes.toString("utf8")
    case 2: return f.int !== 0n
    case 3: return Number(BigInt.asIntN(64, f.int))
    case 4: return f.bytes.readDoubleLE(0)
    default: return f.bytes.toString("hex")
  }
}

/** A list of opentelemetry.proto.common.v1.KeyValue */
const keyValues = (list: Array<Field>): Record<string, string | number | boolean> =>
  Object.fromEntries(list.map((kv) => [one(kv.bytes, 1)?.bytes.toString("utf8") ?? "", anyValue(one(kv.bytes, 2)?.bytes ?? Buffer.alloc(0)) as string]))

const resourceAttributes = (resource: Buffer | undefined) => (resource ? keyValues(all(resource, 1)) : {})

const spansFromProtobuf = (buf: Buffer): Array<ReceivedSpan> =>
  all(buf, 1).flatMap((rs) => {
    const resource = resourceAttributes(one(rs.bytes, 1)?.bytes)
    return all(rs.bytes, 2).flatMap((ss) =>
      all(ss.bytes, 2).map((s) => ({
        traceId: one(s.bytes, 1)?.bytes.toString("hex") ?? "",
        spanId: one(s.bytes, 2)?.bytes.toString("hex") ?? "",
        parentSpanId: one(s.bytes, 4)?.bytes.toString("hex") ?? "",
        name: one(s.bytes, 5)?.bytes.toString("utf8") ?? "",
        kind: Number(one(s.bytes, 6)?.int ?? 0n),
        attributes: keyValues(all(s.bytes, 9)),
        resource
      }))
    )
  })

const metricNamesFromProtobuf = (buf: Buffer): Array<string> =>
  all(buf, 1).flatMap((rm) => all(rm.bytes, 2).flatMap((sm) => all(sm.bytes, 2).map((m) => one(m.bytes, 1)?.bytes.toString("utf8") ?? "")))

const logsFromProtobuf = (buf: Buffer): Array<ReceivedLog> =>
  all(buf, 1).flatMap((rl) =>
    all(rl.bytes, 2).flatMap((sl) =>
      all(sl.bytes, 2).map((r) => ({ traceId: one(r.bytes, 9)?.bytes.toString("hex") ?? "", body: anyValue(one(r.bytes, 5)?.bytes ?? Buffer.alloc(0)) }))
    )
  )

// --- JSON -------------------------------------------------------------------------------------

type JsonKeyValue = { key: string; value: Record<string, unknown> }
const jsonAttributes = (list: ReadonlyArray<JsonKeyValue> | undefined) =>
  Object.fromEntries((list ?? []).map((kv) => [kv.key, Object.values(kv.value)[0] as string]))

const spansFromJson = (body: any): Array<ReceivedSpan> =>
  (body.resourceSpans ?? []).flatMap((rs: any) =>
    (rs.scopeSpans ?? []).flatMap((ss: any) =>
      (ss.spans ?? []).map((s: any) => ({
        traceId: s.traceId,
        spanId: s.spanId,
        parentSpanId: s.parentSpanId ?? "",
        name: s.name,
        kind: s.kind,
        attributes: jsonAttributes(s.attributes),
        resource: jsonAttributes(rs.resource?.attributes)
      }))
    )
  )

const metricNamesFromJson = (body: any): Array<string> =>
  (body.resourceMetrics ?? []).flatMap((rm: any) => (rm.scopeMetrics ?? []).flatMap((sm: any) => (sm.metrics ?? []).map((m: any) => m.name)))

const logsFromJson = (body: any): Array<ReceivedLog> =>
  (body.resourceLogs ?? []).flatMap((rl: any) =>
    (rl.scopeLogs ?? []).flatMap((sl: any) => (sl.logRecords ?? []).map((r: any) => ({ traceId: r.traceId ?? "", body: r.body ? Object.values(r.body)[0] : undefined })))
  )

export const startOtlpReceiver = async (): Promise<OtlpReceiver> => {
  const spans: Array<ReceivedSpan> = []
  const metricNames = new Set<string>()
  const logs: Array<ReceivedLog> = []
  const contentTypes = new Map<string, Set<string>>()
  const server: Server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const body = Buffer.concat(chunks)
      const type = (req.headers["content-type"] ?? "").split(";")[0]!.trim()
      const path = req.url ?? ""
      contentTypes.set(path, (contentTypes.get(path) ?? new Set()).add(type))
      try {
        const json = type === "application/json" ? JSON.parse(body.toString("utf8")) : undefined
        if (path === "/v1/traces") spans.push(...(json ? spansFromJson(json) : spansFromProtobuf(body)))
        else if (path === "/v1/metrics") for (const n of json ? metricNamesFromJson(json) : metricNamesFromProtobuf(body)) metricNames.add(n)
        else if (path === "/v1/logs") logs.push(...(json ? logsFromJson(json) : logsFromProtobuf(body)))
        else {
          res.writeHead(404).end()
          return
        }
      } catch (e) {
        res.writeHead(400, { "content-type": "text/plain" }).end(String(e))
        return
      }
      res.writeHead(200, { "content-type": type === "application/json" ? "application/json" : "application/x-protobuf" }).end(type === "application/json" ? "{}" : undefined)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as { port: number }
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    metricNames,
    logs,
    contentTypes,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
  }
}
