import { appendFileSync } from "node:fs"
import { type Socket, connect, createServer } from "node:net"
import { Ajv2020 } from "ajv/dist/2020.js"
import addFormats from "ajv-formats"
import { OpenApi } from "effect/http-api"
import { Api } from "../../src/http/api.ts"

/**
 * The document the server serves at /v1/openapi.json (generated from the same definition; the
 * server only names its own base URL in `servers`).
 */
export const openApiDocument = (): any => OpenApi.fromApi(Api)

/** One response as a client received it, with the request it answered. */
export interface RecordedExchange {
  readonly method: string
  readonly target: string
  readonly status: number
  readonly contentType: string | undefined
  readonly contentEncoding: string | undefined
  /** Undefined when the body did not arrive whole (a stream cut off, a connection closed). */
  readonly body: Buffer | undefined
}

// ---------------------------------------------------------------------------------------------
// Validation against the document
// ---------------------------------------------------------------------------------------------

interface Operation {
  readonly operationId: string
  readonly pattern: RegExp
  readonly method: string
  readonly pointer: string
  readonly responses: Record<string, any>
}

const escapePointer = (s: string) => s.replace(/~/g, "~0").replace(/\//g, "~1")

export const makeConformance = (doc: any = openApiDocument()) => {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true })
  addFormats.default(ajv)
  ajv.addSchema(doc, "trawl-openapi")
  const operations: Array<Operation> = []
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    const pattern = new RegExp("^" + path.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}]+\}/g, "[^/]+") + "$")
    for (const [method, op] of Object.entries<any>(item)) {
      if (typeof op !== "object" || op === null || !op.responses) continue
      operations.push({ operationId: op.operationId, pattern, method: method.toUpperCase(), pointer: `#/paths/${escapePointer(path)}/${method}`, responses: op.responses })
    }
  }
  // As the router: the most literal path that matches is the route (/jobs/bulk, not /jobs/{id}),
  // whatever methods it has; another method on it is a 405 the document does not describe.
  const paramCount = (o: Operation) => (o.pointer.match(/\{/g) ?? []).length
  operations.sort((a, b) => paramCount(a) - paramCount(b))

  const schemaAt = (pointer: string) => {
    const validate = ajv.getSchema(`trawl-openapi${pointer}`)
    if (!validate) throw new Error(`no schema at ${pointer}`)
    return validate
  }

  /** The operation of the document a request is for, if the document describes it. */
  const operationOf = (method: string, target: string) => {
    const path = target.split("?")[0]!
    const route = operations.find((o) => o.pattern.test(path))
    return route && operations.find((o) => o.pattern.source === route.pattern.source && o.method === method)
  }

  /** The operation, status and envelope `code` of an error response the document describes, or undefined. */
  const errorCodeOf = (x: RecordedExchange): { operationId: string; status: number; code: string } | undefined => {
    const op = operationOf(x.method, x.target)
    if (!op || x.status < 400 || x.body === undefined || x.contentEncoding) return undefined
    try {
      const code = JSON.parse(x.body.toString("utf8"))?.code
      return typeof code === "string" ? { operationId: op.operationId, status: x.status, code } : undefined
    } catch {
      return undefined
    }
  }

  /** What is wrong with one response by the document, or undefined. */
  const check = (x: RecordedExchange): string | undefined => {
    const op = operationOf(x.method, x.target)
    if (!op) return undefined
    const where = `${x.method} ${x.target.slice(0, 200)} → ${x.status}`
    const response = op.responses[String(x.status)]
    if (!response) return `${where}: status ${x.status} is not in the document (it lists ${Object.keys(op.responses).join(", ")})`
    // Each error response lists the codes its operation may answer (src/http/error-codes.ts).
    const seen = errorCodeOf(x)
    const listed: ReadonlyArray<string> | undefined = response["x-error-codes"]
    if (seen && listed && !listed.includes(seen.code)) {
      return `${where}: code ${seen.code} is not one the document lists for ${op.operationId} ${x.status} (${listed.join(", ") || "none"}); add it in src/http/error-codes.ts`
    }
    const content = response.content as Record<string, any> | undefined
    const mediaType = x.contentType?.split(";")[0]!.trim().toLowerCase()
    if (!content) {
      return x.body && x.body.length > 0 ? `${where}: a body where the document has none` : undefined
    }
    const described = mediaType && (mediaType in content || `${mediaType.split("/")[0]}/*` in content || "*/*" in content)
    if (!described) return `${where}: content type ${x.contentType} is not one of ${Object.keys(content).join(", ")}`
    if (x.body === undefined || x.contentEncoding || mediaType !== "application/json" || !(mediaType in content)) return undefined
    let body: unknown
    try {
      body = JSON.parse(x.body.toString("utf8"))
    } catch {
      return `${where}: the body is not JSON`
    }
    const validate = schemaAt(`${op.pointer}/responses/${x.status}/content/${escapePointer(mediaType)}/schema`)
    if (validate(body)) return undefined
    return `${where}: body does not match the document: ${ajv.errorsText(validate.errors, { separator: "; " }).slice(0, 1500)}\n  body: ${x.body.toString("utf8").slice(0, 500)}`
  }

  return { check, errorCodeOf, operationOf, schemaAt, ajv, doc }
}

