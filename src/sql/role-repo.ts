import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient, SqlError } from "effect/sql"
import { newId } from "../ids.ts"
import { pageWithTotal } from "./page-with-total.ts"
import { isUniqueViolation } from "./tenant-repo.ts"
import { pageOfRows } from "./memory-search.ts"

export interface RoleRow {
  readonly id: string
  readonly tenant_id: string
  readonly name: string
  readonly description: string | null
  readonly permissions: ReadonlyArray<string>
  readonly is_system: boolean
  readonly created_at: Date
  readonly updated_at: Date
}

export interface RolePatch {
  readonly name?: string | undefined
  readonly description?: string | null | undefined
  readonly permissions?: ReadonlyArray<string> | undefined
}

/** What still holds a role, by kind; a role is deleted only when every count is 0. */
export interface RoleUses {
  readonly identityAccesses: number
  readonly apiKeys: number
  readonly defaultRoles: number
  readonly invitations: number
}

export interface RoleRepoShape {
  /** A page of the tenant's roles, newest first. */
  readonly list: (tenantId: string, offset: number, limit: number) => Effect.Effect<{ items: ReadonlyArray<RoleRow>; total: number }>
  /** A role of the tenant that is not deleted. */
  readonly find: (tenantId: string, id: string) => Effect.Effect<RoleRow | undefined>
  readonly insert: (role: { tenantId: string; name: string; description: string | null; permissions: ReadonlyArray<string> }) => Effect.Effect<
    RoleRow | "name_taken"
  >
  /**
   * Reads the role with its row locked, lets `decide` check it and say what to change, and writes
   * that, in one transaction: two changes of one role cannot each decide on what the other replaces.
   * An empty change writes nothing.
   */
  readonly update: <E>(
    tenantId: string,
    id: string,
    decide: (current: RoleRow) => Effect.Effect<RolePatch, E>
  ) => Effect.Effect<{ before: RoleRow; after: RoleRow } | "not_found" | "name_taken", E>
  /**
   * Marks the role deleted unless it is a system role or still in use, with its row locked: a key,
   * access or invitation given the role meanwhile waits for this and then finds it gone
   * (see `lockLiveRole`), or is counted here.
   */
  readonly remove: (tenantId: string, id: string) => Effect.Effect<
    { deleted: RoleRow & { deleted_at: Date } } | "not_found" | "system" | { inUse: RoleUses }
  >
  /** Hashes of the role's keys that are not revoked, to drop them from every node's key cache. */
  readonly liveKeyHashes: (roleId: string) => Effect.Effect<ReadonlyArray<string>>
  /** Identities whose sessions act with the role (their default role), to drop their sessions from every node's cache. */
  readonly sessionHolders: (roleId: string) => Effect.Effect<ReadonlyArray<string>>
}

export class RoleRepo extends Context.Service<RoleRepo, RoleRepoShape>()("trawl/RoleRepo") {}

/**
 * Inside a transaction that gives a role to something (a key, an access, an invitation, a default
 * role): whether the role is a live one of the tenant, holding it against deletion until the
 * transaction ends. FOR KEY SHARE waits for a deletion under way, and then reads the role as it
 * left it.
 */
export const lockLiveRole = (sql: SqlClient.SqlClient, tenantId: string, roleId: string) =>
  sql<{ id: string }>`SELECT id FROM roles WHERE id = ${roleId} AND tenant_id = ${tenantId} AND deleted_at IS NULL FOR KEY SHARE`.pipe(
    Effect.map((rows) => rows.length > 0)
  )

const columns = "id, tenant_id, name, description, permissions, is_system, created_at, updated_at"

