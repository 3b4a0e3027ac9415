import { randomBytes } from "node:crypto"
import { rmSync } from "node:fs"
import { join } from "node:path"
import { generateSync } from "otplib"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { backends, client, INTERNAL_TOKEN, pgQuery, type RunningServer, startServer } from "./support/server-process.ts"

/** Identity sessions, passwords, TOTP and guessing limits through the real HTTP interface (docs/identity.md). */

type Api = ReturnType<typeof client>
type AddressedApi = ReturnType<typeof addressedClient>
type Res = Awaited<ReturnType<Api["call"]>>

const PASSWORD = "correct horse battery staple"
const USER_AGENT = "auth-e2e/1.0 (test)"
const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms))

/**
 * A client that connects from its own loopback address (127.x.y.z). Guessing limits count by
 * client address, and with REDIS_URL their counts outlive a server and are shared by every server
 * on that Redis: from 127.0.0.1 the failures of one run (and of anyone else's tests) would lock
 * the next. Each server of these tests gets an address of its own.
 */
const addressedClient = (baseUrl: string) => {
  const byte = () => 1 + Math.floor(Math.random() * 254)
  const address = `127.${byte()}.${byte()}.${byte()}`
  return { ...client(baseUrl, { localAddress: address }), address }
}

const expectError = (res: Res, status: number, code: string) => {
  expect(res.status, res.text).toBe(status)
  expect(res.json.status).toBe("error")
  expect(res.json.code).toBe(code)
  expect(typeof res.json.error.message).toBe("string")
}

const randomEmail = (prefix: string) => `${prefix}-${Math.random().toString(36).slice(2, 10)}@example.com`

/** A new tenant whose owner has a password: what logging in needs. */
const newOwner = async (api: Api, password = PASSWORD) => {
  const email = randomEmail("owner")
  const tenant = await api.createTenant({ ownerEmail: email, ownerPassword: password })
  return { ...tenant, email, password }
}

const login = (api: Api, body: Record<string, unknown>) =>
  api.call("POST", "/v1/iam/auth/login", { body, headers: { "user-agent": USER_AGENT } })

/** Logs in and returns the opened session; fails the test unless it worked. */
const session = async (api: Api, email: string, password: string, extra: Record<string, unknown> = {}) => {
  const res = await login(api, { email, password, ...extra })
  expect(res.status, res.text).toBe(200)
  return res.json.data as { sessionId: string; expiresAt: string; csrfToken: string; requiresPasswordSetup: boolean }
}

/**
 * A request as a well-behaved client sends it: a session may make 10 requests a second, and these
 * tests make them faster, so a 429 rate_limited is waited out (never a too_many_attempts).
 */
const politely = async (send: () => Promise<Res>) => {
  for (let i = 0; ; i++) {
    const res = await send()
    if (res.status !== 429 || res.json?.code !== "rate_limited" || i === 5) return res
    await sleep(Number(res.headers.get("retry-after") ?? "1") * 1000)
  }
}

const bearer = (api: Api, method: string, path: string, sessionId: string, body?: unknown) =>
  politely(() => api.call(method, path, { body, headers: { authorization: `Bearer ${sessionId}`, "user-agent": USER_AGENT } }))

const withCookie = (api: Api, method: string, path: string, sessionId: string, csrf?: string, body?: unknown) =>
  politely(() =>
    api.call(method, path, {
      body,
      headers: { cookie: `trawl_session=${sessionId}`, ...(csrf === undefined ? {} : { "x-csrf-token": csrf }) }
    })
  )

/** The public id of the caller's current session, from its own session list. */
const currentSessionId = async (api: Api, sessionId: string) => {
  const list = await bearer(api, "GET", "/v1/iam/users/me/sessions", sessionId)
  expect(list.status, list.text).toBe(200)
  return (list.json.data.items as Array<{ id: string; current: boolean }>).find((s) => s.current)!.id
}

/** TOTP codes as an authenticator app makes them; `offsetS` moves the clock. */
const totp = (secret: string, offsetS = 0) => generateSync({ secret, epoch: Math.floor(Date.now() / 1000) + offsetS })
const step = () => Math.floor(Date.now() / 30_000)
/** Waits until the 30 s step is at least `target`, and never hands out a code in a step's last two seconds. */
const waitForStep = async (target = step()) => {
  for (;;) {
    const inStep = (Date.now() % 30_000) / 1000
    if (step() >= target && inStep < 28) return
    await sleep(200)
  }
}

