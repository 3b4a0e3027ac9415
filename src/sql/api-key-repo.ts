import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { Principal } from "../iam/principal.ts"

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
  /** The principal of a live (not revoked) key by its hash; expiry is checked by the caller. */
  readonly principalByHash: (keyHash: string) => Effect.Effect<Principal | undefined>
  readonly insert: (key: NewApiKey) => Effect.Effect<ApiKeyRow>
  readonly listByIdentity: (tenantId: string, identityId: string) => Effect.Effect<ReadonlyArray<ApiKeyRow>>
  readonly find: (tenantId: string, identityId: string, id: string) => Effect.Effect<ApiKeyRow | undefined>
  readonly update: (
    tenantId: string,
    identityId: string,
    id: string,
    patch: { description?: string | null; rateLimitPerMinute?: number; expiresAt?: Date | null }
  ) => Effect.Effect<{ row: ApiKeyRow; keyHash: string } | undefined>
  /** Sets `revoked_at` once; returns the row and hash (for cache invalidation). */
  readonly revoke: (tenantId: string, identityId: string, id: string) => Effect.Effect<{ row: ApiKeyRow; keyHash: string } | undefined>
  readonly touch: (lastUsed: ReadonlyMap<string, Date>) => Effect.Effect<void>
  readonly countActive: (tenantId: string) => Effect.Effect<number>
}

export class ApiKeyRepo extends Context.Service<ApiKeyRepo, ApiKeyRepoShape>()("trawl/ApiKeyRepo") {}

export const ApiKeyRepoLive = Layer.effect(
  ApiKeyRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const cols = sql.literal(columns)
    return ApiKeyRepo.of({
      principalByHash: (keyHash) =>
        sql<{
          id: string
          tenant_id: string
          identity_id: string
          role_id: string
          permissions: ReadonlyArray<string>
          is_internal: boolean
          rate_limit_per_minute: number
          expires_at: Date | null
        }>`
          SELECT k.id, k.tenant_id, k.identity_id, k.role_id, r.permissions, t.is_internal,
                 k.rate_limit_per_minute, k.expires_at
          FROM api_keys k JOIN roles r ON r.id = k.role_id JOIN tenants t ON t.id = k.tenant_id
          WHERE k.key_hash = ${keyHash} AND k.revoked_at IS NULL AND t.status = 'active'`.pipe(
          Effect.orDie,
          Effect.map(([row]) =>
            row && {
              apiKeyId: row.id,
              keyHash,
              tenantId: row.tenant_id,
              identityId: row.identity_id,
              roleId: row.role_id,
              permissions: row.permissions,
              isInternalTenant: row.is_internal,
              rateLimitPerMinute: row.rate_limit_per_minute,
              expiresAt: row.expires_at ? new Date(row.expires_at).getTime() : null
            }
          )
        ),
      insert: (k) =>
        sql<ApiKeyRow>`
          INSERT INTO api_keys (id, tenant_id, identity_id, role_id, name, description, key_prefix, key_hash,
                                rate_limit_per_minute, expires_at)
          VALUES (${k.id}, ${k.tenantId}, ${k.identityId}, ${k.roleId}, ${k.name}, ${k.description}, ${k.keyPrefix},
                  ${k.keyHash}, ${k.rateLimitPerMinute}, ${k.expiresAt})
          RETURNING ${cols}`.pipe(Effect.orDie, Effect.map((rows) => rows[0]!)),
      listByIdentity: (tenantId, identityId) =>
        sql<ApiKeyRow>`SELECT ${cols} FROM api_keys WHERE tenant_id = ${tenantId} AND identity_id = ${identityId}
                       ORDER BY id`.pipe(Effect.orDie),
      find: (tenantId, identityId, id) =>
        sql<ApiKeyRow>`SELECT ${cols} FROM api_keys
                       WHERE id = ${id} AND tenant_id = ${tenantId} AND identity_id = ${identityId}`.pipe(
          Effect.orDie,
          Effect.map((rows) => rows[0])
        ),
      update: (tenantId, identityId, id, patch) =>
        sql<ApiKeyRow & { key_hash: string }>`
          UPDATE api_keys SET
            description = CASE WHEN ${patch.description !== undefined} THEN ${patch.description ?? null}::text ELSE description END,
            rate_limit_per_minute = COALESCE(${patch.rateLimitPerMinute ?? null}::integer, rate_limit_per_minute),
            expires_at = CASE WHEN ${patch.expiresAt !== undefined} THEN ${patch.expiresAt ?? null}::timestamptz ELSE expires_at END,
            updated_at = now()
          WHERE id = ${id} AND tenant_id = ${tenantId} AND identity_id = ${identityId}
          RETURNING ${cols}, key_hash`.pipe(
          Effect.orDie,
          Effect.map(([row]) => row && { row, keyHash: row.key_hash })
        ),
      revoke: (tenantId, identityId, id) =>
        sql<ApiKeyRow & { key_hash: string }>`
          UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now()), updated_at = now()
          WHERE id = ${id} AND tenant_id = ${tenantId} AND identity_id = ${identityId}
          RETURNING ${cols}, key_hash`.pipe(
          Effect.orDie,
          Effect.map(([row]) => row && { row, keyHash: row.key_hash })
        ),
      countActive: (tenantId) =>
        sql<{ n: string }>`SELECT count(*) AS n FROM api_keys WHERE tenant_id = ${tenantId} AND revoked_at IS NULL
                           AND (expires_at IS NULL OR expires_at > now())`.pipe(
          Effect.orDie,
          Effect.map((rows) => Number(rows[0]!.n))
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
