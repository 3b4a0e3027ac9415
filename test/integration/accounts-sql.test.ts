import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { describe, expect, it } from "vitest"
import { newId } from "../../src/ids.ts"
import { migrations, runMigrations } from "../../src/sql/migrate.ts"
import { TenantRepo, TenantRepoLive } from "../../src/sql/tenant-repo.ts"
import type { loadConfig } from "../../src/config.ts"
import { databaseLayer, testDatabases } from "../support/databases.ts"

const layerFor = (config: ReturnType<typeof loadConfig>) => TenantRepoLive.pipe(Layer.provideMerge(databaseLayer(config)))

/** A tenant with `credits`, bootstrapped straight through the repository. */
const newTenant = (repo: TenantRepo["Service"], credits: string) =>
  Effect.gen(function*() {
    const tenantId = newId("ten")
    yield* repo.bootstrap({
      tenantId,
      name: "t",
      isInternal: false,
      plan: "starter",
      credits,
      email: `${tenantId}@example.com`,
      passwordHash: null,
      apiKey: { id: newId("key"), prefix: "trawl_abcdef", hash: tenantId, rateLimitPerMinute: 600 }
    })
    return tenantId
  })

describe.each(testDatabases)("accounts SQL ($name)", (db) => {
  it("applies migrations once, also when several nodes start at the same time", async () => {
    const config = await db.config()
    const results = await Effect.runPromise(
      Effect.all([runMigrations, runMigrations, runMigrations], { concurrency: "unbounded" }).pipe(
        Effect.provide(layerFor(config)),
        Effect.scoped
      )
    )
    const applied = results.flat().map(([id]) => id)
    // each migration exactly once, though three runs raced
    expect(applied.sort((a, b) => a - b)).toEqual(Object.keys(migrations).map((name) => Number(name.slice(0, 4))))
    const again = await Effect.runPromise(runMigrations.pipe(Effect.provide(layerFor(config)), Effect.scoped))
    expect(again).toEqual([])
  }, 60_000)

  it("never lets concurrent debits take the balance below zero, and keeps the ledger consistent", async () => {
    const config = await db.config()
    await Effect.runPromise(
      Effect.gen(function*() {
        yield* runMigrations
        const repo = yield* TenantRepo
        const tenantId = yield* newTenant(repo, "1.00")
        const debits = Array.from({ length: 15 }, () =>
          repo.adjust({ id: newId("txn"), tenantId, type: "debit", amount: "-0.10", note: null })
        )
        const results = yield* Effect.all(debits, { concurrency: "unbounded" })
        expect(results.filter((r) => r.ok)).toHaveLength(10)
        expect(results.filter((r) => !r.ok)).toHaveLength(5)
        expect(yield* repo.balance(tenantId)).toBe("0.00")
        // Every entry's balanceAfter is the previous one plus its amount.
        const ledger = (yield* repo.transactions(tenantId, {}, [{ field: "createdAt", dir: "desc" }], 0, 100)).items.slice().reverse() // oldest first
        let running = 0
        for (const entry of ledger) {
          running = Math.round((running + Number(entry.amount)) * 10_000) / 10_000
          expect(Number(entry.balanceAfter)).toBe(running)
        }
        // Re-applying an entry id changes nothing.
        const first = ledger[1]!
        const again = yield* repo.adjust({ id: first.id, tenantId, type: "debit", amount: "-0.10", note: null })
        expect(again.ok && again.transaction.id).toBe(first.id)
        expect(yield* repo.balance(tenantId)).toBe("0.00")
        const sql = yield* SqlClient.SqlClient
        const [count] = yield* sql<{ n: string }>`SELECT count(*) AS n FROM credit_transactions WHERE tenant_id = ${tenantId}`
        expect(Number(count!.n)).toBe(11)
      }).pipe(Effect.provide(layerFor(config)), Effect.scoped)
    )
  }, 60_000)

  it("charges each ended job once, at most what the balance holds, oldest first", async () => {
    const config = await db.config()
    await Effect.runPromise(
      Effect.gen(function*() {
        yield* runMigrations
        const repo = yield* TenantRepo
        const sql = yield* SqlClient.SqlClient
        const tenantId = yield* newTenant(repo, "0.0025")
        const job = (id: string, status: string, units: number | null, endedAgoMs: number) =>
          sql`INSERT INTO jobs (id, tenant_id, url, normalized_url, domain_id, status, priority, timeout_ms, result, finished_at)
              VALUES (${id}, ${tenantId}, 'http://a.test/', 'http://a.test/', 'a.test', ${status}, 0, 30000,
                      ${units === null ? null : JSON.stringify({ units })}::jsonb,
                      ${status === "queued" ? null : new Date(Date.now() - endedAgoMs)})`
        yield* job(`${tenantId}-old`, "done", 10, 120_000)
        yield* job(`${tenantId}-new`, "failed", 40, 1_000)
        yield* job(`${tenantId}-unpaid`, "done", 5, 800)
        yield* job(`${tenantId}-free`, "dead", 0, 500)
        yield* job(`${tenantId}-running`, "queued", null, 0)
        expect(yield* repo.uncharged(tenantId)).toEqual({ jobs: 5, extractions: 0 })
        // Only a tenant whose ended job has waited long enough is named to the sweeper.
        expect(yield* repo.tenantsWithUnchargedWork(60_000, 1000)).toContain(tenantId)
        const price = (row: { result: unknown }) => ({ units: (row.result as { units: number }).units, note: "test" })
        // Concurrent settlements charge each job once.
        const runs = yield* Effect.all([1, 2, 3].map(() => repo.settle(tenantId, "jobs", 10, price)), { concurrency: "unbounded" })
        expect(runs.map((r) => r.settled).sort()).toEqual([0, 0, 4])
        expect(yield* repo.balance(tenantId)).toBe("0.00")
        expect((yield* repo.uncharged(tenantId)).jobs).toBe(1)
        expect(yield* repo.tenantsWithUnchargedWork(0, 1000)).not.toContain(tenantId)
        const debits = (yield* repo.transactions(tenantId, { type: ["debit"] }, [{ field: "createdAt", dir: "desc" }], 0, 10)).items.slice().reverse()
        // The older job in full, the newer one with what was left, the next one with nothing left (noted
        // all the same, so the ledger shows the unpaid use), the free one not at all.
        expect(debits.map((d) => [d.resourceId, d.amount, d.balanceAfter])).toEqual([
          [`${tenantId}-old`, "-0.001", "0.0015"],
          [`${tenantId}-new`, "-0.0015", "0.00"],
          [`${tenantId}-unpaid`, "0.00", "0.00"]
        ])
        expect(debits[1]!.note).toMatch(/0\.0025 EUR not covered/)
        expect(debits[2]!.note).toMatch(/\(0\.0005 EUR not covered by the balance\)$/)
        const charged = yield* sql<{ id: string; charged: string }>`SELECT id, charged FROM jobs WHERE tenant_id = ${tenantId} AND settled_at IS NOT NULL ORDER BY id`
        expect(charged.map((r) => Number(r.charged))).toEqual([0, 0.0015, 0.001, 0])
      }).pipe(Effect.provide(layerFor(config)), Effect.scoped)
    )
  }, 60_000)
})
