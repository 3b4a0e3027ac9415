import { Context, Effect, Layer } from "effect"
import { newId } from "../ids.ts"
import type { AuditAction } from "../schema/audit.ts"
import { iso, parseIsoDateTime } from "../schema/common.ts"
import { fail, type Forbidden, type InvalidRequest, notFound, type NotFound, type TooManyRequests, type Unprocessable } from "../schema/errors.ts"
import type { ApiKey } from "../schema/iam.ts"
import { ApiKeyRepo, type ApiKeyRow } from "../sql/api-key-repo.ts"
import { AuditLog } from "../sql/audit-log.ts"
import { IdentityRepo } from "../sql/identity-repo.ts"
import { RoleRepo } from "../sql/role-repo.ts"
import { TenantRepo } from "../sql/tenant-repo.ts"
import { ApiKeyAuthenticator } from "./api-key-auth.ts"
import { AuthService } from "./auth-service.ts"
import { allows, grantablePermissions, isPowerful, notHeld, notHeldDetails, scopeOf } from "./permissions.ts"
import type { Principal } from "./principal.ts"
import { generateApiKey } from "./secrets.ts"
import type { ClientContext } from "./session-service.ts"
import type { ApiKeyId, IdentityId } from "../schema/ids.ts"

/** A new key's rate limit when the request names none (docs/api.md). */
export const DEFAULT_KEY_RATE_LIMIT = 600

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

export interface NewKeyInput {
  readonly name: string
  readonly description?: string | null | undefined
  readonly roleId: string
  readonly rateLimitPerMinute?: number | undefined
  readonly expiresAt?: string | null | undefined
  readonly currentPassword?: string | undefined
  readonly totpCode?: string | undefined
}

export interface KeyPatch {
  readonly description?: string | null | undefined
  readonly rateLimitPerMinute?: number | undefined
  readonly expiresAt?: string | null | undefined
  readonly currentPassword?: string | undefined
  readonly totpCode?: string | undefined
}

export interface ApiKeyServiceShape {
  readonly create: (me: Principal, identityId: IdentityId, input: NewKeyInput, client: ClientContext) => Effect.Effect<ApiKey & { rawKey: string }, Forbidden | InvalidRequest | NotFound | TooManyRequests | Unprocessable>
  readonly list: (me: Principal, identityId: IdentityId, offset: number, limit: number) => Effect.Effect<{ readonly items: ReadonlyArray<ApiKey>; readonly total: number }, NotFound>
  readonly get: (me: Principal, identityId: IdentityId, keyId: ApiKeyId) => Effect.Effect<ApiKey, NotFound>
  readonly update: (me: Principal, identityId: IdentityId, keyId: ApiKeyId, patch: KeyPatch, client: ClientContext) => Effect.Effect<ApiKey, Forbidden | InvalidRequest | NotFound | TooManyRequests>
  readonly revoke: (me: Principal, identityId: IdentityId, keyId: ApiKeyId, client: ClientContext) => Effect.Effect<{ revoked: true; revokedAt: string; apiKeyId: string }, Forbidden | NotFound>
}

export class ApiKeyService extends Context.Service<ApiKeyService, ApiKeyServiceShape>()("trawl/ApiKeyService") {}

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

/**
 * Another identity's keys are an administrator's to make, change and revoke (docs/identity.md): a
 * caller that may manage keys but not people would otherwise act as, or lock out, anyone.
 */
const mayManageKeysOf = (me: Principal, identityId: string) =>
  identityId === me.identityId || allows(me.permissions, "iam:identities:write")
    ? Effect.void
    : fail(403, "forbidden", "managing another identity's API keys needs iam:identities:write")

/** The fields a patch really changes (an update that changes nothing is not written nor audited). */
const keyChanges = (
  row: ApiKeyRow,
  patch: { description: string | null | undefined; rateLimitPerMinute: number | undefined; expiresAt: Date | null | undefined }
): Array<"description" | "rateLimitPerMinute" | "expiresAt"> => {
  const changed: Array<"description" | "rateLimitPerMinute" | "expiresAt"> = []
  if (patch.description !== undefined && patch.description !== row.description) changed.push("description")
  if (patch.rateLimitPerMinute !== undefined && patch.rateLimitPerMinute !== row.rate_limit_per_minute) changed.push("rateLimitPerMinute")
  // A revoked key stays revoked: its expiry is no longer its to change (docs/api.md, "API keys").
  if (patch.expiresAt !== undefined && row.revoked_at === null && patch.expiresAt?.getTime() !== row.expires_at?.getTime()) changed.push("expiresAt")
  return changed
}

/** Whether a new expiry (null: never) lets a key live longer than its current one. */
const outlives = (next: Date | null, current: Date | null) => current !== null && (next === null || next.getTime() > current.getTime())

const invalidRole = fail(422, "invalid_role", "roleId is not a role of this tenant", {
  details: [{ path: "roleId", code: "not_found", message: "no such role in this tenant" }]
})

