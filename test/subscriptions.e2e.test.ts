/**
 * Plans and subscriptions through the real HTTP interface (docs/api.md, "Plans and subscriptions"):
 * the catalogue in the price list, each tenant's subscription and its debits, a super-admin's change
 * prorated in the ledger, renewals at the end of a (test-shortened) period paid or past due, a
 * renewal that survives the SIGKILL of the only node, gating by plan and subscription status, and
 * quotas from plan, add-ons and overrides.
 */
import net from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startSmtpServer, type TestSmtpServer } from "./support/smtp.ts"
import { backends, client, INTERNAL_TOKEN, pgQuery, type RunningServer, startServer } from "./support/server-process.ts"

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const units = (eur: string) => Math.round(Number(eur) * 10_000)

type Api = ReturnType<typeof client>

const internalAdmin = async (api: Api) => {
  const res = await api.call("POST", "/internal/v1/internal-admins", { token: INTERNAL_TOKEN, body: { email: `root-${Math.random().toString(36).slice(2)}@trawl.dev` } })
  expect(res.status, res.text).toBe(201)
  return res.json.data.apiKey as string
}

const subscriptionOf = async (api: Api, key: string) => {
  const res = await api.get("/v1/billing/me/subscription", key)
  expect(res.status, res.text).toBe(200)
  return res.json.data
}

const subscriptionDebits = async (api: Api, key: string) => {
  const res = await api.get("/v1/billing/me/subscription/debits?limit=100", key)
  expect(res.status, res.text).toBe(200)
  return res.json.data.items as Array<any>
}

/** Polls `read` until `done` holds of its value, or fails after `ms`. */
const until = async <A>(read: () => Promise<A>, done: (a: A) => boolean, ms: number, what: string): Promise<A> => {
  let last: A | undefined
  for (const deadline = Date.now() + ms; Date.now() < deadline; await sleep(250)) {
    last = await read()
    if (done(last)) return last
  }
  throw new Error(`${what} did not happen in ${ms} ms; last seen: ${JSON.stringify(last)}`)
}

const jobBody = { url: "http://127.0.0.1:9/plan-gate" }

