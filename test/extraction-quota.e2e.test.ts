import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { client, INTERNAL_TOKEN, type RunningServer, startServer } from "./support/server-process.ts"

describe("extractor.extractions.daily", () => {
  let server: RunningServer
  let api: ReturnType<typeof client>

  beforeAll(async () => {
    server = await startServer({ ALLOW_PRIVATE_TARGETS: "true" })
    api = client(server.baseUrl)
  })
  afterAll(async () => {
    await server?.stop()
  })

  it("refuses an extraction over the daily quota with 429 quota_exceeded and Retry-After to the next UTC day", async () => {
    const t = await api.createTenant()
    const admin = await api.call("POST", "/internal/v1/internal-admins", { token: INTERNAL_TOKEN, body: { email: `quota-${Date.now()}@trawl.dev` } })
    const set = await api.call("PUT", `/v1/admin/tenants/${t.tenantId}/quotas/extractor.extractions.daily`, {
      key: admin.json.data.apiKey,
      body: { limit: 1 }
    })
    expect(set.status).toBe(200)
    const body = { type: "article", input: "<html><body><h1>Title</h1><p>Some words here.</p></body></html>" }
    expect((await api.post("/v1/extractor/extractions", body, t.apiKey)).status).toBe(201)
    const refused = await api.post("/v1/extractor/extractions", body, t.apiKey)
    expect(refused.status).toBe(429)
    expect(refused.json.code).toBe("quota_exceeded")
    const now = new Date()
    const toMidnight = (Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1) - now.getTime()) / 1000
    expect(Math.abs(Number(refused.headers.get("retry-after")) - toMidnight)).toBeLessThan(10)
    // Another tenant is not affected.
    const other = await api.createTenant()
    expect((await api.post("/v1/extractor/extractions", body, other.apiKey)).status).toBe(201)
  })

  it("gives its place back when the request fails after taking it (the webhook URL finds no place)", async () => {
    const t = await api.createTenant()
    const admin = await api.call("POST", "/internal/v1/internal-admins", { token: INTERNAL_TOKEN, body: { email: `quota-back-${Date.now()}@trawl.dev` } })
    for (const [key, limit] of [["extractor.extractions.daily", 1], ["webhooks.endpoints.total", 0]] as const) {
      expect((await api.call("PUT", `/v1/admin/tenants/${t.tenantId}/quotas/${key}`, { key: admin.json.data.apiKey, body: { limit } })).status).toBe(200)
    }
    const input = "<h1>Place</h1><p>Some words here.</p>"
    const refused = await api.post("/v1/extractor/extractions", { type: "article", input, webhookUrl: "http://127.0.0.1:9/hook" }, t.apiKey)
    expect(refused.status, refused.text).toBe(429)
    expect(refused.json.error.details?.[0]?.path).toBe("webhookUrl")
    expect((await api.post("/v1/extractor/extractions", { type: "article", input }, t.apiKey)).status).toBe(201)
  })

  it("cannot be overshot by concurrent requests: the tenant's entity counts them one at a time", async () => {
    const t = await api.createTenant()
    const admin = await api.call("POST", "/internal/v1/internal-admins", { token: INTERNAL_TOKEN, body: { email: `quota-race-${Date.now()}@trawl.dev` } })
    expect((await api.call("PUT", `/v1/admin/tenants/${t.tenantId}/quotas/extractor.extractions.daily`, {
      key: admin.json.data.apiKey,
      body: { limit: 3 }
    })).status).toBe(200)
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) =>
      api.post("/v1/extractor/extractions", { type: "article", input: `<h1>Race ${i}</h1><p>Some words here.</p>` }, t.apiKey)))
    expect(results.map((r) => r.status).sort()).toEqual([...Array(3).fill(201), ...Array(9).fill(429)])
    const listed = await api.get("/v1/extractor/extractions?limit=50", t.apiKey)
    expect(listed.json.data.pagination.total).toBe(3)
  })
})
