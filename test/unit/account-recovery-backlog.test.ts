import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Layer } from "effect"
import { AccountRecovery, AccountRecoveryLive, MAIL_WORK_CONCURRENCY, MAX_PENDING_MAIL_WORK } from "../../src/iam/account-recovery.ts"
import { Attempts } from "../../src/iam/attempts.ts"
import { AuthService } from "../../src/iam/auth-service.ts"
import { MailedTokens } from "../../src/iam/mailed-tokens.ts"
import { SessionService } from "../../src/iam/session-service.ts"
import { Kv, makeMemoryKv } from "../../src/kv/kv.ts"
import { Mailer } from "../../src/mail/mailer.ts"
import { AuditLog } from "../../src/sql/audit-log.ts"
import { IdentityEmailRepo } from "../../src/sql/identity-email-repo.ts"
import { IdentityRepo } from "../../src/sql/identity-repo.ts"

/** Only what the mail requests touch is real; anything else dies, so the test shows what it uses. */
const unused = <A extends object>(used: Partial<A>) => new Proxy(used, { get: (t, k) => (t as any)[k] ?? (() => Effect.die(`unused: ${String(k)}`)) }) as A

describe("background mail requests", () => {
  it.live(`run ${MAIL_WORK_CONCURRENCY} at a time and drop what comes past ${MAX_PENDING_MAIL_WORK} waiting`, () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const started: Array<string> = []
      const finished: Array<string> = []
      // Every address is a person's; every mail hangs until the gate opens (a stalled SMTP server).
      const Deps = Layer.mergeAll(
        Layer.succeed(IdentityRepo, unused<IdentityRepo["Service"]>({
          byEmail: (email) =>
            Effect.succeed({ id: `idt_${email}`, tenant_id: "ten_1", email, password_hash: null, requires_password_setup: false, totp_secret_enc: null, totp_enabled_at: null })
        })),
        Layer.succeed(MailedTokens, unused<MailedTokens["Service"]>({
          retireForIdentity: () => Effect.void,
          issue: () => Effect.succeed({ token: "t".repeat(43), expiresAt: new Date() }),
          link: (path, token) => `https://x.example${path}?token=${token}`
        })),
        Layer.succeed(Mailer, Mailer.of({
          send: (mail) => Effect.sync(() => started.push(mail.to)).pipe(Effect.andThen(Deferred.await(gate)), Effect.andThen(Effect.sync(() => finished.push(mail.to))))
        })),
        Layer.succeed(Kv, makeMemoryKv()),
        Layer.succeed(AuditLog, unused<AuditLog["Service"]>({ write: () => Effect.void })),
        Layer.succeed(IdentityEmailRepo, unused<IdentityEmailRepo["Service"]>({})),
        Layer.succeed(AuthService, unused<AuthService["Service"]>({})),
        Layer.succeed(SessionService, unused<SessionService["Service"]>({})),
        Layer.succeed(Attempts, unused<Attempts["Service"]>({}))
      )
      yield* Effect.gen(function*() {
        const recovery = yield* AccountRecovery
        // No client address, so the per-address allowance does not stop the flood first.
        const client = { ip: null, userAgent: null }
        const total = MAX_PENDING_MAIL_WORK + 25
        for (let i = 0; i < total; i++) yield* recovery.requestPasswordReset(`p${i}@example.com`, client)
        // The answers came back although no mail got through.
        for (let i = 0; i < 50 && started.length < MAIL_WORK_CONCURRENCY; i++) yield* Effect.sleep("10 millis")
        yield* Effect.sleep("50 millis")
        expect(started).toHaveLength(MAIL_WORK_CONCURRENCY)
        expect(finished).toHaveLength(0)
        yield* Deferred.succeed(gate, undefined)
        for (let i = 0; i < 500 && finished.length < MAX_PENDING_MAIL_WORK; i++) yield* Effect.sleep("10 millis")
        yield* Effect.sleep("50 millis")
        expect(finished).toHaveLength(MAX_PENDING_MAIL_WORK)
        expect(new Set(finished).has(`p${total - 1}@example.com`)).toBe(false)
        // Once the backlog is gone, requests are taken again.
        yield* recovery.requestPasswordReset("late@example.com", client)
        for (let i = 0; i < 100 && !finished.includes("late@example.com"); i++) yield* Effect.sleep("10 millis")
        expect(finished).toContain("late@example.com")
      }).pipe(Effect.provide(AccountRecoveryLive.pipe(Layer.provide(Deps))))
    }), { timeout: 30_000 })
})
