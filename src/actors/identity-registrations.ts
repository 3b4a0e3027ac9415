import { Context, Effect, Layer, Semaphore } from "effect"
import type { Unavailable } from "../schema/errors.ts"
import type { AuthTokenRepo } from "../sql/auth-token-repo.ts"
import type { InvitationRepo } from "../sql/invitation-repo.ts"
import type { TenantRepo } from "../sql/tenant-repo.ts"
import { entityCall } from "./entity-call.ts"
import { TenantEntity } from "./tenant-entity.ts"
import {
  type IdentityLimit,
  type RegisteredIdentity,
  registerIdentity,
  type RegistrationEmailInUse,
  type RegistrationRefused,
  type RegistrationRequest
} from "./tenant-identities.ts"

/**
 * Creates people of a tenant from invitation and delegation tokens, counted against
 * `iam.identities.total` by the tenant's entity (docs/invitations.md, "Identity quota").
 */
export class IdentityRegistrations extends Context.Service<IdentityRegistrations, {
  readonly register: (
    tenantId: string,
    request: RegistrationRequest
  ) => Effect.Effect<RegisteredIdentity, IdentityLimit | RegistrationEmailInUse | RegistrationRefused | Unavailable>
}>()("trawl/IdentityRegistrations") {}

export const IdentityRegistrationsLive = Layer.effect(
  IdentityRegistrations,
  Effect.gen(function*() {
    const tenants = yield* TenantEntity.client
    return IdentityRegistrations.of({
      register: (tenantId, request) => entityCall(tenants(tenantId).RegisterIdentity(request))
    })
  })
)

/**
 * The same decision without the cluster, for unit tests of the services that register people: one
 * registration at a time in this process, as the entity takes them one at a time for its tenant.
 */
export const IdentityRegistrationsInProcess: Layer.Layer<IdentityRegistrations, never, TenantRepo | InvitationRepo | AuthTokenRepo> = Layer.effect(
  IdentityRegistrations,
  Effect.gen(function*() {
    const context = yield* Effect.context<TenantRepo | InvitationRepo | AuthTokenRepo>()
    const lock = yield* Semaphore.make(1)
    return IdentityRegistrations.of({
      register: (tenantId, request) => lock.withPermits(1)(registerIdentity(tenantId, request)).pipe(Effect.provideContext(context))
    })
  })
)