let shared: ReturnType<typeof makeConformance> | undefined
export const conformance = () => (shared ??= makeConformance())

// ---------------------------------------------------------------------------------------------
// Recording: a byte-for-byte TCP relay in front of a test server
// ---------------------------------------------------------------------------------------------

const headerEnd = (buf: Buffer, from: number) => buf.indexOf("\r\n\r\n", from, "latin1")

const parseHead = (text: string) => {
  const [start = "", ...lines] = text.split("\r\n")
  const headers = new Map<string, string>()
  for (const line of lines) {
    const i = line.indexOf(":")
    if (i > 0) {
      const name = line.slice(0, i).trim().toLowerCase()
      const value = line.slice(i + 1).trim()
      headers.set(name, headers.has(name) ? `${headers.get(name)}, ${value}` : value)
    }
  }
  return { start, headers }
}

/** The end of a chunked body starting at `at` (and its bytes), or undefined when it is not all there. */
const readChunked = (buf: Buffer, at: number): { end: number; body: Buffer } | undefined => {
  const parts: Array<Buffer> = []
  let pos = at
  for (;;) {
    const lineEnd = buf.indexOf("\r\n", pos, "latin1")
    if (lineEnd < 0) return undefined
    const size = parseInt(buf.subarray(pos, lineEnd).toString("latin1").split(";")[0]!, 16)
    if (Number.isNaN(size)) return undefined
    pos = lineEnd + 2
    if (size === 0) {
      // Trailers, then the blank line.
      const end = buf.indexOf("\r\n", pos, "latin1")
      if (end < 0) return undefined
      if (end === pos) return { end: end + 2, body: Buffer.concat(parts) }
      const trailersEnd = headerEnd(buf, pos)
      return trailersEnd < 0 ? undefined : { end: trailersEnd + 4, body: Buffer.concat(parts) }
    }
    if (pos + size + 2 > buf.length) return undefined
    parts.push(buf.subarray(pos, pos + size))
    pos += size + 2
  }
}

/** The requests of one connection, in order, as far as they can be read (a malformed one ends the list). */
const parseRequests = (buf: Buffer) => {
  const out: Array<{ method: string; target: string }> = []
  let pos = 0
  while (pos < buf.length) {
    const end = headerEnd(buf, pos)
    if (end < 0) break
    const { start, headers } = parseHead(buf.subarray(pos, end).toString("latin1"))
    const [method, target] = start.split(" ")
    if (!method || !target) break
    out.push({ method, target })
    pos = end + 4
    if (/chunked/i.test(headers.get("transfer-encoding") ?? "")) {
      const chunked = readChunked(buf, pos)
      if (!chunked) break
      pos = chunked.end
    } else {
      const length = Number(headers.get("content-length") ?? "0")
      if (!Number.isSafeInteger(length) || length < 0) break
      pos += length
    }
  }
  return out
}

