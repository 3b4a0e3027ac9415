import { Context, Effect, Layer } from "effect"
import { iso } from "../schema/common.ts"
import { type Conflict, type ErrorDetail, fail, type Forbidden, notFound, type NotFound, type TooManyRequests } from "../schema/errors.ts"
import type { Role } from "../schema/iam.ts"
import { AuditLog } from "../sql/audit-log.ts"
import { RoleRepo, type RoleRow } from "../sql/role-repo.ts"
import { ApiKeyAuthenticator } from "./api-key-auth.ts"
import { AuthService, GRANT_PROOFS, proofRequired } from "./auth-service.ts"
import { grantablePermissions, holds, isPowerful } from "./permissions.ts"
import type { Principal } from "./principal.ts"
import { SessionAuthenticator } from "./session-auth.ts"
import type { ClientContext } from "./session-service.ts"

export const toRole = (r: RoleRow): Role => ({
  id: r.id,
  tenantId: r.tenant_id,
  name: r.name,
  description: r.description,
  permissions: r.permissions,
  isSystem: r.is_system,
  createdAt: iso(r.created_at)!,
  updatedAt: iso(r.updated_at)!
})

export interface RoleInput {
  readonly name: string
  readonly description?: string | null | undefined
  readonly permissions: ReadonlyArray<string>
}

export interface RolePatch extends Partial<RoleInput> {
  readonly currentPassword?: string | undefined
  readonly totpCode?: string | undefined
}

export interface RoleServiceShape {
  readonly create: (me: Principal, input: RoleInput) => Effect.Effect<Role, Conflict | Forbidden>
  readonly list: (me: Principal, offset: number, limit: number) => Effect.Effect<{ items: ReadonlyArray<Role>; total: number }>
  readonly get: (me: Principal, id: string) => Effect.Effect<Role, NotFound>
  readonly update: (me: Principal, id: string, patch: RolePatch, client: ClientContext) => Effect.Effect<Role, Conflict | Forbidden | NotFound | TooManyRequests>
  readonly remove: (me: Principal, id: string) => Effect.Effect<{ deleted: true; deletedAt: string; id: string }, Conflict | NotFound>
}

export class RoleService extends Context.Service<RoleService, RoleServiceShape>()("trawl/RoleService") {}

const systemRoleImmutable = fail(409, "system_role_immutable", "a system role cannot be changed or deleted")
const nameTaken = (name: string) =>
  fail(409, "role_name_taken", `the tenant already has a role named "${name}"`, {
    details: [{ path: "name", code: "taken", message: "another role of this tenant has this name" }]
  })

const at = (indexes: ReadonlyArray<number>, code: string, message: string): Array<ErrorDetail> =>
  indexes.map((i) => ({ path: `permissions.${i}`, code, message }))

/**
 * Refuses (403) a role that would grant what the caller does not hold, unless the role grants it
 * already (`granted`): nobody widens a role past their own permissions, but anyone who may write
 * roles may narrow one. The super-admin plane is the internal tenant's `internal_admin` system role
 * alone, so no role anyone makes holds a `cross_tenant` permission (docs/api.md, "Roles").
 */
const refuseUngranted = (me: Principal, wanted: ReadonlyArray<string>, granted: ReadonlyArray<string>) => {
  const indexes = (test: (p: string) => boolean) => wanted.flatMap((p, i) => (test(p) ? [i] : []))
  const reserved = indexes((p) => p.startsWith("cross_tenant:") && !granted.includes(p))
  if (reserved.length > 0) {
    return fail(403, "forbidden", "cross_tenant permissions belong to the internal tenant's internal_admin role alone", {
      details: at(reserved, "reserved", "only the internal_admin system role holds it")
    })
  }
  const mine = grantablePermissions(me)
  const ungranted = indexes((p) => !holds(granted, p) && !holds(mine, p))
  if (ungranted.length > 0) {
    return fail(403, "forbidden", "the role would grant permissions this caller does not hold", {
      details: at(ungranted, "not_held", "this caller does not hold this permission")
    })
  }
  return Effect.void
}

/** Whether two lists hold the same permissions, in any order. */
const sameSet = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) => a.length === b.length && a.every((p) => b.includes(p))

/** Each permission once, in the order given. */
const unique = (permissions: ReadonlyArray<string>) => [...new Set(permissions)]

