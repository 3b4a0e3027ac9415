import { pageWithTotal } from "./page-with-total.ts"
import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { Principal } from "../iam/principal.ts"
import { OID, pgArray } from "./pg-array.ts"
import { lockLiveRole, RoleRepo } from "./role-repo.ts"
import { lockTenantRow } from "./tenant-lock.ts"
import type { IdentityId, TenantId } from "../schema/ids.ts"

export interface ApiKeyRow {
  readonly id: string
  readonly tenant_id: string
  readonly identity_id: string
  readonly role_id: string
  readonly name: string
  readonly description: string | null
  readonly key_prefix: string
  readonly rate_limit_per_minute: number
  readonly last_used_at: Date | null
  readonly expires_at: Date | null
  readonly revoked_at: Date | null
  readonly created_at: Date
  readonly role_permissions: ReadonlyArray<string>
}

export interface NewApiKey {
  readonly id: string
  readonly tenantId: string
  readonly identityId: string
  readonly roleId: string
  readonly name: string
  readonly description: string | null
  readonly keyPrefix: string
  readonly keyHash: string
  readonly rateLimitPerMinute: number
  readonly expiresAt: Date | null
}

const columns = `id, tenant_id, identity_id, role_id, name, description, key_prefix, rate_limit_per_minute,
  last_used_at, expires_at, revoked_at, created_at,
  (SELECT r.permissions FROM roles r WHERE r.id = api_keys.role_id) AS role_permissions`

export interface ApiKeyRepoShape {
  /**
   * The principals of the live (not revoked) keys among these hashes, by hash (one statement: the
   * authenticator's cache reads them in bulk); expiry is checked by the caller.
   */
  readonly principalsByHash: (keyHashes: ReadonlyArray<string>) => Effect.Effect<ReadonlyMap<string, Principal>>
  /**
   * Inserts the key if its tenant has fewer than `activeLimit` active keys, counted under a lock of
   * the tenant's row, so that concurrent creations cannot go past the limit, and if its role is
   * still there (held against deletion until the key is written).
   */
  readonly insert: (key: NewApiKey, activeLimit: number) => Effect.Effect<ApiKeyRow | "quota_exceeded" | "role_missing">
  /** A page of the identity's keys (revoked and expired ones too), newest first, and how many it has in all. */
  readonly listByIdentity: (tenantId: string, identityId: string, offset: number, limit: number) => Effect.Effect<{ readonly items: ReadonlyArray<ApiKeyRow>; readonly total: number }>
  readonly find: (tenantId: string, identityId: string, id: string) => Effect.Effect<ApiKeyRow | undefined>
  readonly update: (
    tenantId: string,
    identityId: string,
    id: string,
    patch: { description?: string | null; rateLimitPerMinute?: number; expiresAt?: Date | null },
    /** An expired key that the new `expiresAt` makes live again needs room under this limit, as a new key does. */
    activeLimit: number
  ) => Effect.Effect<{ row: ApiKeyRow; keyHash: string } | "quota_exceeded" | undefined>
  /** Sets `revoked_at` once; returns the row and hash (for cache invalidation). */
  readonly revoke: (tenantId: string, identityId: string, id: string) => Effect.Effect<{ row: ApiKeyRow; keyHash: string } | undefined>
  readonly touch: (lastUsed: ReadonlyMap<string, Date>) => Effect.Effect<void>
}

export class ApiKeyRepo extends Context.Service<ApiKeyRepo, ApiKeyRepoShape>()("trawl/ApiKeyRepo") {}