export const ApiKeyServiceLive = Layer.effect(
  ApiKeyService,
  Effect.gen(function*() {
    const auth = yield* AuthService
    const keys = yield* ApiKeyRepo
    const tenants = yield* TenantRepo
    const identities = yield* IdentityRepo
    const roles = yield* RoleRepo
    const authenticator = yield* ApiKeyAuthenticator
    const audit = yield* AuditLog

    /** The identity must be a person of the caller's tenant; anything else is 404. */
    const personOfTenant = (tenantId: string, identityId: string) =>
      Effect.flatMap(identities.byId(identityId), (row) => (row && row.tenant_id === tenantId ? Effect.succeed(row) : notFound("identity")))
    const note = (me: Principal, client: ClientContext, action: AuditAction, keyId: string, data: Record<string, unknown>) =>
      audit.record(me, action, keyId, data, client)

    return ApiKeyService.of({
      create: (me, identityId, input, client) =>
        Effect.gen(function*() {
          const identity = yield* personOfTenant(me.tenantId, identityId)
          yield* mayManageKeysOf(me, identity.id)
          const role = yield* roles.find(me.tenantId, input.roleId)
          if (!role) return yield* invalidRole
          // Nobody hands out more than they hold.
          const ungranted = notHeld(grantablePermissions(me), role.permissions)
          if (ungranted.length > 0) {
            return yield* fail(403, "forbidden", "the role grants permissions this caller does not hold", { details: notHeldDetails("roleId", ungranted) })
          }
          // Handing out an all-powerful key asks the caller to prove they are present (docs/identity.md, "Re-authentication").
          yield* auth.proveGrant(me, input, isPowerful(role.permissions), client)
          const expiresAt = yield* futureOrNull(input.expiresAt)
          const limit = yield* tenants.quotaLimit(me.tenantId, "iam.api-keys.total")
          const key = generateApiKey()
          const row = yield* keys.insert({
            id: newId("key"),
            tenantId: me.tenantId,
            identityId: identity.id,
            roleId: role.id,
            name: input.name,
            description: input.description ?? null,
            keyPrefix: key.prefix,
            keyHash: authenticator.hash(key.raw),
            rateLimitPerMinute: input.rateLimitPerMinute ?? DEFAULT_KEY_RATE_LIMIT,
            expiresAt: expiresAt ? new Date(parseIsoDateTime(expiresAt)!) : null
          }, limit)
          if (row === "quota_exceeded") return yield* keyQuotaExceeded(limit)
          // Deleted between the check above and the insert.
          if (row === "role_missing") return yield* invalidRole
          yield* note(me, client, "api_key.create", row.id, { identityId: identity.id, roleId: role.id, name: row.name })
          return { ...toApiKey(row), rawKey: key.raw }
        }),
      list: (me, identityId, offset, limit) =>
        Effect.gen(function*() {
          yield* personOfTenant(me.tenantId, identityId)
          const page = yield* keys.listByIdentity(me.tenantId, identityId, offset, limit)
          return { items: page.items.map(toApiKey), total: page.total }
        }),
      get: (me, identityId, keyId) =>
        Effect.flatMap(keys.find(me.tenantId, identityId, keyId), (row) => (row ? Effect.succeed(toApiKey(row)) : notFound("API key"))),
      update: (me, identityId, keyId, patch, client) =>
        Effect.gen(function*() {
          yield* personOfTenant(me.tenantId, identityId)
          yield* mayManageKeysOf(me, identityId)
          const before = yield* keys.find(me.tenantId, identityId, keyId)
          if (!before) return yield* notFound("API key")
          // A key stronger than the caller is not the caller's to change: it could revive or
          // retune a key it could never have made (docs/identity.md, "API keys").
          const stronger = notHeld(grantablePermissions(me), before.role_permissions)
          if (stronger.length > 0) {
            return yield* fail(403, "forbidden", "this key's role grants permissions this caller does not hold", {
              details: notHeldDetails("roleId", stronger)
            })
          }
          const expiresAt = yield* futureOrNull(patch.expiresAt)
          const newExpiry = expiresAt === undefined ? undefined : expiresAt === null ? null : new Date(parseIsoDateTime(expiresAt)!)
          const changed = keyChanges(before, { description: patch.description, rateLimitPerMinute: patch.rateLimitPerMinute, expiresAt: newExpiry })
          // Giving an all-powerful key a longer life is making it again: the creation's proof is asked.
          yield* auth.proveGrant(me, patch, changed.includes("expiresAt") && outlives(newExpiry!, before.expires_at) && isPowerful(before.role_permissions), client)
          if (changed.length === 0) return toApiKey(before)
          const limit = yield* tenants.quotaLimit(me.tenantId, "iam.api-keys.total")
          const updated = yield* keys.update(me.tenantId, identityId, keyId, {
            description: changed.includes("description") ? patch.description : undefined,
            rateLimitPerMinute: changed.includes("rateLimitPerMinute") ? patch.rateLimitPerMinute : undefined,
            expiresAt: changed.includes("expiresAt") ? newExpiry : undefined
          }, limit)
          if (!updated) return yield* notFound("API key")
          if (updated === "quota_exceeded") return yield* keyQuotaExceeded(limit)
          yield* authenticator.invalidate(updated.keyHash)
          yield* note(me, client, "api_key.update", keyId, { changed })
          return toApiKey(updated.row)
        }),
      revoke: (me, identityId, keyId, client) =>
        Effect.gen(function*() {
          yield* personOfTenant(me.tenantId, identityId)
          yield* mayManageKeysOf(me, identityId)
          const revoked = yield* keys.revoke(me.tenantId, identityId, keyId)
          if (!revoked) return yield* notFound("API key")
          yield* authenticator.invalidate(revoked.keyHash)
          yield* note(me, client, "api_key.revoke", keyId, { identityId })
          return { revoked: true as const, revokedAt: iso(revoked.row.revoked_at)!, apiKeyId: revoked.row.id }
        })
    })
  })
)
