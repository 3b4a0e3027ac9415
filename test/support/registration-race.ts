import { expect } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { IdentityRegistrations } from "../../src/actors/identity-registrations.ts"
import { AuthTokenRepo } from "../../src/sql/auth-token-repo.ts"
import { InvitationRepo } from "../../src/sql/invitation-repo.ts"
import { TenantRepo } from "../../src/sql/tenant-repo.ts"

/**
 * The identity quota under concurrent registrations, on whatever layers provide the services: a
 * tenant with one person (its owner) and `iam.identities.total` 2 gets four invitations registered
 * at once; one passes, three are refused with IdentityLimit; a raised limit lets a refused token
 * register; a used token registers nobody. `at` names the tenant's organization, the role the
 * invitations give and the owner who sends them.
 */
export const registrationRace = (tenantId: string, at: { readonly organizationId: string; readonly roleId: string; readonly ownerId: string }) =>
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
        const email = `person${i}@${tenantId}.test`
        const invitation = yield* invitations.insert({
          tenantId, organizationId: at.organizationId, email, roleId: at.roleId, firstName: null, lastName: null, invitedBy: at.ownerId, expiresAt
        })
        if (typeof invitation === "string") return yield* Effect.die(new Error(`invitation refused: ${invitation}`))
        const tokenHash = `hash-${tenantId}-${i}`
        yield* tokens.insert({ id: `tok_${tenantId}_${i}`, tokenHash, purpose: "invitation", tenantId, identityId: null, email, subjectId: invitation.id, expiresAt })
        return { email, tokenHash, invitationId: invitation.id }
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

    // A limit raised applies to the next registration, with the token the refusal left usable.
    yield* tenants.setQuota(tenantId, "iam.identities.total", 3)
    const late = yield* register(refused)
    expect([late.roleId, late.organizationId]).toEqual([at.roleId, at.organizationId])
    // A used token registers nobody, with or without room.
    yield* tenants.setQuota(tenantId, "iam.identities.total", 10)
    const again = yield* Effect.flip(register(registered))
    expect(again._tag).toBe("RegistrationRefused")
  })