describe.each(backends())("identity sessions over HTTP ($name)", (backend) => {
  let server: RunningServer
  let api: AddressedApi
  let env: Record<string, string>
  /** Tenants whose audit rows the last test reads. */
  const audited: Array<string> = []

  beforeAll(async () => {
    env = await backend.env()
    server = await startServer(env, { keepDataDir: backend.name === "embedded" })
    api = addressedClient(server.baseUrl)
  })
  afterAll(async () => {
    await server?.stop()
    if (backend.name === "embedded" && server) rmSync(server.dataDir, { recursive: true, force: true })
  })

  it("logs in with a password: the session, its CSRF token and an HttpOnly, SameSite=Lax cookie (no Secure on http)", async () => {
    const owner = await newOwner(api)
    audited.push(owner.tenantId)
    const before = Date.now()
    const res = await login(api, { email: owner.email, password: PASSWORD })
    expect(res.status, res.text).toBe(200)
    const data = res.json.data
    expect(Object.keys(data).sort()).toEqual(["csrfToken", "expiresAt", "requiresPasswordSetup", "sessionId"])
    expect(data.sessionId).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(data.csrfToken).toMatch(/^[A-Za-z0-9_-]{20,}$/)
    expect(data.requiresPasswordSetup).toBe(false)
    // the default absolute lifetime is 30 days
    const lifetime = Date.parse(data.expiresAt) - before
    expect(lifetime).toBeGreaterThan(30 * 86400_000 - 60_000)
    expect(lifetime).toBeLessThan(30 * 86400_000 + 60_000)

    const cookie = res.headers.get("set-cookie")!
    expect(cookie).toMatch(new RegExp(`^trawl_session=${data.sessionId};`))
    const attributes = cookie.split(";").slice(1).map((a) => a.trim().toLowerCase())
    expect(attributes).toContain("httponly")
    expect(attributes).toContain("samesite=lax")
    expect(attributes).toContain("path=/")
    expect(attributes).not.toContain("secure")
    expect(attributes.some((a) => a.startsWith("expires="))).toBe(true)

    // two logins are two sessions
    const other = await session(api, owner.email, PASSWORD)
    expect(other.sessionId).not.toBe(data.sessionId)
    expect(other.csrfToken).not.toBe(data.csrfToken)
  })

  it("answers a wrong password and an unknown e-mail with the same 401; the e-mail's letter case does not matter", async () => {
    const owner = await newOwner(api)
    audited.push(owner.tenantId)
    const wrong = await login(api, { email: owner.email, password: "not the password" })
    const unknown = await login(api, { email: randomEmail("nobody"), password: "not the password" })
    expectError(wrong, 401, "unauthorized")
    expectError(unknown, 401, "unauthorized")
    expect(wrong.json.code).toBe(unknown.json.code)
    expect(wrong.json.error.message).toBe(unknown.json.error.message)
    expect(wrong.json.error.details).toEqual(unknown.json.error.details)

    const shouted = await session(api, owner.email.toUpperCase(), PASSWORD)
    const me = await bearer(api, "GET", "/v1/iam/auth/me", shouted.sessionId)
    expect(me.status).toBe(200)
    expect(me.json.data.identityId).toBe(owner.ownerIdentityId)
  })

  it("refuses every out-of-bounds login body with 400 validation_error and details, never echoing the password", async () => {
    const owner = await newOwner(api)
    const probe = "Echo-Probe-Secret-7q"
    const long = "Zx9-".repeat(257) // 1028 characters
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ["empty password", { email: owner.email, password: "" }, "password"],
      ["password over 1024", { email: owner.email, password: long }, "password"],
      ["password not a string", { email: owner.email, password: 123456789 }, "password"],
      ["no password", { email: owner.email }, "password"],
      ["totpCode of five digits", { email: owner.email, password: probe, totpCode: "12345" }, "totpCode"],
      ["totpCode of seven digits", { email: owner.email, password: probe, totpCode: "1234567" }, "totpCode"],
      ["totpCode with letters", { email: owner.email, password: probe, totpCode: "12a456" }, "totpCode"],
      ["recoveryCode under 8", { email: owner.email, password: probe, recoveryCode: "abcdefg" }, "recoveryCode"],
      ["recoveryCode over 64", { email: owner.email, password: probe, recoveryCode: "a".repeat(65) }, "recoveryCode"],
      ["malformed e-mail", { email: "not-an-email", password: probe }, "email"],
      ["e-mail over 255", { email: `${"a".repeat(250)}@example.com`, password: probe }, "email"],
      ["unknown field", { email: owner.email, password: probe, rememberMe: true }, "rememberMe"]
    ]
    for (const [name, body, path] of cases) {
      const res = await login(api, body)
      expectError(res, 400, "validation_error")
      const details = res.json.error.details as Array<{ path: string; code: string; message: string }>
      expect(details.length, name).toBeGreaterThan(0)
      expect(details.map((d) => d.path), name).toContain(path)
      expect(res.text, name).not.toContain(probe)
      expect(res.text, name).not.toContain("Zx9-Zx9-")
      expect(res.text, name).not.toContain("123456789")
    }
    // the bounds themselves are accepted (and then only the credentials are wrong)
    expectError(await login(api, { email: owner.email, password: "x" }), 401, "unauthorized")
    expectError(await login(api, { email: owner.email, password: "y".repeat(1024) }), 401, "unauthorized")
    // ...which cost two failures: a success clears the account's count
    await session(api, owner.email, PASSWORD)

    // proofs and codes in the other bodies are bounded the same way
    const s = await session(api, owner.email, PASSWORD)
    for (const [path, body, field] of [
      ["/v1/iam/auth/totp/verify", { code: "12345" }, "code"],
      ["/v1/iam/auth/totp/disable", { totpCode: "abcdef" }, "totpCode"],
      ["/v1/iam/auth/totp/recovery-codes/regenerate", { recoveryCode: "short" }, "recoveryCode"],
      ["/v1/iam/auth/totp/disable", { currentPassword: "" }, "currentPassword"],
      ["/v1/iam/auth/password/change", { currentPassword: probe, newPassword: long }, "newPassword"],
      ["/v1/iam/auth/password/change", { currentPassword: probe, newPassword: "short-11chr" }, "newPassword"],
      ["/v1/iam/auth/password/setup", { password: probe, extra: 1 }, "extra"]
    ] as const) {
      const res = await bearer(api, "POST", path, s.sessionId, body)
      expectError(res, 400, "validation_error")
      expect((res.json.error.details as Array<{ path: string }>).map((d) => d.path), `${path} ${field}`).toContain(field)
      expect(res.text).not.toContain(probe)
      expect(res.text).not.toContain("Zx9-Zx9-")
    }
    // nor does a password of the wrong type come back, in any body that takes one
    for (const [path, body, field] of [
      ["/v1/iam/auth/password/change", { currentPassword: 987654321, newPassword: "a long enough passphrase" }, "currentPassword"],
      [`/v1/iam/identities/${owner.ownerIdentityId}/api-keys`, { name: "k", roleId: "r", currentPassword: 987654321 }, "currentPassword"]
    ] as const) {
      const res = await bearer(api, "POST", path, s.sessionId, body)
      expectError(res, 400, "validation_error")
      expect((res.json.error.details as Array<{ path: string }>).map((d) => d.path)).toContain(field)
      expect(res.text).not.toContain("987654321")
    }
  })

  it("the control plane applies the password policy: 12 to 1024 characters, not the e-mail", async () => {
    const internal = (path: string, body: unknown) => api.call("POST", path, { token: INTERNAL_TOKEN, body })
    for (const [path, field, body] of [
      ["/internal/v1/tenants", "ownerPassword", (email: string, password: string) => ({ name: "T", ownerEmail: email, ownerPassword: password })],
      ["/internal/v1/internal-admins", "password", (email: string, password: string) => ({ email, password })]
    ] as const) {
      const email = randomEmail("policy")
      for (const weak of ["12345678", "elevenchars", email, email.toUpperCase(), "y".repeat(1025)]) {
        const res = await internal(path, body(email, weak))
        expectError(res, 400, "validation_error")
        expect(res.json.error.details.map((d: { path: string }) => d.path), `${path} ${weak.slice(0, 20)}`).toEqual([field])
        expect(res.text).not.toContain(weak.slice(0, 12))
      }
      const fine = await internal(path, body(email, "twelve chars"))
      expect(fine.status, fine.text).toBe(201)
    }
  })

  it("never quotes a password, code or token back in a validation error, whatever its type", async () => {
    const owner = await newOwner(api)
    // Too short for a new password, so that every route refuses it; and one far too long.
    const probe = "Probe-q7Z"
    const number = 4242424242
    for (const value of [probe, [probe], { inner: probe }, number, true, null, `${probe}${"!".repeat(1100)}`]) {
      const attempts: ReadonlyArray<[string, string, Record<string, unknown>, Record<string, string>?]> = [
        ["/v1/iam/auth/register", "register", { invitationToken: value, email: randomEmail("nobody"), password: value }],
        ["/v1/iam/auth/magic-link/verify", "magic link", { token: value, totpCode: value, recoveryCode: value }],
        ["/v1/iam/auth/password/reset", "reset", { token: value, password: value }],
        ["/v1/iam/auth/email/verify", "verify", { token: value }],
        ["/v1/iam/auth/login", "login", { email: owner.email, password: value, totpCode: value, recoveryCode: value }],
        ["/v1/iam/invitations/accept", "invitation", { token: value }, { "x-api-key": owner.apiKey }],
        ["/v1/iam/invitations/decline", "invitation", { token: value }, { "x-api-key": owner.apiKey }],
        ["/v1/iam/auth/totp/disable", "proof", { currentPassword: value, totpCode: value, recoveryCode: value }, { "x-api-key": owner.apiKey }],
        ["/internal/v1/tenants", "tenant", { name: "T", ownerEmail: randomEmail("t"), ownerPassword: value }, { "x-internal-token": INTERNAL_TOKEN }],
        ["/internal/v1/internal-admins", "admin", { email: randomEmail("a"), password: value }, { "x-internal-token": INTERNAL_TOKEN }],
        ["/v1/scraper/jobs", "webhook secret", { url: "http://127.0.0.1:9/", webhookUrl: "http://127.0.0.1:9/hook", webhookSecret: value }, { "x-api-key": owner.apiKey }]
      ]
      for (const [path, name, body, headers] of attempts) {
        const res = await politely(() => api.call("POST", path, { body, headers: headers ?? {} }))
        expect([name, JSON.stringify(value).slice(0, 30), res.status], res.text).not.toEqual([name, JSON.stringify(value).slice(0, 30), 500])
        expect(res.status, `${name} ${res.text}`).toBeGreaterThanOrEqual(400)
        expect(res.text, `${name} ${JSON.stringify(value)}`).not.toContain("Probe-q7Z")
        expect(res.text, `${name} ${JSON.stringify(value)}`).not.toContain(String(number))
      }
    }
  })

  it("authenticates a session as a bearer token, and refuses a malformed or unknown one", async () => {
    const owner = await newOwner(api)
    const s = await session(api, owner.email, PASSWORD)
    const me = await bearer(api, "GET", "/v1/iam/auth/me", s.sessionId)
    expect(me.status, me.text).toBe(200)
    expect(me.json.data).toMatchObject({ identityId: owner.ownerIdentityId, tenantId: owner.tenantId, type: "user", requiresPasswordSetup: false, totpEnabledAt: null })
    expect(me.json.data.emails[0].email).toBe(owner.email)
    // the session acts on the tenant's resources like a key of the same role
    const balance = await bearer(api, "GET", "/v1/billing/me/balance", s.sessionId)
    expect(balance.status).toBe(200)
    expect(balance.json.data.tenantId).toBe(owner.tenantId)
    // an unsafe method needs no CSRF token with a bearer token: no browser sends it by itself
    const patched = await bearer(api, "PATCH", "/v1/iam/users/me", s.sessionId, { firstName: "Ada" })
    expect(patched.status, patched.text).toBe(200)
    expect(patched.json.data.firstName).toBe("Ada")
    expectError(await bearer(api, "GET", "/v1/iam/auth/me", "not-a-token"), 401, "unauthorized")
    expectError(await bearer(api, "GET", "/v1/iam/auth/me", "A".repeat(43)), 401, "unauthorized")
    expectError(await api.get("/v1/iam/auth/me"), 401, "unauthorized")
    // an API key sent as a bearer token (as many SDKs send tokens) is told where keys go
    const keyAsBearer = await bearer(api, "GET", "/v1/iam/auth/me", owner.apiKey)
    expectError(keyAsBearer, 401, "unauthorized")
    expect(keyAsBearer.json.error.message).toContain("x-api-key")
    // the same routes take an API key, acting as the key's identity
    const byKey = await api.get("/v1/iam/auth/me", owner.apiKey)
    expect(byKey.status).toBe(200)
    expect(byKey.json.data.identityId).toBe(owner.ownerIdentityId)
  })

  it("takes the session cookie: GET without CSRF, unsafe methods only with the session's x-csrf-token", async () => {
    const owner = await newOwner(api)
    const s = await session(api, owner.email, PASSWORD)
    const other = await session(api, owner.email, PASSWORD)
    const read = await withCookie(api, "GET", "/v1/iam/users/me", s.sessionId)
    expect(read.status, read.text).toBe(200)
    expect(read.json.data.identityId).toBe(owner.ownerIdentityId)
    expect((await withCookie(api, "GET", "/v1/iam/users/me/sessions", s.sessionId)).status).toBe(200)

    const otherId = await currentSessionId(api, other.sessionId)
    const unsafe: Array<[string, string, unknown]> = [
      ["PATCH", "/v1/iam/users/me", { firstName: "Grace" }],
      ["POST", "/v1/iam/auth/refresh", undefined],
      ["DELETE", `/v1/iam/users/me/sessions/${otherId}`, undefined],
      ["DELETE", "/v1/iam/users/me/sessions", undefined],
      ["POST", "/v1/iam/auth/logout", undefined]
    ]
    for (const [method, path, body] of unsafe) {
      expectError(await withCookie(api, method, path, s.sessionId, undefined, body), 403, "csrf_failed")
      expectError(await withCookie(api, method, path, s.sessionId, "", body), 403, "csrf_failed")
      // one character changed (to another a token can end with: the last one carries 4 bits)
      expectError(await withCookie(api, method, path, s.sessionId, s.csrfToken.slice(0, -1) + (s.csrfToken.endsWith("A") ? "E" : "A"), body), 403, "csrf_failed")
      // another session's token is no good either
      expectError(await withCookie(api, method, path, s.sessionId, other.csrfToken, body), 403, "csrf_failed")
    }
    // a refused request of a live session counts against its rate limit and carries its headers
    // (the remaining count falls by one, unless the minute's window turned)
    const counted = await withCookie(api, "GET", "/v1/iam/users/me", s.sessionId)
    const refused = await withCookie(api, "PATCH", "/v1/iam/users/me", s.sessionId, undefined, { firstName: "Grace" })
    expectError(refused, 403, "csrf_failed")
    expect(refused.headers.get("ratelimit-limit")).toBe("600")
    if (Number(refused.headers.get("ratelimit-reset")) <= Number(counted.headers.get("ratelimit-reset"))) {
      expect(Number(refused.headers.get("ratelimit-remaining"))).toBe(Number(counted.headers.get("ratelimit-remaining")) - 1)
    }
    // nothing was changed by the refused requests
    expect((await bearer(api, "GET", "/v1/iam/auth/me", other.sessionId)).status).toBe(200)
    expect((await bearer(api, "GET", "/v1/iam/auth/me", s.sessionId)).json.data.firstName).toBeNull()

    // the token from login works, and GET /csrf gives the same one
    const csrf = await withCookie(api, "GET", "/v1/iam/auth/csrf", s.sessionId)
    expect(csrf.status).toBe(200)
    expect(csrf.json.data.csrfToken).toBe(s.csrfToken)
    const patched = await withCookie(api, "PATCH", "/v1/iam/users/me", s.sessionId, csrf.json.data.csrfToken, { firstName: "Grace" })
    expect(patched.status, patched.text).toBe(200)
    expect(patched.json.data.firstName).toBe("Grace")
    const revoked = await withCookie(api, "DELETE", `/v1/iam/users/me/sessions/${otherId}`, s.sessionId, s.csrfToken)
    expect(revoked.status, revoked.text).toBe(200)
    expectError(await bearer(api, "GET", "/v1/iam/auth/me", other.sessionId), 401, "unauthorized")
    // an API key has no CSRF token to ask for
    expectError(await api.get("/v1/iam/auth/csrf", owner.apiKey), 400, "session_required")
    // a cookie of no live session is a 401, whatever the method
    expectError(await withCookie(api, "GET", "/v1/iam/users/me", "B".repeat(43)), 401, "unauthorized")
  })

  it("logout needs a session; revoking a session twice keeps its first revokedAt; an avatar is an http(s) URL; re-authentication names what the body takes", async () => {
    const owner = await newOwner(api)
    // An API key has no session to end, as it has none to refresh or a CSRF token to ask for.
    expectError(await api.post("/v1/iam/auth/logout", undefined, owner.apiKey), 400, "session_required")
    expectError(await api.post("/v1/iam/auth/refresh", undefined, owner.apiKey), 400, "session_required")

    const s = await session(api, owner.email, PASSWORD)
    const other = await session(api, owner.email, PASSWORD)
    const otherId = await currentSessionId(api, other.sessionId)
    const first = await bearer(api, "DELETE", `/v1/iam/users/me/sessions/${otherId}`, s.sessionId)
    expect(first.status, first.text).toBe(200)
    await sleep(20)
    const again = await bearer(api, "DELETE", `/v1/iam/users/me/sessions/${otherId}`, s.sessionId)
    expect(again.status, again.text).toBe(200)
    expect(again.json.data).toEqual(first.json.data)

    for (const avatarUrl of ["javascript:alert(1)", "data:image/png;base64,AAAA", "ftp://example.com/a.png", "file:///etc/passwd"]) {
      const res = await bearer(api, "PATCH", "/v1/iam/users/me", s.sessionId, { avatarUrl })
      expectError(res, 400, "validation_error")
      expect(res.json.error.details.map((d: { path: string }) => d.path), avatarUrl).toEqual(["avatarUrl"])
    }
    expect((await bearer(api, "GET", "/v1/iam/users/me", s.sessionId)).json.data.avatarUrl).toBeNull()
    const fine = await bearer(api, "PATCH", "/v1/iam/users/me", s.sessionId, { avatarUrl: "https://example.com/me.png" })
    expect(fine.json.data.avatarUrl).toBe("https://example.com/me.png")

    // A key for an all-powerful role asks for what its body takes: currentPassword or totpCode (not recoveryCode).
    const me = (await bearer(api, "GET", "/v1/iam/users/me", s.sessionId)).json.data
    const keyPath = `/v1/iam/identities/${owner.ownerIdentityId}/api-keys`
    const asked = await bearer(api, "POST", keyPath, s.sessionId, { name: "admin", roleId: me.defaultRoleId })
    expectError(asked, 403, "reauthentication_required")
    expect(asked.json.error.message).toBe("this operation needs currentPassword or totpCode")
    const withRecovery = await bearer(api, "POST", keyPath, s.sessionId, { name: "admin", roleId: me.defaultRoleId, recoveryCode: "abcd-efgh-ijkl" })
    expectError(withRecovery, 400, "validation_error")
    // Every permission spelled another way (read and write of everything) asks the same.
    const spelled = await bearer(api, "POST", "/v1/iam/roles", s.sessionId, { name: "everything spelled out", permissions: ["*:*:read", "*:*:write"] })
    expect(spelled.status, spelled.text).toBe(201)
    expectError(await bearer(api, "POST", keyPath, s.sessionId, { name: "spelled", roleId: spelled.json.data.id }), 403, "reauthentication_required")
    const granted = await bearer(api, "POST", keyPath, s.sessionId, { name: "spelled", roleId: spelled.json.data.id, currentPassword: PASSWORD })
    expect(granted.status, granted.text).toBe(201)
    // What it holds, it may hand out: its key makes a `*:*:*` role.
    const made = await api.post("/v1/iam/roles", { name: "everything", permissions: ["*:*:*"] }, granted.json.data.rawKey)
    expect(made.status, made.text).toBe(201)
  })

  it("refreshes a session into a new id, and refuses the old one at once", async () => {
    const owner = await newOwner(api)
    const s = await session(api, owner.email, PASSWORD)
    expect((await bearer(api, "GET", "/v1/iam/auth/me", s.sessionId)).status).toBe(200) // cached on the node now
    const res = await bearer(api, "POST", "/v1/iam/auth/refresh", s.sessionId)
    expect(res.status, res.text).toBe(200)
    const next = res.json.data
    expect(next.sessionId).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(next.sessionId).not.toBe(s.sessionId)
    expect(next.csrfToken).not.toBe(s.csrfToken)
    // the same absolute end: a refresh does not extend the lifetime
    expect(next.expiresAt).toBe(s.expiresAt)
    expect(res.headers.get("set-cookie")).toMatch(new RegExp(`^trawl_session=${next.sessionId};`))
    expectError(await bearer(api, "GET", "/v1/iam/auth/me", s.sessionId), 401, "unauthorized")
    expectError(await bearer(api, "POST", "/v1/iam/auth/refresh", s.sessionId), 401, "unauthorized")
    expect((await bearer(api, "GET", "/v1/iam/auth/me", next.sessionId)).status).toBe(200)
    // a cookie session refreshes with its CSRF token
    const byCookie = await withCookie(api, "POST", "/v1/iam/auth/refresh", next.sessionId, next.csrfToken)
    expect(byCookie.status, byCookie.text).toBe(200)
    expectError(await bearer(api, "GET", "/v1/iam/auth/me", next.sessionId), 401, "unauthorized")
    expect((await bearer(api, "GET", "/v1/iam/auth/me", byCookie.json.data.sessionId)).status).toBe(200)
    // a key has no session to refresh
    expectError(await api.call("POST", "/v1/iam/auth/refresh", { key: owner.apiKey }), 400, "session_required")
  })

  it("logs out: the session ends and the cookie is cleared", async () => {
    const owner = await newOwner(api)
    const s = await session(api, owner.email, PASSWORD)
    const keep = await session(api, owner.email, PASSWORD)
    expect((await bearer(api, "GET", "/v1/iam/auth/me", s.sessionId)).status).toBe(200)
    const out = await withCookie(api, "POST", "/v1/iam/auth/logout", s.sessionId, s.csrfToken)
    expect(out.status, out.text).toBe(200)
    expect(out.json.data).toEqual({ loggedOut: true })
    const cleared = out.headers.get("set-cookie")!
    expect(cleared).toMatch(/^trawl_session=;/)
    expect(cleared.toLowerCase()).toContain("max-age=0")
    expect(cleared.toLowerCase()).toContain("path=/")
    expectError(await bearer(api, "GET", "/v1/iam/auth/me", s.sessionId), 401, "unauthorized")
    expectError(await withCookie(api, "GET", "/v1/iam/users/me", s.sessionId), 401, "unauthorized")
    // other sessions of the identity live on
    expect((await bearer(api, "GET", "/v1/iam/auth/me", keep.sessionId)).status).toBe(200)
  })

  it("lists the identity's sessions with the current one, address and user agent, and revokes one or all others", async () => {
    const owner = await newOwner(api)
    audited.push(owner.tenantId)
    const stranger = await newOwner(api)
    const a = await session(api, owner.email, PASSWORD)
    const b = await session(api, owner.email, PASSWORD)
    const c = await session(api, owner.email, PASSWORD)
    const list = await bearer(api, "GET", "/v1/iam/users/me/sessions", a.sessionId)
    expect(list.status, list.text).toBe(200)
    const items = list.json.data.items as Array<Record<string, unknown>>
    expect(list.json.data.pagination.total).toBe(3)
    expect(items).toHaveLength(3)
    expect(items.filter((i) => i.current)).toHaveLength(1)
    for (const item of items) {
      expect(Object.keys(item).sort()).toEqual(["createdAt", "current", "expiresAt", "id", "ip", "lastSeenAt", "userAgent"])
      expect(item.id).toMatch(/^ses_/)
      expect(item.ip).toBe(api.address)
      expect(item.userAgent).toBe(USER_AGENT)
      // the public id is not the token
      expect([a.sessionId, b.sessionId, c.sessionId]).not.toContain(item.id)
    }
    const aId = items.find((i) => i.current)!.id as string
    const bId = await currentSessionId(api, b.sessionId)
    expect(bId).not.toBe(aId)
    // a paged list
    const paged = await bearer(api, "GET", "/v1/iam/users/me/sessions?limit=1&offset=1", a.sessionId)
    expect(paged.json.data.items).toHaveLength(1)
    expect(paged.json.data.pagination).toMatchObject({ offset: 1, limit: 1, total: 3, hasMore: true })

    // unknown ids and another identity's session are both 404, and the other session lives on
    expectError(await bearer(api, "DELETE", "/v1/iam/users/me/sessions/ses_nosuchsession", a.sessionId), 404, "not_found")
    const strangers = await session(api, stranger.email, PASSWORD)
    const strangerId = await currentSessionId(api, strangers.sessionId)
    expectError(await bearer(api, "DELETE", `/v1/iam/users/me/sessions/${strangerId}`, a.sessionId), 404, "not_found")
    expect((await bearer(api, "GET", "/v1/iam/auth/me", strangers.sessionId)).status).toBe(200)

    // one
    const one = await bearer(api, "DELETE", `/v1/iam/users/me/sessions/${bId}`, a.sessionId)
    expect(one.status, one.text).toBe(200)
    expect(one.json.data).toMatchObject({ revoked: true, id: bId })
    expectError(await bearer(api, "GET", "/v1/iam/auth/me", b.sessionId), 401, "unauthorized")
    expect((await bearer(api, "GET", "/v1/iam/users/me/sessions", a.sessionId)).json.data.pagination.total).toBe(2)

    // all but the current one
    const d = await session(api, owner.email, PASSWORD)
    const all = await bearer(api, "DELETE", "/v1/iam/users/me/sessions", a.sessionId)
    expect(all.status, all.text).toBe(200)
    expect(all.json.data.revoked).toBe(2)
    expectError(await bearer(api, "GET", "/v1/iam/auth/me", c.sessionId), 401, "unauthorized")
    expectError(await bearer(api, "GET", "/v1/iam/auth/me", d.sessionId), 401, "unauthorized")
    expect((await bearer(api, "GET", "/v1/iam/auth/me", a.sessionId)).status).toBe(200)
    const left = await bearer(api, "GET", "/v1/iam/users/me/sessions", a.sessionId)
    expect(left.json.data.items.map((i: { id: string }) => i.id)).toEqual([aId])
    // another identity's sessions were not touched
    expect((await bearer(api, "GET", "/v1/iam/auth/me", strangers.sessionId)).status).toBe(200)
  })

  it("changes the password: needs the current one, refuses a weak one, and ends the identity's other sessions", async () => {
    const owner = await newOwner(api)
    audited.push(owner.tenantId)
    const current = await session(api, owner.email, PASSWORD)
    const other = await session(api, owner.email, PASSWORD)
    const change = (body: Record<string, unknown>) => bearer(api, "POST", "/v1/iam/auth/password/change", current.sessionId, body)
    const next = "a brand new passphrase 42"

    expectError(await change({ currentPassword: "not the password", newPassword: next }), 403, "reauthentication_failed")
    const short = await change({ currentPassword: PASSWORD, newPassword: "elevenchars" })
    expectError(short, 400, "validation_error")
    expect(short.json.error.details[0]).toMatchObject({ path: "newPassword", code: "weak_password" })
    const asEmail = await change({ currentPassword: PASSWORD, newPassword: owner.email.toUpperCase() })
    expectError(asEmail, 400, "validation_error")
    expect(asEmail.json.error.details[0]).toMatchObject({ path: "newPassword", code: "weak_password" })
    expect(asEmail.text).not.toContain(owner.email.toUpperCase())
    const same = await change({ currentPassword: PASSWORD, newPassword: PASSWORD })
    expectError(same, 400, "validation_error")
    expect(same.json.error.details[0]).toMatchObject({ path: "newPassword", code: "weak_password" })
    // none of these changed anything
    expect((await bearer(api, "GET", "/v1/iam/auth/me", other.sessionId)).status).toBe(200)

    const done = await change({ currentPassword: PASSWORD, newPassword: next })
    expect(done.status, done.text).toBe(200)
    expect(done.json.data.changed).toBe(true)
    expectError(await bearer(api, "GET", "/v1/iam/auth/me", other.sessionId), 401, "unauthorized")
    const me = await bearer(api, "GET", "/v1/iam/auth/me", current.sessionId)
    expect(me.status).toBe(200)
    expect(me.json.data.passwordChangedAt).toBe(done.json.data.changedAt)
    expectError(await login(api, { email: owner.email, password: PASSWORD }), 401, "unauthorized")
    await session(api, owner.email, next)

    // setting up a password is only for an identity that has none
    const setup = await bearer(api, "POST", "/v1/iam/auth/password/setup", current.sessionId, { password: "yet another passphrase" })
    expectError(setup, 409, "password_already_set")
    await session(api, owner.email, next)
  })

  /** A person invited into the owner's tenant with the role, registered: its address and first session. */
  const invitedMember = async (owner: Awaited<ReturnType<typeof newOwner>>, roleId: string, name: string) => {
    const email = randomEmail(name)
    const invited = await api.post(`/v1/iam/organizations/${owner.organizationId}/invitations`, { email, roleId }, owner.apiKey)
    expect(invited.status, invited.text).toBe(201)
    const outbox = await api.call("GET", `/internal/v1/outbox?to=${encodeURIComponent(email)}`, { token: INTERNAL_TOKEN })
    const token = /token=([A-Za-z0-9_-]{43})/.exec(outbox.text)![1]
    const registered = await api.post("/v1/iam/auth/register", { invitationToken: token, email, password: PASSWORD })
    expect(registered.status, registered.text).toBe(201)
    return { email, sessionId: registered.json.data.sessionId as string }
  }

  it("a person of the read role manages its own account with its session; its read key may not", async () => {
    const owner = await newOwner(api)
    const readRole = ((await api.get("/v1/iam/roles?limit=200", owner.apiKey)).json.data.items as Array<any>).find((r) => r.name === "read" && r.isSystem)
    const { sessionId } = await invitedMember(owner, readRole.id, "reader")
    const me = (await bearer(api, "GET", "/v1/iam/users/me", sessionId)).json.data
    expect(me.permissions).toEqual(["*:*:read"])
    const key = await api.post(`/v1/iam/identities/${me.identityId}/api-keys`, { name: "reader", roleId: readRole.id }, owner.apiKey)
    expect(key.status, key.text).toBe(201)
    const asKey = (method: string, path: string, body?: unknown) => api.call(method, path, { headers: { "x-api-key": key.json.data.rawKey }, ...(body !== undefined ? { body } : {}) })

    // The key: reading yes, changing no.
    expect((await asKey("GET", "/v1/iam/auth/me")).status).toBe(200)
    expectError(await asKey("PATCH", "/v1/iam/users/me", { firstName: "Key" }), 403, "forbidden")
    expectError(await asKey("POST", "/v1/iam/auth/totp/enable"), 403, "forbidden")
    expectError(await asKey("POST", "/v1/iam/auth/password/change", { currentPassword: PASSWORD, newPassword: "a key's new passphrase" }), 403, "forbidden")
    expectError(await asKey("DELETE", "/v1/iam/users/me/sessions"), 403, "forbidden")
    // The person's own session: its profile, second factor, password and sessions are its own.
    expect((await bearer(api, "PATCH", "/v1/iam/users/me", sessionId, { firstName: "Rita" })).json.data.firstName).toBe("Rita")
    expect((await bearer(api, "POST", "/v1/iam/auth/totp/enable", sessionId)).status).toBe(200)
    expect((await bearer(api, "DELETE", "/v1/iam/users/me/sessions", sessionId)).status).toBe(200)
    const changed = await bearer(api, "POST", "/v1/iam/auth/password/change", sessionId, { currentPassword: PASSWORD, newPassword: "the reader's new passphrase" })
    expect(changed.status, changed.text).toBe(200)
  })

  it("a person whose role reads no sessions still sees and ends its own; a key of that role may not", async () => {
    const owner = await newOwner(api)
    const narrow = await api.post("/v1/iam/roles", { name: "jobs-reader", permissions: ["scraper:jobs:read"] }, owner.apiKey)
    expect(narrow.status, narrow.text).toBe(201)
    const { email, sessionId: first } = await invitedMember(owner, narrow.json.data.id, "narrow")
    const second = await session(api, email, PASSWORD)
    const listed = await bearer(api, "GET", "/v1/iam/users/me/sessions", first)
    expect(listed.status, listed.text).toBe(200)
    const other = (listed.json.data.items as Array<{ id: string; current: boolean }>).find((x) => !x.current)!
    expect(other).toBeDefined()
    expect((await bearer(api, "DELETE", `/v1/iam/users/me/sessions/${other.id}`, first)).status).toBe(200)
    expectError(await bearer(api, "GET", "/v1/iam/auth/me", second.sessionId), 401, "unauthorized")
    const me = (await bearer(api, "GET", "/v1/iam/users/me", first)).json.data
    const key = await api.post(`/v1/iam/identities/${me.identityId}/api-keys`, { name: "narrow", roleId: narrow.json.data.id }, owner.apiKey)
    expect(key.status, key.text).toBe(201)
    expectError(await api.call("GET", "/v1/iam/users/me/sessions", { headers: { "x-api-key": key.json.data.rawKey } }), 403, "forbidden")
  })

  it("turns TOTP on only after a verified code; then logins need a fresh code or a recovery code", { timeout: 120_000 }, async () => {
    const owner = await newOwner(api)
    const second = await newOwner(api)
    audited.push(owner.tenantId, second.tenantId)
    await waitForStep()
    const s = await session(api, owner.email, PASSWORD)
    const enable = await bearer(api, "POST", "/v1/iam/auth/totp/enable", s.sessionId)
    expect(enable.status, enable.text).toBe(200)
    const { otpauthUrl, secret, recoveryCodes } = enable.json.data as { otpauthUrl: string; secret: string; recoveryCodes: Array<string> }
    expect(otpauthUrl).toMatch(/^otpauth:\/\/totp\//)
    expect(otpauthUrl).toContain(`secret=${secret}`)
    expect(otpauthUrl).toContain("issuer=Trawl")
    expect(secret).toMatch(/^[A-Z2-7]{16,}$/)
    expect(recoveryCodes).toHaveLength(10)
    expect(new Set(recoveryCodes).size).toBe(10)
    // not on until verified: logins need no code yet
    expect((await bearer(api, "GET", "/v1/iam/auth/me", s.sessionId)).json.data.totpEnabledAt).toBeNull()
    await session(api, owner.email, PASSWORD)

    // a wrong code does not turn it on; a code of the previous step (clock drift) does
    const right = totp(secret)
    const wrongCode = right === "000000" ? "000001" : "000000"
    const wrong = await bearer(api, "POST", "/v1/iam/auth/totp/verify", s.sessionId, { code: wrongCode })
    expectError(wrong, 400, "invalid_totp_code")
    expect((await bearer(api, "GET", "/v1/iam/auth/me", s.sessionId)).json.data.totpEnabledAt).toBeNull()
    await waitForStep()
    const verified = await bearer(api, "POST", "/v1/iam/auth/totp/verify", s.sessionId, { code: totp(secret, -30) })
    expect(verified.status, verified.text).toBe(200)
    expect(verified.json.data.enabled).toBe(true)
    // the answer reports the very instant stored
    expect((await bearer(api, "GET", "/v1/iam/auth/me", s.sessionId)).json.data.totpEnabledAt).toBe(verified.json.data.totpEnabledAt)
    expectError(await bearer(api, "POST", "/v1/iam/auth/totp/enable", s.sessionId), 409, "totp_already_enabled")

    // the second identity turns TOTP on the same way; it shows login drift later
    const s2 = await session(api, second.email, PASSWORD)
    const secret2 = (await bearer(api, "POST", "/v1/iam/auth/totp/enable", s2.sessionId)).json.data.secret as string
    await waitForStep()
    // the step this code belongs to is the last one the second identity used
    const secondUsed = step() - 1
    expect((await bearer(api, "POST", "/v1/iam/auth/totp/verify", s2.sessionId, { code: totp(secret2, -30) })).status).toBe(200)

    // login: no code, a fresh code, the same code again
    expectError(await login(api, { email: owner.email, password: PASSWORD }), 401, "totp_required")
    await waitForStep()
    const firstUsed = step()
    const code = totp(secret)
    const withCode = await login(api, { email: owner.email, password: PASSWORD, totpCode: code })
    expect(withCode.status, withCode.text).toBe(200)
    expectError(await login(api, { email: owner.email, password: PASSWORD, totpCode: code }), 401, "unauthorized")
    // a code needs the right password too
    expectError(await login(api, { email: owner.email, password: "not the password", totpCode: totp(secret, 30) }), 401, "unauthorized")

    // a recovery code works once, in any letter case and with or without its dash
    const recovered = await login(api, { email: owner.email, password: PASSWORD, recoveryCode: recoveryCodes[0]!.toUpperCase() })
    expect(recovered.status, recovered.text).toBe(200)
    expectError(await login(api, { email: owner.email, password: PASSWORD, recoveryCode: recoveryCodes[0]! }), 401, "unauthorized")
    expect((await login(api, { email: owner.email, password: PASSWORD, recoveryCode: recoveryCodes[1]!.replace("-", "") })).status).toBe(200)

    // regenerating the recovery codes needs re-authentication, and retires the old ones
    const regenerate = (body: Record<string, unknown>) => bearer(api, "POST", "/v1/iam/auth/totp/recovery-codes/regenerate", s.sessionId, body)
    expectError(await regenerate({}), 403, "reauthentication_required")
    expectError(await regenerate({ currentPassword: "not the password" }), 403, "reauthentication_failed")
    const regenerated = await regenerate({ currentPassword: PASSWORD })
    expect(regenerated.status, regenerated.text).toBe(200)
    const fresh = regenerated.json.data.recoveryCodes as Array<string>
    expect(fresh).toHaveLength(10)
    expect(fresh.some((c) => recoveryCodes.includes(c))).toBe(false)
    expectError(await login(api, { email: owner.email, password: PASSWORD, recoveryCode: recoveryCodes[2]! }), 401, "unauthorized")
    expect((await login(api, { email: owner.email, password: PASSWORD, recoveryCode: fresh[0]! })).status).toBe(200)

    // an all-powerful key asks for re-authentication, which a TOTP code gives
    const meRes = await bearer(api, "GET", "/v1/iam/auth/me", s.sessionId)
    expect(meRes.status, meRes.text).toBe(200)
    const me = meRes.json.data
    expect(me.permissions).toContain("*:*:*")
    const keyPath = `/v1/iam/identities/${owner.ownerIdentityId}/api-keys`
    expectError(await bearer(api, "POST", keyPath, s.sessionId, { name: "admin", roleId: me.defaultRoleId }), 403, "reauthentication_required")

    // the next steps: the second identity logs in with a code of the step before (drift), the first makes its key
    await waitForStep(Math.max(secondUsed + 2, firstUsed + 1))
    const drift = await login(api, { email: second.email, password: PASSWORD, totpCode: totp(secret2, -30) })
    expect(drift.status, drift.text).toBe(200)
    const key = await bearer(api, "POST", keyPath, s.sessionId, { name: "admin", roleId: me.defaultRoleId, totpCode: totp(secret) })
    expect(key.status, key.text).toBe(201)
    expect((await api.get("/v1/iam/auth/me", key.json.data.rawKey)).status).toBe(200)

    // turning TOTP off needs re-authentication too; then logins need no code again
    const disable = (body: Record<string, unknown>) => bearer(api, "POST", "/v1/iam/auth/totp/disable", s.sessionId, body)
    expectError(await disable({}), 403, "reauthentication_required")
    expectError(await disable({ currentPassword: "not the password" }), 403, "reauthentication_failed")
    expect((await bearer(api, "GET", "/v1/iam/auth/me", s.sessionId)).json.data.totpEnabledAt).not.toBeNull()
    const disabled = await disable({ currentPassword: PASSWORD })
    expect(disabled.status, disabled.text).toBe(200)
    expect(disabled.json.data.disabled).toBe(true)
    expect((await bearer(api, "GET", "/v1/iam/auth/me", s.sessionId)).json.data.totpEnabledAt).toBeNull()
    await session(api, owner.email, PASSWORD)
    expectError(await disable({ currentPassword: PASSWORD }), 409, "totp_not_enabled")
    // the recovery codes went with it
    expectError(await regenerate({ currentPassword: PASSWORD }), 409, "totp_not_enabled")
  })

  it("limits guessing: after 5 tries of an account the 6th, even with the right password, is 429 with Retry-After", async () => {
    // from an address of its own, so that these failures leave the other tests' address allowance alone
    const api = addressedClient(server.baseUrl)
    const owner = await newOwner(api)
    for (let i = 0; i < 5; i++) expectError(await login(api, { email: owner.email, password: `wrong guess ${i}` }), 401, "unauthorized")
    const locked = await login(api, { email: owner.email, password: PASSWORD })
    expectError(locked, 429, "too_many_attempts")
    const retryAfter = Number(locked.headers.get("retry-after"))
    expect(retryAfter).toBeGreaterThanOrEqual(25)
    expect(retryAfter).toBeLessThanOrEqual(30)
    // counted by account, whatever letter case the e-mail is typed in; other accounts are not locked
    expectError(await login(api, { email: owner.email.toUpperCase(), password: PASSWORD }), 429, "too_many_attempts")
    const bystander = await newOwner(api)
    await session(api, bystander.email, PASSWORD)
  })

  it("counts guesses sent in parallel before checking them: no more than 5 are tried", async () => {
    const api = addressedClient(server.baseUrl)
    const owner = await newOwner(api)
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => login(api, { email: owner.email, password: `parallel guess ${i}` })))
    const statuses = answers.map((r) => r.status)
    expect(statuses.filter((s) => s === 401).length, JSON.stringify(statuses)).toBeLessThanOrEqual(5)
    expect(statuses.filter((s) => s === 429).length, JSON.stringify(statuses)).toBeGreaterThanOrEqual(7)
    for (const r of answers.filter((r) => r.status === 429)) expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0)
  })

  // Reads the rows the tests above wrote (their tenants are in `audited`): run with them, not alone.
  it("writes the security events to the audit log", async () => {
    // The embedded database is read after the server stops (PGlite is one process's); PostgreSQL while it runs.
    type Row = { tenant_id: string | null; action: string; ip: string | null }
    const actionsOf = async (): Promise<Array<Row>> => {
      const text = "SELECT tenant_id, action, ip FROM audit_log ORDER BY created_at"
      if (env.DATABASE_URL) return [...await pgQuery<Row>(env.DATABASE_URL, text)]
      await server.stop()
      const { PGlite } = await import("@electric-sql/pglite")
      const db = await PGlite.create(join(server.dataDir, "pg"))
      try {
        return (await db.query<Row>(text)).rows
      } finally {
        await db.close()
      }
    }
    const rows = (await actionsOf()).filter((r) => r.tenant_id === null || audited.includes(r.tenant_id))
    const actions = new Set(rows.map((r) => r.action))
    for (const action of ["login.success", "login.failure", "session.revoke", "password.change", "totp.enable", "totp.disable", "totp.recovery_code_used"]) {
      expect(actions, action).toContain(action)
    }
    for (const row of rows.filter((r) => r.action.startsWith("login.") || r.action.startsWith("totp.") || r.action.startsWith("session."))) {
      expect(row.ip, row.action).toBe(api.address)
    }
  })
})

