import { Effect, Layer } from "effect"
import { Migrator, SqlClient } from "effect/sql"
import { describe, expect, it } from "vitest"
import { newId } from "../../src/ids.ts"
import { migrations, runMigrations } from "../../src/sql/migrate.ts"
import { TenantRepo, TenantRepoLive } from "../../src/sql/tenant-repo.ts"
import { databaseLayer, testDatabases } from "../support/databases.ts"

/** The migrations before invitations and delegations named their people from the start (0027). */
const before = Object.fromEntries(Object.entries(migrations).filter(([name]) => name < "0027"))

describe.each(testDatabases)("invitee and delegate ids SQL ($name)", (db) => {
  it("gives invitations and e-mail delegations made before an id for the person they name, and requires one from then on", async () => {
    const config = await db.config()
    await Effect.runPromise(
      Effect.gen(function*() {
        yield* Migrator.make({})({ loader: Migrator.fromRecord(before) })
        const sql = yield* SqlClient.SqlClient
        const tenantId = newId("ten")
        yield* (yield* TenantRepo).bootstrap({
          tenantId,
          name: "before",
          isInternal: false,
          plan: "starter",
          credits: "1.00",
          email: `${tenantId}@example.com`,
          passwordHash: null,
          apiKey: { id: newId("key"), prefix: "trawl_abcdef", hash: tenantId, rateLimitPerMinute: 600 }
        })
        const [owner] = yield* sql<{ id: string; org: string; role: string }>`
          SELECT i.id, o.id AS org, i.default_role_id AS role FROM identities i JOIN organizations o ON o.tenant_id = i.tenant_id
          WHERE i.tenant_id = ${tenantId} AND i.type = 'user'`
        const invitation = newId("inv"), delegation = newId("dlg")
        yield* sql`INSERT INTO invitations (id, tenant_id, organization_id, email, role_id) VALUES (${invitation}, ${tenantId}, ${owner!.org}, 'new@example.com', ${owner!.role})`
        yield* sql`INSERT INTO delegations (id, tenant_id, delegator_id, delegate_email, reason, expires_at)
                   VALUES (${delegation}, ${tenantId}, ${owner!.id}, 'new@example.com', 'cover', now() + interval '1 day')`

        yield* runMigrations
        const [inv] = yield* sql<{ user_id: string }>`SELECT user_id FROM invitations WHERE id = ${invitation}`
        const [dlg] = yield* sql<{ delegate_id: string }>`SELECT delegate_id FROM delegations WHERE id = ${delegation}`
        expect(inv!.user_id).toMatch(/^idt_/)
        expect(dlg!.delegate_id).toMatch(/^idt_/)
        // Neither names an identity that exists yet, and neither may be left without one.
        expect(yield* sql`SELECT 1 FROM identities WHERE id IN (${inv!.user_id}, ${dlg!.delegate_id})`).toEqual([])
        const refused = yield* Effect.exit(sql`INSERT INTO invitations (id, tenant_id, organization_id, email, role_id) VALUES (${newId("inv")}, ${tenantId}, ${owner!.org}, 'x@example.com', ${owner!.role})`)
        expect(refused._tag).toBe("Failure")
      }).pipe(Effect.provide(TenantRepoLive.pipe(Layer.provideMerge(databaseLayer(config)))), Effect.scoped)
    )
  }, 60_000)
})
