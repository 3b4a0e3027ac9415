import fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { conformance, openApiDocument } from "./support/openapi-conformance.ts"
import { arbitraryOf } from "./support/schema-arbitrary.ts"
import { client, type RunningServer, startServer } from "./support/server-process.ts"

/**
 * Requests generated from the document's own request schemas, against a real server: every one the
 * document calls valid gets an answer below 500, and every 2xx body is what the document says.
 * Bounded and seeded so a CI run is the same every time (TRAWL_PROPERTY_RUNS and
 * TRAWL_PROPERTY_SEED change them for a longer local hunt).
 */
const RUNS = Number(process.env.TRAWL_PROPERTY_RUNS ?? 20)
const SEED = Number(process.env.TRAWL_PROPERTY_SEED ?? 26)

const doc = openApiDocument()
/** The event stream never ends by itself; its answer is checked by the jobs tests. */
const skipped = new Set(["jobs.events"])
// Nothing listens on the discard port: generated URLs point at it, never off the machine.
const LOOPBACK_URL = "http://127.0.0.1:9"

interface Case {
  readonly operationId: string
  readonly method: string
  readonly path: string
  readonly op: any
}
const cases: Array<Case> = []
for (const [path, item] of Object.entries<any>(doc.paths)) {
  for (const [method, op] of Object.entries<any>(item)) {
    if (op?.operationId && !skipped.has(op.operationId)) cases.push({ operationId: op.operationId, method: method.toUpperCase(), path, op })
  }
}

const requestOf = (c: Case) => {
  const parameters: Array<any> = c.op.parameters ?? []
  const pathParams = parameters.filter((p) => p.in === "path")
  const others = parameters.filter((p) => p.in === "query" || p.in === "header")
  const body = c.op.requestBody?.content?.["application/json"]?.schema
  return fc.record({
    path: fc.tuple(...pathParams.map(() => fc.stringMatching(/^[A-Za-z0-9_-]{1,40}$/)), fc.constant(0)).map((values) => {
      let path = c.path
      pathParams.forEach((p, i) => (path = path.replace(`{${p.name}}`, encodeURIComponent(String(values[i])))))
      return path
    }),
    params: fc.record(
      Object.fromEntries(others.map((p) => [`${p.in}:${p.name}`, arbitraryOf(p.schema, doc, LOOPBACK_URL)])),
      { requiredKeys: others.filter((p) => p.required).map((p) => `${p.in}:${p.name}`) }
    ),
    body: body ? arbitraryOf(body, doc, LOOPBACK_URL) : fc.constant(undefined)
  })
}

describe("requests the document calls valid", () => {
  let server: RunningServer
  let key: string
  beforeAll(async () => {
    server = await startServer()
    key = (await client(server.baseUrl).createTenant()).apiKey
  })
  afterAll(async () => {
    await server?.stop()
  })

  it.each(cases.map((c) => [c.operationId, c] as const))("%s: answered below 500, a 2xx as documented", async (_id, c) => {
    const { check } = conformance()
    await fc.assert(
      fc.asyncProperty(requestOf(c), async (req) => {
        const query = new URLSearchParams()
        const headers: Record<string, string> = { "x-api-key": key }
        for (const [where, value] of Object.entries(req.params)) {
          if (value === undefined) continue
          const [kind, name] = where.split(":") as [string, string]
          if (kind === "query") query.set(name, String(value))
          else headers[name] = String(value)
        }
        if (req.body !== undefined) headers["content-type"] = "application/json"
        const target = req.path + (query.size > 0 ? `?${query}` : "")
        const res = await fetch(server.baseUrl + target, {
          method: c.method,
          headers,
          body: req.body === undefined ? undefined : JSON.stringify(req.body)
        })
        const bytes = Buffer.from(await res.arrayBuffer())
        expect(res.status, `${c.method} ${target}: ${bytes.toString("utf8").slice(0, 500)}`).toBeLessThan(500)
        if (res.status >= 200 && res.status < 300) {
          const mismatch = check({
            method: c.method,
            target,
            status: res.status,
            contentType: res.headers.get("content-type") ?? undefined,
            contentEncoding: res.headers.get("content-encoding") ?? undefined,
            body: bytes
          })
          expect(mismatch).toBeUndefined()
        }
      }),
      { numRuns: RUNS, seed: SEED, endOnFailure: true }
    )
  })
})
