/**
 * IdentityRegistrationsLive through the tenant's entity on the in-memory cluster (ClusterTest),
 * over test repositories: registrations of one tenant sent at once are taken one at a time by its
 * entity, so they never pass `iam.identities.total`; a refused token stays usable, a used one
 * registers nobody. The same decision on a real database is in
 * test/unit/identity-registrations.test.ts, and over HTTP on two nodes in test/invitations.e2e.test.ts.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import { IdentityRegistrations, IdentityRegistrationsLive } from "../../src/actors/identity-registrations.ts"
import { AuthTokenRepo } from "../../src/sql/auth-token-repo.ts"
import { InvitationRepo } from "../../src/sql/invitation-repo.ts"
import { TenantRepo } from "../../src/sql/tenant-repo.ts"
import { actorTestLayers } from "../support/actor-layers.ts"

const tenantId = "ten_people"
const Registrations = IdentityRegistrationsLive.pipe(Layer.provideMerge(actorTestLayers([{ id: tenantId }], {
  organizations: [{ id: "org_people", tenant_id: tenantId, identity_id: "idt_org", name: "People Ltd" }],
  roles: [{ id: "role_member", tenantId, name: "member", isSystem: true }],
  people: [{ identityId: "idt_owner", tenantId, email: "owner@people.test", accesses: new Map([["org_people", "role_member"]]), defaultRoleId: "role_member" }]
})))

layer(Registrations, { excludeTestServices: true })("IdentityRegistrations through the tenant entity", (it) => {
  it.effect("lets concurrent registrations take only the places iam.identities.total leaves; a refused token stays usable", () =>
    Effect.gen(function*() {
      const tenants = yield* TenantRepo
      const invitations = yield* InvitationRepo
      const tokens = yield* AuthTokenRepo
      const registrations = yield* IdentityRegistrations
      // The owner is one person: one more fits.
      yield* tenants.setQuota(tenantId, "iam.identities.total", 2)
      const expiresAt = new Date(Date.now() + 3_600_000)
      const invitees = yield* Effect.forEach([0, 1, 2, 3], (i) =>
        Effect.gen(function*() {
          const email = `person${i}@people.test`
          const invitation = yield* invitations.insert({
            tenantId, organizationId: "org_people", email, roleId: "role_member", firstName: null, lastName: null, invitedBy: "idt_owner", expiresAt
          })
          if (typeof invitation === "string") return yield* Effect.die(new Error(`invitation refused: ${invitation}`))
          yield* tokens.insert({ id: `tok_${i}`, tokenHash: `hash-${i}`, purpose: "invitation", tenantId, identityId: null, email, subjectId: invitation.id, expiresAt })
          return { email, tokenHash: `hash-${i}`, invitationId: invitation.id }
        }))
      const register = (i: (typeof invitees)[number]) =>
        registrations.register(tenantId, {
          subject: { kind: "invitation", id: i.invitationId },
          tokenHash: i.tokenHash,
          email: i.email,
          passwordHash: "not-a-real-hash",
          firstName: null,
          lastName: null
        })
      const answers = yield* Effect.forEach(invitees, (i) => Effect.exit(register(i)), { concurrency: "unbounded" })
      expect(answers.filter(Exit.isSuccess)).toHaveLength(1)
      const refusals = answers.filter(Exit.isFailure).map((e) => JSON.stringify(e.cause))
      expect(refusals).toHaveLength(3)
      for (const r of refusals) expect(r).toContain("IdentityLimit")
      const refused = invitees[answers.findIndex(Exit.isFailure)]!
      const registered = invitees[answers.findIndex(Exit.isSuccess)]!

      yield* tenants.setQuota(tenantId, "iam.identities.total", 3)
      const late = yield* register(refused)
      expect([late.roleId, late.organizationId]).toEqual(["role_member", "org_people"])
      yield* tenants.setQuota(tenantId, "iam.identities.total", 10)
      const again = yield* Effect.flip(register(registered))
      expect(again._tag).toBe("RegistrationRefused")
    }))
})
