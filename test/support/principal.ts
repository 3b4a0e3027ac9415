import type { Principal } from "../../src/iam/principal.ts"
import type { IdentityId, TenantId } from "../../src/schema/ids.ts"

/** A principal's fields with its ids as plain strings, as tests write them. */
export type PlainPrincipal = Omit<Principal, "tenantId" | "identityId" | "actorId"> & {
  readonly tenantId: string
  readonly identityId: string
  readonly actorId: string
}

/** A principal for unit tests: its ids branded here, as the credential's row brands them in production. */
export const testPrincipal = (p: PlainPrincipal): Principal => ({
  ...p,
  tenantId: p.tenantId as TenantId,
  identityId: p.identityId as IdentityId,
  actorId: p.actorId as IdentityId
})
