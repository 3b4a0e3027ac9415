/**
 * IdentityRegistrationsLive through the tenant's entity on the in-memory cluster (ClusterTest),
 * over test repositories: registrations of one tenant sent at once are taken one at a time by its
 * entity, so they never pass `iam.identities.total`; a refused token stays usable, a used one
 * registers nobody. The same decision on a real database is in
 * test/unit/identity-registrations.test.ts, and over HTTP on two nodes in test/invitations.e2e.test.ts.
 */
import { layer } from "@effect/vitest"
import { Layer } from "effect"
import { IdentityRegistrationsLive } from "../../src/actors/identity-registrations.ts"
import { actorTestLayers } from "../support/actor-layers.ts"
import { registrationRace } from "../support/registration-race.ts"

const tenantId = "ten_people"
const Registrations = IdentityRegistrationsLive.pipe(Layer.provideMerge(actorTestLayers([{ id: tenantId }], {
  organizations: [{ id: "org_people", tenant_id: tenantId, identity_id: "idt_org", name: "People Ltd" }],
  roles: [{ id: "role_member", tenantId, name: "member", isSystem: true }],
  people: [{ identityId: "idt_owner", tenantId, email: "owner@people.test", accesses: new Map([["org_people", "role_member"]]), defaultRoleId: "role_member" }]
})))

layer(Registrations, { excludeTestServices: true })("IdentityRegistrations through the tenant entity", (it) => {
  it.effect("lets concurrent registrations take only the places iam.identities.total leaves; a refused token stays usable", () =>
    registrationRace(tenantId, { organizationId: "org_people", roleId: "role_member", ownerId: "idt_owner" }))
})
