/**
 * InvitationService (src/iam/invitation-service.ts) on test layers: in-memory invitations, roles,
 * tenants, people, sessions and mailed tokens, a capturing mailer and audit log. Answering as an
 * existing identity reads its profile (a join the identity test layer does not fake): that, and
 * the whole flow over HTTP, is in test/invitations.e2e.test.ts.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { IdentityRegistrationsInProcess } from "../../src/actors/identity-registrations.ts"
import { Config, configForTests } from "../../src/config.ts"
import { AttemptsLive } from "../../src/iam/attempts.ts"
import { AuthServiceLive } from "../../src/iam/auth-service.ts"
import { InvitationService, InvitationServiceLive } from "../../src/iam/invitation-service.ts"
import { MailedTokensLive } from "../../src/iam/mailed-tokens.ts"
import type { Principal } from "../../src/iam/principal.ts"
import { testPrincipal } from "../support/principal.ts"
import { SessionAuthenticatorLive } from "../../src/iam/session-auth.ts"
import { SessionServiceLive } from "../../src/iam/session-service.ts"
import { KvTest } from "../../src/kv/kv.ts"
import { MailerTest, SentMails } from "../../src/mail/mailer.ts"
import { AuditEntries, AuditLogTest } from "../../src/sql/audit-log.ts"
import { AuthTokenRepoTest } from "../../src/sql/auth-token-repo.ts"
import { makeIdentityRepoTest } from "../../src/sql/identity-repo.ts"
import { makeInvitationRepoTest, type TestPerson } from "../../src/sql/invitation-repo.ts"
import { makeRoleRepoTest } from "../../src/sql/role-repo.ts"
import { makeSessionRepoTest } from "../../src/sql/session-repo.ts"
import { makeTenantRepoTest, TenantRepo } from "../../src/sql/tenant-repo.ts"

const roles = [
  { id: "role_read", tenant_id: "ten_1", name: "read", permissions: ["scraper:jobs:read"], is_system: true },
  { id: "role_admin", tenant_id: "ten_1", name: "admin", permissions: ["iam:*:*"], is_system: true }
]
const people: Array<TestPerson> = [
  { identityId: "idt_admin", tenantId: "ten_1", email: "admin@one.test", accesses: new Map([["org_1", "role_admin"]]), defaultRoleId: "role_admin" }
]

const Invitations = InvitationServiceLive.pipe(
  Layer.provideMerge(Layer.mergeAll(AuthServiceLive, MailedTokensLive, IdentityRegistrationsInProcess)),
  Layer.provideMerge(SessionServiceLive),
  Layer.provideMerge(Layer.mergeAll(SessionAuthenticatorLive, AttemptsLive)),
  Layer.provideMerge(Layer.mergeAll(
    makeInvitationRepoTest({
      organizations: [{ id: "org_1", tenant_id: "ten_1", identity_id: "idt_org1", name: "One Ltd" }],
      roles: roles.map((r) => ({ id: r.id, tenantId: r.tenant_id, name: r.name, isSystem: r.is_system })),
      people
    }),
    makeRoleRepoTest({ roles }),
    makeTenantRepoTest({ tenants: [{ id: "ten_1" }] }),
    makeIdentityRepoTest([]),
    makeSessionRepoTest(),
    AuthTokenRepoTest,
    MailerTest,
    AuditLogTest,
    KvTest,
    Layer.succeed(Config, configForTests())
  ))
)

const admin: Principal = testPrincipal({
  kind: "session",
  credentialId: "ses_admin",
  tenantId: "ten_1",
  identityId: "idt_admin",
  actorId: "idt_admin",
  roleId: "role_admin",
  permissions: ["iam:*:*", "scraper:jobs:read"],
  isInternalTenant: false,
  rateLimitPerMinute: 600,
  expiresAt: null
})
const client = { ip: "192.0.2.7", userAgent: "unit" }
const password = "a long enough passphrase, 2026"

const failure = <A, E extends { readonly status: number; readonly code: string }>(effect: Effect.Effect<A, E>) =>
  Effect.map(Effect.flip(effect), (e) => ({ status: e.status, code: e.code, e }))

/** The token in the last invitation mailed to `to`. */
const mailedToken = (to: string) =>
  Effect.gen(function*() {
    const mails = yield* (yield* SentMails).to(to)
    const token = /token=([A-Za-z0-9_-]{43})/.exec(mails.at(-1)?.text ?? "")?.[1]
    expect(token).toBeDefined()
    return token!
  })