/** The responses of one connection paired with its requests. */
const parseExchanges = (requestBytes: Buffer, responseBytes: Buffer): Array<RecordedExchange> => {
  const requests = parseRequests(requestBytes)
  const out: Array<RecordedExchange> = []
  let pos = 0
  let index = 0
  while (pos < responseBytes.length) {
    const end = headerEnd(responseBytes, pos)
    if (end < 0) break
    const { start, headers } = parseHead(responseBytes.subarray(pos, end).toString("latin1"))
    const status = Number(start.split(" ")[1])
    pos = end + 4
    if (!Number.isInteger(status)) break
    if (status >= 100 && status < 200) {
      if (status === 101) break
      continue
    }
    const request = requests[index++]
    let body: Buffer | undefined
    if (request?.method === "HEAD" || status === 204 || status === 304) {
      body = Buffer.alloc(0)
    } else if (/chunked/i.test(headers.get("transfer-encoding") ?? "")) {
      const chunked = readChunked(responseBytes, pos)
      body = chunked?.body
      pos = chunked ? chunked.end : responseBytes.length
    } else if (headers.has("content-length")) {
      const length = Number(headers.get("content-length"))
      body = pos + length <= responseBytes.length ? responseBytes.subarray(pos, pos + length) : undefined
      pos += length
    } else {
      // Delimited by the end of the connection.
      body = responseBytes.subarray(pos)
      pos = responseBytes.length
    }
    if (request) {
      out.push({
        method: request.method,
        target: request.target,
        status,
        contentType: headers.get("content-type"),
        contentEncoding: headers.get("content-encoding"),
        body
      })
    }
  }
  return out
}

export interface RecordingRelay {
  readonly port: number
  /** Every exchange so far, of closed and open connections. */
  readonly exchanges: () => Array<RecordedExchange>
  readonly close: () => Promise<void>
}

/**
 * A TCP relay on a free loopback port that passes bytes unchanged to `targetPort` and keeps a copy
 * of both directions, read as HTTP/1.1 exchanges afterwards. It changes nothing a server sees but
 * the client's port: the connection to the server comes from the client's own loopback address, so
 * limits counted per client address stay the client's. No production code is involved.
 */
export const startRecordingRelay = async (targetPort: number): Promise<RecordingRelay> => {
  const connections: Array<{ requests: Array<Buffer>; responses: Array<Buffer> }> = []
  const sockets = new Set<Socket>()
  const server = createServer({ allowHalfOpen: true }, (client) => {
    const record = { requests: [] as Array<Buffer>, responses: [] as Array<Buffer> }
    connections.push(record)
    const from = client.remoteAddress ?? ""
    const localAddress = /^(::ffff:)?127\./.test(from) ? from.replace(/^::ffff:/, "") : undefined
    const upstream = connect({ port: targetPort, host: "127.0.0.1", allowHalfOpen: true, ...(localAddress ? { localAddress } : {}) })
    sockets.add(client).add(upstream)
    client.on("data", (d) => record.requests.push(d))
    upstream.on("data", (d) => record.responses.push(d))
    client.pipe(upstream)
    upstream.pipe(client)
    const closeBoth = () => {
      client.destroy()
      upstream.destroy()
    }
    client.on("error", closeBoth)
    upstream.on("error", closeBoth)
    client.on("close", () => {
      sockets.delete(client)
      upstream.destroy()
    })
    upstream.on("close", () => {
      sockets.delete(upstream)
      // Let what the server sent drain to the client before it is closed.
      if (!client.destroyed) client.end()
    })
  })
  await new Promise<void>((res, rej) => {
    server.once("error", rej)
    server.listen(0, "127.0.0.1", () => res())
  })
  return {
    port: (server.address() as { port: number }).port,
    exchanges: () => connections.flatMap((c) => parseExchanges(Buffer.concat(c.requests), Buffer.concat(c.responses))),
    close: () =>
      new Promise<void>((res) => {
        for (const s of sockets) s.destroy()
        server.close(() => res())
      })
  }
}

/**
 * The mismatches of a relay's exchanges with the document, as one message, or undefined. With
 * `TRAWL_ERROR_CODES_LOG` set to a file, each error's (operation, status, code) is appended to it
 * as a JSON line: what the suite saw, to compare with what the document lists.
 */
export const conformanceFailures = (exchanges: ReadonlyArray<RecordedExchange>): string | undefined => {
  const { check, errorCodeOf } = conformance()
  const log = process.env.TRAWL_ERROR_CODES_LOG
  if (log) {
    const lines = exchanges.map(errorCodeOf).filter((e) => e !== undefined).map((e) => JSON.stringify(e) + "\n")
    if (lines.length > 0) appendFileSync(log, lines.join(""))
  }
  const failures = exchanges.map(check).filter((f): f is string => f !== undefined)
  if (failures.length === 0) return undefined
  const unique = [...new Set(failures)]
  return `${unique.length} response(s) do not match the OpenAPI document:\n${unique.slice(0, 20).join("\n")}`
}
