/**
 * The identity services (login, sessions, second factor, mailed tokens) on test layers: in-memory
 * repositories, the in-process Kv, a capturing audit log and mailer. No database, no HTTP: the
 * end-to-end tests cover those.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { generateSync } from "otplib"
import { Config, configForTests } from "../../src/config.ts"
import { AttemptsLive } from "../../src/iam/attempts.ts"
import { AuthService, AuthServiceLive } from "../../src/iam/auth-service.ts"
import { MailedTokens, MailedTokensLive } from "../../src/iam/mailed-tokens.ts"
import { hashPassword } from "../../src/iam/passwords.ts"
import { SessionAuthenticator, SessionAuthenticatorLive } from "../../src/iam/session-auth.ts"
import { SessionService, SessionServiceLive } from "../../src/iam/session-service.ts"
import { KvTest } from "../../src/kv/kv.ts"
import { MailerTest } from "../../src/mail/mailer.ts"
import { AuditEntries, AuditLogTest } from "../../src/sql/audit-log.ts"
import { AuthTokenClock, AuthTokenRepoTest } from "../../src/sql/auth-token-repo.ts"
import { makeIdentityRepoTest } from "../../src/sql/identity-repo.ts"
import { makeSessionRepoTest } from "../../src/sql/session-repo.ts"

const PASSWORD = "correct horse battery"
const people = ["ann", "bob", "cid", "dee", "eve", "fay"].map((name) => ({ id: `idt_${name}`, tenantId: "ten_1", email: `${name}@example.com` }))
const client = { ip: "192.0.2.7", userAgent: "unit" }

const Repos = Layer.unwrap(Effect.map(hashPassword(PASSWORD), (hash) =>
  Layer.mergeAll(
    makeIdentityRepoTest(people.map((p) => ({ ...p, passwordHash: hash }))),
    makeSessionRepoTest(),
    AuthTokenRepoTest,
    AuditLogTest,
    KvTest,
    MailerTest,
    Layer.succeed(Config, configForTests())
  )))

const Identity = Layer.mergeAll(AuthServiceLive, MailedTokensLive).pipe(
  Layer.provideMerge(SessionServiceLive),
  Layer.provideMerge(Layer.mergeAll(SessionAuthenticatorLive, AttemptsLive)),
  Layer.provideMerge(Repos)
)

const code = (e: { readonly code?: string } | unknown) => (e as { code: string }).code

layer(Identity, { timeout: 60_000 })("identity services", (it) => {
  it.effect("log in with the password (any e-mail case), and a session token authenticates as the identity", () =>
    Effect.gen(function*() {
      const auth = yield* AuthService
      const sessions = yield* SessionAuthenticator
      const opened = yield* auth.login({ email: "ANN@example.com", password: PASSWORD }, client)
      const me = yield* sessions.authenticate(opened.sessionId)
      expect(me).toMatchObject({ kind: "session", identityId: "idt_ann", actorId: "idt_ann", tenantId: "ten_1", credentialId: opened.id })
      expect(opened.csrfToken).toBe((yield* SessionService).csrfToken(opened.id))
      expect(yield* sessions.authenticate("x".repeat(43))).toBeUndefined()
    }))

  it.effect("answer a wrong password and an unknown e-mail alike, and audit both", () =>
    Effect.gen(function*() {
      const auth = yield* AuthService
      const wrong = yield* Effect.flip(auth.login({ email: "bob@example.com", password: "not the password" }, client))
      const unknown = yield* Effect.flip(auth.login({ email: "nobody@example.com", password: "not the password" }, client))
      expect([wrong.code, wrong.message]).toEqual([unknown.code, unknown.message])
      expect(wrong.status).toBe(401)
      const failures = (yield* (yield* AuditEntries).all).filter((e) => e.action === "login.failure")
      expect(failures.map((e) => e.actorId)).toEqual(expect.arrayContaining(["idt_bob", null]))
    }))

  it.effect("refuse the sixth try on one account within the window, even with the right password", () =>
    Effect.gen(function*() {
      const auth = yield* AuthService
      for (let i = 0; i < 5; i++) expect(code(yield* Effect.flip(auth.login({ email: "cid@example.com", password: `guess ${i}` }, client)))).toBe("unauthorized")
      const locked = yield* Effect.flip(auth.login({ email: "cid@example.com", password: PASSWORD }, client))
      expect([locked.status, locked.code]).toEqual([429, "too_many_attempts"])
      expect(locked.retryAfter).toBeGreaterThan(0)
    }))

  it.effect("rotate a session on refresh: the old token stops working at once", () =>
    Effect.gen(function*() {
      const auth = yield* AuthService
      const service = yield* SessionService
      const sessions = yield* SessionAuthenticator
      const first = yield* auth.login({ email: "dee@example.com", password: PASSWORD }, client)
      const me = (yield* sessions.authenticate(first.sessionId))!
      const next = yield* service.refresh(me, first.sessionId, client, false)
      expect(next.sessionId).not.toBe(first.sessionId)
      expect(yield* sessions.authenticate(first.sessionId)).toBeUndefined()
      expect((yield* sessions.authenticate(next.sessionId))?.credentialId).toBe(next.id)
      // Refreshing with the spent token fails.
      expect(code(yield* Effect.flip(service.refresh(me, first.sessionId, client, false)))).toBe("unauthorized")
    }))

  it.effect("change a password: the other sessions end, the current one stays, the new password logs in", () =>
    Effect.gen(function*() {
      const auth = yield* AuthService
      const sessions = yield* SessionAuthenticator
      const a = yield* auth.login({ email: "eve@example.com", password: PASSWORD }, client)
      const b = yield* auth.login({ email: "eve@example.com", password: PASSWORD }, client)
      const me = (yield* sessions.authenticate(a.sessionId))!
      expect(code(yield* Effect.flip(auth.changePassword(me, PASSWORD, "short", client)))).toBe("validation_error")
      expect(code(yield* Effect.flip(auth.changePassword(me, PASSWORD, "eve@example.com", client)))).toBe("validation_error")
      expect(code(yield* Effect.flip(auth.changePassword(me, "wrong password", "a brand new passphrase", client)))).toBe("reauthentication_failed")
      yield* auth.changePassword(me, PASSWORD, "a brand new passphrase", client)
      expect(yield* sessions.authenticate(b.sessionId)).toBeUndefined()
      expect(yield* sessions.authenticate(a.sessionId)).toBeDefined()
      expect(code(yield* Effect.flip(auth.login({ email: "eve@example.com", password: PASSWORD }, client)))).toBe("unauthorized")
      yield* auth.login({ email: "eve@example.com", password: "a brand new passphrase" }, client)
    }))

  it.effect("TOTP: on only after verify; then required at login, each code once, each recovery code once", () =>
    Effect.gen(function*() {
      const auth = yield* AuthService
      const sessions = yield* SessionAuthenticator
      const login = (extra: { totpCode?: string; recoveryCode?: string } = {}) => auth.login({ email: "fay@example.com", password: PASSWORD, ...extra }, client)
      const me = (yield* sessions.authenticate((yield* login()).sessionId))!
      const { secret, recoveryCodes } = yield* auth.enableTotp(me, client)
      expect(recoveryCodes).toHaveLength(10)
      yield* login() // not on until verified
      expect(code(yield* Effect.flip(auth.verifyTotp(me, "000000", client)))).toBe("invalid_totp_code")
      const now = Math.floor(Date.now() / 1000)
      // A code of the step before is accepted (clock drift), and marks that step used.
      yield* auth.verifyTotp(me, generateSync({ secret, epoch: now - 30 }), client)
      expect(code(yield* Effect.flip(login()))).toBe("totp_required")
      const current = generateSync({ secret, epoch: now })
      yield* login({ totpCode: current })
      expect(code(yield* Effect.flip(login({ totpCode: current })))).toBe("unauthorized") // replay
      yield* login({ recoveryCode: recoveryCodes[0]!.toUpperCase() })
      expect(code(yield* Effect.flip(login({ recoveryCode: recoveryCodes[0]! })))).toBe("unauthorized")
      const actions = (yield* (yield* AuditEntries).all).map((e) => e.action)
      expect(actions).toEqual(expect.arrayContaining(["totp.enable", "totp.recovery_code_used"]))
      // Turning it off needs a proof; then a password alone logs in again.
      expect(code(yield* Effect.flip(auth.disableTotp(me, {}, client)))).toBe("reauthentication_required")
      yield* auth.disableTotp(me, { recoveryCode: recoveryCodes[1]! }, client)
      yield* login()
    }))
})

layer(Identity)("mailed tokens", (it) => {
  it.effect("are used once, refused past their lifetime, and never across purposes", () =>
    Effect.gen(function*() {
      const tokens = yield* MailedTokens
      const issued = yield* tokens.issue({ purpose: "password_reset", tenantId: "ten_1", identityId: "idt_ann", email: "ann@example.com" })
      expect(Buffer.from(issued.token, "base64url")).toHaveLength(32)
      expect(code(yield* Effect.flip(tokens.redeem("magic_link", issued.token)))).toBe("invalid_token")
      expect((yield* tokens.redeem("password_reset", issued.token)).identity_id).toBe("idt_ann")
      expect(code(yield* Effect.flip(tokens.redeem("password_reset", issued.token)))).toBe("invalid_token")
      const later = yield* tokens.issue({ purpose: "magic_link", tenantId: "ten_1", identityId: "idt_ann", email: "ann@example.com" })
      yield* (yield* AuthTokenClock).expireAll
      expect(code(yield* Effect.flip(tokens.redeem("magic_link", later.token)))).toBe("token_expired")
      expect(tokens.link("/reset-password", "abc")).toMatch(/^http:\/\/127\.0\.0\.1:8080\/reset-password\?token=abc$/)
    }))
})