describe.each(backends())("session lifetimes ($name)", (backend) => {
  it("refuses a session idle longer than SESSION_IDLE_SECONDS", { timeout: 90_000 }, async () => {
    // 5 s idle against a use every 0.7 s: a request may take over 4 s on a loaded machine before the gap counts as idle.
    const server = await startServer({ ...(await backend.env()), SESSION_IDLE_SECONDS: "5" })
    try {
      const api = addressedClient(server.baseUrl)
      const owner = await newOwner(api)
      const s = await session(api, owner.email, PASSWORD)
      const forgotten = await session(api, owner.email, PASSWORD)
      const forgottenAt = Date.now()
      const both = (await bearer(api, "GET", "/v1/iam/users/me/sessions", s.sessionId)).json.data.items as Array<{ id: string; current: boolean }>
      expect(both).toHaveLength(2)
      const forgottenId = both.find((i) => !i.current)!.id
      // used within the idle time, it lives on: longer than a node believes its cached lookup (30 s)
      // and than the last-seen times wait to be written (15 s)
      for (let i = 0; i < 45; i++) {
        await sleep(700)
        expect((await bearer(api, "GET", "/v1/iam/auth/me", s.sessionId)).status).toBe(200)
      }
      await sleep(6000)
      expectError(await bearer(api, "GET", "/v1/iam/auth/me", s.sessionId), 401, "unauthorized")
      // nor does it come back
      expectError(await bearer(api, "GET", "/v1/iam/auth/me", s.sessionId), 401, "unauthorized")
      // a session idle past the limit and the 15.5 s its stored last-seen time may lag (15 s batches, a step of a tenth of the limit) is no longer listed
      await sleep(Math.max(0, forgottenAt + 22_000 - Date.now()))
      const fresh = await session(api, owner.email, PASSWORD)
      const list = await bearer(api, "GET", "/v1/iam/users/me/sessions", fresh.sessionId)
      expect(list.status, list.text).toBe(200)
      const listed = list.json.data.items as Array<{ id: string; current: boolean }>
      expect(listed.filter((i) => i.current)).toHaveLength(1)
      expectError(await bearer(api, "GET", "/v1/iam/auth/me", forgotten.sessionId), 401, "unauthorized")
      // the one never used is gone from the list and its count (the other may still be within the lag)
      expect(listed.map((i) => i.id)).not.toContain(forgottenId)
      expect(list.json.data.pagination.total).toBe(listed.length)
    } finally {
      await server.stop()
    }
  })

  it("refuses a session past SESSION_LIFETIME_SECONDS even when it is used every second (and marks the cookie Secure behind https)", { timeout: 90_000 }, async () => {
    const server = await startServer({ ...(await backend.env()), SESSION_LIFETIME_SECONDS: "3", PUBLIC_BASE_URL: "https://trawl.example.com" })
    try {
      const api = addressedClient(server.baseUrl)
      const owner = await newOwner(api)
      const loggedInAt = Date.now()
      const res = await login(api, { email: owner.email, password: PASSWORD })
      expect(res.status, res.text).toBe(200)
      const s = res.json.data as { sessionId: string; expiresAt: string }
      expect(res.headers.get("set-cookie")!.split(";").map((a) => a.trim().toLowerCase())).toContain("secure")
      const expiresAt = Date.parse(s.expiresAt)
      expect(expiresAt - loggedInAt).toBeGreaterThan(2000)
      expect(expiresAt - loggedInAt).toBeLessThan(4500)
      const seen: Array<[number, number]> = []
      for (let i = 0; i < 4; i++) {
        await sleep(1000)
        const res = await bearer(api, "GET", "/v1/iam/auth/me", s.sessionId)
        seen.push([Date.now() - loggedInAt, res.status])
      }
      // alive while young (the first second), refused 4 s after login
      expect(seen[0]![1]).toBe(200)
      expect(seen.at(-1)![0]).toBeGreaterThanOrEqual(4000)
      expect(seen.at(-1)![1], JSON.stringify(seen)).toBe(401)
      // a refresh does not extend it either
      expectError(await bearer(api, "POST", "/v1/iam/auth/refresh", s.sessionId), 401, "unauthorized")
    } finally {
      await server.stop()
    }
  })
})

