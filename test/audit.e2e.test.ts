import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { backends, client, INTERNAL_TOKEN, type RunningServer, startServer } from "./support/server-process.ts"

const expectError = (res: { status: number; json: any }, status: number, code: string) => {
  expect(res.status, JSON.stringify(res.json)).toBe(status)
  expect(res.json.status).toBe("error")
  expect(res.json.code).toBe(code)
}

const paths = (res: { json: any }) => (res.json.error.details as Array<{ path: string }>).map((d) => d.path).sort()

describe.each(backends())("audit log over HTTP ($name)", (backend) => {
  let server: RunningServer
  let api: ReturnType<typeof client>
  let adminKey: string

  beforeAll(async () => {
    server = await startServer(await backend.env())
    api = client(server.baseUrl)
    const admin = await api.call("POST", "/internal/v1/internal-admins", { token: INTERNAL_TOKEN, body: { email: `audit-${Date.now()}@trawl.dev` } })
    expect(admin.status).toBe(201)
    adminKey = admin.json.data.apiKey
  })
  afterAll(async () => {
    await server?.stop()
  })

  type Tenant = Awaited<ReturnType<ReturnType<typeof client>["createTenant"]>>
  const audit = (key: string, query = "") => api.get(`/v1/iam/audit${query}`, key)
  const actions = (res: { json: any }) => (res.json.data.items as Array<any>).map((e) => e.action)

  /** A tenant whose owner created, updated and deleted one role: three entries, in that order. */
  const tenantWithRoleEvents = async () => {
    const t = await api.createTenant()
    const created = await api.post("/v1/iam/roles", { name: "auditors", permissions: ["scraper:jobs:read"] }, t.apiKey)
    expect(created.status).toBe(201)
    const roleId = created.json.data.id as string
    expect((await api.call("PATCH", `/v1/iam/roles/${roleId}`, { key: t.apiKey, body: { permissions: ["scraper:*:read"] } })).status).toBe(200)
    expect((await api.call("DELETE", `/v1/iam/roles/${roleId}`, { key: t.apiKey })).status).toBe(200)
    return { t, roleId }
  }

  const keyWithRole = async (t: Tenant, name: string, password?: string) => {
    const roles = (await api.get("/v1/iam/roles", t.apiKey)).json.data.items as Array<any>
    const roleId = roles.find((r) => r.name === name).id
    const res = await api.post(`/v1/iam/identities/${t.ownerIdentityId}/api-keys`, { name, roleId, ...(password ? { currentPassword: password } : {}) }, t.apiKey)
    expect(res.status, res.text).toBe(201)
    return res.json.data.rawKey as string
  }

  it("records every role event and lists them newest first", async () => {
    const { t, roleId } = await tenantWithRoleEvents()
    const res = await audit(t.apiKey)
    expect(res.status).toBe(200)
    expect(res.json.data.pagination).toEqual({ offset: 0, limit: 50, total: 3, hasMore: false })
    const [deleted, updated, created] = res.json.data.items
    for (const entry of res.json.data.items) {
      expect(entry).toMatchObject({ tenantId: t.tenantId, actorId: t.ownerIdentityId, onBehalfOf: null, targetId: roleId })
      expect(entry.id).toMatch(/^aud_/)
      expect(Date.parse(entry.createdAt)).toBeGreaterThan(0)
      expect(Object.keys(entry).sort()).toEqual(["action", "actorId", "createdAt", "data", "id", "ip", "onBehalfOf", "targetId", "tenantId"])
      // made through the owner's API key: the entry names the key, not only its identity
      expect(entry.data.apiKeyId).toMatch(/^key_/)
    }
    expect(created).toMatchObject({ action: "role.create", data: { name: "auditors", description: null, permissions: ["scraper:jobs:read"] } })
    expect(updated).toMatchObject({
      action: "role.update",
      data: { changed: ["permissions"], before: { permissions: ["scraper:jobs:read"] }, after: { permissions: ["scraper:*:read"] } }
    })
    expect(deleted).toMatchObject({ action: "role.delete", data: { name: "auditors", permissions: ["scraper:*:read"] } })

    // Refused changes leave no entry, nor does an empty one.
    const kept = (await api.post("/v1/iam/roles", { name: "kept", permissions: ["scraper:jobs:read"] }, t.apiKey)).json.data
    const unchanged = await api.call("PATCH", `/v1/iam/roles/${kept.id}`, { key: t.apiKey, body: {} })
    expect(unchanged.json.data).toEqual(kept)
    expect(actions(await audit(t.apiKey))).toEqual(["role.create", "role.delete", "role.update", "role.create"])
    expect((await api.post("/v1/iam/roles", { name: "x", permissions: ["scraper:jobs:read"] }, t.apiKey)).status).toBe(400)
    expect((await api.post("/v1/iam/roles", { name: "kept", permissions: ["scraper:jobs:read"] }, t.apiKey)).status).toBe(409)
    expect((await api.call("PATCH", `/v1/iam/roles/${kept.id}`, { key: t.apiKey, body: { permissions: ["cross_tenant:*:*"] } })).status).toBe(403)
    expect((await audit(t.apiKey)).json.data.pagination.total).toBe(4)
  })

  it("filters by action, identity and time, and pages", async () => {
    const { t } = await tenantWithRoleEvents()
    const before = new Date(Date.now() - 60_000).toISOString()
    const after = new Date(Date.now() + 60_000).toISOString()
    expect(actions(await audit(t.apiKey, "?action=role.create"))).toEqual(["role.create"])
    expect(actions(await audit(t.apiKey, "?action=role.*"))).toEqual(["role.delete", "role.update", "role.create"])
    expect(actions(await audit(t.apiKey, "?action=rol.*"))).toEqual([])
    expect(actions(await audit(t.apiKey, "?action=session.*"))).toEqual([])
    expect(actions(await audit(t.apiKey, `?identityId=${t.ownerIdentityId}`))).toHaveLength(3)
    expect(actions(await audit(t.apiKey, "?identityId=idt_somebody_else"))).toEqual([])
    expect(actions(await audit(t.apiKey, `?from=${before}&to=${after}`))).toHaveLength(3)
    expect(actions(await audit(t.apiKey, `?from=${after}`))).toEqual([])
    expect(actions(await audit(t.apiKey, `?to=${before}`))).toEqual([])
    expect(actions(await audit(t.apiKey, `?action=role.update&identityId=${t.ownerIdentityId}&from=${before}`))).toEqual(["role.update"])

    const first = await audit(t.apiKey, "?limit=1")
    expect(first.json.data.pagination).toEqual({ offset: 0, limit: 1, total: 3, hasMore: true })
    expect(actions(first)).toEqual(["role.delete"])
    const second = await audit(t.apiKey, "?limit=1&offset=1")
    expect(actions(second)).toEqual(["role.update"])
    expect((await audit(t.apiKey, "?limit=2&offset=2")).json.data.pagination.hasMore).toBe(false)
    expect((await audit(t.apiKey, "?limit=200")).status).toBe(200)
  })

  it("names the API key in every entry of an act made with one, account and delegation events too", async () => {
    const t = await api.createTenant()
    const enabled = await api.post("/v1/iam/auth/totp/enable", {}, t.apiKey)
    expect(enabled.status, enabled.text).toBe(200)
    const verification = await api.post("/v1/iam/auth/email/verify/send", {}, t.apiKey)
    expect(verification.status, verification.text).toBeLessThan(300)
    const refused = await api.post(`/v1/iam/identities/${t.ownerIdentityId}/api-keys`, { name: "k", roleId: (await api.get("/v1/iam/auth/me", t.apiKey)).json.data.defaultRoleId, currentPassword: "not the password at all" }, t.apiKey)
    expect(refused.status, refused.text).toBe(403)
    expect((await api.call("DELETE", "/v1/iam/users/me/sessions", { key: t.apiKey })).status).toBe(200)
    const entries = (await audit(t.apiKey, "?limit=200")).json.data.items as Array<any>
    for (const action of ["totp.enable_started", "email.verification_requested", "reauthentication.failure", "session.revoke_others"]) {
      const entry = entries.find((e) => e.action === action)
      expect(entry, action).toBeDefined()
      expect([action, entry.actorId, entry.data.apiKeyId]).toEqual([action, t.ownerIdentityId, t.apiKeyId])
    }
  })

  it("answers a bad filter with 400 naming each offending parameter", async () => {
    const t = await api.createTenant()
    const badAction = await audit(t.apiKey, "?action=Role%20Create")
    expectError(badAction, 400, "invalid_filter")
    expect(paths(badAction)).toEqual(["action"])
    // Not an action the log records (a typo would otherwise match nothing, silently).
    for (const action of ["role", "role.created", "session", "foo.bar", "*", "role.*.x", "role*", ".role", "a".repeat(201)]) {
      expect(paths(await audit(t.apiKey, `?action=${encodeURIComponent(action)}`)), action).toEqual(["action"])
    }
    const badTimes = await audit(t.apiKey, "?from=yesterday&to=2026-02-30T00:00:00Z")
    expectError(badTimes, 400, "invalid_filter")
    expect(paths(badTimes)).toEqual(["from", "to"])
    expect(paths(await audit(t.apiKey, "?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z"))).toEqual(["to"])
    expect(paths(await audit(t.apiKey, `?identityId=&action=x.*&from=${"1".repeat(5)}`))).toEqual(["from", "identityId"])
    expect(paths(await audit(t.apiKey, `?identityId=${"i".repeat(201)}`))).toEqual(["identityId"])
    // Text the database cannot hold is refused before it gets there.
    for (const name of ["identityId", "action", "from"]) {
      const nul = await audit(t.apiKey, `?${name}=a%00b`)
      expect(nul.status, name).toBe(400)
      expect(paths(nul)).toEqual([name])
    }
    const badPage = await audit(t.apiKey, "?limit=0")
    expectError(badPage, 400, "validation_error")
    expect(paths(badPage)).toEqual(["limit"])
    expect(paths(await audit(t.apiKey, "?limit=201"))).toEqual(["limit"])
    expect(paths(await audit(t.apiKey, "?offset=-1"))).toEqual(["offset"])
    expect(paths(await audit(t.apiKey, "?limit=10&take=20"))).toEqual(["take"])
  })

  it("is read by owners and admins only: a read or write key gets 403", async () => {
    const t = await api.createTenant()
    const reader = await keyWithRole(t, "read")
    const writer = await keyWithRole(t, "write")
    const admin = await keyWithRole(t, "admin", "correct horse battery")
    const refused = await audit(reader)
    expectError(refused, 403, "forbidden")
    expect(refused.json.error.message).toContain("iam:identities:write")
    expectError(await audit(writer), 403, "forbidden")
    expect((await audit(admin)).status).toBe(200)
    expect((await audit(t.apiKey)).status).toBe(200)
    expectError(await api.get("/v1/iam/audit"), 401, "unauthorized")
  })

  it("shows a tenant only its own entries", async () => {
    const { t: a } = await tenantWithRoleEvents()
    const b = await api.createTenant()
    expect((await audit(b.apiKey)).json.data.pagination.total).toBe(0)
    expect((await audit(b.apiKey, `?identityId=${a.ownerIdentityId}`)).json.data.items).toEqual([])
    expect((await audit(a.apiKey)).json.data.pagination.total).toBe(3)
  })

  it("lets super-admins read any tenant's log at /v1/admin/tenants/{tenantId}/audit", async () => {
    const { t, roleId } = await tenantWithRoleEvents()
    const res = await api.get(`/v1/admin/tenants/${t.tenantId}/audit`, adminKey)
    expect(res.status).toBe(200)
    expect(actions(res)).toEqual(["role.delete", "role.update", "role.create"])
    expect(res.json.data.items.every((e: any) => e.tenantId === t.tenantId && e.targetId === roleId)).toBe(true)
    expect(actions(await api.get(`/v1/admin/tenants/${t.tenantId}/audit?action=role.update`, adminKey))).toEqual(["role.update"])
    expect((await api.get(`/v1/admin/tenants/${t.tenantId}/audit?limit=1`, adminKey)).json.data.pagination).toEqual({
      offset: 0,
      limit: 1,
      total: 3,
      hasMore: true
    })
    expectError(await api.get(`/v1/admin/tenants/${t.tenantId}/audit?from=soon`, adminKey), 400, "invalid_filter")
    expectError(await api.get("/v1/admin/tenants/ten_nobody/audit", adminKey), 404, "not_found")
    // Tenants, even their owners, do not reach the super-admin plane.
    expectError(await api.get(`/v1/admin/tenants/${t.tenantId}/audit`, t.apiKey), 403, "forbidden")
    // The admin's own tenant log holds what the admin did there.
    const internalRole = await api.post("/v1/iam/roles", { name: `audited ${Date.now()}`, permissions: ["*:*:read"] }, adminKey)
    expect(internalRole.status).toBe(201)
    const own = await audit(adminKey, "?action=role.create")
    expect(own.json.data.items[0]).toMatchObject({ targetId: internalRole.json.data.id, tenantId: internalRole.json.data.tenantId })
  })

  it("is left out of the public OpenAPI document on the super-admin side only", async () => {
    const doc = (await api.get("/v1/openapi.json")).json
    expect(Object.keys(doc.paths)).toContain("/v1/iam/audit")
    expect(Object.keys(doc.paths).some((p) => p.startsWith("/v1/admin"))).toBe(false)
  })
})
