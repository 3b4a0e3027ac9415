import { describe, expect, it } from "vitest"
import { Effect, Layer, Schema } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { envelopeMiddleware, routeTable } from "../../src/http/envelope-middleware.ts"
import { Success } from "../../src/schema/envelope.ts"
import { Conflict, errors } from "../../src/schema/errors.ts"

const Api = HttpApi.make("t").add(
  HttpApiGroup.make("g").add(
    HttpApiEndpoint.post("make", "/things", {
      payload: Schema.Struct({ n: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 10 })) }),
      success: Success(Schema.Struct({ n: Schema.Int }), 201),
      error: errors(Conflict)
    }),
    HttpApiEndpoint.get("boom", "/boom", { success: Success(Schema.String) }),
    HttpApiEndpoint.get("conflict", "/conflict", { success: Success(Schema.String), error: errors(Conflict) }),
    HttpApiEndpoint.get("interrupted", "/interrupted", { success: Success(Schema.String) })
  )
).annotate(HttpApi.PayloadParseOptions, { errors: "all", onExcessProperty: "error" })

const Handlers = HttpApiBuilder.group(Api, "g", (h) =>
  h.handle("make", ({ payload }) => Effect.succeed({ n: payload.n }))
    .handle("boom", () => Effect.die(new Error("secret internal detail")))
    .handle("conflict", () => Effect.fail(new Conflict({ code: "cannot_replay_done", message: "no", retryAfter: 7 })))
    .handle("interrupted", () => Effect.interrupt))

const routes = [{ method: "POST", path: "/things" }, { method: "GET", path: "/boom" }, { method: "GET", path: "/conflict" }, { method: "GET", path: "/interrupted" }]
const { handler } = HttpRouter.toWebHandler(
  Layer.mergeAll(HttpApiBuilder.layer(Api).pipe(Layer.provide(Handlers)), envelopeMiddleware(routeTable(routes))).pipe(
    Layer.provide(HttpServer.layerServices)
  ),
  { disableLogger: true }
)

const call = async (method: string, path: string, body?: string) => {
  // As a Node request arrives: a body comes with its length.
  const headers: Record<string, string> = body ? { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) } : {}
  const res = await handler(new Request(`http://x${path}`, { method, body, headers }))
  return { status: res.status, headers: res.headers, json: await res.json() as any }
}

describe("envelope middleware", () => {
  it("wraps success data in the envelope with the endpoint's status", async () => {
    const r = await call("POST", "/things", JSON.stringify({ n: 3 }))
    expect(r.status).toBe(201)
    expect(r.json).toEqual({ status: "success", code: "201-created", data: { n: 3 } })
    expect(r.headers.get("x-request-id")).toMatch(/^req_/)
  })

  it("turns a defect into 500 internal_error without any internal detail", async () => {
    const r = await call("GET", "/boom")
    expect(r.status).toBe(500)
    expect(r.json.code).toBe("internal_error")
    expect(r.json.error.requestId).toBe(r.headers.get("x-request-id"))
    expect(JSON.stringify(r.json)).not.toContain("secret internal detail")
  })

  it("answers work interrupted by the cluster with 503 and Retry-After, not 500", async () => {
    const r = await call("GET", "/interrupted")
    expect(r.status).toBe(503)
    expect(r.json.code).toBe("dependency_unavailable")
    expect(r.headers.get("retry-after")).toBe("1")
  })

  it("encodes a typed ApiError with its status and Retry-After", async () => {
    const r = await call("GET", "/conflict")
    expect(r.status).toBe(409)
    expect(r.json).toMatchObject({ status: "error", code: "cannot_replay_done", error: { message: "no" } })
    expect(r.headers.get("retry-after")).toBe("7")
  })

  it("reports each offending path of a payload", async () => {
    const r = await call("POST", "/things", JSON.stringify({ n: 11, extra: true }))
    expect(r.status).toBe(400)
    const byPath = Object.fromEntries(r.json.error.details.map((d: any) => [d.path, d]))
    expect(Object.keys(byPath).sort()).toEqual(["extra", "n"])
    expect(byPath.n).toMatchObject({ code: "invalid_value", message: expect.stringContaining("between 1 and 10") })
    expect(byPath.extra).toMatchObject({ code: "unknown_field" })
  })

  it("answers 404 and 405 in the envelope", async () => {
    const missing = await call("GET", "/nothing")
    expect(missing.status).toBe(404)
    expect(missing.json).toMatchObject({ status: "error", code: "not_found" })
    const r = await call("DELETE", "/things")
    expect(r.status).toBe(405)
    expect(r.json).toMatchObject({ status: "error", code: "method_not_allowed" })
    expect(r.headers.get("allow")).toBe("POST")
  })
})
