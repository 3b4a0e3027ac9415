/**
 * E-mail verification in AccountRecovery (src/iam/account-recovery.ts) on test layers: in-memory
 * people, primary addresses and mailed tokens, the in-process Kv, a capturing mailer and audit log.
 * Over HTTP: test/account-recovery.e2e.test.ts.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { Config, configForTests } from "../../src/config.ts"
import { AccountRecovery, AccountRecoveryLive, MAILS_PER_RECIPIENT } from "../../src/iam/account-recovery.ts"
import { AttemptsLive } from "../../src/iam/attempts.ts"
import { AuthServiceLive } from "../../src/iam/auth-service.ts"
import { MailedTokensLive } from "../../src/iam/mailed-tokens.ts"
import type { Principal } from "../../src/iam/principal.ts"
import { testPrincipal } from "../support/principal.ts"
import { SessionAuthenticatorLive } from "../../src/iam/session-auth.ts"
import { SessionServiceLive } from "../../src/iam/session-service.ts"
import { KvTest } from "../../src/kv/kv.ts"
import { MailerTest, SentMails } from "../../src/mail/mailer.ts"
import { AuditEntries, AuditLogTest } from "../../src/sql/audit-log.ts"
import { AuthTokenRepoTest } from "../../src/sql/auth-token-repo.ts"
import { IdentityEmailRepo, makeIdentityEmailRepoTest } from "../../src/sql/identity-email-repo.ts"
import { makeIdentityRepoTest } from "../../src/sql/identity-repo.ts"
import { makeSessionRepoTest } from "../../src/sql/session-repo.ts"

const person = (id: string, email: string) => ({ id, tenantId: "ten_1", email, passwordHash: null })

const Recovery = AccountRecoveryLive.pipe(
  Layer.provideMerge(AuthServiceLive),
  Layer.provideMerge(Layer.mergeAll(SessionServiceLive, MailedTokensLive, AttemptsLive)),
  Layer.provideMerge(SessionAuthenticatorLive),
  Layer.provideMerge(Layer.mergeAll(
    makeIdentityRepoTest([person("idt_pat", "Pat@Example.test"), person("idt_sam", "sam@example.test"), person("idt_bot", "bot@example.test")]),
    // The bot's identity has no primary address.
    makeIdentityEmailRepoTest({ idt_pat: "Pat@Example.test", idt_sam: "sam@example.test" }),
    makeSessionRepoTest(),
    AuthTokenRepoTest,
    MailerTest,
    AuditLogTest,
    KvTest,
    Layer.succeed(Config, configForTests())
  ))
)

const as = (identityId: string): Principal => testPrincipal({
  kind: "session",
  credentialId: `ses_${identityId}`,
  tenantId: "ten_1",
  identityId,
  actorId: identityId,
  roleId: "role_read",
  permissions: [],
  isInternalTenant: false,
  rateLimitPerMinute: 600,
  expiresAt: null
})
const client = { ip: "192.0.2.8", userAgent: "unit" }

const failure = <A, E extends { readonly status: number; readonly code: string }>(effect: Effect.Effect<A, E>) =>
  Effect.map(Effect.flip(effect), (e) => ({ status: e.status, code: e.code }))

const lastToken = (to: string) =>
  Effect.gen(function*() {
    const mails = yield* (yield* SentMails).to(to)
    return /token=([A-Za-z0-9_-]{43})/.exec(mails.at(-1)?.text ?? "")?.[1] ?? ""
  })

layer(Recovery)("e-mail verification", (it) => {
  it.effect("mails a token to the primary address; redeeming it marks the address verified at that time, once", () =>
    Effect.gen(function*() {
      const recovery = yield* AccountRecovery
      yield* TestClock.adjust("90 minutes")
      const sent = yield* recovery.sendEmailVerification(as("idt_pat"), client)
      expect(sent.email).toBe("Pat@Example.test")
      const token = yield* lastToken("pat@example.test")
      expect(token).toHaveLength(43)
      expect((yield* (yield* IdentityEmailRepo).primary("idt_pat"))?.verified_at).toBeNull()

      const verified = yield* recovery.verifyEmail(token, client)
      expect(verified).toEqual({ email: "Pat@Example.test", verifiedAt: new Date(90 * 60_000).toISOString() })
      const audit = (yield* (yield* AuditEntries).all).map((e) => e.action)
      expect(audit).toEqual(expect.arrayContaining(["email.verification_requested", "email.verified"]))
      // Verified: no further mail is sent, and the used token verifies nothing.
      expect(yield* failure(recovery.sendEmailVerification(as("idt_pat"), client))).toEqual({ status: 409, code: "email_already_verified" })
      expect((yield* failure(recovery.verifyEmail(token, client))).status).toBe(400)
    }))

  it.effect(`sends at most ${MAILS_PER_RECIPIENT} verification mails per window, refuses an identity without an address, and says when mail is down`, () =>
    Effect.gen(function*() {
      const recovery = yield* AccountRecovery
      yield* (yield* SentMails).setUnavailable(true)
      expect(yield* failure(recovery.sendEmailVerification(as("idt_sam"), client))).toEqual({ status: 503, code: "dependency_unavailable" })
      yield* (yield* SentMails).setUnavailable(false)
      // The send that failed took its place in the window too.
      for (let i = 1; i < MAILS_PER_RECIPIENT; i++) yield* recovery.sendEmailVerification(as("idt_sam"), client)
      expect((yield* failure(recovery.sendEmailVerification(as("idt_sam"), client))).status).toBe(429)
      // Only the last token mailed is usable: each send retires the earlier ones.
      const mails = yield* (yield* SentMails).to("sam@example.test")
      expect(mails).toHaveLength(MAILS_PER_RECIPIENT - 1)
      const first = /token=([A-Za-z0-9_-]{43})/.exec(mails[0]!.text)![1]!
      expect((yield* failure(recovery.verifyEmail(first, client))).status).toBe(400)
      yield* recovery.verifyEmail(yield* lastToken("sam@example.test"), client)
      expect(yield* failure(recovery.sendEmailVerification(as("idt_bot"), client))).toEqual({ status: 403, code: "forbidden" })
    }))
})