describe.each(backends())("guessing from one address ($name)", (backend) => {
  it("locks a client address after 30 failures across accounts (unknown e-mails, as slow as wrong passwords, count too)", { timeout: 90_000 }, async () => {
    const server = await startServer(await backend.env())
    try {
      const api = addressedClient(server.baseUrl)
      const owners = await Promise.all(Array.from({ length: 6 }, () => newOwner(api)))
      // 5 accounts x 5 wrong passwords (each account within its own allowance), then 5 unknown e-mails:
      // those take as long as a wrong password (a dummy hash is verified) and answer the same
      const timed = async (body: Record<string, unknown>) => {
        const started = performance.now()
        const res = await login(api, body)
        expectError(res, 401, "unauthorized")
        return { ms: performance.now() - started, message: res.json.error.message as string }
      }
      // interleaved in rounds, each unknown e-mail compared with the wrong passwords of its own round,
      // so that both kinds meet the same load on a shared machine (other test files run meanwhile)
      const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
      const messages = new Set<string>()
      const ratios: Array<number> = []
      for (let i = 0; i < 5; i++) {
        const wrong: Array<number> = []
        for (const owner of owners.slice(0, 5)) {
          const t = await timed({ email: owner.email, password: `wrong ${i}` })
          wrong.push(t.ms)
          messages.add(t.message)
        }
        const unknown = await timed({ email: randomEmail("nobody"), password: `wrong ${i}` })
        messages.add(unknown.message)
        ratios.push(unknown.ms / median(wrong))
      }
      expect(messages.size).toBe(1)
      const ratio = median(ratios)
      console.log(`login failure: unknown e-mail against wrong password of the same round, median ratio ${ratio.toFixed(2)} (${ratios.map((r) => r.toFixed(2)).join(", ")})`)
      // loose bounds on a shared machine: skipping the hash would make it ten times quicker or more
      expect(ratio).toBeGreaterThan(0.3)
      expect(ratio).toBeLessThan(2.5)
      const locked = await login(api, { email: owners[5]!.email, password: PASSWORD })
      expectError(locked, 429, "too_many_attempts")
      expect(Number(locked.headers.get("retry-after"))).toBeGreaterThanOrEqual(25)
      // a key is no password guess: the address's lock does not touch it
      expect((await api.get("/v1/iam/auth/me", owners[5]!.apiKey)).status).toBe(200)
    } finally {
      await server.stop()
    }
  })
})

