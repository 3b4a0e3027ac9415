import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { backends, client, type RunningServer, startServer } from "./support/server-process.ts"
import { errorPaths, expectError } from "./support/errors.ts"
import { startSmtpServer, type TestSmtpServer } from "./support/smtp.ts"

const PASSWORD = "a long enough passphrase"
const DAY = 86_400_000

const unique = (label: string) => `${label}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}@example.com`
const inDays = (days: number) => new Date(Date.now() + days * DAY).toISOString()

/** Tokens read so far: a second mail to one address is told from the first by its new token. */
const seen = new Set<string>()
const newToken = (text: string | undefined) => {
  const match = /token=([A-Za-z0-9_-]{43})/.exec(text ?? "")
  return match !== null && !seen.has(match[1]!) ? match[1]! : undefined
}

describe.each(backends())("delegations over HTTP ($name)", (backend) => {
  let server: RunningServer
  let smtp: TestSmtpServer
  let api: ReturnType<typeof client>

  beforeAll(async () => {
    smtp = await startSmtpServer()
    const env = await backend.env()
    server = await startServer({ ...env, SMTP_URL: smtp.url })
    api = client(server.baseUrl)
  })
  afterAll(async () => {
    await server?.stop()
    await smtp?.close()
  })

  type Tenant = Awaited<ReturnType<ReturnType<typeof client>["createTenant"]>>
  /** A caller: an API key, or a session sent as a bearer token. */
  type Caller = { key: string } | { session: string }
  const headersOf = (c: Caller, extra: Record<string, string> = {}) =>
    "key" in c ? { "x-api-key": c.key, ...extra } : { authorization: `Bearer ${c.session}`, ...extra }
  const call = (c: Caller, method: string, path: string, body?: unknown, extra?: Record<string, string>) =>
    api.call(method, path, { headers: headersOf(c, extra), ...(body !== undefined ? { body } : {}) })

  const systemRole = async (t: Tenant, name: string) =>
    ((await api.get("/v1/iam/roles?limit=200", t.apiKey)).json.data.items as Array<any>).find((r) => r.name === name && r.isSystem)
  /** The token of the newest mail to `email` that satisfies `about`. */
  const mailedToken = async (email: string, about: string) => {
    const mail = await smtp.waitForMail(email, (m) => (m.text ?? "").includes(about) && newToken(m.text) !== undefined)
    const token = newToken(mail.text)!
    seen.add(token)
    return { token, mail }
  }
  /**
   * A person of the tenant, invited with `roleId` and registered: their identity id, their session,
   * and (as `caller`) a key of theirs with the same role, whose rate limit lets a test go fast.
   */
  const member = async (t: Tenant, roleId: string, names: { firstName?: string; lastName?: string } = {}) => {
    const email = unique("member")
    // The owner's password: inviting someone with an all-powerful role (admin) asks for it.
    const invited = await api.post(`/v1/iam/organizations/${t.organizationId}/invitations`, { email, roleId, currentPassword: "correct horse battery" }, t.apiKey)
    expect(invited.status, invited.text).toBe(201)
    const { token } = await mailedToken(email, "invited")
    const registered = await api.post("/v1/iam/auth/register", { invitationToken: token, email, password: PASSWORD, ...names })
    expect(registered.status, registered.text).toBe(201)
    const session: Caller = { session: registered.json.data.sessionId }
    const id = (await call(session, "GET", "/v1/iam/users/me")).json.data.identityId as string
    const key = await api.post(`/v1/iam/identities/${id}/api-keys`, { name: "fast", roleId, rateLimitPerMinute: 5000, currentPassword: "correct horse battery" }, t.apiKey)
    expect(key.status, key.text).toBe(201)
    passwordOf.set(registered.json.data.sessionId, PASSWORD).set(key.json.data.rawKey, PASSWORD)
    return { id, email, session, caller: { key: key.json.data.rawKey as string } as Caller }
  }
  /** The password of each member's credentials; the others are the owner's. */
  const passwordOf = new Map<string, string>()
  // The caller's password goes along: passing on the owner's all-powerful role asks for it, and a proof that is sent is always checked.
  const create = (c: Caller, body: Record<string, unknown>) =>
    call(c, "POST", "/v1/iam/users/me/delegations", { currentPassword: passwordOf.get("key" in c ? c.key : c.session) ?? "correct horse battery", ...body })
  const move = (c: Caller, id: string, what: "accept" | "decline" | "renounce") => call(c, "POST", `/v1/iam/users/me/delegations/${id}/${what}`)
  const revoke = (c: Caller, id: string) => call(c, "DELETE", `/v1/iam/users/me/delegations/${id}`)
  const audit = async (t: Tenant, query: string) => (await api.get(`/v1/iam/audit?${query}`, t.apiKey)).json.data.items as Array<any>

  it("runs a delegation through its states; an impossible move is 409, someone else's delegation 404", async () => {
    const t = await api.createTenant()
    const owner: Caller = { key: t.apiKey }
    // Both may delegate (and revoke): the 404s below are not permission refusals.
    const admin = await systemRole(t, "admin")
    const mia = await member(t, admin.id, { firstName: "Mia", lastName: "Member" })
    const ned = await member(t, admin.id)

    const created = await create(owner, { delegateId: mia.id, reason: "holiday cover", expiresAt: inDays(10) })
    expect(created.status, created.text).toBe(201)
    const d = created.json.data
    expect(d).toEqual({
      id: expect.stringMatching(/^dlg_/),
      tenantId: t.tenantId,
      delegatorId: t.ownerIdentityId,
      delegateId: mia.id,
      delegateEmail: null,
      reason: "holiday cover",
      status: "pending",
      expiresAt: expect.any(String),
      invitedAt: expect.any(String),
      respondedAt: null,
      revokedAt: null,
      createdAt: expect.any(String),
      delegatorDisplayName: expect.any(String),
      delegateDisplayName: "Mia Member"
    })
    expect(Math.abs(Date.parse(d.expiresAt) - (Date.now() + 10 * DAY))).toBeLessThan(60_000)

    // Listed on both sides, and nowhere else.
    const granted = await call(owner, "GET", "/v1/iam/users/me/delegations/granted")
    expect(granted.json.data).toEqual({ items: [d], pagination: { offset: 0, limit: 50, total: 1, hasMore: false } })
    expect((await call(mia.caller, "GET", "/v1/iam/users/me/delegations/received")).json.data.items).toEqual([d])
    expect((await call(mia.caller, "GET", "/v1/iam/users/me/delegations/granted")).json.data.items).toEqual([])
    expect((await call(ned.caller, "GET", "/v1/iam/users/me/delegations/received")).json.data.items).toEqual([])

    // Only the delegate answers, only the delegator revokes: for anyone else it does not exist.
    expectError(await move(ned.caller, d.id, "accept"), 404, "not_found")
    expectError(await move(owner, d.id, "accept"), 404, "not_found")
    expectError(await revoke(mia.caller, d.id), 404, "not_found")
    expectError(await revoke(ned.caller, d.id), 404, "not_found")
    expectError(await move(mia.caller, "dlg_nope", "accept"), 404, "not_found")
    // Renouncing needs an active one.
    expectError(await move(mia.caller, d.id, "renounce"), 409, "invalid_delegation_state")

    const accepted = await move(mia.caller, d.id, "accept")
    expect(accepted.status, accepted.text).toBe(200)
    expect(accepted.json.data).toMatchObject({ id: d.id, status: "active", respondedAt: expect.any(String) })
    expectError(await move(mia.caller, d.id, "accept"), 409, "invalid_delegation_state")
    expectError(await move(mia.caller, d.id, "decline"), 409, "invalid_delegation_state")
    const renounced = await move(mia.caller, d.id, "renounce")
    expect(renounced.json.data).toMatchObject({ status: "renounced" })
    expectError(await revoke(owner, d.id), 409, "invalid_delegation_state")
    expectError(await move(mia.caller, d.id, "renounce"), 409, "invalid_delegation_state")

    const second = (await create(owner, { delegateId: mia.id, reason: "again", expiresAt: inDays(1) })).json.data
    expect((await move(mia.caller, second.id, "decline")).json.data).toMatchObject({ status: "declined", respondedAt: expect.any(String) })
    expectError(await move(mia.caller, second.id, "accept"), 409, "invalid_delegation_state")

    const third = (await create(owner, { delegateId: mia.id, reason: "once more", expiresAt: inDays(1) })).json.data
    const revoked = await revoke(owner, third.id)
    expect(revoked.status, revoked.text).toBe(200)
    expect(revoked.json.data).toMatchObject({ status: "revoked", revokedAt: expect.any(String) })
    expectError(await revoke(owner, third.id), 409, "invalid_delegation_state")
    expectError(await move(mia.caller, third.id, "accept"), 409, "invalid_delegation_state")

    // The lists filter by status and page.
    const byStatus = async (status: string) => (await call(owner, "GET", `/v1/iam/users/me/delegations/granted?status=${status}`)).json.data.items.map((x: any) => x.id)
    expect(await byStatus("renounced")).toEqual([d.id])
    expect(await byStatus("declined")).toEqual([second.id])
    expect(await byStatus("revoked")).toEqual([third.id])
    const page = (await call(owner, "GET", "/v1/iam/users/me/delegations/granted?limit=1&offset=1")).json.data
    expect(page.pagination).toEqual({ offset: 1, limit: 1, total: 3, hasMore: true })
    expect(page.items.map((x: any) => x.id)).toEqual([second.id])

    // Every move is audited, with the delegation as its target.
    for (const [action, actor, target] of [
      ["delegation.create", t.ownerIdentityId, d.id],
      ["delegation.accept", mia.id, d.id],
      ["delegation.renounce", mia.id, d.id],
      ["delegation.decline", mia.id, second.id],
      ["delegation.revoke", t.ownerIdentityId, third.id]
    ] as const) {
      const entries = await audit(t, `action=${action}&identityId=${actor}`)
      expect(entries.some((e) => e.actorId === actor && e.targetId === target), `${action} ${JSON.stringify(entries)}`).toBe(true)
    }
  })

  it("enforces the bounds of a delegation's body and of the lists", async () => {
    const ownerEmail = unique("owner")
    const t = await api.createTenant({ ownerEmail })
    const other = await api.createTenant()
    const owner: Caller = { key: t.apiKey }
    const read = await systemRole(t, "read")
    const reader = await member(t, read.id)
    const ok = { delegateId: reader.id, reason: "r", expiresAt: inDays(1) }

    expect(errorPaths(await create(owner, { ...ok, reason: "" }))).toEqual(["reason"])
    expect(errorPaths(await create(owner, { ...ok, reason: "x".repeat(501) }))).toEqual(["reason"])
    expect(errorPaths(await create(owner, { ...ok, expiresAt: "tomorrow" }))).toEqual(["expiresAt"])
    expect(errorPaths(await create(owner, { ...ok, expiresAt: inDays(-1) }))).toEqual(["expiresAt"])
    expect(errorPaths(await create(owner, { ...ok, expiresAt: inDays(366) }))).toEqual(["expiresAt"])
    expect(errorPaths(await create(owner, { ...ok, delegateId: "" }))).toEqual(["delegateId"])
    expect(errorPaths(await create(owner, { ...ok, delegateId: "a@b" }))).toEqual(["delegateId"])
    expect(errorPaths(await create(owner, { extra: 1 }))).toEqual(["delegateId", "expiresAt", "extra", "reason"])
    expectError(await create(owner, { ...ok, delegateId: t.ownerIdentityId }), 422, "cannot_delegate_to_self")
    expectError(await create(owner, { ...ok, delegateId: ownerEmail.toUpperCase() }), 422, "cannot_delegate_to_self")
    expectError(await create(owner, { ...ok, delegateId: "idt_nope" }), 404, "not_found")
    // Another tenant's person is unknown here.
    expectError(await create(owner, { ...ok, delegateId: other.ownerIdentityId }), 404, "not_found")
    const full = await create(owner, { ...ok, reason: "é".repeat(500), expiresAt: inDays(364) })
    expect(full.status, full.text).toBe(201)
    expectError(await create(owner, ok), 409, "delegation_exists")
    // Someone of the tenant named by e-mail is named by their identity.
    expectError(await create(owner, { ...ok, delegateId: reader.email.toUpperCase() }), 409, "delegation_exists")

    // Permissions: creating needs iam:delegations:write (the read role has only read); lists need read.
    expectError(await create(reader.caller, { ...ok, delegateId: t.ownerIdentityId }), 403, "forbidden")
    expect((await call(reader.caller, "GET", "/v1/iam/users/me/delegations/received")).status).toBe(200)
    for (const [method, path] of [
      ["POST", "/v1/iam/users/me/delegations"],
      ["GET", "/v1/iam/users/me/delegations/granted"],
      ["GET", "/v1/iam/users/me/delegations/received"],
      ["POST", `/v1/iam/users/me/delegations/${full.json.data.id}/accept`],
      ["POST", `/v1/iam/users/me/delegations/${full.json.data.id}/decline`],
      ["POST", `/v1/iam/users/me/delegations/${full.json.data.id}/renounce`],
      ["DELETE", `/v1/iam/users/me/delegations/${full.json.data.id}`]
    ] as const) {
      expectError(await api.call(method, path, method === "POST" && path.endsWith("delegations") ? { body: ok } : {}), 401, "unauthorized")
    }
    // Another tenant sees none of it.
    expectError(await move({ key: other.apiKey }, full.json.data.id, "accept"), 404, "not_found")
    expectError(await revoke({ key: other.apiKey }, full.json.data.id), 404, "not_found")
    expect((await call({ key: other.apiKey }, "GET", "/v1/iam/users/me/delegations/granted")).json.data.items).toEqual([])

    for (const list of ["granted", "received"]) {
      expect(errorPaths(await call(owner, "GET", `/v1/iam/users/me/delegations/${list}?limit=0`))).toEqual(["limit"])
      expect(errorPaths(await call(owner, "GET", `/v1/iam/users/me/delegations/${list}?limit=201`))).toEqual(["limit"])
      const bogus = await call(owner, "GET", `/v1/iam/users/me/delegations/${list}?status=bogus`)
      expectError(bogus, 400, "invalid_filter")
      expect(errorPaths(bogus)).toEqual(["status"])
    }
  })

  it("delegates to an e-mail address: the mailed token registers the delegate, who then accepts", async () => {
    const t = await api.createTenant()
    const owner: Caller = { key: t.apiKey }
    const read = await systemRole(t, "read")
    const email = unique("newcomer")
    const created = await create(owner, { delegateId: email, reason: "run the crawls while I am away", expiresAt: inDays(3) })
    expect(created.status, created.text).toBe(201)
    // The delegate is named from the start by the id their registration will give.
    expect(created.json.data).toMatchObject({ delegateId: expect.stringMatching(/^idt_/), delegateEmail: email, delegateDisplayName: null, status: "pending" })
    const { token, mail } = await mailedToken(email, "on their behalf")
    expect(mail.text).toContain("run the crawls while I am away")

    // Registration needs the token, and its address.
    expectError(await api.post("/v1/iam/auth/register", { email, password: PASSWORD }), 403, "registration_disabled")
    expectError(await api.post("/v1/iam/auth/register", { invitationToken: token, email: unique("other"), password: PASSWORD }), 403, "registration_disabled")
    const registered = await api.post("/v1/iam/auth/register", { invitationToken: token, email, password: PASSWORD, firstName: "Dee", lastName: "Legate" })
    expect(registered.status, registered.text).toBe(201)
    expect(registered.json.data.requiresPasswordSetup).toBe(false)
    expectError(await api.post("/v1/iam/auth/register", { invitationToken: token, email, password: PASSWORD }), 403, "registration_disabled")
    // A session answers, as a key does.
    const dee: Caller = { session: registered.json.data.sessionId }
    const me = (await call(dee, "GET", "/v1/iam/users/me")).json.data
    // The delegate's own role is the tenant's `read` role.
    expect(me).toMatchObject({ tenantId: t.tenantId, defaultRoleId: read.id, permissions: read.permissions })

    // The delegation now names the delegate, still pending until they accept it.
    const received = (await call(dee, "GET", "/v1/iam/users/me/delegations/received")).json.data.items
    expect(me.identityId).toBe(created.json.data.delegateId)
    expect(received).toEqual([{ ...created.json.data, delegateDisplayName: "Dee Legate" }])
    const accepted = await move(dee, created.json.data.id, "accept")
    expect(accepted.status, accepted.text).toBe(200)
    expect(accepted.json.data.status).toBe("active")

    expect(await audit(t, `action=registration&identityId=${me.identityId}`)).toEqual([
      expect.objectContaining({ actorId: me.identityId, data: expect.objectContaining({ via: "delegation", subjectId: created.json.data.id }) })
    ])
  })

  it("a revoked e-mail delegation's token no longer registers anyone", async () => {
    const t = await api.createTenant()
    const email = unique("withdrawn")
    const created = await create({ key: t.apiKey }, { delegateId: email, reason: "r", expiresAt: inDays(3) })
    const { token } = await mailedToken(email, "on their behalf")
    expect((await revoke({ key: t.apiKey }, created.json.data.id)).status).toBe(200)
    expectError(await api.post("/v1/iam/auth/register", { invitationToken: token, email, password: PASSWORD }), 403, "registration_disabled")
  })

  it("acts on behalf of the delegator with its permissions, never more, while the delegation is active", async () => {
    const t = await api.createTenant()
    const other = await api.createTenant()
    const owner: Caller = { key: t.apiKey }
    // The delegator reads everything and may delegate; it writes nothing else.
    const role = await api.post("/v1/iam/roles", { name: "reader-delegator", permissions: ["*:*:read", "iam:delegations:write"] }, t.apiKey)
    const delegator = await member(t, role.json.data.id, { firstName: "Dora" })
    const asDelegator = (c: Caller, method: string, path: string, body?: unknown) => call(c, method, path, body, { "x-on-behalf-of": delegator.id })

    const d = (await create(delegator.caller, { delegateId: t.ownerIdentityId, reason: "look after my account", expiresAt: inDays(2) })).json.data
    // Pending: not yet.
    expectError(await asDelegator(owner, "GET", "/v1/iam/users/me"), 403, "delegation_required")
    expect((await move(owner, d.id, "accept")).status).toBe(200)

    // Active: the owner acts as the delegator, with the delegator's permissions.
    const me = await asDelegator(owner, "GET", "/v1/iam/users/me")
    expect(me.status, me.text).toBe(200)
    expect(me.json.data).toMatchObject({ identityId: delegator.id, permissions: ["*:*:read", "iam:delegations:write"] })
    expect((await asDelegator(owner, "GET", "/v1/scraper/jobs")).status).toBe(200)
    // Never more than the delegator holds: the owner's own key could, on behalf it cannot.
    expectError(await asDelegator(owner, "POST", "/v1/iam/roles", { name: "escalate", permissions: ["*:*:*"] }), 403, "forbidden")
    expectError(await asDelegator(owner, "POST", "/v1/scraper/jobs", { url: "https://example.com/" }), 403, "forbidden")
    expectError(await asDelegator(owner, "GET", "/v1/iam/audit"), 403, "forbidden")
    // What was delegated is not passed on, nor answered for the delegator.
    expectError(await asDelegator(owner, "POST", "/v1/iam/users/me/delegations", { delegateId: t.ownerIdentityId, reason: "r", expiresAt: inDays(1) }), 403, "forbidden")
    expectError(await asDelegator(owner, "DELETE", `/v1/iam/users/me/delegations/${d.id}`), 403, "forbidden")
    expectError(await asDelegator(owner, "POST", "/v1/iam/invitations/accept", { token: "x".repeat(43) }), 403, "forbidden")
    expect((await call(owner, "GET", "/v1/iam/users/me/delegations/received")).json.data.items.map((x: any) => x.status)).toEqual(["active"])
    // The delegator's own credentials are not the delegate's to manage, nor are lasting keys to be made.
    expectError(await asDelegator(owner, "POST", "/v1/iam/auth/totp/enable"), 403, "forbidden")
    expectError(await asDelegator(owner, "POST", "/v1/iam/auth/password/change", { currentPassword: "x", newPassword: "y".repeat(12) }), 403, "forbidden")
    expectError(await asDelegator(owner, "GET", "/v1/iam/users/me/sessions"), 403, "forbidden")
    expectError(await asDelegator(owner, "DELETE", "/v1/iam/users/me/sessions"), 403, "forbidden")
    // nor is the delegator's profile
    expectError(await asDelegator(owner, "PATCH", "/v1/iam/users/me", { firstName: "ViaDelegate" }), 403, "forbidden")
    expectError(await asDelegator(owner, "POST", `/v1/iam/identities/${delegator.id}/api-keys`, { name: "lasting", roleId: role.json.data.id }), 403, "forbidden")
    expect((await call(delegator.caller, "GET", "/v1/iam/users/me/sessions")).status).toBe(200)
    // A session that has no delegation is refused.
    const other2 = await member(t, (await systemRole(t, "write")).id)
    expectError(await asDelegator(other2.session, "GET", "/v1/iam/users/me"), 403, "delegation_required")

    // Naming anyone else is refused: unknown, oneself, another tenant's identity, an empty header.
    for (const name of ["idt_nope", t.ownerIdentityId, other.ownerIdentityId, ""]) {
      expectError(await call(owner, "GET", "/v1/iam/users/me", undefined, { "x-on-behalf-of": name }), 403, "delegation_required")
    }
    expectError(await call({ key: other.apiKey }, "GET", "/v1/iam/users/me", undefined, { "x-on-behalf-of": delegator.id }), 403, "delegation_required")
    // Longer than any identity id, as the document states: a malformed header.
    const tooLong = await call(owner, "GET", "/v1/iam/users/me", undefined, { "x-on-behalf-of": "i".repeat(101) })
    expectError(tooLong, 400, "validation_error")
    expect(tooLong.json.error.details[0].path).toBe("x-on-behalf-of")

    // Each request on behalf is audited, refused ones too, with its outcome: the delegate as actor,
    // the delegator on whose behalf.
    const acts = (await audit(t, `action=delegation.act&identityId=${delegator.id}&limit=100`)).filter((e) => e.actorId === t.ownerIdentityId)
    expect(acts.length).toBeGreaterThanOrEqual(14)
    const outcome = (method: string, path: string) =>
      acts.filter((e) => e.data.method === method && e.data.path === path).map((e) => {
        const { apiKeyId: _key, ...data } = e.data
        return { targetId: e.targetId, ...data }
      })
    // made with the owner's key, which each entry names
    for (const entry of acts) expect(entry).toMatchObject({ actorId: t.ownerIdentityId, onBehalfOf: delegator.id, data: { apiKeyId: t.apiKeyId } })
    expect(outcome("GET", "/v1/scraper/jobs")).toEqual([{ targetId: d.id, method: "GET", path: "/v1/scraper/jobs", outcome: "done", status: 200 }])
    // Refused by the delegator's permissions, by the rule of what is not done on behalf, and before the delegation was active.
    expect(outcome("POST", "/v1/iam/roles")).toEqual([{ targetId: d.id, method: "POST", path: "/v1/iam/roles", outcome: "refused", status: 403, code: "forbidden" }])
    expect(outcome("POST", "/v1/iam/auth/totp/enable")).toEqual([{ targetId: d.id, method: "POST", path: "/v1/iam/auth/totp/enable", outcome: "refused", status: 403, code: "forbidden" }])
    expect(outcome("GET", "/v1/iam/users/me").map((e) => [e.targetId, e.outcome, e.code ?? e.status])).toEqual([
      [d.id, "done", 200],
      [null, "refused", "delegation_required"]
    ])
    // The other member's attempt without a delegation is recorded under its own name.
    const attempt = (await audit(t, `action=delegation.act&identityId=${other2.id}`))
    expect(attempt.map((e) => [e.onBehalfOf, e.targetId, e.data.outcome, e.data.code])).toEqual([[delegator.id, null, "refused", "delegation_required"]])

    // Revoked: it stops at once.
    expect((await revoke(delegator.caller, d.id)).status).toBe(200)
    expectError(await asDelegator(owner, "GET", "/v1/iam/users/me"), 403, "delegation_required")
    expectError(await asDelegator(owner, "GET", "/v1/scraper/jobs"), 403, "delegation_required")
  })

  it("an event stream read on behalf ends when the delegation is revoked", async () => {
    const t = await api.createTenant()
    const role = await api.post("/v1/iam/roles", { name: "reader-delegator", permissions: ["*:*:read", "iam:delegations:write"] }, t.apiKey)
    const delegator = await member(t, role.json.data.id)
    const d = (await create(delegator.caller, { delegateId: t.ownerIdentityId, reason: "watch my jobs", expiresAt: inDays(2) })).json.data
    expect((await move({ key: t.apiKey }, d.id, "accept")).status).toBe(200)
    const res = await fetch(`${server.baseUrl}/v1/scraper/events`, {
      headers: { "x-api-key": t.apiKey, "x-on-behalf-of": delegator.id, accept: "text/event-stream" }
    })
    expect(res.status).toBe(200)
    const reader = res.body!.getReader()
    let ended = false
    const drained = (async () => {
      while (!(await reader.read()).done);
      ended = true
    })()
    // Past one of the stream's 5 s re-checks it is still open: the delegation holds.
    await new Promise((r) => setTimeout(r, 6_000))
    expect(ended).toBe(false)
    expect((await revoke(delegator.caller, d.id)).status).toBe(200)
    const endedAt = await Promise.race([drained.then(() => "ended"), new Promise((r) => setTimeout(() => r("still open"), 12_000))])
    if (endedAt !== "ended") await reader.cancel()
    expect(endedAt).toBe("ended")
  }, 30_000)

  it("a delegate's API key acts on behalf with no more than its own role; the delegate's session with the delegator's", async () => {
    const t = await api.createTenant()
    const reader = await member(t, (await systemRole(t, "read")).id)
    const d = (await create({ key: t.apiKey }, { delegateId: reader.id, reason: "cover", expiresAt: inDays(2) })).json.data
    expect((await move(reader.session, d.id, "accept")).status).toBe(200)
    const onBehalf = { "x-on-behalf-of": t.ownerIdentityId }
    // The read key reads as the owner, and writes nothing.
    const me = await call(reader.caller, "GET", "/v1/iam/users/me", undefined, onBehalf)
    expect(me.status, me.text).toBe(200)
    expect(me.json.data).toMatchObject({ identityId: t.ownerIdentityId, permissions: ["*:*:read"] })
    expectError(await call(reader.caller, "POST", "/v1/iam/roles", { name: "by-key", permissions: ["*:*:read"] }, onBehalf), 403, "forbidden")
    // The person's own session holds what was delegated: the owner's role.
    const bySession = await call(reader.session, "POST", "/v1/iam/roles", { name: "by-session", permissions: ["*:*:read"] }, onBehalf)
    expect(bySession.status, bySession.text).toBe(201)
  })

  it("a credential narrower than its identity's role cannot delegate that role", async () => {
    const t = await api.createTenant()
    // A key of the owner that may only manage delegations: the owner's role is *:*:*.
    const narrow = await api.post("/v1/iam/roles", { name: "delegations-only", permissions: ["iam:delegations:*"] }, t.apiKey)
    expect(narrow.status, narrow.text).toBe(201)
    const key = await api.post(`/v1/iam/identities/${t.ownerIdentityId}/api-keys`, { name: "narrow", roleId: narrow.json.data.id }, t.apiKey)
    expect(key.status, key.text).toBe(201)
    const narrowKey: Caller = { key: key.json.data.rawKey }
    const outsider = unique("outsider")
    const refused = await create(narrowKey, { delegateId: outsider, reason: "escalate", expiresAt: inDays(1) })
    expectError(refused, 403, "forbidden")
    expect(refused.json.error.message).toContain("*:*:*")
    // Nothing was made and nothing mailed: the outsider has no token to register with.
    expect((await call(narrowKey, "GET", "/v1/iam/users/me/delegations/granted")).json.data.items).toEqual([])
    const admin = await systemRole(t, "admin")
    const ned = await member(t, admin.id)
    expectError(await create(narrowKey, { delegateId: ned.id, reason: "escalate", expiresAt: inDays(1) }), 403, "forbidden")
    // The owner's full credential may delegate its role.
    expect((await create({ key: t.apiKey }, { delegateId: ned.id, reason: "holiday", expiresAt: inDays(1) })).status).toBe(201)
  })

  it("asks for the delegator's password (or TOTP code) before an all-powerful role is passed on", async () => {
    const t = await api.createTenant()
    const owner: Caller = { key: t.apiKey }
    const body = { delegateId: unique("stand-in"), reason: "holiday", expiresAt: inDays(1) }
    const post = (extra: Record<string, unknown>) => call(owner, "POST", "/v1/iam/users/me/delegations", { ...body, ...extra })
    expectError(await post({}), 403, "reauthentication_required")
    expectError(await post({ currentPassword: "not the password at all" }), 403, "reauthentication_failed")
    expect((await call(owner, "GET", "/v1/iam/users/me/delegations/granted")).json.data.items).toEqual([])
    const sent = await post({ currentPassword: "correct horse battery" })
    expect(sent.status, sent.text).toBe(201)
    // A role that is not all-powerful is passed on with no proof, but one that is sent is checked.
    const role = await api.post("/v1/iam/roles", { name: "reads-and-delegates", permissions: ["*:*:read", "iam:delegations:*"] }, t.apiKey)
    expect(role.status, role.text).toBe(201)
    const reader = await member(t, role.json.data.id)
    const wrong = await call(reader.session, "POST", "/v1/iam/users/me/delegations", { delegateId: t.ownerIdentityId, reason: "r", expiresAt: inDays(1), currentPassword: "not the password at all" })
    expectError(wrong, 403, "reauthentication_failed")
    const plain = await call(reader.session, "POST", "/v1/iam/users/me/delegations", { delegateId: t.ownerIdentityId, reason: "r", expiresAt: inDays(1) })
    expect(plain.status, plain.text).toBe(201)
  })

  it("only a credential holding the registrant's read role may delegate to an address not yet registered", async () => {
    const t = await api.createTenant()
    const narrow = await api.post("/v1/iam/roles", { name: "delegates-jobs", permissions: ["iam:delegations:*", "scraper:jobs:read"] }, t.apiKey)
    expect(narrow.status, narrow.text).toBe(201)
    const mia = await member(t, narrow.json.data.id)
    // Mia holds her whole role, so she may delegate it to someone of the tenant...
    const colleague = await member(t, (await systemRole(t, "read")).id)
    expect((await create(mia.session, { delegateId: colleague.id, reason: "holiday", expiresAt: inDays(1) })).status).toBe(201)
    // ...but not bring a newcomer in with the read role (*:*:read), which she lacks.
    const outsider = unique("outsider")
    const refused = await create(mia.session, { delegateId: outsider, reason: "a second mailbox", expiresAt: inDays(1) })
    expectError(refused, 403, "forbidden")
    expect(refused.json.error.message).toContain("*:*:read")
    expect(refused.json.error.details).toEqual([{ path: "delegateId", code: "not_held", message: "the caller does not hold *:*:read" }])
    expect((await call(mia.session, "GET", "/v1/iam/users/me/delegations/granted")).json.data.items).toHaveLength(1)
    // Someone who reads everything may.
    const reader = await api.post("/v1/iam/roles", { name: "reads-and-delegates", permissions: ["*:*:read", "iam:delegations:*"] }, t.apiKey)
    expect(reader.status, reader.text).toBe(201)
    const rex = await member(t, reader.json.data.id)
    const sent = await create(rex.session, { delegateId: outsider, reason: "holiday", expiresAt: inDays(1) })
    expect(sent.status, sent.text).toBe(201)
  })

  it("a delegation past its expiry reads as expired and allows nothing; its registration token ends with it", async () => {
    const t = await api.createTenant()
    const delegate = await member(t, (await systemRole(t, "read")).id)
    const soon = () => new Date(Date.now() + 4_000).toISOString()
    const d = (await create({ key: t.apiKey }, { delegateId: delegate.id, reason: "r", expiresAt: soon() })).json.data
    const email = unique("late")
    const byMail = (await create({ key: t.apiKey }, { delegateId: email, reason: "r", expiresAt: soon() })).json.data
    const { token } = await mailedToken(email, "on their behalf")
    expect((await move(delegate.caller, d.id, "accept")).status).toBe(200)
    // With its session too.
    expect((await call(delegate.session, "GET", "/v1/iam/users/me", undefined, { "x-on-behalf-of": t.ownerIdentityId })).status).toBe(200)

    await new Promise((resolve) => setTimeout(resolve, Math.max(0, Date.parse(byMail.expiresAt) - Date.now()) + 500))
    expectError(await call(delegate.caller, "GET", "/v1/iam/users/me", undefined, { "x-on-behalf-of": t.ownerIdentityId }), 403, "delegation_required")
    expect((await call(delegate.caller, "GET", "/v1/iam/users/me/delegations/received?status=expired")).json.data.items.map((x: any) => x.id)).toEqual([d.id])
    expect((await call({ key: t.apiKey }, "GET", "/v1/iam/users/me/delegations/granted")).json.data.items.map((x: any) => x.status)).toEqual(["expired", "expired"])
    expectError(await move(delegate.caller, d.id, "renounce"), 409, "invalid_delegation_state")
    expectError(await revoke({ key: t.apiKey }, d.id), 409, "invalid_delegation_state")
    expectError(await api.post("/v1/iam/auth/register", { invitationToken: token, email, password: PASSWORD }), 403, "registration_disabled")
    // An expired delegation does not hold its delegate: a new one can be made.
    expect((await create({ key: t.apiKey }, { delegateId: delegate.id, reason: "again", expiresAt: inDays(1) })).status).toBe(201)
  })

  it("on behalf, a delegate hands out no more than its own role holds: nothing delegated outlasts the delegation", async () => {
    const t = await api.createTenant()
    const owner: Caller = { key: t.apiKey }
    const ownerRole = await systemRole(t, "owner")
    const manager = (await api.post("/v1/iam/roles", { name: "role manager", permissions: ["iam:roles:*", "iam:invitations:*", "scraper:jobs:read"] }, t.apiKey)).json.data
    const carol = await member(t, manager.id)
    const d = (await create(owner, { delegateId: carol.id, reason: "run the account while I am away", expiresAt: inDays(2) })).json.data
    expect((await move(carol.caller, d.id, "accept")).status).toBe(200)
    // her session, not her key: a key acts on behalf with no more than its own role
    const asOwner = (method: string, path: string, body?: unknown) => call(carol.session, method, path, body, { "x-on-behalf-of": t.ownerIdentityId })

    // The owner's power is there for what it does now...
    expect((await asOwner("GET", "/v1/iam/audit")).status).toBe(200)
    // ...but not to be handed out: not to the delegate's own role, a new role or an invitee.
    const widened = await asOwner("PATCH", `/v1/iam/roles/${manager.id}`, { permissions: ["*:*:*"] })
    expectError(widened, 403, "forbidden")
    expect(errorPaths(widened)).toEqual(["permissions.0"])
    expectError(await asOwner("POST", "/v1/iam/roles", { name: "all", permissions: ["*:*:*"] }), 403, "forbidden")
    expectError(await asOwner("POST", `/v1/iam/organizations/${t.organizationId}/invitations`, { email: unique("second-owner"), roleId: ownerRole.id }), 403, "forbidden")
    // What the delegate holds itself it may still hand out on behalf.
    expect((await asOwner("POST", "/v1/iam/roles", { name: "job readers", permissions: ["scraper:jobs:read"] })).status).toBe(201)

    // An operation never made on behalf is refused as such, whoever the header names (the OpenAPI
    // document lists 403 forbidden for it, not delegation_required).
    for (const name of [t.ownerIdentityId, "idt_nope"]) {
      expectError(await call(carol.session, "POST", "/v1/iam/auth/password/change", { currentPassword: PASSWORD, newPassword: "another long passphrase" }, { "x-on-behalf-of": name }), 403, "forbidden")
    }

    // Once renounced, the delegate holds exactly what it held before.
    expect((await move(carol.caller, d.id, "renounce")).status).toBe(200)
    const own = await call(carol.caller, "GET", "/v1/iam/users/me")
    expect(own.status, own.text).toBe(200)
    expect(own.json.data.permissions).toEqual(["iam:roles:*", "iam:invitations:*", "scraper:jobs:read"])
  })

  it("another identity's API keys are made, changed and revoked only with iam:identities:write", async () => {
    const t = await api.createTenant()
    const keyManager = (await api.post("/v1/iam/roles", { name: "key manager", permissions: ["iam:api-keys:*", "scraper:jobs:read"] }, t.apiKey)).json.data
    const kim = await member(t, keyManager.id)
    const ownerKeys = `/v1/iam/identities/${t.ownerIdentityId}/api-keys`
    const ownerKeyId = (await api.get(ownerKeys, t.apiKey)).json.data.items[0].id as string

    // Not a key that acts as the owner, nor a change to or the end of the owner's keys.
    expectError(await call(kim.session, "POST", ownerKeys, { name: "as owner", roleId: keyManager.id }), 403, "forbidden")
    expectError(await call(kim.session, "PATCH", `${ownerKeys}/${ownerKeyId}`, { rateLimitPerMinute: 1 }), 403, "forbidden")
    expectError(await call(kim.session, "DELETE", `${ownerKeys}/${ownerKeyId}`), 403, "forbidden")
    expect((await api.get("/v1/iam/users/me", t.apiKey)).status).toBe(200)
    expect((await api.get(`${ownerKeys}/${ownerKeyId}`, t.apiKey)).json.data.rateLimitPerMinute).not.toBe(1)
    // Its own keys it manages; another tenant's identity stays unknown.
    const own = await call(kim.session, "POST", `/v1/iam/identities/${kim.id}/api-keys`, { name: "mine", roleId: keyManager.id })
    expect(own.status, own.text).toBe(201)
    expect((await call(kim.session, "DELETE", `/v1/iam/identities/${kim.id}/api-keys/${own.json.data.id}`)).status).toBe(200)
    const other = await api.createTenant()
    expectError(await call(kim.session, "POST", `/v1/iam/identities/${other.ownerIdentityId}/api-keys`, { name: "x", roleId: keyManager.id }), 404, "not_found")
    // The owner (iam:identities:write) makes keys for the people of its tenant.
    expect((await api.post(`/v1/iam/identities/${kim.id}/api-keys`, { name: "by the owner", roleId: keyManager.id }, t.apiKey)).status).toBe(201)
  })
})