describe.each(backends())("plans and subscriptions over HTTP ($name)", (backend) => {
  let server: RunningServer
  let api: Api
  let adminKey: string
  let smtp: TestSmtpServer

  beforeAll(async () => {
    smtp = await startSmtpServer()
    // An hour's period: long enough that no renewal comes in the middle of these tests.
    server = await startServer({ ...(await backend.env()), ALLOW_PRIVATE_TARGETS: "true", SMTP_URL: smtp.url, SUBSCRIPTION_PERIOD_SECONDS: "3600" })
    api = client(server.baseUrl)
    adminKey = await internalAdmin(api)
  }, 120_000)
  afterAll(async () => {
    await server?.stop()
    await smtp?.close()
  })

  const change = (tenantId: string, body: unknown, key = adminKey) =>
    api.call("PUT", `/v1/admin/tenants/${tenantId}/subscription`, { key, body })

  it("shows the plans and add-ons beside the per-call prices", async () => {
    const res = await api.get("/v1/billing/pricing", (await api.createTenant()).apiKey)
    expect(res.status, res.text).toBe(200)
    const plans = new Map<string, any>(res.json.data.plans.map((p: any) => [p.name, p]))
    expect([...plans.keys()]).toEqual(["free", "starter", "pro"])
    expect(plans.get("starter")).toMatchObject({ monthlyPrice: "9.00", services: ["scraper", "page-history", "extractor", "network"] })
    expect(plans.get("free")).toMatchObject({ monthlyPrice: "0.00", services: ["scraper", "page-history"], addOns: [] })
    expect(plans.get("pro").monthlyPrice).toBe("49.00")
    for (const p of plans.values()) {
      expect(Object.keys(p.quotas).sort()).toEqual([
        "extractor.configs.total", "extractor.extractions.daily", "iam.api-keys.total", "iam.identities.total",
        "scraper.jobs.concurrent", "scraper.jobs.daily", "webhooks.endpoints.total"
      ])
    }
    const addOns = new Map<string, any>(res.json.data.addOns.map((a: any) => [a.key, a]))
    expect(addOns.get("extra-concurrent-jobs")).toEqual({
      key: "extra-concurrent-jobs",
      monthlyPrice: "2.00",
      description: expect.any(String),
      quota: "scraper.jobs.concurrent",
      perUnit: 10,
      maxQuantity: 20
    })
    for (const name of plans.get("starter").addOns) expect(addOns.has(name)).toBe(true)
    // The per-call prices are still there.
    expect(res.json.data.items.some((i: any) => i.serviceKey === "scraper.jobs" && i.item === "minimum")).toBe(true)
  })

  it("gives each new tenant an active subscription of its plan, its first period included", async () => {
    const before = Date.now()
    const t = await api.createTenant()
    const sub = await subscriptionOf(api, t.apiKey)
    expect(sub).toMatchObject({ tenantId: t.tenantId, plan: "starter", status: "active", addOns: [], monthlyPrice: "9.00" })
    const start = Date.parse(sub.currentPeriodStart)
    expect(start).toBeGreaterThanOrEqual(before - 1000)
    expect(Date.parse(sub.currentPeriodEnd) - start).toBe(3600_000)
    expect(sub.renewsAt).toBe(sub.currentPeriodEnd)
    // Nothing was charged for the first period: the initial credits are whole, and there are no debits.
    expect((await api.get("/v1/billing/me/balance", t.apiKey)).json.data.balance).toBe("10.00")
    expect(await subscriptionDebits(api, t.apiKey)).toEqual([])

    const free = await api.createTenant({ plan: "free" })
    expect(await subscriptionOf(api, free.apiKey)).toMatchObject({ plan: "free", monthlyPrice: "0.00" })
    // Reading needs billing:subscription:read (any key of the tenant's roles here), and a key.
    expect((await api.get("/v1/billing/me/subscription")).status).toBe(401)
    expect((await api.get("/v1/billing/me/subscription/debits?limit=0", t.apiKey)).status).toBe(400)
  })

  it("changes a subscription with a prorated debit or credit in the ledger, audited", async () => {
    const t = await api.createTenant({ credits: "100.00" })
    const sub = await subscriptionOf(api, t.apiKey)
    const start = Date.parse(sub.currentPeriodStart)
    const end = Date.parse(sub.currentPeriodEnd)
    const prorated = (oldEur: number, newEur: number, at: number) => Math.round(((newEur - oldEur) * 10_000 * (end - at)) / (end - start))

    // Upgrade: starter (9.00) to pro (49.00) with 2 × extra-concurrent-jobs (2.00 each): 44.00 more a month.
    let sent = Date.now()
    let res = await change(t.tenantId, { plan: "pro", addOns: [{ key: "extra-concurrent-jobs", quantity: 2 }] })
    let answered = Date.now()
    expect(res.status, res.text).toBe(200)
    expect(res.json.data.subscription).toMatchObject({
      plan: "pro",
      status: "active",
      addOns: [{ key: "extra-concurrent-jobs", quantity: 2 }],
      monthlyPrice: "53.00",
      currentPeriodStart: sub.currentPeriodStart,
      currentPeriodEnd: sub.currentPeriodEnd
    })
    const up = res.json.data.ledgerEntry
    expect(up).toMatchObject({ type: "debit", serviceKey: "billing.subscription" })
    expect(-units(up.amount)).toBeLessThanOrEqual(prorated(9, 53, sent))
    expect(-units(up.amount)).toBeGreaterThanOrEqual(prorated(9, 53, answered))
    expect(units(up.balanceAfter)).toBe(units("100.00") + units(up.amount))
    expect(await subscriptionOf(api, t.apiKey)).toMatchObject({ plan: "pro", monthlyPrice: "53.00" })

    // Downgrade back to starter without add-ons: the rest of the period is credited.
    sent = Date.now()
    res = await change(t.tenantId, { plan: "starter", addOns: [] })
    answered = Date.now()
    expect(res.status, res.text).toBe(200)
    const down = res.json.data.ledgerEntry
    expect(down).toMatchObject({ type: "credit", serviceKey: "billing.subscription" })
    // Later means less left to credit; ±1 for rounding a negative half the other way.
    expect(units(down.amount)).toBeLessThanOrEqual(-prorated(53, 9, sent) + 1)
    expect(units(down.amount)).toBeGreaterThanOrEqual(-prorated(53, 9, answered) - 1)
    expect(units(down.balanceAfter)).toBe(units(up.balanceAfter) + units(down.amount))

    // The same plan again changes nothing in the ledger.
    res = await change(t.tenantId, { plan: "starter" })
    expect(res.status, res.text).toBe(200)
    expect(res.json.data.ledgerEntry).toBeNull()

    // Both entries are the subscription's debits, newest first, and in the ledger's chain.
    const debits = await subscriptionDebits(api, t.apiKey)
    expect(debits.map((d) => d.id)).toEqual([down.id, up.id])
    const filtered = await api.get("/v1/billing/me/transactions?serviceKey=billing.subscription", t.apiKey)
    expect(filtered.status, filtered.text).toBe(200)
    expect(filtered.json.data.items.map((d: any) => d.id)).toEqual([down.id, up.id])
    expect((await api.get("/v1/billing/me/balance", t.apiKey)).json.data.balance).toBe(down.balanceAfter)

    // Recorded in the super-admins' own log, naming the tenant.
    const audit = await api.get("/v1/iam/audit?action=subscription.change&limit=100", adminKey)
    expect(audit.status, audit.text).toBe(200)
    const changes = audit.json.data.items.filter((e: any) => e.targetId === t.tenantId)
    expect(changes).toHaveLength(3)
    expect(changes.find((e: any) => e.data.ledgerEntryId === up.id).data).toMatchObject({ from: { plan: "starter" }, to: { plan: "pro" } })
  })

  it("credits a downgrade only up to what the period was paid: a first period, included, refunds nothing", async () => {
    const t = await api.createTenant({ plan: "pro", credits: "0.00" })
    const res = await change(t.tenantId, { plan: "free" })
    expect(res.status, res.text).toBe(200)
    expect(res.json.data.ledgerEntry).toBeNull()
    expect((await api.get("/v1/billing/me/balance", t.apiKey)).json.data.balance).toBe("0.00")
    expect(await subscriptionDebits(api, t.apiKey)).toEqual([])
  })

  it("refuses a change it cannot make: 422 for the plan or add-ons, 402 uncovered, 404, 403 for tenants", async () => {
    const t = await api.createTenant({ credits: "1.00" })
    const details = async (body: unknown) => {
      const res = await change(t.tenantId, body)
      expect(res.status, res.text).toBe(422)
      expect(res.json.code).toBe("invalid_subscription")
      return res.json.error.details.map((d: any) => d.path)
    }
    expect(await details({ plan: "platinum" })).toEqual(["plan"])
    expect(await details({ plan: "internal" })).toEqual(["plan"])
    expect(await details({ plan: "starter", addOns: [{ key: "extra-bananas", quantity: 1 }] })).toEqual(["addOns.0.key"])
    expect(await details({ plan: "free", addOns: [{ key: "extra-api-keys", quantity: 1 }] })).toEqual(["addOns.0.key"])
    expect(await details({ plan: "starter", addOns: [{ key: "extra-api-keys", quantity: 0 }] })).toEqual(["addOns.0.quantity"])
    expect(await details({ plan: "starter", addOns: [{ key: "extra-api-keys", quantity: 11 }] })).toEqual(["addOns.0.quantity"])
    expect(await details({ plan: "starter", addOns: [{ key: "extra-api-keys", quantity: 1 }, { key: "extra-api-keys", quantity: 2 }] })).toEqual(["addOns.1.key"])
    // Malformed bodies are 400 with their paths.
    for (const body of [{}, { plan: "pro", addOns: [{ key: "extra-api-keys", quantity: 1.5 }] }, { plan: "pro", extra: 1 }, { plan: "pro", status: "past_due" }]) {
      const res = await change(t.tenantId, body)
      expect(res.status, res.text).toBe(400)
      expect(res.json.code).toBe("validation_error")
    }
    // An upgrade the balance cannot cover: 402, nothing changed.
    const res = await change(t.tenantId, { plan: "pro" })
    expect(res.status, res.text).toBe(402)
    expect(res.json.code).toBe("insufficient_credit")
    expect(await subscriptionOf(api, t.apiKey)).toMatchObject({ plan: "starter", status: "active" })
    expect(await subscriptionDebits(api, t.apiKey)).toEqual([])
    expect((await change("ten_nosuchtenant", { plan: "pro" })).status).toBe(404)
    // The internal tenant exists but is on no plan that is sold: 422, not a 404.
    const internalId = (await api.get("/v1/iam/users/me", adminKey)).json.data.tenantId
    const internal = await change(internalId, { plan: "pro" })
    expect(internal.status, internal.text).toBe(422)
    expect(internal.json.code).toBe("invalid_subscription")
    expect(internal.json.error.details).toEqual([expect.objectContaining({ path: "plan", code: "internal_tenant" })])
    // A tenant's own owner key does not reach the super-admin plane.
    const own = await change(t.tenantId, { plan: "free" }, t.apiKey)
    expect(own.status).toBe(403)
    expect(own.json.code).toBe("forbidden")
  })

  it("answers 403 service_disabled_on_plan for a service the plan lacks, and lets what it has through", async () => {
    const free = await api.createTenant({ plan: "free" })
    const starter = await api.createTenant()
    const extraction = { type: "article", input: "<html><body><p>Some text</p></body></html>", inputFormat: "html" }
    const refused = await api.call("POST", "/v1/extractor/extractions", { key: free.apiKey, body: extraction })
    expect(refused.status, refused.text).toBe(403)
    expect(refused.json).toMatchObject({ status: "error", code: "service_disabled_on_plan" })
    // Reads of the service are off too; nothing was created.
    const list = await api.get("/v1/extractor/extractions", free.apiKey)
    expect(list.status).toBe(403)
    expect(list.json.code).toBe("service_disabled_on_plan")
    // The same request on a plan with the extractor is not refused by the plan.
    const allowed = await api.call("POST", "/v1/extractor/extractions", { key: starter.apiKey, body: extraction })
    expect(allowed.status, allowed.text).toBe(201)
    // The free plan has the scraper.
    expect((await api.call("POST", "/v1/scraper/jobs", { key: free.apiKey, body: jobBody })).status).toBe(201)

    // Moved to a plan with the service, the tenant may use it at once (the node forgets what it read).
    expect((await change(free.tenantId, { plan: "starter" })).status).toBe(200)
    expect((await api.get("/v1/extractor/extractions", free.apiKey)).status).toBe(200)
    // And back.
    expect((await change(free.tenantId, { plan: "free" })).status).toBe(200)
    expect((await api.get("/v1/extractor/extractions", free.apiKey)).json.code).toBe("service_disabled_on_plan")
  })

  it("answers 403 no_active_plan for paid work of a cancelled subscription, and re-activates it paid in full", async () => {
    const t = await api.createTenant({ credits: "20.00" })
    expect((await api.call("POST", "/v1/scraper/jobs", { key: t.apiKey, body: jobBody })).status).toBe(201)
    const cancelled = await change(t.tenantId, { plan: "starter", status: "cancelled" })
    expect(cancelled.status, cancelled.text).toBe(200)
    expect(cancelled.json.data).toMatchObject({ subscription: { status: "cancelled", renewsAt: null }, ledgerEntry: null })
    const refused = await api.call("POST", "/v1/scraper/jobs", { key: t.apiKey, body: jobBody })
    expect(refused.status, refused.text).toBe(403)
    expect(refused.json).toMatchObject({ status: "error", code: "no_active_plan" })
    // What the tenant has stays readable.
    expect((await api.get("/v1/scraper/jobs", t.apiKey)).status).toBe(200)
    expect((await api.get("/v1/billing/me/subscription", t.apiKey)).json.data.status).toBe("cancelled")

    const before = Date.now()
    const back = await change(t.tenantId, { plan: "starter" })
    expect(back.status, back.text).toBe(200)
    expect(back.json.data.ledgerEntry).toMatchObject({ type: "debit", amount: "-9.00", serviceKey: "billing.subscription" })
    const sub = back.json.data.subscription
    expect(sub.status).toBe("active")
    expect(Date.parse(sub.currentPeriodStart)).toBeGreaterThanOrEqual(before - 1000)
    expect((await api.call("POST", "/v1/scraper/jobs", { key: t.apiKey, body: jobBody })).status).toBe(201)
  })

  it("while the subscription is not active, still lets the tenant stop its work, and answers a retry under its Idempotency-Key with the first answer", async () => {
    // a target that takes connections and never answers: the work stays under way until stopped
    const sockets = new Set<net.Socket>()
    const hanging = net.createServer((socket) => void sockets.add(socket))
    await new Promise<void>((resolve) => hanging.listen(0, "127.0.0.1", resolve))
    try {
      const url = `http://127.0.0.1:${(hanging.address() as net.AddressInfo).port}/never`
      const t = await api.createTenant({ credits: "20.00" })
      expect((await change(t.tenantId, { plan: "starter" })).status).toBe(200)
      const create = (key: string | undefined, body: unknown = { url }) =>
        api.call("POST", "/v1/scraper/jobs", { key: t.apiKey, body, ...(key !== undefined ? { headers: { "idempotency-key": key } } : {}) })
      const first = await create("plan-lapse-1")
      expect(first.status, first.text).toBe(201)
      const extraction = await api.call("POST", "/v1/extractor/extractions", { key: t.apiKey, body: { type: "article", url }, headers: { "idempotency-key": "plan-lapse-2" } })
      expect(extraction.status, extraction.text).toBe(201)
      const jobCount = async () => (await api.get("/v1/scraper/jobs?limit=200", t.apiKey)).json.data.pagination.total
      // (an extraction of a URL fetches it with a job of its own)
      const jobsBefore = await jobCount()
      expect((await change(t.tenantId, { plan: "starter", status: "cancelled" })).status).toBe(200)

      // the same request under its key: the stored first answer, as before the subscription lapsed
      const again = await create("plan-lapse-1")
      expect(again.status, again.text).toBe(201)
      expect(again.json).toEqual(first.json)
      const extractionAgain = await api.call("POST", "/v1/extractor/extractions", { key: t.apiKey, body: { type: "article", url }, headers: { "idempotency-key": "plan-lapse-2" } })
      expect(extractionAgain.status, extractionAgain.text).toBe(201)
      expect(extractionAgain.json.data.id).toBe(extraction.json.data.id)
      // the key with another request is still a mismatch; new work, keyed or not, is refused
      expect((await create("plan-lapse-1", { url: `${url}?other` })).json.code).toBe("idempotency_mismatch")
      for (const key of ["plan-lapse-new", undefined]) {
        const refused = await create(key)
        expect(refused.status, refused.text).toBe(403)
        expect(refused.json.code).toBe("no_active_plan")
      }
      expect(await jobCount()).toBe(jobsBefore)

      // stopping what runs is never refused: stopped work is not charged
      const stopped = await api.call("POST", `/v1/scraper/jobs/${first.json.data.id}/cancel`, { key: t.apiKey })
      expect(stopped.status, stopped.text).toBe(200)
      const stoppedExtraction = await api.call("DELETE", `/v1/extractor/extractions/${extraction.json.data.id}`, { key: t.apiKey })
      expect(stoppedExtraction.status, stoppedExtraction.text).toBe(200)
    } finally {
      for (const socket of sockets) socket.destroy()
      hanging.close()
    }
  })

  it("reports quotas as the plan's values raised by add-ons, replaced by a super-admin's override, raised by an approved request", async () => {
    const t = await api.createTenant({ credits: "100.00" })
    const quotas = async () => {
      const res = await api.get("/v1/iam/quotas/me", t.apiKey)
      expect(res.status, res.text).toBe(200)
      return new Map<string, number>(res.json.data.items.map((q: any) => [q.key, q.limit]))
    }
    expect((await quotas()).get("scraper.jobs.concurrent")).toBe(50)
    const res = await change(t.tenantId, { plan: "pro", addOns: [{ key: "extra-concurrent-jobs", quantity: 3 }, { key: "extra-api-keys", quantity: 1 }] })
    expect(res.status, res.text).toBe(200)
    let limits = await quotas()
    expect(limits.get("scraper.jobs.concurrent")).toBe(200 + 3 * 10)
    expect(limits.get("iam.api-keys.total")).toBe(100 + 10)
    expect(limits.get("scraper.jobs.daily")).toBe(100000)
    expect((await api.call("PUT", `/v1/admin/tenants/${t.tenantId}/quotas/scraper.jobs.concurrent`, { key: adminKey, body: { limit: 7 } })).status).toBe(200)
    limits = await quotas()
    expect(limits.get("scraper.jobs.concurrent")).toBe(7)
    expect(limits.get("iam.api-keys.total")).toBe(110)
    // Removing the override gives the plan's limit with its add-ons back.
    const cleared = await api.call("PUT", `/v1/admin/tenants/${t.tenantId}/quotas/scraper.jobs.concurrent`, { key: adminKey, body: { limit: null } })
    expect(cleared.status, cleared.text).toBe(200)
    expect(cleared.json.data).toEqual({ tenantId: t.tenantId, quotaKey: "scraper.jobs.concurrent", limit: null, effectiveLimit: 230 })
    expect((await quotas()).get("scraper.jobs.concurrent")).toBe(230)

    // An approved increase only raises: an add-on bought later that gives more applies, and the
    // approved limit stays the floor when the add-on goes.
    const asked = await api.post("/v1/iam/quotas/me/requests", { quotaKey: "iam.api-keys.total", requestedLimit: "125", reason: "more keys" }, t.apiKey)
    expect(asked.status, asked.text).toBe(201)
    expect((await api.post(`/v1/admin/quota-requests/${asked.json.data.id}/approve`, { note: "ok" }, adminKey)).status).toBe(200)
    expect((await quotas()).get("iam.api-keys.total")).toBe(125)
    expect((await change(t.tenantId, { plan: "pro", addOns: [{ key: "extra-concurrent-jobs", quantity: 3 }, { key: "extra-api-keys", quantity: 4 }] })).status).toBe(200)
    expect((await quotas()).get("iam.api-keys.total")).toBe(140)
    expect((await change(t.tenantId, { plan: "pro", addOns: [{ key: "extra-concurrent-jobs", quantity: 3 }] })).status).toBe(200)
    expect((await quotas()).get("iam.api-keys.total")).toBe(125)
    // A free tenant's limits are the free plan's.
    const free = await api.createTenant({ plan: "free" })
    const freeLimits = new Map<string, number>((await api.get("/v1/iam/quotas/me", free.apiKey)).json.data.items.map((q: any) => [q.key, q.limit]))
    expect(freeLimits.get("scraper.jobs.concurrent")).toBe(5)
    expect(freeLimits.get("iam.api-keys.total")).toBe(3)
  })
})

