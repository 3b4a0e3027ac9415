import { createServer, type Socket } from "node:net"
import { generateSync } from "otplib"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { MAIL_REQUESTS_PER_CLIENT } from "../src/iam/account-recovery.ts"
import { backends, client, pgQuery, type RunningServer, startServer } from "./support/server-process.ts"
import { type ReceivedMail, startSmtpServer, type TestSmtpServer } from "./support/smtp.ts"

const PUBLIC_BASE_URL = "https://accounts.trawl.example"
const OWNER_PASSWORD = "correct horse battery"
const NEW_PASSWORD = "a brand new passphrase 42"
const AUTH = "/v1/iam/auth"

const unique = (what: string) => `${what}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}@example.com`
const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms))
/**
 * A loopback address of this run's own: the server counts failed logins per client address, and
 * in a shared Redis that count would otherwise be 127.0.0.1's across every test run on the machine.
 */
const ownLoopback = () => `127.${1 + Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 256)}.${1 + Math.floor(Math.random() * 250)}`

/** The token of a mailed link to `page`; the mail also carries it bare, for an API client. */
const tokenIn = (mail: ReceivedMail, page: string) => {
  const text = mail.text ?? ""
  const match = new RegExp(`^${PUBLIC_BASE_URL.replace(/\./g, "\\.")}${page}\\?token=([A-Za-z0-9_-]{43})$`, "m").exec(text)
  expect(match, `a ${page} link in:\n${text}`).not.toBeNull()
  const token = match![1]!
  expect(text.split("\n")).toContain(token)
  return token
}