layer(Invitations)("InvitationService", (it) => {
  it.effect("invites by mail; a second invitation to the address (any case) or one to a member is a 409; roles it cannot give are refused", () =>
    Effect.gen(function*() {
      const service = yield* InvitationService
      const invitation = yield* service.create(admin, "idt_org1", { email: "new@one.test", roleId: "role_read", firstName: "Nia" }, client)
      expect(invitation).toMatchObject({ tenantId: "ten_1", organizationId: "org_1", email: "new@one.test", roleId: "role_read", status: "pending" })
      const [mail] = yield* (yield* SentMails).to("new@one.test")
      expect(mail!.subject).toBe("You are invited to join One Ltd on Trawl")
      expect(mail!.text).toMatch(/^Hello Nia,/)
      expect((yield* (yield* AuditEntries).all).map((e) => [e.action, e.targetId])).toContainEqual(["invitation.create", invitation.id])

      const again = yield* failure(service.create(admin, "org_1", { email: "NEW@one.test", roleId: "role_read" }, client))
      expect([again.status, again.code]).toEqual([409, "invitation_pending"])
      expect((yield* failure(service.create(admin, "org_1", { email: "Admin@one.test", roleId: "role_read" }, client))).code).toBe("already_member")
      expect((yield* failure(service.create(admin, "org_1", { email: "x@one.test", roleId: "role_nope" }, client))).code).toBe("invalid_role")
      const wider = yield* failure(service.create({ ...admin, permissions: ["iam:*:*"] }, "org_1", { email: "x@one.test", roleId: "role_read" }, client))
      expect([wider.status, wider.e.extra]).toEqual([403, { notHeld: ["scraper:jobs:read"] }])
      expect((yield* failure(service.create(admin, "org_elsewhere", { email: "x@one.test", roleId: "role_read" }, client))).status).toBe(404)
      expect((yield* service.list(admin, "org_1", "pending", 0, 10)).items.map((i) => i.email)).toEqual(["new@one.test"])
    }))

  it.effect("keeps no invitation whose mail could not be sent (503)", () =>
    Effect.gen(function*() {
      const service = yield* InvitationService
      yield* (yield* SentMails).setUnavailable(true)
      const down = yield* failure(service.create(admin, "org_1", { email: "lost@one.test", roleId: "role_read" }, client))
      yield* (yield* SentMails).setUnavailable(false)
      expect([down.status, down.code]).toEqual([503, "dependency_unavailable"])
      expect((yield* service.list(admin, "org_1", undefined, 0, 10)).items.map((i) => i.email)).not.toContain("lost@one.test")
      // The address is free for a new invitation.
      yield* service.create(admin, "org_1", { email: "lost@one.test", roleId: "role_read" }, client)
    }))

  it.effect("registers the invited person with the invitation's role and opens a session; the token works once and only for its address", () =>
    Effect.gen(function*() {
      const service = yield* InvitationService
      const invitation = yield* service.create(admin, "org_1", { email: "reg@one.test", roleId: "role_read", lastName: "Reg" }, client)
      const token = yield* mailedToken("reg@one.test")
      const otherAddress = yield* failure(service.register({ invitationToken: token, email: "someone@one.test", password }, client))
      expect([otherAddress.status, otherAddress.code]).toEqual([403, "registration_disabled"])
      const weak = yield* failure(service.register({ invitationToken: token, email: "reg@one.test", password: "short" }, client))
      expect([weak.status, weak.code]).toEqual([400, "validation_error"])

      const session = yield* service.register({ invitationToken: token, email: " Reg@one.test ", password }, client)
      expect(session.requiresPasswordSetup).toBe(false)
      const person = people.find((p) => p.email === "reg@one.test")!
      expect(person).toMatchObject({ tenantId: "ten_1", defaultRoleId: "role_read", lastName: "Reg" })
      expect([...person.accesses]).toEqual([["org_1", "role_read"]])
      expect((yield* service.list(admin, "org_1", "active", 0, 10)).items).toMatchObject([{ id: invitation.id, userId: person.identityId }])
      const actions = (yield* (yield* AuditEntries).all).filter((e) => e.actorId === person.identityId).map((e) => e.action)
      expect(actions).toEqual(["registration", "invitation.accept"])
      // Used: a second registration with it is refused like any unusable token.
      expect((yield* failure(service.register({ invitationToken: token, email: "reg@one.test", password }, client))).code).toBe("registration_disabled")
    }))

  it.effect("refuses a registration past the tenant's identities quota and leaves the token usable", () =>
    Effect.gen(function*() {
      const service = yield* InvitationService
      yield* service.create(admin, "org_1", { email: "late@one.test", roleId: "role_read" }, client)
      const token = yield* mailedToken("late@one.test")
      const tenants = yield* TenantRepo
      yield* tenants.setQuota("ten_1", "iam.identities.total", people.filter((p) => p.tenantId === "ten_1").length)
      const full = yield* failure(service.register({ invitationToken: token, email: "late@one.test", password }, client))
      expect([full.status, full.code]).toEqual([429, "quota_exceeded"])
      yield* tenants.setQuota("ten_1", "iam.identities.total", 1000)
      yield* service.register({ invitationToken: token, email: "late@one.test", password }, client)
    }))

  it.effect("revokes a pending invitation once (its token then registers nobody); an answered one is a 409", () =>
    Effect.gen(function*() {
      const service = yield* InvitationService
      const invitation = yield* service.create(admin, "org_1", { email: "gone@one.test", roleId: "role_read" }, client)
      const token = yield* mailedToken("gone@one.test")
      const revoked = yield* service.revoke(admin, "org_1", invitation.id, client)
      expect(revoked).toMatchObject({ revoked: true, id: invitation.id })
      // Revoking again answers the same, and is audited once.
      expect(yield* service.revoke(admin, "org_1", invitation.id, client)).toEqual(revoked)
      const audits = (yield* (yield* AuditEntries).all).filter((e) => e.action === "invitation.revoke" && e.targetId === invitation.id)
      expect(audits).toHaveLength(1)
      expect((yield* failure(service.register({ invitationToken: token, email: "gone@one.test", password }, client))).code).toBe("registration_disabled")

      const answered = (yield* service.list(admin, "org_1", "active", 0, 10)).items[0]!
      const conflict = yield* failure(service.revoke(admin, "org_1", answered.id, client))
      expect([conflict.status, conflict.code]).toEqual([409, "invalid_invitation_state"])
      expect((yield* failure(service.revoke(admin, "org_1", "inv_missing", client))).status).toBe(404)
    }))
})
