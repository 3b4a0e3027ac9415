import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { backends, client, freePort, INTERNAL_TOKEN, pgQuery, type RunningServer, startServer } from "./support/server-process.ts"
import { errorPaths, expectError } from "./support/errors.ts"
import { startSmtpServer, type TestSmtpServer } from "./support/smtp.ts"

const PUBLIC_BASE_URL = "http://trawl.test:8443"
/** Shared by every node of a test: mailed tokens are stored as hashes keyed with it. */
const SECRET_KEY = "0123456789abcdef".repeat(4)
const PASSWORD = "a long enough passphrase"

const unique = (label: string) => `${label}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}@example.com`

/** The token of the link in a mail. */
const tokenIn = (text: string | undefined) => {
  const match = /token=([A-Za-z0-9_-]{43})/.exec(text ?? "")
  if (!match) throw new Error(`no token in mail:\n${text}`)
  return match[1]!
}

/** Tokens read so far: a second mail to one address is told from the first by its new token. */
const seen = new Set<string>()
const isNew = (text: string | undefined) => {
  const match = /token=([A-Za-z0-9_-]{43})/.exec(text ?? "")
  return match !== null && !seen.has(match[1]!)
}
const freshToken = (text: string | undefined) => {
  const token = tokenIn(text)
  seen.add(token)
  return token
}