export const RoleRepoLive = Layer.effect(
  RoleRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const cols = sql.literal(columns)

    const lockRole = (tenantId: string, id: string) =>
      sql<RoleRow>`SELECT ${cols} FROM roles WHERE id = ${id} AND tenant_id = ${tenantId} AND deleted_at IS NULL FOR UPDATE`.pipe(
        Effect.map((rows) => rows[0])
      )

    const uses = (roleId: string) =>
      sql<{ accesses: string; keys: string; defaults: string; invitations: string }>`
        SELECT (SELECT count(*) FROM identity_accesses WHERE role_id = ${roleId}) AS accesses,
               (SELECT count(*) FROM api_keys WHERE role_id = ${roleId} AND revoked_at IS NULL) AS keys,
               (SELECT count(*) FROM identities WHERE default_role_id = ${roleId}) AS defaults,
               (SELECT count(*) FROM invitations WHERE role_id = ${roleId} AND status = 'pending') AS invitations`.pipe(
        Effect.map(([row]): RoleUses => ({
          identityAccesses: Number(row!.accesses),
          apiKeys: Number(row!.keys),
          defaultRoles: Number(row!.defaults),
          invitations: Number(row!.invitations)
        }))
      )

    return RoleRepo.of({
      list: (tenantId, offset, limit) => {
        const where = sql`tenant_id = ${tenantId} AND deleted_at IS NULL`
        return pageWithTotal<RoleRow>(
          sql,
          sql`SELECT ${cols} FROM roles WHERE ${where} ORDER BY created_at DESC, id DESC OFFSET ${offset} LIMIT ${limit}`,
          sql`SELECT count(*) FROM roles WHERE ${where}`
        )
      },
      find: (tenantId, id) =>
        sql<RoleRow>`SELECT ${cols} FROM roles WHERE id = ${id} AND tenant_id = ${tenantId} AND deleted_at IS NULL`.pipe(
          Effect.orDie,
          Effect.map((rows) => rows[0])
        ),
      insert: (role) =>
        sql<RoleRow>`
          INSERT INTO roles (id, tenant_id, name, description, permissions, is_system)
          VALUES (${newId("role")}, ${role.tenantId}, ${role.name}, ${role.description}, ${JSON.stringify(role.permissions)}::jsonb, false)
          RETURNING ${cols}`.pipe(
          Effect.map(([row]): RoleRow | "name_taken" => row!),
          Effect.catch((e) => isUniqueViolation(e) ? Effect.succeed("name_taken" as const) : Effect.die(e))
        ),
      update: <E>(tenantId: string, id: string, decide: (current: RoleRow) => Effect.Effect<RolePatch, E>) =>
        sql.withTransaction(Effect.gen(function*() {
          const before = yield* lockRole(tenantId, id)
          if (!before) return "not_found" as const
          const patch = yield* decide(before)
          if (patch.name === undefined && patch.description === undefined && patch.permissions === undefined) return { before, after: before }
          const [after] = yield* sql<RoleRow>`
            UPDATE roles SET
              name = COALESCE(${patch.name ?? null}::text, name),
              description = CASE WHEN ${patch.description !== undefined} THEN ${patch.description ?? null}::text ELSE description END,
              permissions = COALESCE(${patch.permissions ? JSON.stringify(patch.permissions) : null}::jsonb, permissions),
              updated_at = now()
            WHERE id = ${id}
            RETURNING ${cols}`
          return { before, after: after! }
        })).pipe(
          // Only database faults are looked at here; what `decide` refused goes to the caller as it is.
          Effect.catchIf(
            (e): e is SqlError.SqlError => e instanceof SqlError.SqlError,
            (e) => isUniqueViolation(e) ? Effect.succeed("name_taken" as const) : Effect.die(e)
          )
        ),
      remove: (tenantId, id) =>
        sql.withTransaction(Effect.gen(function*() {
          const role = yield* lockRole(tenantId, id)
          if (!role) return "not_found" as const
          if (role.is_system) return "system" as const
          const found = yield* uses(id)
          if (Object.values(found).some((n) => n > 0)) return { inUse: found }
          const [deleted] = yield* sql<RoleRow & { deleted_at: Date }>`
            UPDATE roles SET deleted_at = now(), updated_at = now() WHERE id = ${id} RETURNING ${cols}, deleted_at`
          return { deleted: deleted! }
        })).pipe(Effect.orDie),
      liveKeyHashes: (roleId) =>
        sql<{ key_hash: string }>`SELECT key_hash FROM api_keys WHERE role_id = ${roleId} AND revoked_at IS NULL`.pipe(
          Effect.orDie,
          Effect.map((rows) => rows.map((r) => r.key_hash))
        ),
      sessionHolders: (roleId) =>
        sql<{ id: string }>`SELECT id FROM identities WHERE default_role_id = ${roleId}`.pipe(
          Effect.orDie,
          Effect.map((rows) => rows.map((r) => r.id))
        )
    })
  })
)