describe.each(backends())("password reset, magic links and e-mail verification ($name)", (backend) => {
  let smtp: TestSmtpServer
  let server: RunningServer
  let databaseUrl: string | undefined
  let api: ReturnType<typeof client>
  const clientAddress = ownLoopback()

  beforeAll(async () => {
    smtp = await startSmtpServer()
    const env = await backend.env()
    databaseUrl = env.DATABASE_URL
    server = await startServer({ ...env, SMTP_URL: smtp.url, PUBLIC_BASE_URL })
    api = client(server.baseUrl, { localAddress: clientAddress })
  }, 120_000)
  afterAll(async () => {
    await server?.stop()
    await smtp?.close()
  })

  /** A tenant whose owner has a fresh e-mail address and the password OWNER_PASSWORD. */
  const newOwner = async () => {
    const email = unique("owner")
    const tenant = await api.createTenant({ ownerEmail: email })
    return { ...tenant, email }
  }
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) => api.call("POST", AUTH + path, { body, headers })
  const bearer = (sessionId: string) => ({ authorization: `Bearer ${sessionId}` })
  const login = (email: string, password: string) => post("/login", { email, password })
  const me = (sessionId: string) => api.call("GET", `${AUTH}/me`, { headers: bearer(sessionId) })
  const mailsTo = (to: string) => smtp.mails().filter((m) => m.recipients.some((r) => r.toLowerCase() === to.toLowerCase()))
  /** The `n`th mail to `to` with `subject` (1-based), waited for. */
  const nthMail = async (to: string, subject: RegExp, n = 1) => {
    for (let waited = 0; waited < 10_000; waited += 50) {
      const found = mailsTo(to).filter((m) => subject.test(m.subject))
      if (found.length >= n) return found[n - 1]!
      await sleep(50)
    }
    throw new Error(`mail ${n} "${subject}" to ${to} did not come`)
  }
  const resetMail = (to: string, n = 1) => nthMail(to, /Reset your Trawl password/, n)
  const magicMail = (to: string, n = 1) => nthMail(to, /sign-in link/, n)
  const verifyMail = (to: string, n = 1) => nthMail(to, /Verify your e-mail/, n)
  /** The tenant's audit entries of `action` by or about the identity (an anonymous request has no actor), oldest first. */
  const audit = async (apiKey: string, action: string, identityId: string) => {
    const res = await api.call("GET", `/v1/iam/audit?action=${action}&limit=100`, { key: apiKey })
    expect(res.status, res.text).toBe(200)
    const items = res.json.data.items as Array<{ action: string; actorId: string | null; targetId: string | null; ip: string | null; data: Record<string, unknown> }>
    return items.filter((e) => e.actorId === identityId || e.targetId === identityId).reverse()
  }
  /** Audit entries written in the background show up shortly after the answer. */
  const eventually = async (check: () => Promise<void>) => {
    for (let i = 0; ; i++) {
      try {
        return await check()
      } catch (error) {
        if (i > 100) throw error
        await sleep(50)
      }
    }
  }
  const expectError = (res: { status: number; json: any; text: string }, status: number, code: string) => {
    expect(res.status, res.text).toBe(status)
    expect(res.json.status).toBe("error")
    expect(res.json.code, res.text).toBe(code)
  }
  /** Ages every unused token of the identity past its expiry, which only SQL can do. */
  const expireTokens = (identityId: string, purpose: string) =>
    pgQuery(databaseUrl!, "UPDATE auth_tokens SET expires_at = now() - interval '1 second' WHERE identity_id = $1 AND purpose = $2 AND used_at IS NULL", [
      identityId,
      purpose
    ])

  it("forgot → mail → reset: the new password logs in, the old one does not, every session ends, the token works once", async () => {
    const owner = await newOwner()
    const before = await login(owner.email, OWNER_PASSWORD)
    expect(before.status, before.text).toBe(200)
    const oldSession = before.json.data.sessionId as string
    expect((await me(oldSession)).status).toBe(200)

    const forgot = await post("/password/forgot", { email: owner.email.toUpperCase() })
    expect(forgot.status, forgot.text).toBe(202)
    expect(forgot.json).toEqual({ status: "success", code: "202-accepted", data: { accepted: true } })
    const mail = await resetMail(owner.email)
    expect(mail.recipients).toEqual([owner.email])
    const token = tokenIn(mail, "/reset-password")

    const reset = await post("/password/reset", { token, password: NEW_PASSWORD })
    expect(reset.status, reset.text).toBe(200)
    expect(reset.json.data.changed).toBe(true)

    expect((await me(oldSession)).status).toBe(401)
    expectError(await login(owner.email, OWNER_PASSWORD), 401, "unauthorized")
    const after = await login(owner.email, NEW_PASSWORD)
    expect(after.status, after.text).toBe(200)
    // The mailbox was proven by the reset.
    expect((await me(after.json.data.sessionId)).json.data.emails[0].verifiedAt).not.toBeNull()

    expectError(await post("/password/reset", { token, password: "yet another passphrase" }), 400, "invalid_token")
    expect((await login(owner.email, "yet another passphrase")).status).toBe(401)

    const requested = await audit(owner.apiKey, "password.reset_requested", owner.ownerIdentityId)
    expect(requested).toHaveLength(1)
    expect(requested[0]).toMatchObject({ actorId: null, targetId: owner.ownerIdentityId, ip: clientAddress, data: { mailed: true } })
    const resets = await audit(owner.apiKey, "password.reset", owner.ownerIdentityId)
    expect(resets).toHaveLength(1)
    expect(resets[0]).toMatchObject({ actorId: owner.ownerIdentityId, ip: clientAddress, data: { sessionsRevoked: 1 } })
  })

  it("a refused password leaves the reset token usable, and is never echoed", async () => {
    const owner = await newOwner()
    await post("/password/forgot", { email: owner.email })
    const token = tokenIn(await resetMail(owner.email), "/reset-password")

    const sameAsEmail = await post("/password/reset", { token, password: owner.email })
    expectError(sameAsEmail, 400, "validation_error")
    expect(sameAsEmail.json.error.details).toEqual([{ path: "password", code: "weak_password", message: "must not be the e-mail address" }])

    // Too short is a weak password like the address; too long does not decode at all.
    for (const [password, code] of [["short pass1", "weak_password"], ["p".repeat(1025), "invalid_value"]] as const) {
      const refused = await post("/password/reset", { token, password })
      expectError(refused, 400, "validation_error")
      expect(refused.json.error.details.map((d: { path: string; code: string }) => [d.path, d.code])).toEqual([["password", code]])
      expect(refused.text).not.toContain(password)
    }
    // The token is judged first: a dead one is invalid_token whatever the password.
    expectError(await post("/password/reset", { token: "A".repeat(43), password: "short" }), 400, "invalid_token")
    // Bounds count characters, not UTF-16 units: 12 emoji are a valid password.
    const emoji = "🐟".repeat(12)
    expect((await post("/password/reset", { token, password: emoji })).status).toBe(200)
    expect((await login(owner.email, emoji)).status).toBe(200)
  })

  it("a new reset link retires the older one", async () => {
    const owner = await newOwner()
    await post("/password/forgot", { email: owner.email })
    const first = tokenIn(await resetMail(owner.email, 1), "/reset-password")
    await post("/password/forgot", { email: owner.email })
    const second = tokenIn(await resetMail(owner.email, 2), "/reset-password")
    expect(second).not.toBe(first)
    expectError(await post("/password/reset", { token: first, password: NEW_PASSWORD }), 400, "invalid_token")
    expect((await post("/password/reset", { token: second, password: NEW_PASSWORD })).status).toBe(200)
  })

  // The embedded database lives inside the server process, where the test cannot age a token.
  it.skipIf(backend.name !== "postgres")("expired reset, magic-link and verification tokens are refused with token_expired and stay unused", async () => {
    const owner = await newOwner()
    await post("/password/forgot", { email: owner.email })
    const reset = tokenIn(await resetMail(owner.email), "/reset-password")
    await post("/magic-link", { email: owner.email })
    const magic = tokenIn(await magicMail(owner.email), "/magic-link")
    expect((await api.call("POST", `${AUTH}/email/verify/send`, { key: owner.apiKey })).status).toBe(202)
    const verify = tokenIn(await verifyMail(owner.email), "/verify-email")
    await expireTokens(owner.ownerIdentityId, "password_reset")
    await expireTokens(owner.ownerIdentityId, "magic_link")
    await expireTokens(owner.ownerIdentityId, "email_verify")

    for (let i = 0; i < 2; i++) {
      const refused = await post("/password/reset", { token: reset, password: NEW_PASSWORD })
      expectError(refused, 400, "token_expired")
      expect(refused.json.error.details).toEqual([{ path: "token", code: "expired", message: "the token has expired" }])
      expect(refused.text).not.toContain(reset)
      expectError(await post("/magic-link/verify", { token: magic }), 400, "token_expired")
      expectError(await post("/email/verify", { token: verify }), 400, "token_expired")
    }
    expect((await login(owner.email, OWNER_PASSWORD)).status).toBe(200)
  })

  it("an unknown e-mail gets the same answer and no mail; the known one gets its mail", async () => {
    const owner = await newOwner()
    const unknown = unique("nobody")
    for (const path of ["/password/forgot", "/magic-link"]) {
      const known = await post(path, { email: owner.email })
      const other = await post(path, { email: unknown })
      expect(other.status).toBe(known.status)
      expect(other.json).toEqual(known.json)
      expect(other.headers.get("set-cookie")).toBe(known.headers.get("set-cookie"))
      expect([...other.headers.keys()].sort()).toEqual([...known.headers.keys()].sort())
    }
    await resetMail(owner.email)
    await magicMail(owner.email)
    await sleep(500)
    expect(mailsTo(unknown)).toEqual([])
    expect(smtp.mails().filter((m) => m.recipients.includes(unknown))).toEqual([])
  })

  it("mails at most 3 reset links and 3 magic links per address in 15 minutes, still answering 202", async () => {
    const owner = await newOwner()
    for (let i = 0; i < 5; i++) expect((await post("/password/forgot", { email: owner.email })).status).toBe(202)
    await resetMail(owner.email, 3)
    // The magic-link allowance is its own.
    for (let i = 0; i < 4; i++) expect((await post("/magic-link", { email: owner.email })).status).toBe(202)
    await magicMail(owner.email, 3)
    await sleep(1_000)
    expect(mailsTo(owner.email).filter((m) => /Reset/.test(m.subject))).toHaveLength(3)
    expect(mailsTo(owner.email).filter((m) => /sign-in/.test(m.subject))).toHaveLength(3)
    await eventually(async () => expect(await audit(owner.apiKey, "password.reset_requested", owner.ownerIdentityId)).toHaveLength(3))
    await eventually(async () => expect(await audit(owner.apiKey, "magic_link.requested", owner.ownerIdentityId)).toHaveLength(3))
  })

  it(`one client address gets ${MAIL_REQUESTS_PER_CLIENT} anonymous mail requests in 15 minutes; past that they are answered alike and mail nothing`, async () => {
    const owner = await newOwner()
    const flooder = client(server.baseUrl, { localAddress: ownLoopback() })
    const requests = Array.from({ length: MAIL_REQUESTS_PER_CLIENT - 1 }, (_, i) => flooder.post(`${AUTH}/${i % 2 ? "magic-link" : "password/forgot"}`, { email: unique(`victim${i}`) }))
    for (const res of await Promise.all(requests)) expect(res.status).toBe(202)
    // The last one admitted mails the owner; the next is dropped.
    expect((await flooder.post(`${AUTH}/password/forgot`, { email: owner.email })).status).toBe(202)
    await resetMail(owner.email)
    const dropped = await flooder.post(`${AUTH}/magic-link`, { email: owner.email })
    expect(dropped.status).toBe(202)
    expect(dropped.json).toEqual({ status: "success", code: "202-accepted", data: { accepted: true } })
    // Another client is not held back by it.
    expect((await post("/magic-link", { email: owner.email })).status).toBe(202)
    await magicMail(owner.email)
    await sleep(500)
    expect(mailsTo(owner.email).map((m) => m.subject)).toEqual(["Reset your Trawl password", "Your Trawl sign-in link"])
  })

  it("a magic link opens a session once, sets the cookie and verifies the address", async () => {
    const owner = await newOwner()
    const requested = await post("/magic-link", { email: owner.email })
    expect(requested.json).toEqual({ status: "success", code: "202-accepted", data: { accepted: true } })
    const token = tokenIn(await magicMail(owner.email), "/magic-link")

    const opened = await post("/magic-link/verify", { token })
    expect(opened.status, opened.text).toBe(200)
    const session = opened.json.data
    expect(Object.keys(session).sort()).toEqual(["csrfToken", "expiresAt", "requiresPasswordSetup", "sessionId"])
    expect(session.requiresPasswordSetup).toBe(false)
    const cookie = opened.headers.get("set-cookie") ?? ""
    expect(cookie).toContain(`trawl_session=${session.sessionId}`)
    expect(cookie).toMatch(/HttpOnly/)
    expect(cookie).toMatch(/Secure/)
    const profile = await me(session.sessionId)
    expect(profile.status).toBe(200)
    expect(profile.json.data.identityId).toBe(owner.ownerIdentityId)
    expect(profile.json.data.emails[0].verifiedAt).not.toBeNull()

    expectError(await post("/magic-link/verify", { token }), 400, "invalid_token")
    await eventually(async () => {
      const entries = await audit(owner.apiKey, "login.success", owner.ownerIdentityId)
      expect(entries.map((e) => e.data)).toEqual([{ method: "magic_link" }])
      expect(await audit(owner.apiKey, "magic_link.requested", owner.ownerIdentityId)).toHaveLength(1)
    })
  })

  it("with TOTP on, a magic link needs the second factor and is not used up until it passes", async () => {
    const owner = await newOwner()
    const session = (await login(owner.email, OWNER_PASSWORD)).json.data.sessionId as string
    const enabling = await post("/totp/enable", undefined, bearer(session))
    expect(enabling.status, enabling.text).toBe(200)
    const { secret, recoveryCodes } = enabling.json.data as { secret: string; recoveryCodes: Array<string> }
    const enabledWith = generateSync({ secret })
    expect((await post("/totp/verify", { code: enabledWith }, bearer(session))).status).toBe(200)

    await post("/magic-link", { email: owner.email })
    const token = tokenIn(await magicMail(owner.email), "/magic-link")
    expectError(await post("/magic-link/verify", { token }), 401, "totp_required")
    const wrong = String((Number(generateSync({ secret })) + 500_000) % 1_000_000).padStart(6, "0")
    expectError(await post("/magic-link/verify", { token, totpCode: wrong }), 401, "unauthorized")
    expectError(await post("/magic-link/verify", { token, recoveryCode: "aaaaa-bbbbb" }), 401, "unauthorized")
    const opened = await post("/magic-link/verify", { token, recoveryCode: recoveryCodes[0] })
    expect(opened.status, opened.text).toBe(200)
    expect((await me(opened.json.data.sessionId)).status).toBe(200)
    expectError(await post("/magic-link/verify", { token, recoveryCode: recoveryCodes[1] }), 400, "invalid_token")

    // A TOTP code: the one already used to turn TOTP on is a replay; the next step's (one step of drift is allowed) passes.
    await post("/magic-link", { email: owner.email })
    const second = tokenIn(await magicMail(owner.email, 2), "/magic-link")
    expectError(await post("/magic-link/verify", { token: second, totpCode: enabledWith }), 401, "unauthorized")
    const next = generateSync({ secret, epoch: Math.floor(Date.now() / 1000) + 30 })
    expect((await post("/magic-link/verify", { token: second, totpCode: next })).status).toBe(200)

    const failures = await audit(owner.apiKey, "login.failure", owner.ownerIdentityId)
    expect(failures.map((e) => e.data)).toEqual(Array(3).fill({ reason: "second_factor", method: "magic_link" }))
  })

  it("e-mail verification: the caller asks for a mail, the token verifies the address once, and a verified address is 409", async () => {
    const owner = await newOwner()
    expect((await api.call("GET", `${AUTH}/me`, { key: owner.apiKey })).json.data.emails[0].verifiedAt).toBeNull()
    expectError(await api.call("POST", `${AUTH}/email/verify/send`, {}), 401, "unauthorized")

    const sent = await api.call("POST", `${AUTH}/email/verify/send`, { key: owner.apiKey })
    expect(sent.status, sent.text).toBe(202)
    expect(sent.json.code).toBe("202-accepted")
    expect(sent.json.data.accepted).toBe(true)
    expect(sent.json.data.email).toBe(owner.email)
    const lifetime = Date.parse(sent.json.data.expiresAt) - Date.now()
    expect(lifetime).toBeGreaterThan(23.9 * 3600_000)
    expect(lifetime).toBeLessThanOrEqual(24 * 3600_000)
    const token = tokenIn(await verifyMail(owner.email), "/verify-email")

    const verified = await post("/email/verify", { token })
    expect(verified.status, verified.text).toBe(200)
    expect(verified.json.data).toEqual({ verified: true, email: owner.email, verifiedAt: expect.any(String) })
    expect((await api.call("GET", `${AUTH}/me`, { key: owner.apiKey })).json.data.emails[0].verifiedAt).toBe(verified.json.data.verifiedAt)
    expectError(await post("/email/verify", { token }), 400, "invalid_token")
    expectError(await api.call("POST", `${AUTH}/email/verify/send`, { key: owner.apiKey }), 409, "email_already_verified")

    const entries = await audit(owner.apiKey, "email.verified", owner.ownerIdentityId)
    expect(entries.map((e) => e.data)).toEqual([{ email: owner.email }])
  })

  it("verification mails are limited to 3 per 15 minutes, answered 429 with Retry-After, and only the newest link works", async () => {
    const owner = await newOwner()
    const session = (await login(owner.email, OWNER_PASSWORD)).json.data.sessionId as string
    for (let i = 0; i < 3; i++) expect((await post("/email/verify/send", undefined, bearer(session))).status).toBe(202)
    const limited = await post("/email/verify/send", undefined, bearer(session))
    expectError(limited, 429, "rate_limited")
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0)
    const first = tokenIn(await verifyMail(owner.email, 1), "/verify-email")
    const third = tokenIn(await verifyMail(owner.email, 3), "/verify-email")
    await sleep(300)
    expect(mailsTo(owner.email)).toHaveLength(3)
    expectError(await post("/email/verify", { token: first }), 400, "invalid_token")
    expect((await post("/email/verify", { token: third })).status).toBe(200)
  })

  it("refuses malformed bodies with 400 and details, never echoing a secret", async () => {
    const owner = await newOwner()
    await post("/password/forgot", { email: owner.email })
    const token = tokenIn(await resetMail(owner.email), "/reset-password")
    const badTokens = ["", token.slice(1), `${token}A`, `${token.slice(1)}+`, `${token.slice(1)}=`, 42, null]
    const cases: Array<[string, unknown, string]> = [
      ...badTokens.flatMap((t): Array<[string, unknown, string]> => [
        ["/password/reset", { token: t, password: NEW_PASSWORD }, "token"],
        ["/email/verify", { token: t }, "token"],
        ["/magic-link/verify", { token: t }, "token"]
      ]),
      ["/password/reset", { password: NEW_PASSWORD }, "token"],
      ["/password/reset", { token }, "password"],
      ["/password/reset", { token, password: 123456789012 }, "password"],
      ["/password/reset", { token, password: NEW_PASSWORD, extra: 1 }, "extra"],
      ["/email/verify", {}, "token"],
      ["/magic-link/verify", { token, totpCode: "12345" }, "totpCode"],
      ["/magic-link/verify", { token, totpCode: "abcdef" }, "totpCode"],
      ["/magic-link/verify", { token, recoveryCode: "short" }, "recoveryCode"],
      ["/magic-link/verify", { token, recoveryCode: "x".repeat(65) }, "recoveryCode"],
      ...["/password/forgot", "/magic-link"].flatMap((path): Array<[string, unknown, string]> => [
        [path, {}, "email"],
        [path, { email: "not-an-address" }, "email"],
        [path, { email: `${"a".repeat(250)}@example.com` }, "email"],
        [path, { email: owner.email, password: "x" }, "password"],
        [path, { email: 7 }, "email"]
      ])
    ]
    for (const [path, body, field] of cases) {
      const res = await post(path, body)
      expectError(res, 400, "validation_error")
      expect(res.json.error.details.map((d: { path: string }) => d.path), `${path} ${JSON.stringify(body)}`).toContain(field)
      const secret = (body as Record<string, unknown>).token
      if (typeof secret === "string" && secret.length > 10) expect(res.text).not.toContain(secret)
      expect(res.text).not.toContain(NEW_PASSWORD)
    }
    for (const path of ["/password/forgot", "/password/reset", "/email/verify", "/magic-link", "/magic-link/verify"]) {
      expectError(await api.call("POST", AUTH + path, { raw: "{not json" }), 400, "validation_error")
      expect((await api.call("POST", AUTH + path, {})).status).toBe(400)
    }
    // Nothing above used the token.
    expect((await post("/password/reset", { token, password: NEW_PASSWORD })).status).toBe(200)
  })

  it("a well-formed unknown token, or one of another purpose, is invalid_token and leaves the real one usable", async () => {
    const owner = await newOwner()
    const unknown = "A".repeat(43)
    expectError(await post("/password/reset", { token: unknown, password: NEW_PASSWORD }), 400, "invalid_token")
    expectError(await post("/email/verify", { token: unknown }), 400, "invalid_token")
    expectError(await post("/magic-link/verify", { token: unknown }), 400, "invalid_token")

    await post("/magic-link", { email: owner.email })
    const magic = tokenIn(await magicMail(owner.email), "/magic-link")
    const wrongPurpose = await post("/password/reset", { token: magic, password: NEW_PASSWORD })
    expectError(wrongPurpose, 400, "invalid_token")
    expect(wrongPurpose.json.error.details).toEqual([{ path: "token", code: "invalid", message: "unknown or already used" }])
    expectError(await post("/email/verify", { token: magic }), 400, "invalid_token")
    expect((await login(owner.email, NEW_PASSWORD)).status).toBe(401)
    expect((await post("/magic-link/verify", { token: magic })).status).toBe(200)
  })
})