describe.each(backends())("subscription renewals over HTTP ($name)", (backend) => {
  let server: RunningServer
  let api: Api
  let smtp: TestSmtpServer
  const PERIOD_MS = 3000

  beforeAll(async () => {
    smtp = await startSmtpServer()
    server = await startServer({ ...(await backend.env()), ALLOW_PRIVATE_TARGETS: "true", SMTP_URL: smtp.url, SUBSCRIPTION_PERIOD_SECONDS: "3" })
    api = client(server.baseUrl)
  }, 120_000)
  afterAll(async () => {
    await server?.stop()
    await smtp?.close()
  })

  it("debits each month once at the period's end and starts the next period", async () => {
    const t = await api.createTenant({ credits: "100.00" })
    const first = await subscriptionOf(api, t.apiKey)
    const anchor = Date.parse(first.currentPeriodStart)
    // Two renewals: periods 2 and 3 begin.
    const sub = await until(() => subscriptionOf(api, t.apiKey), (s) => Date.parse(s.currentPeriodStart) >= anchor + 2 * PERIOD_MS, 20_000, "two renewals")
    expect(sub.status).toBe("active")
    expect(Date.parse(sub.currentPeriodEnd) - Date.parse(sub.currentPeriodStart)).toBe(PERIOD_MS)
    const renewed = Math.round((Date.parse(sub.currentPeriodStart) - anchor) / PERIOD_MS)
    const debits = await subscriptionDebits(api, t.apiKey)
    // Exactly one debit per period begun, of the month's price, in the ledger's chain.
    expect(debits).toHaveLength(renewed)
    expect(new Set(debits.map((d) => d.id)).size).toBe(renewed)
    for (const d of debits) expect(d).toMatchObject({ type: "debit", amount: "-9.00", serviceKey: "billing.subscription", resourceType: "subscription" })
    const chain = [...debits].reverse()
    expect(chain[0].balanceAfter).toBe("91.00")
    for (let i = 1; i < chain.length; i++) expect(units(chain[i].balanceAfter)).toBe(units(chain[i - 1].balanceAfter) - units("9.00"))
  }, 40_000)

  it("leaves a subscription the balance cannot renew past due, mails the owner, and refuses paid work with 403 no_active_plan", async () => {
    const ownerEmail = `past-due-${Math.random().toString(36).slice(2)}@example.com`
    const t = await api.createTenant({ credits: "1.00", ownerEmail })
    expect((await api.call("POST", "/v1/scraper/jobs", { key: t.apiKey, body: jobBody })).status).toBe(201)
    const sub = await until(() => subscriptionOf(api, t.apiKey), (s) => s.status === "past_due", 15_000, "past due")
    expect(sub).toMatchObject({ plan: "starter", renewsAt: null })
    const mail = await smtp.waitForMail(ownerEmail, (m) => m.subject === "Your Trawl subscription is past due", 15_000)
    expect(mail.text).toMatch(/9\.00 EUR/)
    expect(mail.text).toMatch(/no_active_plan/)
    // Nothing was debited for the period not paid; the balance stays (less what the job cost).
    expect(await subscriptionDebits(api, t.apiKey)).toEqual([])
    const refused = await until(
      () => api.call("POST", "/v1/scraper/jobs", { key: t.apiKey, body: jobBody }),
      (r) => r.status !== 201,
      5_000,
      "the refusal"
    )
    expect(refused.status, refused.text).toBe(403)
    expect(refused.json).toMatchObject({ status: "error", code: "no_active_plan" })
    // It stays past due, mailed once.
    await sleep(2 * PERIOD_MS)
    expect((await subscriptionOf(api, t.apiKey)).status).toBe("past_due")
    expect(smtp.mails().filter((m) => m.recipients.includes(ownerEmail))).toHaveLength(1)
  }, 40_000)
})