describe.each(backends())("invitations and registration over HTTP ($name)", (backend) => {
  let server: RunningServer
  let smtp: TestSmtpServer
  let api: ReturnType<typeof client>
  let databaseUrl: string | undefined

  beforeAll(async () => {
    smtp = await startSmtpServer()
    const env = await backend.env()
    databaseUrl = env.DATABASE_URL
    server = await startServer({ ...env, SMTP_URL: smtp.url, PUBLIC_BASE_URL, SECRET_KEY })
    api = client(server.baseUrl)
  })
  afterAll(async () => {
    await server?.stop()
    await smtp?.close()
  })

  type Tenant = Awaited<ReturnType<ReturnType<typeof client>["createTenant"]>>
  const bearer = (sessionId: string) => ({ authorization: `Bearer ${sessionId}` })
  const systemRole = async (t: Tenant, name: string) =>
    ((await api.get("/v1/iam/roles?limit=200", t.apiKey)).json.data.items as Array<any>).find((r) => r.name === name && r.isSystem)
  const orgPath = (t: Tenant) => `/v1/iam/organizations/${t.organizationId}/invitations`
  const invite = (t: Tenant, body: Record<string, unknown>, key = t.apiKey) => api.post(orgPath(t), body, key)
  /** Invites `email` with the role and returns the invitation and the token of its mail. */
  const invited = async (t: Tenant, email: string, roleId: string, more: Record<string, unknown> = {}) => {
    const res = await invite(t, { email, roleId, ...more })
    expect(res.status, res.text).toBe(201)
    const mail = await smtp.waitForMail(email, (m) => (m.text ?? "").includes("invited") && isNew(m.text))
    return { invitation: res.json.data, token: freshToken(mail.text), mail }
  }
  const register = (body: Record<string, unknown>) => api.post("/v1/iam/auth/register", body)
  const audit = async (t: Tenant, query: string) => (await api.get(`/v1/iam/audit?${query}`, t.apiKey)).json.data.items as Array<any>

  it("invites by e-mail; the invitee registers with the mailed token into a session with the invitation's role", async () => {
    const t = await api.createTenant()
    const write = await systemRole(t, "write")
    const email = unique("Newcomer")
    const before = Date.now()
    const { invitation, token, mail } = await invited(t, email, write.id, { firstName: "Nora", lastName: "Newcomer" })
    expect(invitation).toEqual({
      id: expect.stringMatching(/^inv_/),
      tenantId: t.tenantId,
      organizationId: t.organizationId,
      // the id the newcomer's identity will get when they register
      userId: expect.stringMatching(/^idt_/),
      email,
      roleId: write.id,
      status: "pending",
      invitedAt: expect.any(String),
      invitationExpiresAt: expect.any(String)
    })
    // Seven days to answer.
    const lifetime = Date.parse(invitation.invitationExpiresAt) - before
    expect(lifetime).toBeGreaterThan(7 * 86_400_000 - 60_000)
    expect(lifetime).toBeLessThan(7 * 86_400_000 + 60_000)
    expect(mail.recipients).toEqual([email])
    expect(mail.subject).toContain("invited")
    expect(mail.text).toContain(`${PUBLIC_BASE_URL}/invitations/accept?token=${token}`)
    expect(mail.text).toContain("Hello Nora")

    const listed = await api.get(orgPath(t), t.apiKey)
    expect(listed.status).toBe(200)
    expect(listed.json.data.items).toEqual([invitation])
    expect(listed.json.data.pagination).toEqual({ offset: 0, limit: 50, total: 1, hasMore: false })

    // Refused without a token, with a wrong one, for another address; a weak password is a 400 on `password`.
    expectError(await register({ email, password: PASSWORD }), 403, "registration_disabled")
    // the token is judged before the password's rules: a short password changes nothing without one
    expectError(await register({ email, password: "short" }), 403, "registration_disabled")
    expectError(await register({ invitationToken: "x".repeat(43), email, password: "secret" }), 403, "registration_disabled")
    expectError(await register({ invitationToken: "x".repeat(43), email, password: PASSWORD }), 403, "registration_disabled")
    // A token not of the mailed shape is no usable token either: the same 403 (the spec's "otherwise").
    const malformed = await register({ invitationToken: "short", email, password: PASSWORD })
    expectError(malformed, 403, "registration_disabled")
    expect(malformed.text).not.toContain("short")
    // one that is not even a string, or far too long, is malformed: 400 at the field, never quoted
    for (const bad of [42, "t".repeat(1025)]) {
      const refused = await register({ invitationToken: bad, email, password: PASSWORD })
      expectError(refused, 400, "validation_error")
      expect(errorPaths(refused)).toEqual(["invitationToken"])
    }
    expectError(await register({ invitationToken: token, email: unique("someone-else"), password: PASSWORD }), 403, "registration_disabled")
    const weak = await register({ invitationToken: token, email, password: "short" })
    expectError(weak, 400, "validation_error")
    expect(errorPaths(weak)).toEqual(["password"])
    expect(weak.json.error.details[0].code).toBe("weak_password")
    expect(errorPaths(await register({ invitationToken: token, email, password: "" }))).toEqual(["password"])
    expect(errorPaths(await register({ invitationToken: token, email, password: "x".repeat(1025) }))).toEqual(["password"])
    expect(errorPaths(await register({ invitationToken: token, email, password: email }))).toEqual(["password"])
    // Malformed bodies.
    expect(errorPaths(await register({ invitationToken: token, password: PASSWORD }))).toEqual(["email"])
    expect(errorPaths(await register({ invitationToken: token, email: "not-an-address", password: PASSWORD }))).toEqual(["email"])
    expect(errorPaths(await register({ invitationToken: token, email, password: PASSWORD, firstName: "x".repeat(81), extra: 1 }))).toEqual(["extra", "firstName"])

    // The address is compared in any letter case.
    const registered = await register({ invitationToken: token, email: email.toLowerCase(), password: PASSWORD, firstName: "Norah" })
    expect(registered.status, registered.text).toBe(201)
    expect(registered.json.code).toBe("201-created")
    const session = registered.json.data
    expect(session).toEqual({ sessionId: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), expiresAt: expect.any(String), csrfToken: expect.any(String), requiresPasswordSetup: false })
    const cookie = registered.headers.get("set-cookie") ?? ""
    expect(cookie).toContain(`trawl_session=${session.sessionId}`)
    expect(cookie).toContain("HttpOnly")
    expect(cookie).toContain("SameSite=Lax")

    const me = await api.call("GET", "/v1/iam/users/me", { headers: bearer(session.sessionId) })
    expect(me.status, me.text).toBe(200)
    // The names are the registration's, else the invitation's.
    expect(me.json.data).toMatchObject({ tenantId: t.tenantId, type: "user", firstName: "Norah", lastName: "Newcomer", defaultRoleId: write.id, permissions: write.permissions, requiresPasswordSetup: false })
    expect(me.json.data.emails).toEqual([{ id: expect.any(String), email, isPrimary: true, verifiedAt: expect.any(String) }])
    // The cookie works as well, with its CSRF token on an unsafe method.
    const viaCookie = await api.call("PATCH", "/v1/iam/users/me", {
      headers: { cookie: `trawl_session=${session.sessionId}`, "x-csrf-token": session.csrfToken },
      body: { lastName: "Newcomer" }
    })
    expect(viaCookie.status, viaCookie.text).toBe(200)

    // The invitation is active and names the new identity; the token works once.
    const active = (await api.get(`${orgPath(t)}?status=active`, t.apiKey)).json.data
    expect(active.items).toEqual([{ ...invitation, status: "active" }])
    expect(me.json.data.identityId).toBe(invitation.userId)
    expect((await api.get(`${orgPath(t)}?status=pending`, t.apiKey)).json.data.items).toEqual([])
    expectError(await register({ invitationToken: token, email, password: PASSWORD }), 403, "registration_disabled")
    // A member is not invited again; the password logs in.
    expectError(await invite(t, { email: email.toUpperCase(), roleId: write.id }), 409, "already_member")
    const login = await api.post("/v1/iam/auth/login", { email, password: PASSWORD })
    expect(login.status, login.text).toBe(200)
    // The quota counts the new person.
    const quotas = (await api.get("/v1/iam/quotas/me", t.apiKey)).json.data.items as Array<any>
    expect(quotas.find((q) => q.key === "iam.identities.total").used).toBe(2)

    // Audited: the invitation, the registration and the acceptance it made.
    const created = await audit(t, `action=invitation.create&identityId=${t.ownerIdentityId}`)
    expect(created).toEqual([expect.objectContaining({ actorId: t.ownerIdentityId, onBehalfOf: null, ip: "127.0.0.1", targetId: invitation.id, data: expect.objectContaining({ email, roleId: write.id }) })])
    const registration = await audit(t, `action=registration&identityId=${me.json.data.identityId}`)
    expect(registration).toEqual([expect.objectContaining({ actorId: me.json.data.identityId, targetId: me.json.data.identityId, data: expect.objectContaining({ via: "invitation", subjectId: invitation.id }) })])
    expect(await audit(t, "action=invitation.accept")).toEqual([expect.objectContaining({ actorId: me.json.data.identityId, targetId: invitation.id })])
  })

  it("asks for the inviter's password (or TOTP code) before inviting someone with an all-powerful role", async () => {
    const t = await api.createTenant()
    const admin = await systemRole(t, "admin")
    const email = `${Math.random().toString(36).slice(2)}@invitee.example`
    const bare = await invite(t, { email, roleId: admin.id })
    expectError(bare, 403, "reauthentication_required")
    expect(bare.json.error.message).toMatch(/currentPassword or totpCode/)
    expectError(await invite(t, { email, roleId: admin.id, currentPassword: "not the password at all" }), 403, "reauthentication_failed")
    // Nothing was made by the refusals: the address has no pending invitation.
    expect((await api.get(`${orgPath(t)}?status=pending`, t.apiKey)).json.data.items).toEqual([])
    const { invitation, token } = await invited(t, email, admin.id, { currentPassword: "correct horse battery" })
    expect(invitation.roleId).toBe(admin.id)
    expect((await register({ invitationToken: token, email, password: "a passphrase long enough" })).status).toBe(201)
    // A role that is not all-powerful needs no proof, but one that is sent is checked.
    const write = await systemRole(t, "write")
    const other = `${Math.random().toString(36).slice(2)}@invitee.example`
    expectError(await invite(t, { email: other, roleId: write.id, currentPassword: "not the password at all" }), 403, "reauthentication_failed")
    await invited(t, other, write.id)
  })

  it("takes an address typed with composed or decomposed accents as one address (kept in NFC)", async () => {
    const tag = Math.random().toString(36).slice(2, 8)
    const composed = `j\u00f6rg-${tag}@ex\u00e4mple.com`
    const decomposed = composed.normalize("NFD")
    expect(decomposed).not.toBe(composed)
    const t = await api.createTenant({ ownerEmail: decomposed })
    const read = await systemRole(t, "read")
    // stored composed: the member list shows one form, and either form names the owner
    const me = await api.get("/v1/iam/users/me", t.apiKey)
    expect(me.json.data.emails.map((e: any) => e.email)).toEqual([composed])
    expectError(await invite(t, { email: composed, roleId: read.id }), 409, "already_member")
    expectError(await invite(t, { email: decomposed.toUpperCase(), roleId: read.id }), 409, "already_member")
    for (const email of [composed, decomposed]) {
      const login = await api.post("/v1/iam/auth/login", { email, password: "correct horse battery" })
      expect(login.status, login.text).toBe(200)
    }
    const delegated = await api.post("/v1/iam/users/me/delegations", { delegateId: decomposed, reason: "self", expiresAt: new Date(Date.now() + 86_400_000).toISOString(), currentPassword: "correct horse battery" }, t.apiKey)
    expectError(delegated, 422, "cannot_delegate_to_self")
    // and no second tenant's owner takes the address in its other form
    const again = await api.call("POST", "/internal/v1/tenants", { token: INTERNAL_TOKEN, body: { name: "Again", ownerEmail: composed } })
    expect(again.status, again.text).toBe(409)
  })

  it("refuses addresses no mail reaches, or that read as another in a list", async () => {
    const t = await api.createTenant()
    const read = await systemRole(t, "read")
    for (const email of ["a@b..co", ".a@b.co", "a..b@b.co", "a@-b.co", "a@b-.co", "a@b.c\u202eoc", "a\u200b@b.co", "root@localhost"]) {
      const res = await invite(t, { email, roleId: read.id })
      expectError(res, 400, "validation_error")
      expect(errorPaths(res), JSON.stringify(email)).toEqual(["email"])
      // the message may quote the address, but never with its invisible characters at work
      expect(res.text).not.toMatch(/[\u200b\u202e]/)
    }
    const quoted = await invite(t, { email: "a@b.c\u202eoc", roleId: read.id })
    expect(quoted.json.error.details[0].message).toContain("a@b.c\\u{202E}oc")
  })

  it("enforces the bounds of the invitation routes", async () => {
    const t = await api.createTenant()
    const other = await api.createTenant()
    const read = await systemRole(t, "read")
    const ok = { email: unique("bounds"), roleId: read.id }
    // email: one plain address of at most 255 characters (the contract's bound); names at most 80;
    // roleId at least 1 character. (The test's SMTP server takes up to 253.)
    const longEmail = `${"a".repeat(40)}@${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(63)}.${"e".repeat(16)}.com`
    expect(longEmail.length).toBe(253)
    // 255 passes the bound (whether the SMTP server then takes it is the mail's matter), 256 does not.
    expect((await invite(t, { ...ok, email: `aa${longEmail}` })).status).not.toBe(400)
    expect(errorPaths(await invite(t, { ...ok, email: `aaa${longEmail}` }))).toEqual(["email"])
    expect(errorPaths(await invite(t, { ...ok, email: "two@example.com,three@example.com" }))).toEqual(["email"])
    expect(errorPaths(await invite(t, { ...ok, email: "no-at-sign" }))).toEqual(["email"])
    expect(errorPaths(await invite(t, { ...ok, roleId: "" }))).toEqual(["roleId"])
    expect(errorPaths(await invite(t, { ...ok, firstName: "x".repeat(81), lastName: "y".repeat(81) }))).toEqual(["firstName", "lastName"])
    // a name that would read as another (its letters shown backwards) or with a space at an end
    expect(errorPaths(await invite(t, { ...ok, firstName: "\u202Eadmin", lastName: "Lovelace " }))).toEqual(["firstName", "lastName"])
    expect(errorPaths(await invite(t, { nope: true }))).toEqual(["email", "nope", "roleId"])
    expect((await invite(t, { ...ok, email: longEmail, firstName: "x".repeat(80), lastName: "é".repeat(80) })).status).toBe(201)
    await smtp.waitForMail(longEmail)
    // The role must be a live role of the tenant.
    expectError(await invite(t, { ...ok, roleId: "role_nope" }), 422, "invalid_role")
    expectError(await invite(t, { ...ok, roleId: (await systemRole(other, "read")).id }), 422, "invalid_role")
    // An unknown organization, or another tenant's, is 404; so is another tenant's invitation.
    expectError(await api.post("/v1/iam/organizations/org_nope/invitations", ok, t.apiKey), 404, "not_found")
    expectError(await api.post(orgPath(other), ok, t.apiKey), 404, "not_found")
    expectError(await api.get(orgPath(other), t.apiKey), 404, "not_found")
    // A second pending invitation of one address (any case) is a conflict.
    expect((await invite(t, ok)).status).toBe(201)
    expectError(await invite(t, { ...ok, email: ok.email.toUpperCase() }), 409, "invitation_pending")
    // The list's bounds and filter.
    expect(errorPaths(await api.get(`${orgPath(t)}?limit=0`, t.apiKey))).toEqual(["limit"])
    expect(errorPaths(await api.get(`${orgPath(t)}?limit=201`, t.apiKey))).toEqual(["limit"])
    const bogus = await api.get(`${orgPath(t)}?status=bogus`, t.apiKey)
    expectError(bogus, 400, "invalid_filter")
    expect(errorPaths(bogus)).toEqual(["status"])
    const page = (await api.get(`${orgPath(t)}?limit=1&offset=1`, t.apiKey)).json.data
    expect(page.pagination).toEqual({ offset: 1, limit: 1, total: 2, hasMore: false })
    // Authentication and permissions.
    expectError(await api.post(orgPath(t), ok), 401, "unauthorized")
    expectError(await api.get(orgPath(t)), 401, "unauthorized")
    expectError(await api.call("DELETE", `${orgPath(t)}/inv_x`), 401, "unauthorized")
    expectError(await api.post("/v1/iam/invitations/accept", { token: "x".repeat(43) }), 401, "unauthorized")
    expectError(await api.post("/v1/iam/invitations/decline", { token: "x".repeat(43) }), 401, "unauthorized")
    const readKey = (await api.post(`/v1/iam/identities/${t.ownerIdentityId}/api-keys`, { name: "reader", roleId: read.id }, t.apiKey)).json.data.rawKey
    expectError(await invite(t, { ...ok, email: unique("by-reader") }, readKey), 403, "forbidden")
    expect((await api.get(orgPath(t), readKey)).status).toBe(200)
    // Nobody gives a role with permissions they lack.
    const inviters = await api.post("/v1/iam/roles", { name: "inviters", permissions: ["*:*:read", "iam:invitations:write"] }, t.apiKey)
    const inviterKey = (await api.post(`/v1/iam/identities/${t.ownerIdentityId}/api-keys`, { name: "inviter", roleId: inviters.json.data.id }, t.apiKey)).json.data.rawKey
    const owner = await systemRole(t, "owner")
    expectError(await invite(t, { email: unique("too-much"), roleId: owner.id }, inviterKey), 403, "forbidden")
    expect((await invite(t, { email: unique("just-right"), roleId: read.id }, inviterKey)).status).toBe(201)
    // A role still named by a pending invitation is in use.
    const custom = await api.post("/v1/iam/roles", { name: "invited-role", permissions: ["scraper:jobs:read"] }, t.apiKey)
    expect((await invite(t, { email: unique("custom"), roleId: custom.json.data.id })).status).toBe(201)
    expectError(await api.call("DELETE", `/v1/iam/roles/${custom.json.data.id}`, { key: t.apiKey }), 409, "role_in_use")
    // accept / decline: the token is 43 base64url characters.
    const owners = await api.post("/v1/iam/invitations/accept", { token: "bad" }, t.apiKey)
    expectError(owners, 400, "validation_error")
    expect(errorPaths(owners)).toEqual(["token"])
    expect(errorPaths(await api.post("/v1/iam/invitations/decline", {}, t.apiKey))).toEqual(["token"])
    expectError(await api.post("/v1/iam/invitations/accept", { token: "x".repeat(43) }, t.apiKey), 400, "invalid_token")
  })

  it("revokes a pending invitation: its token stops working; revoking again is a success; other states are a conflict", async () => {
    const t = await api.createTenant()
    const other = await api.createTenant()
    const read = await systemRole(t, "read")
    const email = unique("revoked")
    const { invitation, token } = await invited(t, email, read.id)

    expectError(await api.call("DELETE", `${orgPath(other)}/${invitation.id}`, { key: other.apiKey }), 404, "not_found")
    expectError(await api.call("DELETE", `${orgPath(t)}/${invitation.id}`, { key: other.apiKey }), 404, "not_found")
    expectError(await api.call("DELETE", `${orgPath(t)}/inv_nope`, { key: t.apiKey }), 404, "not_found")

    const revoked = await api.call("DELETE", `${orgPath(t)}/${invitation.id}`, { key: t.apiKey })
    expect(revoked.status, revoked.text).toBe(200)
    expect(revoked.json.data).toEqual({ revoked: true, revokedAt: expect.any(String), id: invitation.id })
    const again = await api.call("DELETE", `${orgPath(t)}/${invitation.id}`, { key: t.apiKey })
    expect(again.status).toBe(200)
    expect(again.json.data).toEqual(revoked.json.data)
    expect((await api.get(`${orgPath(t)}?status=revoked`, t.apiKey)).json.data.items).toEqual([{ ...invitation, status: "revoked" }])
    expectError(await register({ invitationToken: token, email, password: PASSWORD }), 403, "registration_disabled")
    // Nor does it answer for an identity that holds the address.
    const holderEmail = unique("holder")
    const holder = await api.createTenant({ ownerEmail: holderEmail })
    const toHolder = await invited(t, holderEmail, read.id)
    expect((await api.call("DELETE", `${orgPath(t)}/${toHolder.invitation.id}`, { key: t.apiKey })).status).toBe(200)
    expectError(await api.post("/v1/iam/invitations/decline", { token: toHolder.token }, holder.apiKey), 400, "invalid_token")

    // The address may be invited again; an invitation that was answered cannot be revoked.
    const second = await invited(t, email, read.id)
    expect((await register({ invitationToken: second.token, email, password: PASSWORD })).status).toBe(201)
    expectError(await api.call("DELETE", `${orgPath(t)}/${second.invitation.id}`, { key: t.apiKey }), 409, "invalid_invitation_state")

    const revocations = await audit(t, "action=invitation.revoke")
    expect(revocations.map((e) => e.targetId)).toEqual([toHolder.invitation.id, invitation.id])
    expect(revocations[1]).toMatchObject({ actorId: t.ownerIdentityId, onBehalfOf: null, ip: "127.0.0.1", data: { email } })
  })

  it("accepts and declines as an existing identity: only its own address, and to join only its own tenant", async () => {
    const a = await api.createTenant()
    const bOwnerEmail = unique("b-owner")
    const b = await api.createTenant({ ownerEmail: bOwnerEmail })
    const readA = await systemRole(a, "read")
    const writeA = await systemRole(a, "write")

    // An invitation to someone else's address is not the caller's to answer.
    const stranger = await invited(a, unique("stranger"), readA.id)
    expectError(await api.post("/v1/iam/invitations/accept", { token: stranger.token }, b.apiKey), 403, "forbidden")
    expectError(await api.post("/v1/iam/invitations/decline", { token: stranger.token }, b.apiKey), 403, "forbidden")

    // B's owner, invited into A: an identity belongs to one tenant, so accepting is refused; declining is fine.
    const toB = await invited(a, bOwnerEmail, readA.id)
    expectError(await api.post("/v1/iam/invitations/accept", { token: toB.token }, b.apiKey), 409, "invitation_other_tenant")
    const declined = await api.post("/v1/iam/invitations/decline", { token: toB.token }, b.apiKey)
    expect(declined.status, declined.text).toBe(200)
    // A's invitation does not name B's identity.
    expect(declined.json.data).toEqual({ ...toB.invitation, status: "declined" })
    expect(toB.invitation.userId).not.toBe(b.ownerIdentityId)
    expectError(await api.post("/v1/iam/invitations/decline", { token: toB.token }, b.apiKey), 400, "invalid_token")
    expectError(await api.call("DELETE", `${orgPath(a)}/${toB.invitation.id}`, { key: a.apiKey }), 409, "invalid_invitation_state")

    // Someone of A who joined by a delegation (role `read`) accepts a pending invitation with the `write` role.
    const email = unique("joiner")
    const pending = await invited(a, email, writeA.id)
    const delegation = await api.post("/v1/iam/users/me/delegations", { delegateId: email, reason: "cover my crawls", expiresAt: new Date(Date.now() + 86_400_000).toISOString(), currentPassword: "correct horse battery" }, a.apiKey)
    expect(delegation.status, delegation.text).toBe(201)
    const delegationMail = await smtp.waitForMail(email, (m) => (m.text ?? "").includes("on their behalf") && isNew(m.text))
    const joined = await register({ invitationToken: freshToken(delegationMail.text), email, password: PASSWORD })
    expect(joined.status, joined.text).toBe(201)
    const session = bearer(joined.json.data.sessionId)
    const before = await api.call("GET", "/v1/iam/users/me", { headers: session })
    expect(before.json.data.permissions).toEqual(readA.permissions)
    const accepted = await api.call("POST", "/v1/iam/invitations/accept", { headers: session, body: { token: pending.token } })
    expect(accepted.status, accepted.text).toBe(200)
    expect(accepted.json.data).toEqual({ ...pending.invitation, status: "active", userId: before.json.data.identityId })
    // The session acts with the new role at once.
    const after = await api.call("GET", "/v1/iam/users/me", { headers: session })
    expect(after.json.data).toMatchObject({ defaultRoleId: writeA.id, permissions: writeA.permissions })
    expectError(await api.call("POST", "/v1/iam/invitations/accept", { headers: session, body: { token: pending.token } }), 400, "invalid_token")

    // A learns that its invitation was declined, not who in which tenant declined it.
    const declinedInA = await audit(a, `action=invitation.decline`)
    expect(declinedInA).toEqual([expect.objectContaining({ actorId: null, targetId: toB.invitation.id })])
    expect(JSON.stringify(declinedInA)).not.toMatch(new RegExp(`${b.ownerIdentityId}|${b.tenantId}`))
    expect(await audit(a, `action=invitation.accept&identityId=${before.json.data.identityId}`)).toEqual([
      expect.objectContaining({ actorId: before.json.data.identityId, targetId: pending.invitation.id, data: expect.objectContaining({ roleId: writeA.id }) })
    ])
    // B's log holds its owner's decline, and nothing else of A's invitations.
    expect(await audit(b, "action=invitation.*")).toEqual([expect.objectContaining({ action: "invitation.decline", actorId: b.ownerIdentityId, targetId: toB.invitation.id })])
  })

  it("refuses an expired invitation token (made to expire in the database)", async (ctx) => {
    if (!databaseUrl) return ctx.skip()
    const t = await api.createTenant()
    const read = await systemRole(t, "read")
    const email = unique("late")
    const { invitation, token } = await invited(t, email, read.id)
    await pgQuery(databaseUrl, "UPDATE auth_tokens SET expires_at = now() - interval '1 second' WHERE subject_id = $1", [invitation.id])
    expectError(await register({ invitationToken: token, email, password: PASSWORD }), 403, "registration_disabled")
    const other = await api.createTenant({ ownerEmail: email.replace("late", "late-owner") })
    expectError(await api.post("/v1/iam/invitations/accept", { token }, other.apiKey), 400, "token_expired")
    // An invitation past its own expiry no longer holds its address: a new one can be sent.
    await pgQuery(databaseUrl, "UPDATE invitations SET invitation_expires_at = now() - interval '1 second' WHERE id = $1", [invitation.id])
    const again = await invited(t, email, read.id)
    expect((await register({ invitationToken: again.token, email, password: PASSWORD })).status).toBe(201)
  })

  it("never lets concurrent registrations pass iam.identities.total, on one node or two", async () => {
    const t = await api.createTenant()
    const admin = await api.call("POST", "/internal/v1/internal-admins", { token: INTERNAL_TOKEN, body: { email: unique("admin") } })
    expect(admin.status, admin.text).toBe(201)
    const quota = await api.call("PUT", `/v1/admin/tenants/${t.tenantId}/quotas/iam.identities.total`, { key: admin.json.data.apiKey, body: { limit: 3 } })
    expect(quota.status, quota.text).toBe(200)
    const read = await systemRole(t, "read")
    const invitees = await Promise.all(Array.from({ length: 6 }, async (_, i) => {
      const email = unique(`crowd${i}`)
      return { email, ...(await invited(t, email, read.id)) }
    }))
    // On PostgreSQL, a second node shares the database: the registrations are spread over both.
    const second = databaseUrl ? await startServer({ DATABASE_URL: databaseUrl, SMTP_URL: smtp.url, PUBLIC_BASE_URL, SECRET_KEY }) : undefined
    const nodes = second ? [api, client(second.baseUrl)] : [api]
    const answers = await Promise.all(invitees.map((i, n) =>
      nodes[n % nodes.length]!.post("/v1/iam/auth/register", { invitationToken: i.token, email: i.email, password: PASSWORD })
    )).finally(() => second?.stop())
    // The owner is one; two more fit.
    expect(answers.filter((a) => a.status === 201)).toHaveLength(2)
    const refused = answers.filter((a) => a.status !== 201)
    expect(refused).toHaveLength(4)
    for (const r of refused) expectError(r, 429, "quota_exceeded")
    const used = ((await api.get("/v1/iam/quotas/me", t.apiKey)).json.data.items as Array<any>).find((q) => q.key === "iam.identities.total")
    expect(used).toMatchObject({ limit: 3, used: 3 })
    // A refused registration left its token usable: with room, it registers.
    await api.call("PUT", `/v1/admin/tenants/${t.tenantId}/quotas/iam.identities.total`, { key: admin.json.data.apiKey, body: { limit: 4 } })
    const late = invitees[answers.findIndex((a) => a.status === 429)]!
    expect((await register({ invitationToken: late.token, email: late.email, password: PASSWORD })).status).toBe(201)
  })

  it("answers 409 email_in_use for an address registered already, leaving the token usable", async () => {
    const a = await api.createTenant()
    const takenEmail = unique("taken")
    await api.createTenant({ ownerEmail: takenEmail })
    const { token } = await invited(a, takenEmail, (await systemRole(a, "read")).id)
    const taken = await register({ invitationToken: token, email: takenEmail, password: PASSWORD })
    expectError(taken, 409, "email_in_use")
    expect(errorPaths(taken)).toEqual(["email"])
    expect(await audit(a, "action=registration")).toEqual([])
  })

  it("keeps nothing when the mail cannot be sent (503 dependency_unavailable)", async () => {
    // Nothing listens on this port: every send fails at once.
    const down = await startServer({ ...(await backend.env()), SMTP_URL: `smtp://127.0.0.1:${await freePort()}`, PUBLIC_BASE_URL, SECRET_KEY })
    try {
      const local = client(down.baseUrl)
      const t = await local.createTenant()
      const roles = (await local.get("/v1/iam/roles", t.apiKey)).json.data.items as Array<any>
      const read = roles.find((r) => r.name === "read")
      const email = unique("unreachable")
      const refused = await local.post(`/v1/iam/organizations/${t.organizationId}/invitations`, { email, roleId: read.id }, t.apiKey)
      expectError(refused, 503, "dependency_unavailable")
      expect(refused.headers.get("retry-after")).toBe("5")
      expect((await local.get(`/v1/iam/organizations/${t.organizationId}/invitations`, t.apiKey)).json.data.pagination.total).toBe(0)
      const delegation = await local.post("/v1/iam/users/me/delegations", { delegateId: email, reason: "r", expiresAt: new Date(Date.now() + 86_400_000).toISOString(), currentPassword: "correct horse battery" }, t.apiKey)
      expectError(delegation, 503, "dependency_unavailable")
      expect((await local.get("/v1/iam/users/me/delegations/granted", t.apiKey)).json.data.pagination.total).toBe(0)
      // Nothing was audited either.
      expect((await local.get("/v1/iam/audit?action=invitation.*", t.apiKey)).json.data.items).toEqual([])
    } finally {
      await down.stop()
    }
    // A node of its own starts inside the test: allow for a slow start of the embedded database.
  }, 120_000)
})
