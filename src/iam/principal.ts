import { Context } from "effect"
import type { IdentityId, TenantId } from "../schema/ids.ts"

/**
 * Who is calling, whichever credential they used: an API key (acting with the key's role) or an
 * identity session (acting with the identity's role). Handlers never need to know which.
 */
export interface Principal {
  readonly kind: "api-key" | "session"
  /** The key's id or the session's public id: what rate limits count by. */
  readonly credentialId: string
  readonly tenantId: TenantId
  /** Whose permissions the request acts with. */
  readonly identityId: IdentityId
  readonly roleId: string
  readonly permissions: ReadonlyArray<string>
  readonly isInternalTenant: boolean
  readonly rateLimitPerMinute: number
  /** When the credential stops working (ms since the epoch), null for a key without expiry. */
  readonly expiresAt: number | null
  /** The identity that sent the request: the delegate when it acts on behalf of `identityId`, else `identityId`. */
  readonly actorId: IdentityId
  /** On behalf only: what the delegate's own credential holds (it bounds what the delegate may hand out). */
  readonly actorPermissions?: ReadonlyArray<string>
}

export class CurrentPrincipal extends Context.Service<CurrentPrincipal, Principal>()("trawl/CurrentPrincipal") {}

export const isSuperAdmin = (p: Principal) => p.isInternalTenant && p.permissions.includes("cross_tenant:*:*")
