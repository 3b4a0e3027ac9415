/**
 * Quota increase requests through the real HTTP interface (docs/api.md, "Quota increase requests"):
 * a tenant asks, withdraws; a super-admin lists, approves (the quota really rises) or rejects; the
 * requester is told by mail, read here from a real SMTP server; every step is in the tenant's audit log.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { backends, client, INTERNAL_TOKEN, type RunningServer, startServer } from "./support/server-process.ts"
import { errorPaths, expectError } from "./support/errors.ts"
import { startSmtpServer, type TestSmtpServer } from "./support/smtp.ts"

const nonce = () => Math.random().toString(36).slice(2, 10)

describe.each(backends())("quota increase requests over HTTP ($name)", (backend) => {
  let server: RunningServer
  let smtp: TestSmtpServer
  let api: ReturnType<typeof client>
  let admin: string

  beforeAll(async () => {
    smtp = await startSmtpServer()
    server = await startServer({ ...(await backend.env()), SMTP_URL: smtp.url })
    api = client(server.baseUrl)
    const created = await api.call("POST", "/internal/v1/internal-admins", { token: INTERNAL_TOKEN, body: { email: `quota-admin-${nonce()}@trawl.dev` } })
    expect(created.status, created.text).toBe(201)
    admin = created.json.data.apiKey
  }, 120_000)
  afterAll(async () => {
    await server?.stop()
    await smtp?.close()
  })

  /** A tenant whose owner's primary address is known, so its mails can be read. */
  const newTenant = async () => {
    const email = `owner-${nonce()}@example.com`
    return { ...(await api.createTenant({ ownerEmail: email })), email }
  }
  type Tenant = Awaited<ReturnType<typeof newTenant>>

  const request = (key: string, body: Record<string, unknown>) => api.post("/v1/iam/quotas/me/requests", body, key)
  const mine = (key: string, query = "") => api.get(`/v1/iam/quotas/me/requests${query}`, key)
  const withdraw = (key: string, id: string) => api.call("DELETE", `/v1/iam/quotas/me/requests/${id}`, { key })
  const decide = (id: string, decision: "approve" | "reject", body: Record<string, unknown> = {}, key = admin) =>
    api.post(`/v1/admin/quota-requests/${id}/${decision}`, body, key)
  const limitOf = async (key: string, quota: string) =>
    ((await api.get("/v1/iam/quotas/me", key)).json.data.items as Array<any>).find((q) => q.key === quota).limit as number
  const auditActions = async (t: Tenant, action: string) => {
    const res = await api.get(`/v1/iam/audit?action=${action}`, t.apiKey)
    expect(res.status, res.text).toBe(200)
    return res.json.data.items as Array<any>
  }
  const keyWithRole = async (t: Tenant, name: string) => {
    const roles = (await api.get("/v1/iam/roles", t.apiKey)).json.data.items as Array<any>
    const res = await api.post(`/v1/iam/identities/${t.ownerIdentityId}/api-keys`, { name, roleId: roles.find((r) => r.name === name).id }, t.apiKey)
    expect(res.status, res.text).toBe(201)
    return res.json.data.rawKey as string
  }

  it("creates a pending request, lists and filters it, refuses a second pending one on the key, and withdraws it", async () => {
    const t = await newTenant()
    const created = await request(t.apiKey, { quotaKey: "scraper.jobs.daily", requestedLimit: "20000", reason: "a bigger crawl next month" })
    expect(created.status, created.text).toBe(201)
    expect(created.json.code).toBe("201-created")
    const r = created.json.data
    expect(r).toEqual({
      id: expect.stringMatching(/^qreq_/),
      tenantId: t.tenantId,
      quotaKey: "scraper.jobs.daily",
      requestedBy: t.ownerIdentityId,
      requestedLimit: "20000",
      reason: "a bigger crawl next month",
      status: "pending",
      decidedBy: null,
      decidedAt: null,
      decisionNote: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String)
    })
    // Asking for a request does not change the limit.
    expect(await limitOf(t.apiKey, "scraper.jobs.daily")).toBe(10000)

    const second = await request(t.apiKey, { quotaKey: "scraper.jobs.daily", requestedLimit: "30000", reason: "even more" })
    expectError(second, 409, "quota_request_pending")
    // Another key is its own question.
    const other = await request(t.apiKey, { quotaKey: "iam.api-keys.total", requestedLimit: "40", reason: "more integrations" })
    expect(other.status).toBe(201)

    const list = await mine(t.apiKey)
    expect(list.status).toBe(200)
    expect(list.json.data.pagination).toEqual({ offset: 0, limit: 50, total: 2, hasMore: false })
    expect(list.json.data.items.map((i: any) => i.id)).toEqual([other.json.data.id, r.id])
    const page = await mine(t.apiKey, "?offset=1&limit=1")
    expect(page.json.data.items.map((i: any) => i.id)).toEqual([r.id])
    expect(page.json.data.pagination).toEqual({ offset: 1, limit: 1, total: 2, hasMore: false })
    expect((await mine(t.apiKey, "?limit=1")).json.data.pagination.hasMore).toBe(true)

    const withdrawn = await withdraw(t.apiKey, r.id)
    expect(withdrawn.status, withdrawn.text).toBe(200)
    expect(withdrawn.json.data).toMatchObject({ id: r.id, status: "withdrawn", withdrawn: true, decidedBy: null, decidedAt: null })
    expect(Date.parse(withdrawn.json.data.withdrawnAt)).toBeGreaterThanOrEqual(Date.parse(r.createdAt))
    expect(withdrawn.json.data.updatedAt).toBe(withdrawn.json.data.withdrawnAt)
    // Twice is a state conflict; it stays withdrawn.
    const again = await withdraw(t.apiKey, r.id)
    expectError(again, 409, "quota_request_not_pending")
    expect(again.json.error.currentStatus).toBe("withdrawn")
    expectError(await withdraw(t.apiKey, "qreq_nosuchrequest"), 404, "not_found")

    // Filters by status, the withdrawn one shown as `withdrawn`.
    const byStatus = async (status: string) => (await mine(t.apiKey, `?status=${status}`)).json.data.items.map((i: any) => i.id)
    expect(await byStatus("withdrawn")).toEqual([r.id])
    expect(await byStatus("pending")).toEqual([other.json.data.id])
    expect(await byStatus("approved")).toEqual([])
    expect(await byStatus("rejected")).toEqual([])
    const badStatus = await mine(t.apiKey, "?status=cancelled")
    expectError(badStatus, 400, "invalid_filter")
    expect(errorPaths(badStatus)).toEqual(["status"])

    // Once withdrawn, the key is free for a new request.
    expect((await request(t.apiKey, { quotaKey: "scraper.jobs.daily", requestedLimit: "30000", reason: "after all" })).status).toBe(201)
  })

  it("enforces every bound of the body and the list query", async () => {
    const t = await newTenant()
    const ok = { quotaKey: "extractor.configs.total", requestedLimit: "500", reason: "many sites" }
    // A quota key must be one of the catalogue; one that is not is named with the body's other faults.
    expectError(await request(t.apiKey, { ...ok, quotaKey: "scraper.pages.total" }), 400, "validation_error")
    const allBad = await request(t.apiKey, { quotaKey: "nope", requestedLimit: "abc", reason: "" })
    expectError(allBad, 400, "validation_error")
    expect(errorPaths(allBad)).toEqual(["quotaKey", "reason", "requestedLimit"])
    for (const quotaKey of [7, "", "x".repeat(101), null]) {
      const res = await request(t.apiKey, { ...ok, quotaKey })
      expectError(res, 400, "validation_error")
      expect(errorPaths(res)).toEqual(["quotaKey"])
    }
    for (const requestedLimit of ["0", "-5", "abc", "1.5", "0100", " 500", "1e3", "100000001", "9999999999", "", 500, null]) {
      const res = await request(t.apiKey, { ...ok, requestedLimit })
      expectError(res, 400, "validation_error")
      expect(errorPaths(res), String(requestedLimit)).toEqual(["requestedLimit"])
    }
    for (const reason of ["", "x".repeat(1001), "nul\u0000inside", 3]) {
      const res = await request(t.apiKey, { ...ok, reason })
      expectError(res, 400, "validation_error")
      expect(errorPaths(res)).toEqual(["reason"])
    }
    const missing = await request(t.apiKey, {})
    expect(errorPaths(missing)).toEqual(["quotaKey", "reason", "requestedLimit"])
    expect(errorPaths(await request(t.apiKey, { ...ok, extra: true }))).toEqual(["extra"])

    // Not above the current limit (100 by default, then 150 set by the platform): 422.
    for (const requestedLimit of ["1", "99", "100"]) {
      const res = await request(t.apiKey, { ...ok, requestedLimit })
      expectError(res, 422, "requested_limit_not_higher")
      expect(errorPaths(res)).toEqual(["requestedLimit"])
      expect(res.json.error.currentLimit).toBe(100)
    }
    expect((await api.call("PUT", `/v1/admin/tenants/${t.tenantId}/quotas/extractor.configs.total`, { key: admin, body: { limit: 150 } })).status).toBe(200)
    expectError(await request(t.apiKey, { ...ok, requestedLimit: "150" }), 422, "requested_limit_not_higher")

    // The edges that pass: 151, the maximum, a 1000-character reason (counted in characters).
    const edge = await request(t.apiKey, { ...ok, requestedLimit: "151", reason: "é".repeat(1000) })
    expect(edge.status, edge.text).toBe(201)
    expect(edge.json.data.reason).toBe("é".repeat(1000))
    const max = await request(t.apiKey, { quotaKey: "scraper.jobs.daily", requestedLimit: "100000000", reason: "r" })
    expect(max.status, max.text).toBe(201)
    expect(max.json.data.requestedLimit).toBe("100000000")

    for (const query of ["?limit=0", "?limit=201", "?offset=-1", "?limit=abc"]) {
      expectError(await mine(t.apiKey, query), 400, "validation_error")
    }
    expect((await mine(t.apiKey, "?limit=200")).status).toBe(200)
  })

  it("lets exactly one of concurrent creations on one key win", async () => {
    const t = await newTenant()
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) =>
      request(t.apiKey, { quotaKey: "webhooks.endpoints.total", requestedLimit: String(40 + i), reason: `racer ${i}` })))
    const statuses = results.map((r) => r.status).sort()
    expect(statuses).toEqual([201, ...Array(9).fill(409)])
    for (const r of results.filter((r) => r.status === 409)) expect(r.json.code).toBe("quota_request_pending")
    const pending = await mine(t.apiKey, "?status=pending")
    expect(pending.json.data.pagination.total).toBe(1)
    expect(pending.json.data.items[0].id).toBe(results.find((r) => r.status === 201)!.json.data.id)
  })

  it("approves a request: the quota rises, the tenant can use it, the requester is mailed and the decision audited", async () => {
    const t = await newTenant()
    // A low limit set by the platform, used up.
    expect((await api.call("PUT", `/v1/admin/tenants/${t.tenantId}/quotas/extractor.configs.total`, { key: admin, body: { limit: 2 } })).status).toBe(200)
    const config = (notes: string) => api.post("/v1/extractor/configs", { scope: "tenant", notes }, t.apiKey)
    expect((await config("one")).status).toBe(201)
    expect((await config("two")).status).toBe(201)
    expectError(await config("three, refused"), 429, "quota_exceeded")

    const created = await request(t.apiKey, { quotaKey: "extractor.configs.total", requestedLimit: "3", reason: "one more site" })
    expect(created.status, created.text).toBe(201)
    const id = created.json.data.id as string

    // The super-admin sees it among every tenant's, filtered by tenant and status.
    const listed = await api.get(`/v1/admin/quota-requests?tenantId=${t.tenantId}&status=pending`, admin)
    expect(listed.status, listed.text).toBe(200)
    expect(listed.json.data.items).toEqual([created.json.data])
    expect((await api.get(`/v1/admin/quota-requests?status=pending&limit=200`, admin)).json.data.items.map((i: any) => i.id)).toContain(id)

    const approved = await decide(id, "approve", { note: "granted for the new site" })
    expect(approved.status, approved.text).toBe(200)
    expect(approved.json.data).toMatchObject({
      id,
      status: "approved",
      decidedBy: expect.stringMatching(/^idt_/),
      decisionNote: "granted for the new site",
      requestedLimit: "3"
    })
    expect(Date.parse(approved.json.data.decidedAt)).toBeGreaterThan(0)
    expect((await mine(t.apiKey, "?status=approved")).json.data.items).toEqual([approved.json.data])

    // The new limit shows and can be used, up to it.
    expect(await limitOf(t.apiKey, "extractor.configs.total")).toBe(3)
    expect((await config("three, fits now")).status).toBe(201)
    expectError(await config("four, refused"), 429, "quota_exceeded")

    const mail = await smtp.waitForMail(t.email, (m) => m.subject.includes("approved"))
    expect(mail.subject).toBe("Quota request approved: extractor.configs.total")
    expect(mail.text).toContain("extractor.configs.total")
    expect(mail.text).toContain("was approved")
    expect(mail.text).toContain("granted for the new site")
    expect(mail.text).toContain(id)

    // Decided once: approving, rejecting or withdrawing it again is a state conflict.
    expectError(await decide(id, "approve"), 409, "quota_request_not_pending")
    expectError(await decide(id, "reject"), 409, "quota_request_not_pending")
    expectError(await withdraw(t.apiKey, id), 409, "quota_request_not_pending")
    expect(await limitOf(t.apiKey, "extractor.configs.total")).toBe(3)

    const [entry] = await auditActions(t, "quota_request.approve")
    expect(entry).toMatchObject({ tenantId: t.tenantId, action: "quota_request.approve", targetId: id, actorId: approved.json.data.decidedBy })
    expect(entry.data).toMatchObject({ quotaKey: "extractor.configs.total", requestedLimit: "3", note: "granted for the new site" })
    const [createdEntry] = await auditActions(t, "quota_request.create")
    expect(createdEntry).toMatchObject({ actorId: t.ownerIdentityId, targetId: id, data: { quotaKey: "extractor.configs.total", requestedLimit: "3", currentLimit: 2 } })
  }, 60_000)

  it("rejects a request: the limit stays, the requester is mailed, and a new request is allowed", async () => {
    const t = await newTenant()
    const created = await request(t.apiKey, { quotaKey: "iam.identities.total", requestedLimit: "80", reason: "hiring" })
    const id = created.json.data.id as string
    const rejected = await decide(id, "reject", { note: "not on this plan" })
    expect(rejected.status, rejected.text).toBe(200)
    expect(rejected.json.data).toMatchObject({ id, status: "rejected", decisionNote: "not on this plan" })
    expect(await limitOf(t.apiKey, "iam.identities.total")).toBe(50)

    const mail = await smtp.waitForMail(t.email, (m) => m.subject.includes("rejected"))
    expect(mail.subject).toBe("Quota request rejected: iam.identities.total")
    expect(mail.text).toContain("iam.identities.total")
    expect(mail.text).toContain("was rejected")
    expect(mail.text).toContain("not on this plan")
    expect(mail.text).toContain("The limit of iam.identities.total is unchanged: 50.")

    expectError(await decide(id, "approve"), 409, "quota_request_not_pending")
    expectError(await decide(id, "reject"), 409, "quota_request_not_pending")
    expect(await limitOf(t.apiKey, "iam.identities.total")).toBe(50)
    const [entry] = await auditActions(t, "quota_request.reject")
    expect(entry).toMatchObject({ targetId: id, data: { quotaKey: "iam.identities.total", note: "not on this plan" } })

    // A rejected request no longer blocks the key; a decision without a note is fine.
    const next = await request(t.apiKey, { quotaKey: "iam.identities.total", requestedLimit: "60", reason: "fewer then" })
    expect(next.status, next.text).toBe(201)
    // With no note the body may be left out altogether.
    const approved = await api.call("POST", `/v1/admin/quota-requests/${next.json.data.id}/approve`, { key: admin })
    expect(approved.status, approved.text).toBe(200)
    expect(approved.json.data.decisionNote).toBe(null)
    expect(await limitOf(t.apiKey, "iam.identities.total")).toBe(60)
    const mail2 = await smtp.waitForMail(t.email, (m) => m.subject === "Quota request approved: iam.identities.total")
    expect(mail2.text).toContain("now 60")

    // A withdrawn request cannot be decided.
    const third = await request(t.apiKey, { quotaKey: "iam.identities.total", requestedLimit: "70", reason: "later" })
    expect((await withdraw(t.apiKey, third.json.data.id)).status).toBe(200)
    const late = await decide(third.json.data.id, "approve")
    expectError(late, 409, "quota_request_not_pending")
    expect(late.json.error.currentStatus).toBe("withdrawn")
    expect(await limitOf(t.apiKey, "iam.identities.total")).toBe(60)
    const withdrawals = await auditActions(t, "quota_request.withdraw")
    expect(withdrawals.map((e) => e.targetId)).toEqual([third.json.data.id])
  }, 60_000)

  it("decides a request once when an approval and a rejection race", async () => {
    const t = await newTenant()
    const created = await request(t.apiKey, { quotaKey: "scraper.jobs.concurrent", requestedLimit: "75", reason: "race" })
    const id = created.json.data.id as string
    const [a, b] = await Promise.all([decide(id, "approve"), decide(id, "reject")])
    expect([a.status, b.status].sort()).toEqual([200, 409])
    const winner = a.status === 200 ? a : b
    expect(await limitOf(t.apiKey, "scraper.jobs.concurrent")).toBe(winner.json.data.status === "approved" ? 75 : 50)
    expect((await api.get(`/v1/admin/quota-requests?tenantId=${t.tenantId}`, admin)).json.data.items[0].status).toBe(winner.json.data.status)
  })

  it("bounds the decision note and the admin list's filters; an unknown request is 404", async () => {
    const t = await newTenant()
    const id = (await request(t.apiKey, { quotaKey: "scraper.jobs.daily", requestedLimit: "10001", reason: "r" })).json.data.id as string
    for (const note of ["x".repeat(1001), 5]) {
      const res = await decide(id, "approve", { note })
      expectError(res, 400, "validation_error")
      expect(errorPaths(res)).toEqual(["note"])
      // Each choice once in the message (an optional nullable field is not "null | null").
      if (note === 5) expect(res.json.error.details[0].message).toBe("Expected string | null, got 5")
    }
    expect(errorPaths(await decide(id, "reject", { other: 1 }))).toEqual(["other"])
    // Nothing was decided by the refused calls.
    expect((await mine(t.apiKey)).json.data.items[0].status).toBe("pending")
    expectError(await decide("qreq_nosuchrequest", "approve"), 404, "not_found")
    expectError(await decide("qreq_nosuchrequest", "reject"), 404, "not_found")
    const longest = await decide(id, "reject", { note: "n".repeat(1000) })
    expect(longest.status, longest.text).toBe(200)
    expect(longest.json.data.decisionNote).toBe("n".repeat(1000))

    const bad = await api.get(`/v1/admin/quota-requests?status=done&tenantId=${"t".repeat(201)}`, admin)
    expectError(bad, 400, "invalid_filter")
    expect(errorPaths(bad)).toEqual(["status", "tenantId"])
    expectError(await api.get("/v1/admin/quota-requests?limit=201", admin), 400, "validation_error")
    const rejected = await api.get(`/v1/admin/quota-requests?tenantId=${t.tenantId}&status=rejected`, admin)
    expect(rejected.json.data.items.map((i: any) => i.id)).toEqual([id])
    expect((await api.get(`/v1/admin/quota-requests?tenantId=${t.tenantId}&status=pending`, admin)).json.data.items).toEqual([])
  })

  it("keeps tenants apart: another tenant's request is not listed, withdrawn or blocking", async () => {
    const a = await newTenant()
    const b = await newTenant()
    const mineA = await request(a.apiKey, { quotaKey: "scraper.jobs.daily", requestedLimit: "12000", reason: "a" })
    expect(mineA.status).toBe(201)
    // B's pending request on the same key is its own.
    const mineB = await request(b.apiKey, { quotaKey: "scraper.jobs.daily", requestedLimit: "13000", reason: "b" })
    expect(mineB.status).toBe(201)
    expect((await mine(b.apiKey)).json.data.items.map((i: any) => i.id)).toEqual([mineB.json.data.id])
    expectError(await withdraw(b.apiKey, mineA.json.data.id), 404, "not_found")
    expect((await mine(a.apiKey)).json.data.items[0].status).toBe("pending")
    // Approving A's request raises A's limit only.
    expect((await decide(mineA.json.data.id, "approve")).status).toBe(200)
    expect(await limitOf(a.apiKey, "scraper.jobs.daily")).toBe(12000)
    expect(await limitOf(b.apiKey, "scraper.jobs.daily")).toBe(10000)
    // B's audit log holds none of A's entries.
    expect(await auditActions(b, "quota_request.approve")).toEqual([])
    expect((await auditActions(b, "quota_request.create")).map((e) => e.targetId)).toEqual([mineB.json.data.id])
  })

  it("needs quotas:requests:write to ask or withdraw, and the super-admin role to list or decide every tenant's", async () => {
    const t = await newTenant()
    const reader = await keyWithRole(t, "read")
    const writer = await keyWithRole(t, "write")
    const body = { quotaKey: "scraper.jobs.daily", requestedLimit: "15000", reason: "r" }
    const refused = await request(reader, body)
    expectError(refused, 403, "forbidden")
    expect(refused.json.error.message).toContain("quotas:requests:write")
    // The write role may ask (contract: write covers quotas:requests).
    const created = await request(writer, body)
    expect(created.status, created.text).toBe(201)
    const id = created.json.data.id as string
    expectError(await withdraw(reader, id), 403, "forbidden")
    expect((await mine(reader)).json.data.items.map((i: any) => i.id)).toEqual([id])
    expectError(await mine(""), 401, "unauthorized")
    expectError(await api.get("/v1/iam/quotas/me/requests"), 401, "unauthorized")

    // A tenant's owner is no super-admin.
    expectError(await api.get("/v1/admin/quota-requests", t.apiKey), 403, "forbidden")
    expectError(await decide(id, "approve", {}, t.apiKey), 403, "forbidden")
    expectError(await decide(id, "reject", {}, t.apiKey), 403, "forbidden")
    expectError(await api.get("/v1/admin/quota-requests"), 401, "unauthorized")
    expect((await mine(t.apiKey)).json.data.items[0].status).toBe("pending")
    expect((await withdraw(writer, id)).status).toBe(200)

    // The super-admin routes stay out of the public document; the tenant ones are in it.
    const doc = (await api.get("/v1/openapi.json")).json
    expect(Object.keys(doc.paths)).toContain("/v1/iam/quotas/me/requests")
    expect(Object.keys(doc.paths).filter((p) => p.includes("quota-requests"))).toEqual([])
  })
})