export const RoleServiceLive = Layer.effect(
  RoleService,
  Effect.gen(function*() {
    const roles = yield* RoleRepo
    const audit = yield* AuditLog
    const keys = yield* ApiKeyAuthenticator
    const sessions = yield* SessionAuthenticator
    const auth = yield* AuthService
    return RoleService.of({
      create: (me, input) =>
        Effect.gen(function*() {
          yield* refuseUngranted(me, input.permissions, [])
          const row = yield* roles.insert({
            tenantId: me.tenantId,
            name: input.name,
            description: input.description ?? null,
            permissions: unique(input.permissions)
          })
          if (row === "name_taken") return yield* nameTaken(input.name)
          yield* audit.record(me, "role.create", row.id, { name: row.name, description: row.description, permissions: row.permissions })
          return toRole(row)
        }),
      list: (me, offset, limit) =>
        roles.list(me.tenantId, offset, limit).pipe(Effect.map((page) => ({ items: page.items.map(toRole), total: page.total }))),
      get: (me, id) => Effect.flatMap(roles.find(me.tenantId, id), (row) => (row ? Effect.succeed(toRole(row)) : notFound("role"))),
      update: (me, id, patch, client) =>
        Effect.gen(function*() {
          // Making a role all-powerful hands that power to its keys and people at once: the proof
          // creating such a key asks is asked here too. It is checked before the role's row is
          // locked (a wrong one is counted and audited, which a rolled-back transaction would undo),
          // and whether it was needed is decided again under the lock: a role narrowed meanwhile by
          // someone else is not raised again without it.
          const raising = patch.permissions !== undefined && isPowerful(patch.permissions)
          let proven = false
          if (raising || patch.currentPassword !== undefined || patch.totpCode !== undefined) {
            const current = yield* roles.find(me.tenantId, id)
            if (current && !current.is_system) {
              // A caller who may not grant it at all is told that first.
              if (raising) yield* refuseUngranted(me, patch.permissions!, current.permissions)
              proven = yield* auth.proveGrant(me, patch, raising && !isPowerful(current.permissions), client)
            }
          }
          const result = yield* roles.update(me.tenantId, id, (current) =>
            Effect.gen(function*() {
              if (current.is_system) return yield* systemRoleImmutable
              if (patch.permissions) yield* refuseUngranted(me, patch.permissions, current.permissions)
              if (raising && !proven && !isPowerful(current.permissions)) return yield* proofRequired(GRANT_PROOFS)
              // Only what differs is written: an update that changes nothing keeps updatedAt and is not audited.
              const permissions = patch.permissions && unique(patch.permissions)
              return {
                name: patch.name !== current.name ? patch.name : undefined,
                description: patch.description !== undefined && patch.description !== current.description ? patch.description : undefined,
                permissions: permissions && !sameSet(permissions, current.permissions) ? permissions : undefined
              }
            }))
          if (result === "not_found") return yield* notFound("role")
          if (result === "name_taken") return yield* nameTaken(patch.name!)
          const { before, after } = result
          if (before === after) return toRole(after)
          if (patch.permissions) {
            // Written: every node drops the role's keys and sessions from its cache, so they act with the new permissions at once.
            yield* Effect.forEach(yield* roles.liveKeyHashes(after.id), keys.invalidate, { discard: true })
            yield* Effect.forEach(yield* roles.sessionHolders(after.id), (identityId) => sessions.invalidate({ identityId }), { discard: true })
          }
          const view = (r: RoleRow) => ({ name: r.name, description: r.description, permissions: r.permissions })
          const changed = (["name", "description", "permissions"] as const).filter((k) => JSON.stringify(before[k]) !== JSON.stringify(after[k]))
          yield* audit.record(me, "role.update", after.id, { changed, before: view(before), after: view(after) })
          return toRole(after)
        }),
      remove: (me, id) =>
        Effect.gen(function*() {
          const result = yield* roles.remove(me.tenantId, id)
          if (result === "not_found") return yield* notFound("role")
          if (result === "system") return yield* systemRoleImmutable
          if ("inUse" in result) {
            return yield* fail(409, "role_in_use", "the role is still given to identities, API keys or pending invitations", {
              extra: { uses: result.inUse }
            })
          }
          const { deleted } = result
          yield* audit.record(me, "role.delete", deleted.id, { name: deleted.name, permissions: deleted.permissions })
          return { deleted: true as const, deletedAt: iso(deleted.deleted_at)!, id: deleted.id }
        })
    })
  })
)