const twoNodes = process.env.DATABASE_URL !== undefined && process.env.REDIS_URL !== undefined
describe.skipIf(!twoNodes)("session revocation across two nodes (needs DATABASE_URL and REDIS_URL: nodes share only PostgreSQL and Redis)", () => {
  let nodeA: RunningServer
  let nodeB: RunningServer
  beforeAll(async () => {
    // Nodes share the key that session tokens are hashed with (without one, each makes its own in DATA_DIR).
    const env = { ...(await backends().find((b) => b.name === "postgres")!.env()), SECRET_KEY: randomBytes(32).toString("hex") }
    nodeA = await startServer(env)
    nodeB = await startServer(env)
  })
  afterAll(async () => {
    await Promise.all([nodeA?.stop(), nodeB?.stop()])
  })

  it("refuses on node B, within a second, a session revoked through node A", { timeout: 60_000 }, async () => {
    const a = addressedClient(nodeA.baseUrl)
    const b = addressedClient(nodeB.baseUrl)
    const owner = await newOwner(a)
    const admin = await session(a, owner.email, PASSWORD)
    const victim = await session(a, owner.email, PASSWORD)
    const victimId = await currentSessionId(b, victim.sessionId)
    // node B knows the session (and has it cached)
    expect((await bearer(b, "GET", "/v1/iam/auth/me", victim.sessionId)).status).toBe(200)
    expect((await bearer(b, "GET", "/v1/iam/auth/me", victim.sessionId)).status).toBe(200)

    const started = performance.now()
    const revoked = await bearer(a, "DELETE", `/v1/iam/users/me/sessions/${victimId}`, admin.sessionId)
    expect(revoked.status, revoked.text).toBe(200)
    const answeredAfter = performance.now() - started
    let refusedAfter: number | undefined
    while (performance.now() - started < 5000) {
      // a bare request: a 429 here means the session was still accepted, and is not waited out
      const res = await b.call("GET", "/v1/iam/auth/me", { headers: { authorization: `Bearer ${victim.sessionId}` } })
      if (res.status === 401) {
        refusedAfter = performance.now() - started
        break
      }
      await sleep(20)
    }
    console.log(`session revocation: node A answered after ${answeredAfter.toFixed(1)} ms, node B refused after ${refusedAfter?.toFixed(1) ?? "never (> 5000)"} ms`)
    expect(refusedAfter).toBeDefined()
    expect(refusedAfter!).toBeLessThan(1000)
    // the revoking session itself still works on both nodes
    expect((await bearer(b, "GET", "/v1/iam/auth/me", admin.sessionId)).status).toBe(200)
    expect((await bearer(a, "GET", "/v1/iam/auth/me", admin.sessionId)).status).toBe(200)
  })
})
