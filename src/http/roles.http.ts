import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ApiKeyAuthenticator } from "../iam/api-key-auth.ts"
import { allows } from "../iam/permissions.ts"
import { CurrentPrincipal, type Principal } from "../iam/principal.ts"
import { iso } from "../schema/common.ts"
import { pageOf } from "../schema/envelope.ts"
import { type ErrorDetail, fail, notFound } from "../schema/errors.ts"
import type { Role } from "../schema/iam.ts"
import { AuditLog } from "../sql/audit-log.ts"
import { RoleRepo, type RoleRow } from "../sql/role-repo.ts"
import { Api } from "./api.ts"
import { queryLimit } from "./list-query.ts"

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
 * roles may narrow one. `cross_tenant:*:*` belongs to the internal tenant alone.
 */
const refuseUngranted = (me: Principal, wanted: ReadonlyArray<string>, granted: ReadonlyArray<string>) => {
  const indexes = (test: (p: string) => boolean) => wanted.flatMap((p, i) => (test(p) ? [i] : []))
  const reserved = indexes((p) => p.startsWith("cross_tenant:") && !me.isInternalTenant)
  if (reserved.length > 0) {
    return fail(403, "forbidden", "cross_tenant:*:* is reserved to the internal tenant", {
      details: at(reserved, "reserved", "only roles of the internal tenant may hold it")
    })
  }
  const ungranted = indexes((p) => !allows(granted, p) && !allows(me.permissions, p))
  if (ungranted.length > 0) {
    return fail(403, "forbidden", "the role would grant permissions this key does not hold", {
      details: at(ungranted, "not_held", "this key does not hold this permission")
    })
  }
  return Effect.void
}

/** Each permission once, in the order given. */
const unique = (permissions: ReadonlyArray<string>) => [...new Set(permissions)]

export const RolesHandlers = HttpApiBuilder.group(
  Api,
  "roles",
  Effect.fn(function*(handlers) {
    const roles = yield* RoleRepo
    const audit = yield* AuditLog
    const authenticator = yield* ApiKeyAuthenticator

    return handlers
      .handle("create", ({ payload }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          yield* refuseUngranted(me, payload.permissions, [])
          const row = yield* roles.insert({
            tenantId: me.tenantId,
            name: payload.name,
            description: payload.description ?? null,
            permissions: unique(payload.permissions)
          })
          if (row === "name_taken") return yield* nameTaken(payload.name)
          yield* audit.record(me, "role.create", row.id, { name: row.name, description: row.description, permissions: row.permissions })
          return toRole(row)
        }))
      .handle("list", ({ query }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const limit = yield* queryLimit(query)
          const offset = query.offset ?? 0
          const page = yield* roles.list(me.tenantId, offset, limit)
          return pageOf(page.items.map(toRole), offset, limit, page.total)
        }))
      .handle("get", ({ params }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const row = yield* roles.find(me.tenantId, params.id)
          return row ? toRole(row) : yield* notFound("role")
        }))
      .handle("update", ({ params, payload }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const result = yield* roles.update(me.tenantId, params.id, (current) =>
            Effect.gen(function*() {
              if (current.is_system) return yield* systemRoleImmutable
              if (payload.permissions) yield* refuseUngranted(me, payload.permissions, current.permissions)
              return { name: payload.name, description: payload.description, permissions: payload.permissions && unique(payload.permissions) }
            }))
          if (result === "not_found") return yield* notFound("role")
          if (result === "name_taken") return yield* nameTaken(payload.name!)
          const { before, after } = result
          if (before === after) return toRole(after)
          if (payload.permissions) {
            // Written: every node drops the role's keys from its cache, so they act with the new permissions at once.
            const hashes = yield* roles.liveKeyHashes(after.id)
            yield* Effect.forEach(hashes, authenticator.invalidate, { discard: true })
          }
          const view = (r: RoleRow) => ({ name: r.name, description: r.description, permissions: r.permissions })
          yield* audit.record(me, "role.update", after.id, { changed: Object.keys(payload), before: view(before), after: view(after) })
          return toRole(after)
        }))
      .handle("remove", ({ params }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const result = yield* roles.remove(me.tenantId, params.id)
          if (result === "not_found") return yield* notFound("role")
          if (result === "system") return yield* systemRoleImmutable
          if ("inUse" in result) {
            return yield* fail(409, "role_in_use", "the role is still given to identities, API keys or pending invitations", {
              extra: { uses: result.inUse }
            })
          }
          const { deleted } = result
          yield* audit.record(me, "role.delete", deleted.id, { name: deleted.name, permissions: deleted.permissions })
          return { deleted: true, deletedAt: iso(deleted.deleted_at)!, id: deleted.id }
        }))
  })
)
