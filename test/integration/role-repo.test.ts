import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { describe, expect, it } from "vitest"
import type { loadConfig } from "../../src/config.ts"
import { newId } from "../../src/ids.ts"
import { ApiKeyRepo, ApiKeyRepoLive } from "../../src/sql/api-key-repo.ts"
import { runMigrations } from "../../src/sql/migrate.ts"
import { RoleRepo, RoleRepoLive } from "../../src/sql/role-repo.ts"
import { TenantRepo, TenantRepoLive } from "../../src/sql/tenant-repo.ts"
import { databaseLayer, testDatabases } from "../support/databases.ts"

const layerFor = (config: ReturnType<typeof loadConfig>) =>
  Layer.mergeAll(TenantRepoLive, RoleRepoLive, ApiKeyRepoLive).pipe(Layer.provideMerge(databaseLayer(config)))

/** A bootstrapped tenant: its id, organization and owner. */
const newTenant = Effect.gen(function*() {
  const tenants = yield* TenantRepo
  const tenantId = newId("ten")
  return yield* tenants.bootstrap({
    tenantId,
    name: "t",
    isInternal: false,
    plan: "starter",
    credits: "0",
    email: `${tenantId}@example.com`,
    passwordHash: null,
    apiKey: { id: newId("key"), prefix: "trawl_abcdef", hash: tenantId, rateLimitPerMinute: 600 }
  })
})

const newKey = (tenantId: string, identityId: string, roleId: string) => ({
  id: newId("key"),
  tenantId,
  identityId,
  roleId,
  name: "k",
  description: null,
  keyPrefix: "trawl_abcdef",
  keyHash: newId("hash"),
  rateLimitPerMinute: 600,
  expiresAt: null
})

const run = <A, E>(config: ReturnType<typeof loadConfig>, body: Effect.Effect<A, E, RoleRepo | TenantRepo | ApiKeyRepo | SqlClient.SqlClient>) =>
  Effect.runPromise(Effect.gen(function*() {
    yield* runMigrations
    return yield* body
  }).pipe(Effect.provide(layerFor(config)), Effect.scoped))