export const ApiKeyRepoLive = Layer.effect(
  ApiKeyRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const cols = sql.literal(columns)
    /** Locks the tenant's row for the transaction and counts its active keys. */
    const lockAndCountActive = (tenantId: string) =>
      Effect.gen(function*() {
        yield* lockTenantRow(sql, tenantId)
        const [count] = yield* sql<{ n: string }>`
          SELECT count(*) AS n FROM api_keys
          WHERE tenant_id = ${tenantId} AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`
        return Number(count!.n)
      })

    return ApiKeyRepo.of({
      principalsByHash: (keyHashes) =>
        sql<{
          id: string
          key_hash: string
          // Branded here: the key's row is where a principal's ids enter.
          tenant_id: TenantId
          identity_id: IdentityId
          role_id: string
          permissions: ReadonlyArray<string>
          is_internal: boolean
          rate_limit_per_minute: number
          expires_at: Date | null
        }>`
          SELECT k.id, k.key_hash, k.tenant_id, k.identity_id, k.role_id, r.permissions, t.is_internal,
                 k.rate_limit_per_minute, k.expires_at
          FROM api_keys k JOIN roles r ON r.id = k.role_id JOIN tenants t ON t.id = k.tenant_id
          WHERE k.key_hash = ANY(${pgArray(keyHashes, OID.text)}) AND k.revoked_at IS NULL AND t.status = 'active'`.pipe(
          Effect.orDie,
          Effect.map((rows) => new Map(rows.map((row): [string, Principal] => [row.key_hash, {
            kind: "api-key" as const,
            credentialId: row.id,
            actorId: row.identity_id,
            tenantId: row.tenant_id,
            identityId: row.identity_id,
            roleId: row.role_id,
            permissions: row.permissions,
            isInternalTenant: row.is_internal,
            rateLimitPerMinute: row.rate_limit_per_minute,
            expiresAt: row.expires_at ? new Date(row.expires_at).getTime() : null
          }])))
        ),
      insert: (k, activeLimit) =>
        sql.withTransaction(Effect.gen(function*() {
          if ((yield* lockAndCountActive(k.tenantId)) >= activeLimit) return "quota_exceeded" as const
          if (!(yield* lockLiveRole(sql, k.tenantId, k.roleId))) return "role_missing" as const
          const [row] = yield* sql<ApiKeyRow>`
            INSERT INTO api_keys (id, tenant_id, identity_id, role_id, name, description, key_prefix, key_hash,
                                  rate_limit_per_minute, expires_at)
            VALUES (${k.id}, ${k.tenantId}, ${k.identityId}, ${k.roleId}, ${k.name}, ${k.description}, ${k.keyPrefix},
                    ${k.keyHash}, ${k.rateLimitPerMinute}, ${k.expiresAt})
            RETURNING ${cols}`
          return row!
        })).pipe(Effect.orDie),
      listByIdentity: (tenantId, identityId, offset, limit) => {
        const where = sql`tenant_id = ${tenantId} AND identity_id = ${identityId}`
        return pageWithTotal<ApiKeyRow>(
          sql,
          sql`SELECT ${cols} FROM api_keys WHERE ${where} ORDER BY created_at DESC, id DESC OFFSET ${offset} LIMIT ${limit}`,
          sql`SELECT count(*) FROM api_keys WHERE ${where}`
        )
      },
      find: (tenantId, identityId, id) =>
        sql<ApiKeyRow>`SELECT ${cols} FROM api_keys
                       WHERE id = ${id} AND tenant_id = ${tenantId} AND identity_id = ${identityId}`.pipe(
          Effect.orDie,
          Effect.map((rows) => rows[0])
        ),
      update: (tenantId, identityId, id, patch, activeLimit) =>
        sql.withTransaction(Effect.gen(function*() {
          // Only a new expiry can bring a key back to life (a revoked key stays revoked).
          if (patch.expiresAt !== undefined && (patch.expiresAt === null || patch.expiresAt.getTime() > Date.now())) {
            const active = yield* lockAndCountActive(tenantId)
            const [current] = yield* sql<{ dormant: boolean }>`
              SELECT revoked_at IS NULL AND expires_at IS NOT NULL AND expires_at <= now() AS dormant
              FROM api_keys WHERE id = ${id} AND tenant_id = ${tenantId} AND identity_id = ${identityId}`
            if (current?.dormant && active >= activeLimit) return "quota_exceeded" as const
          }
          return yield* sql<ApiKeyRow & { key_hash: string }>`
          UPDATE api_keys SET
            description = CASE WHEN ${patch.description !== undefined} THEN ${patch.description ?? null}::text ELSE description END,
            rate_limit_per_minute = COALESCE(${patch.rateLimitPerMinute ?? null}::integer, rate_limit_per_minute),
            expires_at = CASE WHEN ${patch.expiresAt !== undefined} THEN ${patch.expiresAt ?? null}::timestamptz ELSE expires_at END,
            updated_at = now()
          WHERE id = ${id} AND tenant_id = ${tenantId} AND identity_id = ${identityId}
          RETURNING ${cols}, key_hash`.pipe(Effect.map(([row]) => row && { row, keyHash: row.key_hash }))
        })).pipe(Effect.orDie),
      revoke: (tenantId, identityId, id) =>
        sql<ApiKeyRow & { key_hash: string }>`
          UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now()), updated_at = now()
          WHERE id = ${id} AND tenant_id = ${tenantId} AND identity_id = ${identityId}
          RETURNING ${cols}, key_hash`.pipe(
          Effect.orDie,
          Effect.map(([row]) => row && { row, keyHash: row.key_hash })
        ),
      touch: (lastUsed) =>
        lastUsed.size === 0
          ? Effect.void
          : sql`
          UPDATE api_keys k SET last_used_at = GREATEST(COALESCE(k.last_used_at, v.at), v.at)
          FROM (SELECT * FROM jsonb_to_recordset(${JSON.stringify([...lastUsed].map(([id, at]) => ({ id, at: at.toISOString() })))}::jsonb)
                AS x(id text, at timestamptz)) v
          WHERE k.id = v.id`.pipe(Effect.orDie, Effect.asVoid)
    })
  })
)

/**
 * Keys in memory, for unit tests of the services above. A key's permissions are its role's, read
 * through `RoleRepo` when it is looked up (the live query joins `roles`); `byRole`, when given, is
 * kept as the hashes of each role's live keys (what `makeRoleRepoTest`'s `liveKeys` reads).
 */