describe.each(backends())("with an SMTP server that never answers ($name)", (backend) => {
  let server: RunningServer
  let api: ReturnType<typeof client>
  const sockets = new Set<Socket>()
  // Accepts connections and never greets: a mail to it takes the mailer's greeting timeout (5 s) to fail.
  const silent = createServer((socket) => void sockets.add(socket))

  beforeAll(async () => {
    await new Promise<void>((res) => silent.listen(0, "127.0.0.1", () => res()))
    const port = (silent.address() as { port: number }).port
    server = await startServer({ ...(await backend.env()), SMTP_URL: `smtp://127.0.0.1:${port}`, PUBLIC_BASE_URL })
    api = client(server.baseUrl, { localAddress: ownLoopback() })
  }, 120_000)
  afterAll(async () => {
    await server?.stop()
    for (const s of sockets) s.destroy()
    await new Promise((res) => silent.close(res))
  })

  it("a known and an unknown address are answered alike and at once, although the mail hangs", async () => {
    const email = unique("owner")
    await api.createTenant({ ownerEmail: email })
    const unknown = unique("nobody")
    for (const path of ["/password/forgot", "/magic-link"]) {
      const timings: Record<string, Array<number>> = { known: [], unknown: [] }
      const answers: Array<unknown> = []
      for (let i = 0; i < 3; i++) {
        for (const [kind, address] of [["known", email], ["unknown", unknown]] as const) {
          const started = performance.now()
          const res = await api.post(AUTH + path, { email: address })
          timings[kind]!.push(performance.now() - started)
          expect(res.status).toBe(202)
          answers.push(res.json)
        }
      }
      expect(new Set(answers.map((a) => JSON.stringify(a))).size).toBe(1)
      // The hung SMTP exchange (5 s before it fails) is not on the response path.
      expect(Math.max(...timings.known!)).toBeLessThan(1_500)
      expect(Math.max(...timings.unknown!)).toBeLessThan(1_500)
    }
    // The mailer did try: the silent server was connected to.
    for (let i = 0; i < 100 && sockets.size === 0; i++) await sleep(50)
    expect(sockets.size).toBeGreaterThan(0)
  })

  it("an e-mail verification the SMTP server does not take is 503 dependency_unavailable with Retry-After", async () => {
    const tenant = await api.createTenant({ ownerEmail: unique("owner") })
    const res = await api.call("POST", `${AUTH}/email/verify/send`, { key: tenant.apiKey })
    expect(res.status, res.text).toBe(503)
    expect(res.json.code).toBe("dependency_unavailable")
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0)
  }, 30_000)
})