describe.each(testDatabases)("roles SQL ($name)", (db) => {
  it("keeps a role while anything holds it, counting each kind of use, and deletes it after", async () => {
    const config = await db.config()
    await run(config, Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const roles = yield* RoleRepo
      const keys = yield* ApiKeyRepo
      const t = yield* newTenant
      const role = yield* roles.insert({ tenantId: t.tenantId, name: "custom", description: null, permissions: ["scraper:jobs:read"] })
      if (role === "name_taken") throw new Error("name taken")
      const none = { identityAccesses: 0, apiKeys: 0, defaultRoles: 0, invitations: 0 }
      const refusedWith = (uses: Partial<typeof none>) =>
        Effect.map(roles.remove(t.tenantId, role.id), (result) => expect(result).toEqual({ inUse: { ...none, ...uses } }))

      yield* sql`UPDATE identity_accesses SET role_id = ${role.id} WHERE identity_id = ${t.ownerIdentityId}`
      yield* refusedWith({ identityAccesses: 1 })
      yield* sql`UPDATE identity_accesses SET role_id = ${t.roleId} WHERE identity_id = ${t.ownerIdentityId}`

      yield* sql`UPDATE identities SET default_role_id = ${role.id} WHERE id = ${t.ownerIdentityId}`
      yield* refusedWith({ defaultRoles: 1 })
      yield* sql`UPDATE identities SET default_role_id = ${t.roleId} WHERE id = ${t.ownerIdentityId}`

      const invitation = newId("inv")
      yield* sql`INSERT INTO invitations (id, tenant_id, organization_id, email, role_id, user_id)
                 VALUES (${invitation}, ${t.tenantId}, ${t.organizationId}, 'x@example.com', ${role.id}, ${newId("idt")})`
      yield* refusedWith({ invitations: 1 })
      // An answered invitation keeps its role for the record, without holding it.
      yield* sql`UPDATE invitations SET status = 'accepted' WHERE id = ${invitation}`

      const key = yield* keys.insert(newKey(t.tenantId, t.ownerIdentityId, role.id), 100)
      if (typeof key === "string") throw new Error(key)
      yield* refusedWith({ apiKeys: 1 })
      yield* keys.revoke(t.tenantId, t.ownerIdentityId, key.id)

      const removed = yield* roles.remove(t.tenantId, role.id)
      expect(removed).toMatchObject({ deleted: { id: role.id, name: "custom" } })
      expect(yield* roles.find(t.tenantId, role.id)).toBeUndefined()
      expect(yield* roles.remove(t.tenantId, role.id)).toBe("not_found")
      expect((yield* roles.list(t.tenantId, 0, 50)).total).toBe(4)
      // The name is free again; a key of the deleted role is refused.
      expect(yield* roles.insert({ tenantId: t.tenantId, name: "custom", description: null, permissions: ["scraper:jobs:read"] })).toMatchObject({ name: "custom" })
      expect(yield* keys.insert(newKey(t.tenantId, t.ownerIdentityId, role.id), 100)).toBe("role_missing")
      // System roles are never deleted, used or not.
      const system = (yield* roles.list(t.tenantId, 0, 50)).items.find((r) => r.name === "read")!
      expect(yield* roles.remove(t.tenantId, system.id)).toBe("system")
      // Another tenant's role is not found.
      const other = yield* newTenant
      expect(yield* roles.remove(other.tenantId, role.id)).toBe("not_found")
      expect(yield* roles.find(other.tenantId, role.id)).toBeUndefined()
    }))
  }, 60_000)

  it("lets either a deletion or a new key of the role win a race, never both", async () => {
    const config = await db.config()
    await run(config, Effect.gen(function*() {
      const roles = yield* RoleRepo
      const keys = yield* ApiKeyRepo
      const t = yield* newTenant
      for (let i = 0; i < 8; i++) {
        const role = yield* roles.insert({ tenantId: t.tenantId, name: `race ${i}`, description: null, permissions: ["scraper:jobs:read"] })
        if (role === "name_taken") throw new Error("name taken")
        const [removed, key] = yield* Effect.all([
          roles.remove(t.tenantId, role.id),
          keys.insert(newKey(t.tenantId, t.ownerIdentityId, role.id), 1000)
        ], { concurrency: "unbounded" })
        if (typeof key === "string") {
          expect(key).toBe("role_missing")
          expect(removed).toHaveProperty("deleted")
        } else {
          expect(removed).toEqual({ inUse: { identityAccesses: 0, apiKeys: 1, defaultRoles: 0, invitations: 0 } })
          expect(yield* roles.find(t.tenantId, role.id)).toBeDefined()
        }
      }
    }))
  }, 60_000)

  it("answers a rename onto a taken name as name_taken, and writes nothing a refused decision wanted", async () => {
    const config = await db.config()
    await run(config, Effect.gen(function*() {
      const roles = yield* RoleRepo
      const t = yield* newTenant
      const a = yield* roles.insert({ tenantId: t.tenantId, name: "a", description: null, permissions: ["scraper:jobs:read"] })
      const b = yield* roles.insert({ tenantId: t.tenantId, name: "b", description: null, permissions: ["scraper:jobs:read"] })
      if (a === "name_taken" || b === "name_taken") throw new Error("name taken")
      expect(yield* roles.insert({ tenantId: t.tenantId, name: "a", description: null, permissions: ["scraper:jobs:read"] })).toBe("name_taken")
      expect(yield* roles.update(t.tenantId, b.id, () => Effect.succeed({ name: "a" }))).toBe("name_taken")
      const refused = yield* Effect.flip(roles.update(t.tenantId, b.id, () => Effect.fail("no" as const)))
      expect(refused).toBe("no")
      expect((yield* roles.find(t.tenantId, b.id))!.name).toBe("b")
      const changed = yield* roles.update(t.tenantId, b.id, (current) => Effect.succeed({ permissions: [...current.permissions, "network:ip:read"] }))
      expect(changed).toMatchObject({ before: { permissions: ["scraper:jobs:read"] }, after: { name: "b", permissions: ["scraper:jobs:read", "network:ip:read"] } })
      expect(yield* roles.update(t.tenantId, newId("role"), () => Effect.succeed({}))).toBe("not_found")
    }))
  }, 60_000)
})
