import { resources } from "../schema/permission.ts"
import type { Principal } from "./principal.ts"

export { isValidPermission, resources, services } from "../schema/permission.ts"
export type { Action, Permission, Resource } from "../schema/permission.ts"

const matchesPart = (granted: string, wanted: string) => granted === "*" || granted === wanted

/** Whether one granted permission covers the wanted one. `cross_tenant:*:*` never covers a tenant permission. */
export const covers = (granted: string, wanted: string): boolean => {
  const g = granted.split(":")
  const w = wanted.split(":")
  if (g.length !== 3 || w.length !== 3) return false
  if (g[0] === "cross_tenant" || w[0] === "cross_tenant") return g[0] === w[0] && matchesPart(g[2]!, w[2]!)
  return matchesPart(g[0]!, w[0]!) && matchesPart(g[1]!, w[1]!) && matchesPart(g[2]!, w[2]!)
}

export const allows = (granted: ReadonlyArray<string>, wanted: string): boolean =>
  granted.some((g) => covers(g, wanted))

/** Every concrete tenant permission: each resource of the catalogue, read and write. */
const concretePermissions = resources.flatMap((r) => [`${r}:read`, `${r}:write`])

/**
 * Whether `held` allows everything `wanted` allows: directly, or (for a tenant permission with
 * wildcards) by allowing each concrete permission it stands for, so `*:*:read` with `*:*:write`
 * holds `*:*:*`.
 */
export const holds = (held: ReadonlyArray<string>, wanted: string): boolean => {
  if (allows(held, wanted) || held.includes(wanted)) return true
  if (wanted.startsWith("cross_tenant:")) return false
  const stands = concretePermissions.filter((c) => covers(wanted, c))
  return stands.length > 0 && stands.every((c) => allows(held, c))
}

/** The permissions of `wanted` that `held` does not allow: what a caller may not hand out (docs/api.md, "Roles"). */
export const notHeld = (held: ReadonlyArray<string>, wanted: ReadonlyArray<string>): Array<string> =>
  wanted.filter((p) => !holds(held, p))

/** The one shape of "the caller does not hold this" refusals: a detail per permission, at `path` (docs/identity.md). */
export const notHeldDetails = (path: string, permissions: ReadonlyArray<string>) =>
  permissions.map((permission) => ({ path, code: "not_held", message: `the caller does not hold ${permission}` }))

/** What one permission and another both allow (`*:*:read` and `scraper:*:*` meet in `scraper:*:read`), or null. */
const meet = (a: string, b: string): string | null => {
  const x = a.split(":")
  const y = b.split(":")
  if (x.length !== 3 || y.length !== 3) return null
  // cross_tenant permissions meet only each other (covers() keeps them apart from tenant ones).
  if ((x[0] === "cross_tenant") !== (y[0] === "cross_tenant")) return null
  const parts = x.map((p, i) => (p === "*" ? y[i]! : y[i] === "*" || y[i] === p ? p : null))
  return parts.includes(null) ? null : parts.join(":")
}

/** The permissions both sets allow: every request one of them would refuse, the result refuses. */
export const intersectPermissions = (a: ReadonlyArray<string>, b: ReadonlyArray<string>): Array<string> => {
  const out = new Set<string>()
  for (const p of a) for (const q of b) {
    const m = meet(p, q)
    if (m !== null) out.add(m)
  }
  // Drop what another entry already covers, so that the list reads as the role it amounts to.
  return [...out].filter((p) => ![...out].some((q) => q !== p && covers(q, p)))
}

/**
 * What a delegate acts with on behalf of a delegator whose delegation grants `granted`: a session is
 * the person, who holds what was delegated; a key never does more than its own role, so it acts with
 * what both allow (docs/delegations.md).
 */
export const permissionsOnBehalf = (
  credential: { readonly kind: "api-key" | "session"; readonly permissions: ReadonlyArray<string> },
  granted: ReadonlyArray<string>
): ReadonlyArray<string> => (credential.kind === "api-key" ? intersectPermissions(granted, credential.permissions) : granted)

const writeServices = ["scraper", "page-history", "extractor", "network"] as const

export interface SystemRole {
  readonly name: "owner" | "admin" | "write" | "read" | "internal_admin"
  readonly description: string
  readonly permissions: ReadonlyArray<string>
}

/** The system roles every tenant gets (docs/api.md, "Permissions and system roles"). */
export const tenantSystemRoles: ReadonlyArray<SystemRole> = [
  { name: "owner", description: "Tenant owner: every permission", permissions: ["*:*:*"] },
  { name: "admin", description: "Administrator: every permission within the tenant", permissions: ["*:*:*"] },
  {
    name: "write",
    description: "Read everything; create and change crawl, page-history, extraction and network resources",
    permissions: ["*:*:read", ...writeServices.map((s) => `${s}:*:write`), "quotas:requests:write"]
  },
  { name: "read", description: "Read everything", permissions: ["*:*:read"] }
]

/**
 * The role of a person who registers with a delegation's token (sql/invitation-repo.ts): a delegation
 * to an address not yet registered brings them into the tenant with it, so only a credential holding
 * all of it may send one (docs/delegations.md).
 */
export const delegateRegistrantRole: SystemRole = tenantSystemRoles.find((r) => r.name === "read")!

/** The extra role of the `internal` tenant. */
export const internalAdminRole: SystemRole = {
  name: "internal_admin",
  description: "Platform super-administrator",
  permissions: ["*:*:*", "cross_tenant:*:*"]
}

/** A key's scope: `admin` when it may write under iam: or billing:, else `write` when it may write anything, else `read`. */
const scopes = new Map<string, "admin" | "write" | "read">()

export const scopeOf = (permissions: ReadonlyArray<string>): "admin" | "write" | "read" => {
  const key = permissions.join(" ")
  let scope = scopes.get(key)
  if (!scope) scopes.set(key, scope = computeScope(permissions))
  return scope
}

const computeScope = (permissions: ReadonlyArray<string>): "admin" | "write" | "read" => {
  const writesUnder = (service: string) =>
    resources.some((r) => r.startsWith(`${service}:`) && allows(permissions, `${r}:write`))
  if (writesUnder("iam") || writesUnder("billing")) return "admin"
  if (resources.some((r) => allows(permissions, `${r}:write`))) return "write"
  return "read"
}

/**
 * Roles that demand re-authentication before a key is created for them: every tenant permission
 * (`*:*:*`, or anything that amounts to it, such as `*:*:read` with `*:*:write`) or any super-admin
 * (`cross_tenant:`) permission.
 */
export const isPowerful = (permissions: ReadonlyArray<string>) =>
  permissions.some((p) => p.startsWith("cross_tenant:")) || holds(permissions, "*:*:*")

/**
 * The permissions a caller may hand out (in a role, an invitation, a key, a delegation): its own; on
 * behalf, only what both the delegator's grant and the delegate's own credential allow, so nothing
 * delegated is passed on to outlast the delegation (docs/delegations.md).
 */
export const grantablePermissions = (p: Principal): ReadonlyArray<string> =>
  p.actorPermissions === undefined ? p.permissions : intersectPermissions(p.permissions, p.actorPermissions)