describe.each(backends())("a renewal across the SIGKILL of the only node ($name)", (backend) => {
  let server: RunningServer | undefined
  const PERIOD_MS = 15_000

  afterAll(async () => {
    await server?.stop()
  })

  it("happens once the node is back, exactly once for the period", async () => {
    const env = { ...(await backend.env()), ALLOW_PRIVATE_TARGETS: "true", SUBSCRIPTION_PERIOD_SECONDS: "15" }
    const first = await startServer(env, { keepDataDir: true })
    let api = client(first.baseUrl)
    const t = await api.createTenant({ credits: "50.00" })
    const sub = await subscriptionOf(api, t.apiKey)
    const end = Date.parse(sub.currentPeriodEnd)
    expect(end - Date.now()).toBeGreaterThan(5_000)
    await first.stop("SIGKILL")

    // Down across the period's end.
    await sleep(Math.max(0, end - Date.now()) + 1_000)
    server = await startServer(env, { dataDir: first.dataDir })
    api = client(server.baseUrl)
    const renewed = await until(() => subscriptionOf(api, t.apiKey), (s) => Date.parse(s.currentPeriodStart) >= end, 30_000, "the renewal")
    expect(renewed.status).toBe("active")
    // Periods follow each other without gaps: the first renewed period starts at `end`, and a restart
    // slower than a period (a loaded machine) may already have renewed the next ones too.
    expect((Date.parse(renewed.currentPeriodStart) - end) % PERIOD_MS).toBe(0)
    // On a slow machine the next period may be renewed between two reads: read the debits and the
    // balance between two reads of the subscription that agree, so all three describe one moment.
    const seen = await until(async () => {
      const before = await subscriptionOf(api, t.apiKey)
      const debits = await subscriptionDebits(api, t.apiKey)
      const balance = (await api.get("/v1/billing/me/balance", t.apiKey)).json.data.balance
      const after = await subscriptionOf(api, t.apiKey)
      return { before, after, debits, balance }
    }, (r) => r.before.currentPeriodStart === r.after.currentPeriodStart, 30_000, "a read between renewals")
    // Once per period: as many debits as periods begun since the first, no more.
    const periodsBegun = Math.round((Date.parse(seen.after.currentPeriodStart) - Date.parse(sub.currentPeriodStart)) / PERIOD_MS)
    expect(seen.debits).toHaveLength(periodsBegun)
    const oldestFirst = [...seen.debits].sort((a, b) => Date.parse(a.createdAt) - Date.parse(b.createdAt))
    expect(oldestFirst[0]).toMatchObject({ amount: "-9.00", balanceAfter: "41.00", serviceKey: "billing.subscription" })
    expect(seen.balance).toBe(oldestFirst.at(-1).balanceAfter)
  }, 120_000)
})

