import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { SqlClient } from "effect/sql"
import { quotaKeys } from "../billing/plans.ts"
import { utcDayStart } from "../billing/windows.ts"
import { ApiKeyAuthenticator } from "../iam/api-key-auth.ts"
import { allows, isPowerful, scopeOf } from "../iam/permissions.ts"
import { CurrentPrincipal } from "../iam/principal.ts"
import { AuthService } from "../iam/auth-service.ts"
import { generateApiKey } from "../iam/secrets.ts"
import { clientContext } from "./client-context.ts"
import { newId } from "../ids.ts"
import { iso, parseIsoDateTime } from "../schema/common.ts"
import { fail, notFound } from "../schema/errors.ts"
import type { ApiKey } from "../schema/iam.ts"
import { ApiKeyRepo, type ApiKeyRow } from "../sql/api-key-repo.ts"
import { RoleRepo } from "../sql/role-repo.ts"
import { TenantRepo } from "../sql/tenant-repo.ts"
import { Api } from "./api.ts"

export const toApiKey = (row: ApiKeyRow): ApiKey => ({
  id: row.id,
  name: row.name,
  description: row.description,
  keyPrefix: row.key_prefix,
  roleId: row.role_id,
  scope: scopeOf(row.role_permissions),
  rateLimitPerMinute: row.rate_limit_per_minute,
  lastUsedAt: iso(row.last_used_at),
  expiresAt: iso(row.expires_at),
  revokedAt: iso(row.revoked_at),
  createdAt: iso(row.created_at)!
})

const futureOrNull = (expiresAt: string | null | undefined) => {
  if (expiresAt === undefined || expiresAt === null) return Effect.succeed(expiresAt)
  return parseIsoDateTime(expiresAt)! > Date.now()
    ? Effect.succeed(expiresAt)
    : fail(400, "validation_error", "expiresAt must be in the future", {
      details: [{ path: "expiresAt", code: "invalid_value", message: "must be in the future" }]
    })
}

/** An active key more than the tenant's `iam.api-keys.total` allows (a new one, or an expired one brought back). */
const keyQuotaExceeded = (limit: number) =>
  fail(429, "quota_exceeded", `the tenant already has ${limit} active API keys (iam.api-keys.total)`)

const invalidRole = fail(422, "invalid_role", "roleId is not a role of this tenant", {
  details: [{ path: "roleId", code: "not_found", message: "no such role in this tenant" }]
})

export const IamHandlers = HttpApiBuilder.group(
  Api,
  "iam",
  Effect.fn(function*(handlers) {
    const sql = yield* SqlClient.SqlClient
    const auth = yield* AuthService
    const keys = yield* ApiKeyRepo
    const tenants = yield* TenantRepo
    const authenticator = yield* ApiKeyAuthenticator
    const roles = yield* RoleRepo

    /** The identity must be a person of the caller's tenant; anything else is 404. */
    const identityOfTenant = (tenantId: string, identityId: string) =>
      sql<{ id: string; password_hash: string | null }>`
        SELECT id, password_hash FROM identities WHERE id = ${identityId} AND tenant_id = ${tenantId} AND type = 'user'`.pipe(
        Effect.orDie,
        Effect.flatMap((rows) => rows[0] ? Effect.succeed(rows[0]) : notFound("identity"))
      )

    return handlers
      .handle("createApiKey", ({ params, payload }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const identity = yield* identityOfTenant(me.tenantId, params.id)
          const role = yield* roles.find(me.tenantId, payload.roleId)
          if (!role) return yield* invalidRole
          // Nobody hands out more than they hold.
          if (!role.permissions.every((p) => allows(me.permissions, p) || me.permissions.includes(p))) {
            return yield* fail(403, "forbidden", "the role grants permissions this key does not hold")
          }
          // Handing out an all-powerful key asks the caller to prove they are present (docs/identity.md).
          if (isPowerful(role.permissions)) {
            yield* auth.reauthenticate(me, { currentPassword: payload.currentPassword, totpCode: payload.totpCode }, yield* clientContext)
          }
          const expiresAt = yield* futureOrNull(payload.expiresAt)
          const limit = yield* tenants.quotaLimit(me.tenantId, "iam.api-keys.total")
          const key = generateApiKey()
          const row = yield* keys.insert({
            id: newId("key"),
            tenantId: me.tenantId,
            identityId: identity.id,
            roleId: role.id,
            name: payload.name,
            description: payload.description ?? null,
            keyPrefix: key.prefix,
            keyHash: authenticator.hash(key.raw),
            rateLimitPerMinute: payload.rateLimitPerMinute ?? 600,
            expiresAt: expiresAt ? new Date(parseIsoDateTime(expiresAt)!) : null
          }, limit)
          if (row === "quota_exceeded") return yield* keyQuotaExceeded(limit)
          // Deleted between the check above and the insert.
          if (row === "role_missing") return yield* invalidRole
          return { ...toApiKey(row), rawKey: key.raw }
        }))
      .handle("listApiKeys", ({ params }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          yield* identityOfTenant(me.tenantId, params.id)
          const rows = yield* keys.listByIdentity(me.tenantId, params.id)
          return { items: rows.map(toApiKey) }
        }))
      .handle("getApiKey", ({ params }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const row = yield* keys.find(me.tenantId, params.id, params.kid)
          return row ? toApiKey(row) : yield* notFound("API key")
        }))
      .handle("updateApiKey", ({ params, payload }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const expiresAt = yield* futureOrNull(payload.expiresAt)
          const limit = yield* tenants.quotaLimit(me.tenantId, "iam.api-keys.total")
          const updated = yield* keys.update(me.tenantId, params.id, params.kid, {
            description: payload.description,
            rateLimitPerMinute: payload.rateLimitPerMinute,
            expiresAt: expiresAt === undefined ? undefined : expiresAt === null ? null : new Date(parseIsoDateTime(expiresAt)!)
          }, limit)
          if (!updated) return yield* notFound("API key")
          if (updated === "quota_exceeded") return yield* keyQuotaExceeded(limit)
          yield* authenticator.invalidate(updated.keyHash)
          return toApiKey(updated.row)
        }))
      .handle("revokeApiKey", ({ params }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const revoked = yield* keys.revoke(me.tenantId, params.id, params.kid)
          if (!revoked) return yield* notFound("API key")
          yield* authenticator.invalidate(revoked.keyHash)
          return { revoked: true, revokedAt: iso(revoked.row.revoked_at)!, apiKeyId: revoked.row.id }
        }))
      .handle("myQuotas", () =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const now = Date.now()
          const day = utcDayStart(now)
          const [limits, used] = yield* Effect.all([tenants.quotaLimits(me.tenantId, quotaKeys), tenants.quotaUsage(me.tenantId, new Date(day))])
          const resetAt = new Date(day + 86_400_000).toISOString()
          return {
            items: quotaKeys.map((key) => ({
              key,
              limit: limits[key],
              used: used[key],
              ...(key.endsWith(".daily") ? { window: "day" as const, resetAt } : {})
            }))
          }
        }))
  })
)

