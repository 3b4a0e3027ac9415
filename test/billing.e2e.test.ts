/**
 * Credits through the real HTTP interface: the price list, 402 insufficient_credit when a tenant's
 * free credit cannot cover a new job's minimum price, and each ended job charged in the ledger at
 * what it used (see docs/api.md "Credits and prices"). Targets are a loopback fixture site.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeLlm, startFakeLlm } from "./support/fake-llm.ts"
import { type FixtureSite, loopbackOnlyEnv, startFixtureSite } from "./support/fixture-site.ts"
import { query } from "./support/databases.ts"
import { backends, client, INTERNAL_TOKEN, type RunningServer, startServer } from "./support/server-process.ts"

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const terminal = ["done", "failed", "dead"]

describe.each(backends())("credits and prices over HTTP ($name)", (backend) => {
  let server: RunningServer
  let site: FixtureSite
  let llm: FakeLlm
  let api: ReturnType<typeof client>
  let adminKey: string
  /** Items of each service's price list, by item name. */
  let prices: Map<string, string>
  let extractionPrices: Map<string, string>

  /** The server's PostgreSQL database, on that backend. */
  let databaseUrl: string | undefined

  beforeAll(async () => {
    site = await startFixtureSite({ hosts: ["127.0.0.1", "127.0.0.2", "127.0.0.3"] })
    llm = await startFakeLlm()
    const env = await backend.env()
    databaseUrl = env.DATABASE_URL
    server = await startServer({
      ...env,
      ALLOW_PRIVATE_TARGETS: "true",
      LLM_BASE_URL: llm.baseUrl,
      LLM_MODEL: "test-model",
      ...loopbackOnlyEnv()
    })
    api = client(server.baseUrl)
    const admin = await api.call("POST", "/internal/v1/internal-admins", { token: INTERNAL_TOKEN, body: { email: `root-${Date.now()}@trawl.dev` } })
    expect(admin.status).toBe(201)
    adminKey = admin.json.data.apiKey
  })
  afterAll(async () => {
    await server?.stop()
    await site?.close()
    await llm?.close()
  })

  const create = (key: string, body: Record<string, unknown>) => api.call("POST", "/v1/scraper/jobs", { key, body })
  const waitTerminal = async (key: string, id: string) => {
    for (const deadline = Date.now() + 45_000; Date.now() < deadline; await sleep(200)) {
      const job = (await api.get(`/v1/scraper/jobs/${id}`, key)).json.data
      if (terminal.includes(job.status)) return job
    }
    throw new Error(`job ${id} did not end`)
  }
  /** The tenant's debits, oldest first, once `count` of them are written (charging follows a job's end). */
  const debits = async (key: string, count: number, serviceKey = "scraper.jobs") => {
    for (const deadline = Date.now() + 20_000; Date.now() < deadline; await sleep(200)) {
      const res = await api.get(`/v1/billing/me/transactions?type=debit&limit=100&serviceKey=${serviceKey}`, key)
      expect(res.status).toBe(200)
      if (res.json.data.items.length >= count) return [...res.json.data.items].reverse()
    }
    throw new Error(`fewer than ${count} debits`)
  }
  const balance = async (key: string) => (await api.get("/v1/billing/me/balance", key)).json.data.balance as string

  it("lists prices to any valid key, and to no one else", async () => {
    const t = await api.createTenant()
    const res = await api.get("/v1/billing/pricing", t.apiKey)
    expect(res.status).toBe(200)
    expect(res.json.data.currency).toBe("EUR")
    const itemsOf = (serviceKey: string) => new Map<string, string>(res.json.data.items.filter((i: any) => i.serviceKey === serviceKey).map((i: any) => [i.item, i.price]))
    prices = itemsOf("scraper.jobs")
    extractionPrices = itemsOf("extractor.extractions")
    for (const item of ["extraction", "llm.tokens", "minimum"]) expect(extractionPrices.get(item)).toMatch(/^\d+\.\d+$/)
    for (const item of ["attempt.http", "attempt.brave", "screenshot", "minimum"]) expect(prices.get(item)).toMatch(/^\d+\.\d+$/)
    for (const i of res.json.data.items) expect(i).toMatchObject({ serviceKey: expect.stringMatching(/^(scraper\.jobs|scraper\.map|extractor\.extractions|network\.ip)$/), unit: expect.any(String), description: expect.any(String) })
    // The minimum is the cheapest attempt.
    const attempts = res.json.data.items.filter((i: any) => i.unit === "attempt").map((i: any) => Number(i.price))
    expect(Number(prices.get("minimum"))).toBe(Math.min(...attempts))
    expect((await api.get("/v1/billing/pricing")).status).toBe(401)
  })

  it("refuses a job with 402 when the free credit cannot cover its minimum price, creating nothing, and charges each ended job", async () => {
    const minimum = Number(prices.get("minimum"))
    const t = await api.createTenant({ credits: (2 * minimum).toFixed(4) })
    const first = await create(t.apiKey, { url: site.url("/page?case=bill-1") })
    const second = await create(t.apiKey, { url: site.url("/page?case=bill-2") })
    expect([first.status, second.status]).toEqual([201, 201])
    // Both may still be running, and each may cost at least the minimum: nothing is free for a third.
    const third = await create(t.apiKey, { url: site.url("/page?case=bill-3") })
    expect(third.status, JSON.stringify(third.json)).toBe(402)
    expect(third.json).toMatchObject({ status: "error", code: "insufficient_credit" })
    expect(third.json.error.message).toMatch(/EUR/)
    const listed = await api.get("/v1/scraper/jobs?limit=10", t.apiKey)
    expect(listed.json.data.pagination.total).toBe(2)

    for (const id of [first.json.data.id, second.json.data.id]) expect((await waitTerminal(t.apiKey, id)).status).toBe("done")
    const entries = await debits(t.apiKey, 2)
    expect(entries.map((e: any) => e.resourceId).sort()).toEqual([first.json.data.id, second.json.data.id].sort())
    let running = 2 * minimum
    for (const e of entries) {
      expect(e).toMatchObject({ type: "debit", serviceKey: "scraper.jobs", resourceType: "job" })
      expect(Number(e.amount)).toBeCloseTo(-Number(prices.get("attempt.http")), 6)
      running += Number(e.amount)
      expect(Number(e.balanceAfter)).toBeCloseTo(running, 6)
      expect(e.note).toMatch(/http x1/)
    }
    expect(Number(await balance(t.apiKey))).toBeCloseTo(0, 6)
    expect((await create(t.apiKey, { url: site.url("/page?case=bill-4") })).status).toBe(402)
    // A replay is a new job, billable as any.
    const replay = await api.post(`/v1/scraper/jobs/${first.json.data.id}/replay`, undefined, t.apiKey)
    expect(replay.status, replay.text).toBe(402)
    expect(replay.json.code).toBe("insufficient_credit")
    // the figures a client acts on, beside the message
    expect(replay.json.error).toMatchObject({ balance: expect.stringMatching(/^\d+\.\d+$/), required: expect.stringMatching(/^\d+\.\d+$/) })

    // A top-up makes room at once.
    const topup = await api.post(`/v1/admin/tenants/${t.tenantId}/credits`, { amount: "1.00", note: "more" }, adminKey)
    expect(topup.status).toBe(201)
    // The tenant reads the note as written, not who at the platform wrote it.
    expect(topup.json.data.note).toBe("more")
    // A correction below zero names the amount.
    const tooMuch = await api.post(`/v1/admin/tenants/${t.tenantId}/credits`, { amount: "-5.00", note: "too much" }, adminKey)
    expect([tooMuch.status, tooMuch.json.code, tooMuch.json.error.details?.[0]?.path]).toEqual([409, "insufficient_balance", "amount"])
    // The adjustment is in the audit log, with who made it.
    if (databaseUrl) {
      const entries = await query<{ action: string; data: any }>(databaseUrl, `SELECT action, data FROM audit_log WHERE target_id = '${t.tenantId}'`)
      // made through the admin's key, which the entry names
      expect(entries).toEqual([{ action: "credits.adjust", data: { transactionId: topup.json.data.id, type: "topup", amount: "1.00", note: "more", apiKeyId: expect.stringMatching(/^key_/) } }])
    }
    expect((await create(t.apiKey, { url: site.url("/page?case=bill-5") })).status).toBe(201)
  })

  it("adds admin adjustments exactly, and refuses one that would take a balance above its ceiling", async () => {
    const t = await api.createTenant({ credits: "0.01" })
    for (let i = 0; i < 3; i++) expect((await api.post(`/v1/admin/tenants/${t.tenantId}/credits`, { amount: "333333333.33", note: "big" }, adminKey)).status).toBe(201)
    // Exactly the ceiling, the ledger's chain exact to the cent.
    expect(await balance(t.apiKey)).toBe("1000000000.00")
    const over = await api.post(`/v1/admin/tenants/${t.tenantId}/credits`, { amount: "0.01", note: "one too many" }, adminKey)
    expect(over.status, over.text).toBe(409)
    expect(over.json.code).toBe("balance_ceiling")
    expect(await balance(t.apiKey)).toBe("1000000000.00")
    const huge = await api.post(`/v1/admin/tenants/${t.tenantId}/credits`, { amount: "999999999999.99", note: "far too many" }, adminKey)
    expect(huge.status, huge.text).toBe(409)
  })

  it("answers a retried adjustment with the same Idempotency-Key with the first, and shows it in the tenant's own audit log", async () => {
    const t = await api.createTenant({ credits: "1.00" })
    const send = (body: unknown, key: string) => api.call("POST", `/v1/admin/tenants/${t.tenantId}/credits`, { key: adminKey, body, headers: { "idempotency-key": key } })
    const first = await send({ amount: "2.50", note: "goodwill" }, `topup-${t.tenantId}`)
    expect(first.status, first.text).toBe(201)
    const again = await send({ amount: "2.50", note: "goodwill" }, `topup-${t.tenantId}`)
    expect(again.status, again.text).toBe(201)
    expect(again.json.data.id).toBe(first.json.data.id)
    expect(await balance(t.apiKey)).toBe("3.50")
    const other = await send({ amount: "9.00", note: "goodwill" }, `topup-${t.tenantId}`)
    expect([other.status, other.json.code]).toEqual([409, "idempotency_mismatch"])
    expect((await send({ amount: "1.00", note: "x" }, "")).status).toBe(400)
    // The tenant's owner reads who moved its money.
    const audit = await api.get("/v1/iam/audit?action=credits.adjust", t.apiKey)
    expect(audit.status, audit.text).toBe(200)
    expect(audit.json.data.items).toHaveLength(1)
    expect(audit.json.data.items[0]).toMatchObject({ action: "credits.adjust", targetId: first.json.data.id, data: { amount: "2.50", type: "topup", note: "goodwill" } })
  })

  it("searches the ledger with combined filters, sort and pagination, the tenant's own entries only", async () => {
    const t = await api.createTenant({ credits: "1.00" })
    for (const [amount, note] of [["2.00", "more"], ["-0.50", "refund"], ["0.25", "gift"]] as const) {
      expect((await api.post(`/v1/admin/tenants/${t.tenantId}/credits`, { amount, note }, adminKey)).status).toBe(201)
    }
    // A service the price list does not name is a misspelled filter, not an empty page.
    const unknownService = await api.get("/v1/billing/me/transactions?serviceKey=nope", t.apiKey)
    expect(unknownService.status, unknownService.text).toBe(400)
    expect(unknownService.json.code).toBe("invalid_filter")
    expect(unknownService.json.error.details).toEqual([expect.objectContaining({ path: "serviceKey", code: "invalid_value" })])
    const search = (body: unknown) => api.post("/v1/billing/me/transactions/search", body, t.apiKey)
    const unknownInSearch = await search({ where: { serviceKey: "nope" } })
    expect(unknownInSearch.status, unknownInSearch.text).toBe(400)
    expect(unknownInSearch.json.error.details).toEqual([expect.objectContaining({ path: "where.serviceKey" })])
    // Every bad filter is named in one answer.
    const twoBad = await api.get("/v1/billing/me/transactions?type=bogus&serviceKey=nope", t.apiKey)
    expect(twoBad.json.code).toBe("invalid_filter")
    expect(twoBad.json.error.details.map((d: { path: string }) => d.path).sort()).toEqual(["serviceKey", "type"])
    const bothInSearch = await search({ where: { type: ["bogus"], serviceKey: "nope" } })
    expect(bothInSearch.json.error.details.map((d: { path: string }) => d.path).sort()).toEqual(["where.serviceKey", "where.type.0"])
    const amounts = (res: { json: any }) => res.json.data.items.map((e: any) => e.amount)
    const all = await search({})
    expect(all.status, all.text).toBe(200)
    expect(amounts(all)).toEqual(["0.25", "-0.50", "2.00", "1.00"])
    expect(all.json.data.sort).toEqual([{ field: "createdAt", dir: "desc" }, { field: "id", dir: "desc" }])
    expect(amounts(await search({ sort: [] }))).toEqual(["0.25", "-0.50", "2.00", "1.00"])
    expect(amounts(await search({ where: { type: ["correction"] } }))).toEqual(["-0.50"])
    expect(amounts(await search({ where: { type: ["topup", "correction"], amount: { lte: "1.00" } } }))).toEqual(["0.25", "-0.50", "1.00"])
    expect(amounts(await search({ where: { amount: { gte: "0.50" } }, sort: [{ field: "amount", dir: "asc" }] }))).toEqual(["1.00", "2.00"])
    const paged = await search({ sort: [{ field: "createdAt", dir: "asc" }], pagination: { offset: 1, limit: 2 } })
    expect(amounts(paged)).toEqual(["2.00", "-0.50"])
    expect(paged.json.data.pagination).toEqual({ offset: 1, limit: 2, total: 4, hasMore: true })
    const future = await search({ where: { createdAt: { gte: new Date(Date.now() + 3_600_000).toISOString() } } })
    expect(future.json.data.pagination.total).toBe(0)
    expect((await search({ where: { createdAt: { lt: new Date(Date.now() + 3_600_000).toISOString() } } })).json.data.pagination.total).toBe(4)
    // The same filters as the list's query, which takes one type.
    const listed = await api.get("/v1/billing/me/transactions?type=correction", t.apiKey)
    expect(amounts(listed)).toEqual(["-0.50"])
    // `take`, the legacy name of `limit`, still limits the page; with a different `limit` it is refused.
    const taken = await api.get("/v1/billing/me/transactions?take=2", t.apiKey)
    expect(amounts(taken)).toEqual(["0.25", "-0.50"])
    expect(taken.json.data.pagination).toEqual({ offset: 0, limit: 2, total: 4, hasMore: true })
    // ... and the answer says it is legacy: a deprecation object (spec "Versioning") and the RFC headers.
    expect(taken.json.deprecation).toMatchObject({ successor: "limit", sunset: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) })
    expect(Date.parse(taken.json.deprecation.sunset)).toBe(Date.parse(taken.headers.get("sunset")!))
    expect(taken.headers.get("deprecation")).toMatch(/^@\d+$/)
    const limited = await api.get("/v1/billing/me/transactions?limit=2", t.apiKey)
    expect([limited.json.deprecation, limited.headers.get("deprecation"), limited.headers.get("sunset")]).toEqual([undefined, null, null])
    expect((await api.get("/v1/billing/me/transactions?take=2&limit=2", t.apiKey)).json.data.pagination.limit).toBe(2)
    const both = await api.get("/v1/billing/me/transactions?take=2&limit=3", t.apiKey)
    expect([both.status, both.json.code]).toEqual([400, "validation_error"])
    expect(both.json.error.details).toEqual([expect.objectContaining({ path: "take" })])
    for (const bad of ["0", "201", "abc"]) expect((await api.get(`/v1/billing/me/transactions?take=${bad}`, t.apiKey)).status, bad).toBe(400)
    // Bad input, with its paths.
    const badSort = await search({ sort: [{ field: "note", dir: "asc" }] })
    expect(badSort.status).toBe(400)
    expect(badSort.json.code).toBe("invalid_sort_field")
    const badFilter = await search({ where: { amount: { gte: "a lot" }, type: ["refund"] } })
    expect(badFilter.status).toBe(400)
    expect(badFilter.json.code).toBe("invalid_filter")
    expect(badFilter.json.error.details.map((d: any) => d.path).sort()).toEqual(["where.amount.gte", "where.type.0"])
    expect((await search({ pagination: { limit: 201 } })).json.code).toBe("validation_error")
    // Another tenant's search sees only its own ledger.
    const other = await api.createTenant({ credits: "3.00" })
    expect(amounts(await api.post("/v1/billing/me/transactions/search", {}, other.apiKey))).toEqual(["3.00"])
  })

  it("charges every attempt a job made, at its engine's price", async () => {
    const t = await api.createTenant({ credits: "1.00" })
    const res = await create(t.apiKey, { url: site.url("/error"), escalation: [{ engine: "http", attempts: 2, timeoutMs: 5000 }] })
    expect(res.status).toBe(201)
    const job = await waitTerminal(t.apiKey, res.json.data.id)
    const made = job.result.attempts.length
    expect(made).toBeGreaterThanOrEqual(1)
    const [entry] = await debits(t.apiKey, 1)
    expect(entry.resourceId).toBe(job.id)
    expect(Number(entry.amount)).toBeCloseTo(-made * Number(prices.get("attempt.http")), 6)
    expect(entry.note).toBe(`http x${made}`)
  })

  it("charges nothing for a job cancelled while it was being fetched", async () => {
    const t = await api.createTenant({ credits: "1.00" })
    const slow = await create(t.apiKey, { url: site.url("/slow?ms=30000&case=bill-cancel", 1), escalation: [{ engine: "http", attempts: 1, timeoutMs: 40_000 }] })
    expect(slow.status).toBe(201)
    const id = slow.json.data.id
    for (const deadline = Date.now() + 10_000; site.hits("/slow") === 0 && Date.now() < deadline;) await sleep(50)
    expect((await api.post(`/v1/scraper/jobs/${id}/cancel`, undefined, t.apiKey)).status).toBe(200)
    // Its run records the aborted attempt, and a page fetched afterwards is charged: the charge
    // of the cancelled one, had there been any, came first.
    for (const deadline = Date.now() + 10_000; (await api.get(`/v1/scraper/jobs/${id}`, t.apiKey)).json.data.attempts === 0 && Date.now() < deadline;) await sleep(100)
    const after = await create(t.apiKey, { url: site.url("/page?case=bill-after-cancel") })
    await waitTerminal(t.apiKey, after.json.data.id)
    const entries = await debits(t.apiKey, 1)
    expect(entries.map((e: any) => e.resourceId)).toEqual([after.json.data.id])
    expect(await balance(t.apiKey)).toBe((1 - Number(prices.get("attempt.http"))).toFixed(3))
  })

  it("creates in bulk what the credit covers and refuses the rest item by item", async () => {
    const minimum = Number(prices.get("minimum"))
    const t = await api.createTenant({ credits: (3 * minimum).toFixed(4) })
    const jobs = Array.from({ length: 5 }, (_, i) => ({ url: site.url(`/page?case=bulk-bill-${i}`) }))
    const res = await api.call("POST", "/v1/scraper/jobs/bulk", { key: t.apiKey, body: { jobs } })
    expect(res.status, JSON.stringify(res.json)).toBe(207)
    expect(res.json.data.created).toHaveLength(3)
    expect(res.json.data.failed.map((f: any) => f.index)).toEqual([3, 4])
    for (const f of res.json.data.failed) expect(f.reason).toMatch(/^insufficient_credit/)
    // What the two left out and the three created may cost at least: the created are not counted twice.
    expect(res.json.data.failed[0].reason).toContain(`does not leave the ${(5 * minimum).toFixed(3)} EUR free`)
  })

  it("never lets concurrent creations spend more than the balance", async () => {
    const minimum = Number(prices.get("minimum"))
    const t = await api.createTenant({ credits: (4 * minimum).toFixed(4) })
    const results = await Promise.all(
      Array.from({ length: 16 }, (_, i) => create(t.apiKey, { url: site.url(`/page?case=race-${i}`) }))
    )
    const statuses = results.map((r) => r.status)
    expect(statuses.filter((s) => s === 201)).toHaveLength(4)
    expect(statuses.filter((s) => s === 402)).toHaveLength(12)
    for (const r of results.filter((r) => r.status === 201)) await waitTerminal(t.apiKey, r.json.data.id)
    const entries = await debits(t.apiKey, 4)
    expect(entries).toHaveLength(4)
    expect(Number(await balance(t.apiKey))).toBeGreaterThanOrEqual(0)
    expect(Number(entries.at(-1).balanceAfter)).toBeCloseTo(4 * minimum - 4 * Number(prices.get("attempt.http")), 6)
  })

  describe("extractions", () => {
    const extract = (key: string, body: Record<string, unknown>) => api.call("POST", "/v1/extractor/extractions", { key, body })
    const waitEnded = async (key: string, id: string) => {
      for (const deadline = Date.now() + 30_000; Date.now() < deadline; await sleep(200)) {
        const e = (await api.get(`/v1/extractor/extractions/${id}`, key)).json.data
        if (["done", "dead", "cancelled"].includes(e.status)) return e
      }
      throw new Error(`extraction ${id} did not end`)
    }
    const page = (n: string) => `<html><body><article><h1>Billing ${n}</h1><p>Some text about the harbour ${n}.</p></article></body></html>`

    it("refuses an extraction with 402 when the free credit cannot cover its minimum price, and charges a done one its price", async () => {
      const minimum = Number(extractionPrices.get("minimum"))
      expect(minimum).toBe(Number(extractionPrices.get("extraction")))
      const t = await api.createTenant({ credits: minimum.toFixed(4) })
      const first = await extract(t.apiKey, { type: "article", input: page("one") })
      expect(first.status, first.text).toBe(201)
      const second = await extract(t.apiKey, { type: "article", input: page("two") })
      expect(second.status, second.text).toBe(402)
      expect(second.json.code).toBe("insufficient_credit")
      expect((await api.get("/v1/extractor/extractions?limit=10", t.apiKey)).json.data.pagination.total).toBe(1)
      expect((await waitEnded(t.apiKey, first.json.data.id)).status).toBe("done")
      const [entry] = await debits(t.apiKey, 1, "extractor.extractions")
      expect(entry).toMatchObject({ type: "debit", resourceType: "extraction", resourceId: first.json.data.id, note: "extraction", balanceAfter: "0.00" })
      expect(Number(entry.amount)).toBeCloseTo(-minimum, 6)
    })

    it("refuses an extraction of a URL whose job the free credit would not cover too, leaving nothing behind", async () => {
      const minimum = Number(extractionPrices.get("minimum"))
      const t = await api.createTenant({ credits: minimum.toFixed(4) })
      const refused = await extract(t.apiKey, { type: "article", url: site.url("/page?case=bill-url"), webhookUrl: site.url("/hook") })
      expect(refused.status, refused.text).toBe(402)
      expect(refused.json.code).toBe("insufficient_credit")
      expect((await api.get("/v1/extractor/extractions?limit=10", t.apiKey)).json.data.pagination.total).toBe(0)
      expect((await api.get("/v1/scraper/jobs?limit=10", t.apiKey)).json.data.pagination.total).toBe(0)
      const quotas = (await api.get("/v1/iam/quotas/me", t.apiKey)).json.data.items
      expect(quotas.find((q: any) => q.key === "webhooks.endpoints.total").used).toBe(0)
      // Nothing was kept for it: an extraction of inline input still fits.
      expect((await extract(t.apiKey, { type: "article", input: page("after") })).status).toBe(201)
    })

    it("admits exactly as many concurrent extractions of URLs as the free credit covers, each with its page's job", async () => {
      const each = Number(extractionPrices.get("minimum")) + Number(prices.get("minimum"))
      // room for exactly three extractions of a URL and their jobs
      const t = await api.createTenant({ credits: (3 * each + each / 2).toFixed(4) })
      const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => extract(t.apiKey, { type: "article", url: site.url(`/page?case=bill-many-${i}`) })))
      expect(answers.map((a) => a.status).sort()).toEqual([201, 201, 201, 402, 402, 402])
      expect((await api.get("/v1/extractor/extractions?limit=10", t.apiKey)).json.data.pagination.total).toBe(3)
      expect((await api.get("/v1/scraper/jobs?limit=10", t.apiKey)).json.data.pagination.total).toBe(3)
    })

    it("charges the LLM tokens a refinement used", async () => {
      const t = await api.createTenant({ credits: "1.00" })
      const res = await extract(t.apiKey, { type: "article", input: page("llm"), llm: { enabled: true } })
      expect(res.status, res.text).toBe(201)
      const e = await waitEnded(t.apiKey, res.json.data.id)
      expect(e.status).toBe("done")
      const tokens = e.metadata.llm.promptTokens + e.metadata.llm.completionTokens
      expect(tokens).toBeGreaterThan(0)
      const [entry] = await debits(t.apiKey, 1, "extractor.extractions")
      expect(entry.note).toBe(`extraction, ${tokens} LLM tokens`)
      const tokenPrice = Math.ceil(tokens * Number(extractionPrices.get("llm.tokens")) * 10_000 / 1000) / 10_000
      expect(Number(entry.amount)).toBeCloseTo(-(Number(extractionPrices.get("extraction")) + tokenPrice), 6)
    })

    it("does not believe a token count no model could use: the extraction and the tenant's next ones are charged", async () => {
      const t = await api.createTenant({ credits: "1.00" })
      const marker = `LLMCASE-huge-usage-${Date.now()}`
      // 10²⁰ tokens overflowed the charge, and stopped the tenant's extractions from being charged at all.
      llm.when(marker, { json: {}, usage: { prompt: 1e20, completion: 5 } })
      const huge = await extract(t.apiKey, { type: "article", input: page(marker), llm: { enabled: true } })
      expect(huge.status, huge.text).toBe(201)
      const e = await waitEnded(t.apiKey, huge.json.data.id)
      expect(e.status).toBe("done")
      expect(e.metadata.llm.promptTokens).toBeUndefined()
      expect(e.metadata.llm.completionTokens).toBe(5)
      const next = await extract(t.apiKey, { type: "article", input: page("after huge usage") })
      expect((await waitEnded(t.apiKey, next.json.data.id)).status).toBe("done")
      const entries = await debits(t.apiKey, 2, "extractor.extractions")
      expect(entries.map((d: any) => d.resourceId)).toEqual([huge.json.data.id, next.json.data.id])
      expect((await api.get("/v1/extractor/extractions", t.apiKey)).status).toBe(200)
    })
  })
})