describe.skipIf(!process.env.DATABASE_URL)("a renewal whose message was lost (postgres)", () => {
  let server: RunningServer | undefined

  afterAll(async () => {
    await server?.stop()
  })

  it("is stored again by the catch-up when a node starts, and happens", async () => {
    const env: Record<string, string> = { ...(await backends()[1]!.env()), SUBSCRIPTION_PERIOD_SECONDS: "6" }
    // The same data dir again: it holds the node's SECRET_KEY, which keys are checked with.
    const first = await startServer(env, { keepDataDir: true })
    let api = client(first.baseUrl)
    const t = await api.createTenant({ credits: "50.00" })
    const sub = await subscriptionOf(api, t.apiKey)
    await first.stop()
    // As if the node had died between a renewal and storing the next one's message.
    const lost = await pgQuery<{ id: string }>(env.DATABASE_URL!,
      "DELETE FROM cluster_messages WHERE entity_type = 'Tenant' AND entity_id = $1 AND tag = 'RenewSubscription' RETURNING id", [t.tenantId])
    expect(lost).toHaveLength(1)
    await pgQuery(env.DATABASE_URL!, "UPDATE subscriptions SET renewal_scheduled_for = NULL WHERE tenant_id = $1", [t.tenantId])

    server = await startServer(env, { dataDir: first.dataDir })
    api = client(server.baseUrl)
    const end = Date.parse(sub.currentPeriodEnd)
    const renewed = await until(() => subscriptionOf(api, t.apiKey), (s) => Date.parse(s.currentPeriodStart) >= end, 30_000, "the renewal")
    expect(renewed.status).toBe("active")
    const debits = await subscriptionDebits(api, t.apiKey)
    expect(debits.length).toBe(Math.round((Date.parse(renewed.currentPeriodStart) - Date.parse(sub.currentPeriodStart)) / 6000))
    expect(debits.at(-1)).toMatchObject({ amount: "-9.00", balanceAfter: "41.00" })
  }, 120_000)
})