export const makeApiKeyRepoTest = (
  options: { readonly internalTenants?: ReadonlyArray<string>; readonly byRole?: Map<string, Array<string>> } = {}
): Layer.Layer<ApiKeyRepo, never, RoleRepo> =>
  Layer.effect(
    ApiKeyRepo,
    Effect.gen(function*() {
      const roles = yield* RoleRepo
      type Row = { -readonly [K in keyof ApiKeyRow]: ApiKeyRow[K] } & { key_hash: string }
      const rows: Array<Row> = []
      const now = Clock.currentTimeMillis
      const active = (tenantId: string, at: number) =>
        rows.filter((k) => k.tenant_id === tenantId && k.revoked_at === null && (k.expires_at === null || k.expires_at.getTime() > at)).length
      const withPermissions = (k: Row) =>
        Effect.map(roles.find(k.tenant_id, k.role_id), (role): ApiKeyRow => {
          const { key_hash: _h, ...row } = k
          return { ...row, role_permissions: role?.permissions ?? [] }
        })
      const mine = (tenantId: string, identityId: string, id: string) =>
        rows.find((k) => k.id === id && k.tenant_id === tenantId && k.identity_id === identityId)
      const syncByRole = () => {
        if (!options.byRole) return
        options.byRole.clear()
        for (const k of rows) if (k.revoked_at === null) options.byRole.set(k.role_id, [...(options.byRole.get(k.role_id) ?? []), k.key_hash])
      }
      return ApiKeyRepo.of({
        principalsByHash: (keyHashes) =>
          Effect.gen(function*() {
            const found = new Map<string, Principal>()
            for (const k of rows.filter((x) => keyHashes.includes(x.key_hash) && x.revoked_at === null)) {
              const row = yield* withPermissions(k)
              found.set(k.key_hash, {
                kind: "api-key" as const,
                credentialId: k.id,
                actorId: k.identity_id as IdentityId,
                tenantId: k.tenant_id as TenantId,
                identityId: k.identity_id as IdentityId,
                roleId: k.role_id,
                permissions: row.role_permissions,
                isInternalTenant: options.internalTenants?.includes(k.tenant_id) ?? false,
                rateLimitPerMinute: k.rate_limit_per_minute,
                expiresAt: k.expires_at ? k.expires_at.getTime() : null
              })
            }
            return found
          }),
        insert: (k, activeLimit) =>
          Effect.gen(function*() {
            const at = yield* now
            if (active(k.tenantId, at) >= activeLimit) return "quota_exceeded" as const
            if (!(yield* roles.find(k.tenantId, k.roleId))) return "role_missing" as const
            const row: Row = {
              id: k.id,
              tenant_id: k.tenantId,
              identity_id: k.identityId,
              role_id: k.roleId,
              name: k.name,
              description: k.description,
              key_prefix: k.keyPrefix,
              key_hash: k.keyHash,
              rate_limit_per_minute: k.rateLimitPerMinute,
              last_used_at: null,
              expires_at: k.expiresAt,
              revoked_at: null,
              created_at: new Date(at),
              role_permissions: []
            }
            rows.push(row)
            syncByRole()
            return yield* withPermissions(row)
          }),
        listByIdentity: (tenantId, identityId, offset, limit) => {
          const mineAll = rows
            .filter((k) => k.tenant_id === tenantId && k.identity_id === identityId)
            .sort((a, b) => b.created_at.getTime() - a.created_at.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
          return Effect.map(Effect.forEach(mineAll.slice(offset, offset + limit), withPermissions), (items) => ({ items, total: mineAll.length }))
        },
        find: (tenantId, identityId, id) =>
          Effect.suspend(() => {
            const k = mine(tenantId, identityId, id)
            return k ? withPermissions(k) : Effect.succeed(undefined)
          }),
        update: (tenantId, identityId, id, patch, activeLimit) =>
          Effect.gen(function*() {
            const k = mine(tenantId, identityId, id)
            if (!k) return undefined
            const at = yield* now
            const revives = patch.expiresAt !== undefined && (patch.expiresAt === null || patch.expiresAt.getTime() > at)
            const dormant = k.revoked_at === null && k.expires_at !== null && k.expires_at.getTime() <= at
            if (revives && dormant && active(tenantId, at) >= activeLimit) return "quota_exceeded" as const
            if (patch.description !== undefined) k.description = patch.description
            if (patch.rateLimitPerMinute !== undefined) k.rate_limit_per_minute = patch.rateLimitPerMinute
            if (patch.expiresAt !== undefined) k.expires_at = patch.expiresAt
            return { row: yield* withPermissions(k), keyHash: k.key_hash }
          }),
        revoke: (tenantId, identityId, id) =>
          Effect.gen(function*() {
            const k = mine(tenantId, identityId, id)
            if (!k) return undefined
            k.revoked_at ??= new Date(yield* now)
            syncByRole()
            return { row: yield* withPermissions(k), keyHash: k.key_hash }
          }),
        touch: (lastUsed) =>
          Effect.sync(() => {
            for (const k of rows) {
              const at = lastUsed.get(k.id)
              if (at && (k.last_used_at === null || at > k.last_used_at)) k.last_used_at = at
            }
          })
      })
    })
  )
