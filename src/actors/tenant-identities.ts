import { Effect, Schema } from "effect"
import { AuthTokenRepo } from "../sql/auth-token-repo.ts"
import { InvitationRepo } from "../sql/invitation-repo.ts"
import { TenantRepo } from "../sql/tenant-repo.ts"

/** A new person would pass the tenant's `iam.identities.total`. */
export class IdentityLimit extends Schema.TaggedError<IdentityLimit>()("IdentityLimit", { limit: Schema.Int }) {}
/** The registration's e-mail address belongs to an identity already. */
export class RegistrationEmailInUse extends Schema.TaggedError<RegistrationEmailInUse>()("RegistrationEmailInUse", {}) {}
/** The token was used or expired, its invitation or delegation is no longer pending, or its role is gone. */
export class RegistrationRefused extends Schema.TaggedError<RegistrationRefused>()("RegistrationRefused", {}) {}

/** A person to create from an invitation or delegation token; `tokenHash` is the token's stored (keyed) hash. */
export const RegistrationRequest = Schema.Struct({
  subject: Schema.Struct({ kind: Schema.Literals(["invitation", "delegation"]), id: Schema.String }),
  tokenHash: Schema.String,
  email: Schema.String,
  passwordHash: Schema.String,
  firstName: Schema.NullOr(Schema.String),
  lastName: Schema.NullOr(Schema.String)
})
export type RegistrationRequest = typeof RegistrationRequest.Type

export const RegisteredIdentity = Schema.Struct({
  identityId: Schema.String,
  roleId: Schema.String,
  organizationId: Schema.String
})
export type RegisteredIdentity = typeof RegisteredIdentity.Type

/**
 * Creates a person of the tenant unless it already has its `iam.identities.total` (plan, add-ons
 * and overrides, read at each registration so a raised limit applies at once). Run by the tenant's
 * entity, one registration at a time (docs/invitations.md, "Identity quota"): the count and the
 * insert cannot be split by another registration of the tenant on any node. The token is used in
 * the insert's transaction, so a refused registration leaves it usable.
 */
export const registerIdentity = (tenantId: string, request: RegistrationRequest) =>
  Effect.gen(function*() {
    const tenants = yield* TenantRepo
    const invitations = yield* InvitationRepo
    const tokens = yield* AuthTokenRepo
    const limit = yield* tenants.quotaLimit(tenantId, "iam.identities.total")
    const useToken = tokens.redeem(request.subject.kind, request.tokenHash).pipe(
      Effect.flatMap((r) => r.outcome === "redeemed" ? Effect.void : Effect.fail(new RegistrationRefused()))
    )
    const outcome = yield* invitations.register({
      tenantId,
      subject: request.subject,
      email: request.email,
      passwordHash: request.passwordHash,
      firstName: request.firstName,
      lastName: request.lastName,
      identitiesLimit: limit
    }, useToken)
    if (outcome === "quota_exceeded") return yield* new IdentityLimit({ limit })
    if (outcome === "email_in_use") return yield* new RegistrationEmailInUse()
    if (outcome === "not_pending" || outcome === "role_missing") return yield* new RegistrationRefused()
    return { identityId: outcome.identity.id, roleId: outcome.roleId, organizationId: outcome.organizationId }
  })
