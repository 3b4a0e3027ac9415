import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { describe, expect, it } from "vitest"
import { newId } from "../../src/ids.ts"
import { runMigrations } from "../../src/sql/migrate.ts"
import { SessionRepo, SessionRepoLive } from "../../src/sql/session-repo.ts"
import { TenantRepo, TenantRepoLive } from "../../src/sql/tenant-repo.ts"
import { databaseLayer, testDatabases } from "../support/databases.ts"

describe.each(testDatabases)("session SQL ($name)", (db) => {
  it("opens a session and its audit entry in one statement, with the values the caller made", async () => {
    const config = await db.config()
    const layer = Layer.mergeAll(SessionRepoLive, TenantRepoLive).pipe(Layer.provideMerge(databaseLayer(config)))
    await Effect.runPromise(Effect.gen(function*() {
      yield* runMigrations
      const sql = yield* SqlClient.SqlClient
      const tenantId = newId("ten")
      const { ownerIdentityId: identityId } = yield* (yield* TenantRepo).bootstrap({
        tenantId,
        name: "t",
        isInternal: false,
        plan: "starter",
        credits: "0.00",
        email: `${tenantId}@example.com`,
        passwordHash: null,
        apiKey: { id: newId("key"), prefix: "trawl_abcdef", hash: tenantId, rateLimitPerMinute: 600 }
      })
      const repo = yield* SessionRepo
      const expiresAt = new Date(Date.now() + 3_600_000)
      const session = { id: newId("ses"), tokenHash: `hash-${tenantId}`, tenantId, identityId, ip: "192.0.2.7", userAgent: "ua", expiresAt }
      yield* repo.insert(session, { action: "login.success", data: { method: "password" } })
      const found = (yield* repo.authByHashes([session.tokenHash])).get(session.tokenHash)
      expect(found).toMatchObject({ id: session.id, tenant_id: tenantId, identity_id: identityId })
      // The answer to the client is made from `expiresAt`: the stored time is the same instant.
      expect(new Date(found!.expires_at).getTime()).toBe(expiresAt.getTime())
      const audit = yield* sql<{ actor_id: string; ip: string; action: string; target_id: string; data: unknown }>`
        SELECT actor_id, ip, action, target_id, data FROM audit_log WHERE tenant_id = ${tenantId} AND action = 'login.success'`
      expect(audit).toEqual([{ actor_id: identityId, ip: "192.0.2.7", action: "login.success", target_id: session.id, data: { method: "password" } }])
      // Without an audit entry (an invitation's first session): only the session.
      const plain = { ...session, id: newId("ses"), tokenHash: `hash2-${tenantId}` }
      yield* repo.insert(plain)
      // Several hashes in one read: each live one by its hash, an unknown one left out.
      const both = yield* repo.authByHashes([session.tokenHash, plain.tokenHash, "no-such-hash"])
      expect([...both.keys()].sort()).toEqual([session.tokenHash, plain.tokenHash].sort())
      expect(both.get(plain.tokenHash)).toMatchObject({ id: plain.id, token_hash: plain.tokenHash })
      expect(yield* sql`SELECT 1 FROM audit_log WHERE target_id = ${plain.id}`).toEqual([])
    }).pipe(Effect.provide(layer), Effect.scoped))
  }, 120_000)
})
