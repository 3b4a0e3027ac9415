/**
 * The permission catalogue (docs/api.md, "Permissions and system roles"): `<service>:<resource>:<action>`,
 * each part may be `*`. Plain data and a validator, so that request schemas can check permission strings.
 */
export const services = ["scraper", "page-history", "extractor", "network", "billing", "quotas", "iam"] as const

export const resources = [
  "scraper:jobs",
  "scraper:webhooks",
  "scraper:events",
  "page-history:pages",
  "extractor:extractions",
  "extractor:configs",
  "network:ip",
  "billing:transactions",
  "billing:subscription",
  "quotas:quotas",
  "quotas:requests",
  "iam:identities",
  "iam:roles",
  "iam:api-keys",
  "iam:invitations",
  "iam:delegations",
  "iam:sessions"
] as const

export type Resource = (typeof resources)[number]
export type Action = "read" | "write"
export type Permission = `${Resource}:${Action}`

const permissionPattern = /^(\*|[a-z][a-z_-]*):(\*|[a-z][a-z-]*):(\*|read|write)$/

/**
 * Every permission string `isValidPermission` takes, for the OpenAPI document's `enum` (a finite
 * catalogue: each known resource, its service's `*`, `*` with a resource name or `*`, and
 * `cross_tenant:*`, each with `read`, `write` or `*`).
 */
export const permissionCatalogue = (): ReadonlyArray<string> => {
  const names = [...new Set(resources.map((r) => r.slice(r.indexOf(":") + 1)))]
  const scopes = [
    ...resources,
    ...services.map((s) => `${s}:*`),
    ...names.map((n) => `*:${n}`),
    "*:*",
    "cross_tenant:*"
  ]
  return scopes.flatMap((scope) => ["read", "write", "*"].map((action) => `${scope}:${action}`)).filter(isValidPermission)
}

/** A permission string a role may hold: known service/resource/action or wildcards. */
export const isValidPermission = (p: string): boolean => {
  const m = permissionPattern.exec(p)
  if (!m) return false
  const [, service, resource] = m
  if (service === "cross_tenant") return resource === "*"
  if (service === "*") return resource === "*" || resources.some((r) => r.endsWith(`:${resource}`))
  if (!(services as ReadonlyArray<string>).includes(service!)) return false
  return resource === "*" || (resources as ReadonlyArray<string>).includes(`${service}:${resource}`)
}

