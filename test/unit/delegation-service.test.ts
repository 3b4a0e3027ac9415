/**
 * DelegationService (src/iam/delegation-service.ts) on test layers: in-memory delegations and mailed
 * tokens, a capturing mailer and audit log, and the TestClock for expiry. Over HTTP:
 * test/delegations.e2e.test.ts.
 */
import { expect, layer } from "@effect/vitest"
import { Clock, Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { Config, configForTests } from "../../src/config.ts"
import { DelegationService, DelegationServiceLive } from "../../src/iam/delegation-service.ts"
import { MailedTokensLive } from "../../src/iam/mailed-tokens.ts"
import type { Principal } from "../../src/iam/principal.ts"
import { type PlainPrincipal, testPrincipal } from "../support/principal.ts"
import { MailerTest, SentMails } from "../../src/mail/mailer.ts"
import { AuditEntries, AuditLogTest } from "../../src/sql/audit-log.ts"
import { AuthTokenRepoTest } from "../../src/sql/auth-token-repo.ts"
import { DelegationRepo, makeDelegationRepoTest } from "../../src/sql/delegation-repo.ts"
import { AuthService } from "../../src/iam/auth-service.ts"

const people = ["ann", "bob", "cid", "dee"].map((name) => ({
  id: `idt_${name}`,
  tenantId: "ten_1",
  email: `${name}@example.com`,
  displayName: name.toUpperCase(),
  roleId: `role_${name}`,
  permissions: [`scraper:jobs:${name === "ann" ? "write" : "read"}`]
}))
const outsider = { id: "idt_out", tenantId: "ten_2", email: "out@example.com", roleId: "role_out", permissions: [] }

/** Re-authentication is asked only of a delegator with an all-powerful role, which nobody here has. */
/** No proof is asked or sent in these tests: a proof check is a failure of the test. */
const NoReauthentication = Layer.succeed(AuthService, new Proxy({}, {
  get: (_, k) => k === "proveGrant"
    ? (_me: unknown, proof: { currentPassword?: string; totpCode?: string }, needed: boolean) =>
      needed || proof.currentPassword !== undefined || proof.totpCode !== undefined ? Effect.die("unexpected proof check") : Effect.succeed(false)
    : () => Effect.die(`unexpected AuthService.${String(k)}`)
}) as AuthService["Service"])

const Delegations = DelegationServiceLive.pipe(
  Layer.provideMerge(Layer.merge(MailedTokensLive, NoReauthentication)),
  Layer.provideMerge(Layer.mergeAll(
    makeDelegationRepoTest([...people, outsider]),
    AuthTokenRepoTest,
    MailerTest,
    AuditLogTest,
    Layer.succeed(Config, configForTests())
  ))
)

const as = (identityId: string, over: Partial<PlainPrincipal> = {}): Principal => testPrincipal({
  kind: "session",
  credentialId: `ses_${identityId}`,
  tenantId: "ten_1",
  identityId,
  actorId: identityId,
  roleId: "role_x",
  // The identity's own role and the right to delegate: a credential may delegate only a role it holds whole.
  permissions: ["iam:delegations:write", ...(people.find((p) => p.id === identityId)?.permissions ?? [])],
  isInternalTenant: false,
  rateLimitPerMinute: 600,
  expiresAt: null,
  ...over
})
/** A credential that also reads everything: the role a delegate registering by mail gets (*:*:read). */
const reading = (identityId: string) => as(identityId, { permissions: [...as(identityId).permissions, "*:*:read"] })
const client = { ip: "192.0.2.9", userAgent: "unit" }
const DAY = 86_400_000
// The TestClock starts at the epoch; the service reads its time there too.
const inDays = (days: number) => Effect.map(Clock.currentTimeMillis, (now) => new Date(now + days * DAY).toISOString())
const code = <A>(effect: Effect.Effect<A, { readonly code: string }>) => Effect.map(Effect.flip(effect), (e) => e.code)

layer(Delegations)("DelegationService", (it) => {
  it.effect("a delegation is pending until the delegate accepts; then the delegate may act with the delegator's permissions", () =>
    Effect.gen(function*() {
      const service = yield* DelegationService
      const repo = yield* DelegationRepo
      const created = yield* service.create(as("idt_ann"), { delegateId: "idt_bob", reason: "holiday", expiresAt: yield* inDays(7) }, client)
      expect(created).toMatchObject({ status: "pending", delegatorId: "idt_ann", delegateId: "idt_bob", delegatorDisplayName: "ANN" })
      expect(yield* repo.activeGrant("ten_1", "idt_ann", "idt_bob")).toBeUndefined()
      // Only the delegate accepts.
      expect(yield* code(service.move(as("idt_ann"), created.id, "accept", client))).toBe("not_found")
      expect((yield* service.move(as("idt_bob"), created.id, "accept", client)).status).toBe("active")
      expect(yield* repo.activeGrant("ten_1", "idt_ann", "idt_bob")).toEqual({ delegationId: created.id, roleId: "role_ann", permissions: ["scraper:jobs:write"] })
      // A second one to the same delegate while this one runs is refused; accepting twice is a state conflict.
      expect(yield* code(service.create(as("idt_ann"), { delegateId: "idt_bob", reason: "again", expiresAt: yield* inDays(3) }, client))).toBe("delegation_exists")
      expect(yield* code(service.move(as("idt_bob"), created.id, "accept", client))).toBe("invalid_delegation_state")
      const actions = (yield* (yield* AuditEntries).all).filter((e) => e.targetId === created.id).map((e) => e.action)
      expect(actions).toEqual(["delegation.create", "delegation.accept"])
    }))

  it.effect("refuses itself, other tenants' people, past and too distant ends, and a delegate acting on behalf", () =>
    Effect.gen(function*() {
      const service = yield* DelegationService
      expect(yield* code(service.create(as("idt_cid"), { delegateId: "idt_cid", reason: "r", expiresAt: yield* inDays(1) }, client))).toBe("cannot_delegate_to_self")
      expect(yield* code(service.create(as("idt_cid"), { delegateId: "idt_out", reason: "r", expiresAt: yield* inDays(1) }, client))).toBe("not_found")
      expect(yield* code(service.create(as("idt_cid"), { delegateId: "idt_dee", reason: "r", expiresAt: yield* inDays(-1) }, client))).toBe("validation_error")
      expect(yield* code(service.create(as("idt_cid"), { delegateId: "idt_dee", reason: "r", expiresAt: yield* inDays(400) }, client))).toBe("validation_error")
      const onBehalf = as("idt_cid", { actorId: "idt_dee" })
      expect((yield* Effect.flip(service.create(onBehalf, { delegateId: "idt_bob", reason: "r", expiresAt: yield* inDays(1) }, client))).status).toBe(403)
    }))

  it.effect("an address of nobody in the tenant gets a registration mail; the delegation's end stops it and every move", () =>
    Effect.gen(function*() {
      const service = yield* DelegationService
      // Bringing a newcomer in with the read role needs a credential that holds it.
      const notReading = yield* Effect.flip(service.create(as("idt_cid"), { delegateId: "New.Person@Example.com", reason: "audit", expiresAt: yield* inDays(2) }, client))
      expect([notReading.code, notReading.details]).toEqual(["forbidden", [{ path: "delegateId", code: "not_held", message: "the caller does not hold *:*:read" }]])
      expect(yield* (yield* SentMails).to("new.person@example.com")).toHaveLength(0)
      const byMail = yield* service.create(reading("idt_cid"), { delegateId: "New.Person@Example.com", reason: "audit", expiresAt: yield* inDays(2) }, client)
      expect(byMail).toMatchObject({ delegateId: expect.stringMatching(/^idt_/), delegateEmail: "New.Person@Example.com", status: "pending" })
      const mails = yield* (yield* SentMails).to("new.person@example.com")
      expect(mails).toHaveLength(1)
      expect(mails[0]!.text).toContain("Reason given: audit")
      // A known address names the person instead.
      const known = yield* service.create(as("idt_cid"), { delegateId: "DEE@example.com", reason: "r", expiresAt: yield* inDays(2) }, client)
      expect(known.delegateId).toBe("idt_dee")
      yield* TestClock.adjust("3 days")
      const listed = yield* service.list(as("idt_cid"), "delegator", "expired", 0, 10)
      expect(listed.items.map((d) => d.id).sort()).toEqual([byMail.id, known.id].sort())
      expect(yield* code(service.move(as("idt_dee"), known.id, "accept", client))).toBe("invalid_delegation_state")
    }))

  it.effect("a delegation whose mail cannot be sent is not created: 503, and the delegator may try again", () =>
    Effect.gen(function*() {
      const service = yield* DelegationService
      const mails = yield* SentMails
      const input = { delegateId: "later@example.com", reason: "r", expiresAt: yield* inDays(2) }
      yield* mails.setUnavailable(true)
      expect(yield* code(service.create(reading("idt_bob"), input, client))).toBe("dependency_unavailable")
      yield* mails.setUnavailable(false)
      expect((yield* service.list(as("idt_bob"), "delegator", undefined, 0, 10)).total).toBe(0)
      expect((yield* service.create(reading("idt_bob"), input, client)).status).toBe("pending")
    }))
})
