import { lookup as dnsLookup } from "node:dns"
import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import {
  buildDeliveryHeaders,
  closeWebhookAgents,
  extractionWebhookBody,
  jobWebhookBody,
  sendWebhook,
  type LookupFunction
} from "../../src/webhooks/sender.ts"
import { signPayload, standardWebhookSignature, verifyWebhookSignature } from "../../src/webhooks/signing.ts"

interface Received {
  readonly path: string
  readonly method: string
  readonly headers: IncomingHttpHeaders
  readonly rawHeaderNames: string[]
  readonly body: Buffer
}

let server: Server
let base: string
let received: Received[] = []
const sockets = new Set<import("node:net").Socket>()

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      const path = req.url ?? "/"
      received.push({
        path,
        method: req.method ?? "",
        headers: req.headers,
        rawHeaderNames: req.rawHeaders.filter((_, i) => i % 2 === 0),
        body: Buffer.concat(chunks)
      })
      if (path === "/ok") return res.writeHead(200, { "content-type": "text/plain" }).end("thanks")
      if (path === "/accepted") return res.writeHead(202).end()
      if (path === "/fail") return res.writeHead(500).end("boom")
      if (path === "/gone") return res.writeHead(410).end("gone")
      if (path === "/busy") return res.writeHead(503, { "retry-after": "120" }).end()
      if (path === "/redirect") return res.writeHead(302, { location: `${base}/ok` }).end()
      if (path === "/big") return res.writeHead(200).end("é".repeat(10_000))
      if (path === "/slow") return void setTimeout(() => res.writeHead(200).end("late"), 2_000)
      if (path === "/slow-body") {
        res.writeHead(200)
        res.write("partial")
        return void setTimeout(() => res.end(" rest"), 2_000)
      }
      if (path === "/long-stall") {
        // more than the kept part, then never an end
        res.writeHead(200)
        return void res.write("x".repeat(10_000))
      }
      if (path === "/endless") {
        res.writeHead(200)
        const chunk = "y".repeat(64 * 1024)
        const pump = () => {
          while (!res.destroyed && res.write(chunk));
          if (!res.destroyed) res.once("drain", pump)
        }
        return pump()
      }
      if (path === "/large-complete") return res.writeHead(200).end("z".repeat(900_000))
      if (path === "/cut-body") {
        res.writeHead(200, { "content-length": "100" })
        res.write("partial")
        return void setTimeout(() => res.socket?.destroy(), 50)
      }
      res.writeHead(404).end()
    })
  })
  server.on("connection", (socket) => {
    sockets.add(socket)
    socket.on("close", () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  await closeWebhookAgents()
  for (const socket of sockets) socket.destroy()
  await new Promise<void>((resolve) => server.close(() => resolve()))
})

beforeEach(() => {
  received = []
})

const secret = "receiver-secret-0123456789"
const body = jobWebhookBody({
  jobId: "job_123",
  status: "done",
  httpStatus: 200,
  finalUrl: "https://example.com/",
  classification: null,
  durationMs: 812,
  requestId: "req_abc",
  deliveredAt: new Date("2026-01-01T00:00:00.000Z")
})
const post = (path: string, extra: Partial<Parameters<typeof sendWebhook>[0]> = {}) =>
  sendWebhook({ url: `${base}${path}`, body, headers: { "Content-Type": "application/json" }, ...extra })

describe("buildDeliveryHeaders", () => {
  it("produces every documented job header, signed over the body", () => {
    const headers = buildDeliveryHeaders({ kind: "job", resourceId: "job_123", deliveryId: "dlv_1", secret, body, timestampSeconds: 1_700_000_000 })
    expect(headers).toEqual({
      "Content-Type": "application/json",
      "User-Agent": "service-webhook/1.0",
      "X-Service-Webhook-Version": "1",
      "X-Service-Jobid": "job_123",
      "X-Service-Timestamp": "1700000000",
      "X-Service-Signature": signPayload(secret, 1_700_000_000, body),
      "X-Service-Delivery-Id": "dlv_1",
      "webhook-id": "dlv_1",
      "webhook-timestamp": "1700000000",
      "webhook-signature": standardWebhookSignature(secret, "dlv_1", 1_700_000_000, body)
    })
  })

  it("uses the extraction header names for extractions and defaults the timestamp to now", () => {
    const headers = buildDeliveryHeaders({ kind: "extraction", resourceId: "ext_9", deliveryId: "dlv_2", secret, body })
    expect(Object.keys(headers)).toEqual([
      "Content-Type",
      "User-Agent",
      "X-Service-Extraction-Webhook-Version",
      "X-Service-Extractionid",
      "X-Service-Timestamp",
      "X-Service-Signature",
      "X-Service-Delivery-Id",
      "webhook-id",
      "webhook-timestamp",
      "webhook-signature"
    ])
    expect(headers["X-Service-Extractionid"]).toBe("ext_9")
    expect(Math.abs(Number(headers["X-Service-Timestamp"]) - Date.now() / 1000)).toBeLessThan(5)
  })
})

describe("bodies", () => {
  it("serializes the job body in the documented key order", () => {
    expect(body).toBe(
      '{"jobId":"job_123","status":"done","httpStatus":200,"finalUrl":"https://example.com/","classification":null,"durationMs":812,"requestId":"req_abc","deliveredAt":"2026-01-01T00:00:00.000Z"}'
    )
  })

  it("writes httpStatus as an integer, 0 when the target never answered", () => {
    const failed = JSON.parse(jobWebhookBody({ jobId: "job_9", status: "failed", httpStatus: null, finalUrl: "https://example.com/", classification: "timeout", durationMs: 15000, requestId: "req_x", deliveredAt: "2026-01-01T00:00:00.000Z" }))
    expect(failed.httpStatus).toBe(0)
  })

  it("serializes done and dead extraction bodies in the documented key order", () => {
    const common = {
      extractionId: "ext_1",
      type: "article" as const,
      url: "https://example.com/a",
      metadata: { inputFormat: "html", strategiesUsed: [] },
      requestId: "req_1",
      deliveredAt: "2026-01-01T00:00:00.000Z"
    }
    const done = extractionWebhookBody({ ...common, status: "done", data: { title: "T", content: "C" } })
    expect(Object.keys(JSON.parse(done))).toEqual(["extractionId", "type", "status", "url", "data", "metadata", "requestId", "deliveredAt"])
    const dead = extractionWebhookBody({ ...common, status: "dead", errorClass: "llm_timeout", errorMessage: "took too long" })
    expect(Object.keys(JSON.parse(dead))).toEqual(["extractionId", "type", "status", "url", "errorClass", "errorMessage", "metadata", "requestId", "deliveredAt"])
    expect(JSON.parse(dead)).not.toHaveProperty("data")
  })
})

describe("sendWebhook against a loopback receiver", () => {
  it("delivers exactly the documented headers and bytes; the receiver verifies them", async () => {
    const headers = buildDeliveryHeaders({ kind: "job", resourceId: "job_123", deliveryId: "dlv_1", secret, body })
    const result = await sendWebhook({ url: `${base}/ok`, body, headers })
    expect(result).toMatchObject({ ok: true, httpStatus: 200, error: null, responseBody: "thanks", retryAfter: null })
    expect(result.durationMs).toBeGreaterThanOrEqual(0)

    const [request] = received
    expect(request!.method).toBe("POST")
    expect(request!.body.toString("utf8")).toBe(body)
    // Every header we set, spelled as documented, plus only what HTTP/1.1 itself needs.
    const transport = ["host", "content-length", "connection"]
    const names = request!.rawHeaderNames.filter((name) => !transport.includes(name.toLowerCase()))
    expect(names.sort()).toEqual(Object.keys(headers).sort())
    for (const [name, value] of Object.entries(headers)) expect(request!.headers[name.toLowerCase()]).toBe(value)
    expect(Number(request!.headers["content-length"])).toBe(Buffer.byteLength(body))

    expect(verifyWebhookSignature({ rawBody: request!.body, headers: request!.headers, secret })).toMatchObject({ ok: true, deliveryId: "dlv_1" })
  })

  it("treats any 2xx as success and reports non-2xx with their status", async () => {
    expect(await post("/accepted")).toMatchObject({ ok: true, httpStatus: 202, responseBody: "" })
    expect(await post("/fail")).toMatchObject({ ok: false, httpStatus: 500, error: null, responseBody: "boom" })
    expect(await post("/gone")).toMatchObject({ ok: false, httpStatus: 410 })
    expect(await post("/busy")).toMatchObject({ ok: false, httpStatus: 503, retryAfter: "120" })
  })

  it("does not follow redirects", async () => {
    const result = await post("/redirect")
    expect(result).toMatchObject({ ok: false, httpStatus: 302, error: null })
    expect(received.map((r) => r.path)).toEqual(["/redirect"])
  })

  it("times out a slow receiver", async () => {
    const result = await post("/slow", { timeoutMs: 200 })
    expect(result).toMatchObject({ ok: false, httpStatus: null, error: "timeout" })
    expect(result.durationMs).toBeGreaterThanOrEqual(190)
    expect(result.durationMs).toBeLessThan(1_500)
  })

  it("does not count a 2xx whose body never ends as delivered, keeping its status and what arrived", async () => {
    const slow = await post("/slow-body", { timeoutMs: 300 })
    expect(slow).toMatchObject({ ok: false, httpStatus: 200, error: "timeout", responseBody: "partial" })
    const cut = await post("/cut-body")
    expect(cut).toMatchObject({ ok: false, httpStatus: 200, responseBody: "partial" })
    expect(cut.error).not.toBeNull()
  })

  it("reads a 2xx body past the kept part to its end: one that stalls or never ends is no answer", async () => {
    const stalled = await post("/long-stall", { timeoutMs: 300 })
    expect(stalled).toMatchObject({ ok: false, httpStatus: 200, error: "timeout", responseBody: "x".repeat(4096) })
    const endless = await post("/endless")
    expect(endless).toMatchObject({ ok: false, httpStatus: 200, error: "response_too_large" })
    // a long body that ends is an answer; its start is kept
    const complete = await post("/large-complete")
    expect(complete).toMatchObject({ ok: true, httpStatus: 200, error: null, responseBody: "z".repeat(4096) })
  })

  it("truncates the response body to the cap without splitting a character", async () => {
    const result = await post("/big", { maxResponseBytes: 101 })
    expect(result.ok).toBe(true)
    expect(result.responseBody).toBe("é".repeat(50))
    expect((await post("/big")).responseBody).toBe("é".repeat(2048))
  })

  it("maps connection failures and bad URLs to short codes", async () => {
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve))
    const port = (closed.address() as AddressInfo).port
    await new Promise<void>((resolve) => closed.close(() => resolve()))
    expect(await sendWebhook({ url: `http://127.0.0.1:${port}/`, body, headers: {} })).toMatchObject({
      ok: false,
      httpStatus: null,
      error: "connection_refused"
    })
    expect(await sendWebhook({ url: "ftp://127.0.0.1/", body, headers: {} })).toMatchObject({ error: "invalid_url" })
    expect(await sendWebhook({ url: "not a url", body, headers: {} })).toMatchObject({ error: "invalid_url" })
  })

  it("resolves through the caller's lookup guard, for host names and IP literals", async () => {
    const asked: string[] = []
    const refuse: LookupFunction = (hostname, _options, callback) => {
      asked.push(hostname)
      callback(Object.assign(new Error(`${hostname} is not a public address`), { code: "EUNSAFE" }), [])
    }
    const allow: LookupFunction = (hostname, options, callback) => {
      asked.push(hostname)
      dnsLookup(hostname, { ...options, all: true }, callback as never)
    }
    const port = new URL(base).port
    expect(await sendWebhook({ url: `${base}/ok`, body, headers: {}, lookup: refuse })).toMatchObject({ ok: false, error: "unsafe_url" })
    expect(await sendWebhook({ url: `http://localhost:${port}/ok`, body, headers: {}, lookup: refuse })).toMatchObject({ ok: false, error: "unsafe_url" })
    expect(await sendWebhook({ url: `http://localhost:${port}/ok`, body, headers: {}, lookup: allow })).toMatchObject({ ok: true, httpStatus: 200 })
    expect(asked).toEqual(["127.0.0.1", "localhost", "localhost"])
    expect(received.map((r) => r.path)).toEqual(["/ok"])
    // Closing the pooled agents does not break later sends through the same guard.
    await closeWebhookAgents()
    expect(await sendWebhook({ url: `http://localhost:${port}/ok`, body, headers: {}, lookup: allow })).toMatchObject({ ok: true })
    expect(await post("/ok")).toMatchObject({ ok: true })
  })
})