/** What a `makeRoleRepoTest` starts with: roles, and who holds them (the tables a role is counted in). */
export interface RoleRepoSeed {
  readonly roles?: ReadonlyArray<Pick<RoleRow, "id" | "tenant_id" | "name" | "permissions"> & Partial<Pick<RoleRow, "description" | "is_system">>>
  /** Per role id, the identities whose default role it is (their sessions act with it). */
  readonly sessionHolders?: Readonly<Record<string, ReadonlyArray<string>>>
  /** Per role id, its identity accesses and pending invitations (its keys are counted by `liveKeys`). */
  readonly uses?: Readonly<Record<string, Partial<Pick<RoleUses, "identityAccesses" | "invitations">>>>
  /** The hashes of live keys per role id: `ApiKeyRepoTest` passes its own. */
  readonly liveKeys?: (roleId: string) => ReadonlyArray<string>
}

/** Roles in memory, for unit tests of the services above; times come from Effect's Clock. */
export const makeRoleRepoTest = (seed: RoleRepoSeed = {}): Layer.Layer<RoleRepo> =>
  Layer.sync(RoleRepo, () => {
    type Row = { -readonly [K in keyof RoleRow]: RoleRow[K] } & { deleted_at: Date | null }
    const epoch = new Date(0)
    const rows: Array<Row> = (seed.roles ?? []).map((r) => ({
      description: null,
      is_system: false,
      created_at: epoch,
      updated_at: epoch,
      deleted_at: null,
      ...r
    }))
    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))
    const live = (tenantId: string, id: string) => rows.find((r) => r.id === id && r.tenant_id === tenantId && r.deleted_at === null)
    const view = ({ deleted_at: _d, ...r }: Row): RoleRow => ({ ...r })
    const nameTaken = (tenantId: string, name: string, except?: string) =>
      rows.some((r) => r.tenant_id === tenantId && r.deleted_at === null && r.name.toLowerCase() === name.toLowerCase() && r.id !== except)
    const liveKeys = seed.liveKeys ?? (() => [])
    return RoleRepo.of({
      list: (tenantId, offset, limit) =>
        Effect.sync(() => {
          const all = rows.filter((r) => r.tenant_id === tenantId && r.deleted_at === null)
            .sort((a, b) => b.created_at.getTime() - a.created_at.getTime() || b.id.localeCompare(a.id))
          return pageOfRows(all, offset, limit, view)
        }),
      find: (tenantId, id) => Effect.sync(() => {
        const r = live(tenantId, id)
        return r && view(r)
      }),
      insert: (role) =>
        Effect.map(now, (at): RoleRow | "name_taken" => {
          if (nameTaken(role.tenantId, role.name)) return "name_taken"
          const row: Row = {
            id: newId("role"),
            tenant_id: role.tenantId,
            name: role.name,
            description: role.description,
            permissions: role.permissions,
            is_system: false,
            created_at: at,
            updated_at: at,
            deleted_at: null
          }
          rows.push(row)
          return view(row)
        }),
      update: (tenantId, id, decide) =>
        Effect.gen(function*() {
          const row = live(tenantId, id)
          if (!row) return "not_found" as const
          const before = view(row)
          const patch = yield* decide(before)
          if (patch.name === undefined && patch.description === undefined && patch.permissions === undefined) return { before, after: before }
          if (patch.name !== undefined && nameTaken(tenantId, patch.name, id)) return "name_taken" as const
          if (patch.name !== undefined) row.name = patch.name
          if (patch.description !== undefined) row.description = patch.description
          if (patch.permissions !== undefined) row.permissions = patch.permissions
          row.updated_at = yield* now
          return { before, after: view(row) }
        }),
      remove: (tenantId, id) =>
        Effect.gen(function*() {
          const row = live(tenantId, id)
          if (!row) return "not_found" as const
          if (row.is_system) return "system" as const
          const inUse: RoleUses = {
            identityAccesses: seed.uses?.[id]?.identityAccesses ?? 0,
            apiKeys: liveKeys(id).length,
            defaultRoles: seed.sessionHolders?.[id]?.length ?? 0,
            invitations: seed.uses?.[id]?.invitations ?? 0
          }
          if (Object.values(inUse).some((n) => n > 0)) return { inUse }
          row.deleted_at = row.updated_at = yield* now
          return { deleted: { ...view(row), deleted_at: row.deleted_at } }
        }),
      liveKeyHashes: (roleId) => Effect.sync(() => liveKeys(roleId)),
      sessionHolders: (roleId) => Effect.sync(() => seed.sessionHolders?.[roleId] ?? [])
    })
  })
