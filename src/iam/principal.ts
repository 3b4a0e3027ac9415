import { Context } from "effect"

/** Who is calling: resolved from an API key (later also from a session). */
export interface Principal {
  readonly apiKeyId: string
  readonly keyHash: string
  readonly tenantId: string
  readonly identityId: string
  readonly roleId: string
  readonly permissions: ReadonlyArray<string>
  readonly isInternalTenant: boolean
  readonly rateLimitPerMinute: number
  readonly expiresAt: number | null
}

export class CurrentPrincipal extends Context.Service<CurrentPrincipal, Principal>()("trawl/CurrentPrincipal") {}

export const isSuperAdmin = (p: Principal) => p.isInternalTenant && p.permissions.includes("cross_tenant:*:*")
