/**
 * `GET /v1/iam/quotas/me` through the real HTTP interface: every quota of the catalogue with its
 * limit (plan or override) and what the tenant uses of it now.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FixtureSite, loopbackOnlyEnv, startFixtureSite } from "./support/fixture-site.ts"
import { backends, client, INTERNAL_TOKEN, type RunningServer, startServer } from "./support/server-process.ts"
import { until } from "./support/until.ts"

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe.each(backends())("quotas over HTTP ($name)", (backend) => {
  let server: RunningServer
  let site: FixtureSite
  let api: ReturnType<typeof client>

  beforeAll(async () => {
    site = await startFixtureSite({ hosts: ["127.0.0.1"] })
    server = await startServer({ ...(await backend.env()), ALLOW_PRIVATE_TARGETS: "true", ...loopbackOnlyEnv() })
    api = client(server.baseUrl)
  })
  afterAll(async () => {
    await server?.stop()
    await site?.close()
  })

  it("lists every quota with its limit and the tenant's use of it, daily ones with their window", async () => {
    const t = await api.createTenant()
    const other = await api.createTenant()
    const quotas = async (key = t.apiKey) => {
      const res = await api.get("/v1/iam/quotas/me", key)
      expect(res.status, res.text).toBe(200)
      return new Map<string, any>(res.json.data.items.map((q: any) => [q.key, q]))
    }
    const before = await quotas()
    expect([...before.keys()].sort()).toEqual([
      "extractor.configs.total", "extractor.extractions.daily", "iam.api-keys.total", "iam.identities.total",
      "scraper.jobs.concurrent", "scraper.jobs.daily", "webhooks.endpoints.total"
    ])
    expect(before.get("scraper.jobs.daily")).toMatchObject({ limit: 10000, used: 0, window: "day" })
    const nextUtcDay = new Date(new Date().toISOString().slice(0, 10) + "T00:00:00Z").getTime() + 86_400_000
    expect(Date.parse(before.get("scraper.jobs.daily").resetAt)).toBe(nextUtcDay)
    expect(before.get("iam.api-keys.total")).toEqual({ key: "iam.api-keys.total", limit: 20, used: 1 })
    expect(before.get("iam.identities.total")).toMatchObject({ used: 1 })

    // A job (with a webhook URL) and an extraction count; a limit the platform set for the tenant shows.
    const job = await api.call("POST", "/v1/scraper/jobs", { key: t.apiKey, body: { url: site.url("/slow?ms=3000"), webhookUrl: site.url("/hook") } })
    expect(job.status).toBe(201)
    expect((await api.call("POST", "/v1/extractor/extractions", { key: t.apiKey, body: { type: "article", input: "<h1>Quota</h1><p>text</p>" } })).status).toBe(201)
    const admin = await api.call("POST", "/internal/v1/internal-admins", { token: INTERNAL_TOKEN, body: { email: `root-${Date.now()}@trawl.dev` } })
    expect((await api.call("PUT", `/v1/admin/tenants/${t.tenantId}/quotas/scraper.jobs.concurrent`, { key: admin.json.data.apiKey, body: { limit: 7 } })).status).toBe(200)
    const during = await quotas()
    expect(during.get("scraper.jobs.daily")).toMatchObject({ used: 1 })
    expect(during.get("scraper.jobs.concurrent")).toEqual({ key: "scraper.jobs.concurrent", limit: 7, used: 1 })
    expect(during.get("extractor.extractions.daily")).toMatchObject({ used: 1 })
    expect(during.get("webhooks.endpoints.total")).toMatchObject({ used: 1 })
    // Once the job has ended it no longer runs; it still counts for the day.
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; await sleep(200)) {
      if ((await api.get(`/v1/scraper/jobs/${job.json.data.id}`, t.apiKey)).json.data.status === "done") break
    }
    const after = await quotas()
    expect(after.get("scraper.jobs.concurrent")).toMatchObject({ used: 0 })
    expect(after.get("scraper.jobs.daily")).toMatchObject({ used: 1 })
    // Another tenant's use is its own.
    expect((await quotas(other.apiKey)).get("scraper.jobs.daily")).toMatchObject({ used: 0 })
    expect((await api.get("/v1/iam/quotas/me")).status).toBe(401)
  })

  it("enforces a lowered limit from the very next request, and records the override in the tenant's own audit log", async () => {
    const t = await api.createTenant()
    const admin = await api.call("POST", "/internal/v1/internal-admins", { token: INTERNAL_TOKEN, body: { email: `lower-${Date.now()}@trawl.dev` } })
    const adminKey = admin.json.data.apiKey as string
    const setLimit = (key: string, limit: number | null) =>
      api.call("PUT", `/v1/admin/tenants/${t.tenantId}/quotas/${key}`, { key: adminKey, body: { limit } })
    const extract = () => api.call("POST", "/v1/extractor/extractions", { key: t.apiKey, body: { type: "article", input: `<h1>Lowered ${Math.random()}</h1><p>text</p>` } })
    expect((await setLimit("extractor.extractions.daily", 10)).status).toBe(200)
    for (let i = 0; i < 3; i++) expect((await extract()).status).toBe(201)
    // Lowered to what is used: the next one is refused at once (the tenant's entity had kept 10 for up to 5 s).
    const lowered = await setLimit("extractor.extractions.daily", 3)
    expect(lowered.json.data.effectiveLimit).toBe(3)
    const refused = await extract()
    expect(refused.status, refused.text).toBe(429)
    expect(refused.json.code).toBe("quota_exceeded")
    const jobs = () => api.call("POST", "/v1/scraper/jobs/bulk", { key: t.apiKey, body: { jobs: [1, 2, 3].map((i) => ({ url: site.url(`/lowered-${i}`) })) } })
    expect((await setLimit("scraper.jobs.daily", 1)).json.data.effectiveLimit).toBe(1)
    const bulk = await jobs()
    expect(bulk.status, bulk.text).toBe(207)
    expect(bulk.json.data.created).toHaveLength(1)
    const quotas = new Map<string, any>((await api.get("/v1/iam/quotas/me", t.apiKey)).json.data.items.map((q: any) => [q.key, q]))
    expect(quotas.get("extractor.extractions.daily")).toMatchObject({ limit: 3, used: 3 })
    expect(quotas.get("scraper.jobs.daily")).toMatchObject({ limit: 1, used: 1 })
    // The tenant's owner reads who changed its limits.
    const audit = (await api.get("/v1/iam/audit?action=quota.override&limit=100", t.apiKey)).json.data.items as Array<any>
    expect(audit.map((e) => [e.data.quotaKey, e.data.limit]).reverse()).toEqual([
      ["extractor.extractions.daily", 10], ["extractor.extractions.daily", 3], ["scraper.jobs.daily", 1]
    ])
    // The internal tenant's quotas (its internal plan's) bound what super-admins do through the API,
    // and are overridden like any tenant's: one API key more than it holds, then the limit is reached.
    const internal = (await api.get("/v1/admin/tenants?limit=200", adminKey)).json.data.items.find((x: any) => x.isInternal)
    const held = (await api.get("/v1/iam/quotas/me", adminKey)).json.data.items.find((q: any) => q.key === "iam.api-keys.total").used as number
    const raised = await api.call("PUT", `/v1/admin/tenants/${internal.id}/quotas/iam.api-keys.total`, { key: adminKey, body: { limit: held + 1 } })
    expect(raised.status, raised.text).toBe(200)
    expect(raised.json.data.effectiveLimit).toBe(held + 1)
    const me = (await api.get("/v1/iam/users/me", adminKey)).json.data
    const read = ((await api.get("/v1/iam/roles?limit=200", adminKey)).json.data.items as Array<any>).find((r) => r.name === "read" && r.isSystem)
    const newKey = () => api.post(`/v1/iam/identities/${me.identityId}/api-keys`, { name: "one more", roleId: read.id }, adminKey)
    const made = await newKey()
    expect(made.status, made.text).toBe(201)
    const over = await newKey()
    expect(over.status, over.text).toBe(429)
    expect(over.json.code).toBe("quota_exceeded")
    expect((await api.call("PUT", `/v1/admin/tenants/${internal.id}/quotas/iam.api-keys.total`, { key: adminKey, body: { limit: null } })).status).toBe(200)
  })

  it("does not count a job refused after its reservation (webhook URL quota) against the day", async () => {
    const t = await api.createTenant()
    const admin = await api.call("POST", "/internal/v1/internal-admins", { token: INTERNAL_TOKEN, body: { email: `root-${Date.now()}@trawl.dev` } })
    for (const [quota, limit] of [["scraper.jobs.daily", 3], ["webhooks.endpoints.total", 1]] as const) {
      expect((await api.call("PUT", `/v1/admin/tenants/${t.tenantId}/quotas/${quota}`, { key: admin.json.data.apiKey, body: { limit } })).status).toBe(200)
    }
    const create = (body: Record<string, unknown>) => api.call("POST", "/v1/scraper/jobs", { key: t.apiKey, body: { url: site.url("/slow?ms=3000"), ...body } })
    expect((await create({ webhookUrl: site.url("/hook-a") })).status).toBe(201)
    expect((await create({})).status).toBe(201)
    // The job's day slot was reserved before its second webhook URL was refused, and given back.
    const refused = await create({ webhookUrl: site.url("/hook-b") })
    expect(refused.status).toBe(429)
    expect(refused.json.error.details).toEqual([expect.objectContaining({ path: "webhookUrl", code: "quota_exceeded" })])
    // Two jobs exist today, so a third fits (it had been refused until the next recount, 5 s on).
    const third = await create({})
    expect(third.status, third.text).toBe(201)
    const fourth = await create({})
    expect(fourth.status).toBe(429)
    expect(fourth.json.code).toBe("quota_exceeded")
    expect(Number(fourth.headers.get("retry-after"))).toBeGreaterThan(0)
  })

  it("counts a webhook endpoint once whatever its query or fragment, and calls it without the fragment", async () => {
    const t = await api.createTenant()
    const admin = await api.call("POST", "/internal/v1/internal-admins", { token: INTERNAL_TOKEN, body: { email: `root-${Date.now()}@trawl.dev` } })
    expect((await api.call("PUT", `/v1/admin/tenants/${t.tenantId}/quotas/webhooks.endpoints.total`, { key: admin.json.data.apiKey, body: { limit: 1 } })).status).toBe(200)
    const create = (webhookUrl: string) => api.call("POST", "/v1/scraper/jobs", { key: t.apiKey, body: { url: site.url("/slow?ms=10"), webhookUrl } })
    // one endpoint with a correlation id per job: one place
    for (const query of ["?job=1", "?job=2", "?job=3&x=y", ""]) {
      const made = await create(site.url(`/hook-c${query}`))
      expect(made.status, made.text).toBe(201)
    }
    const withFragment = await create(site.url("/hook-c?job=4#section"))
    expect(withFragment.status, withFragment.text).toBe(201)
    // the delivery goes to the URL without its fragment (a fragment is never sent over HTTP)
    const delivered = await until("the job's webhook delivery", async () => {
      const items = (await api.get(`/v1/scraper/jobs/${withFragment.json.data.id}/webhook-deliveries`, t.apiKey)).json.data.items as Array<any>
      return items[0]
    })
    expect(delivered.url).toBe(site.url("/hook-c?job=4"))
    // another path is another endpoint
    const other = await create(site.url("/hook-d"))
    expect(other.status).toBe(429)
    expect(other.json.error.details).toEqual([expect.objectContaining({ path: "webhookUrl", code: "quota_exceeded" })])
    const quotas = (await api.get("/v1/iam/quotas/me", t.apiKey)).json.data.items as Array<any>
    expect(quotas.find((q) => q.key === "webhooks.endpoints.total")).toMatchObject({ used: 1 })
  })
})
