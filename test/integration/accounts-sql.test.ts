import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { describe, expect, it } from "vitest"
import { newId } from "../../src/ids.ts"
import { migrations, runMigrations } from "../../src/sql/migrate.ts"
import { TenantRepo, TenantRepoLive } from "../../src/sql/tenant-repo.ts"
import type { loadConfig } from "../../src/config.ts"
import { databaseLayer, testDatabases } from "../support/databases.ts"

const layerFor = (config: ReturnType<typeof loadConfig>) => TenantRepoLive.pipe(Layer.provideMerge(databaseLayer(config)))

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
        const tenantId = newId("ten")
        yield* repo.bootstrap({
          tenantId,
          name: "t",
          isInternal: false,
          plan: "starter",
          credits: "1.00",
          email: `${tenantId}@example.com`,
          passwordHash: null,
          apiKey: { id: newId("key"), prefix: "trawl_abcdef", hash: tenantId, rateLimitPerMinute: 600 }
        })
        const debits = Array.from({ length: 15 }, () =>
          repo.adjust({ id: newId("txn"), tenantId, type: "debit", amount: "-0.10", note: null })
        )
        const results = yield* Effect.all(debits, { concurrency: "unbounded" })
        expect(results.filter((r) => r.ok)).toHaveLength(10)
        expect(results.filter((r) => !r.ok)).toHaveLength(5)
        expect(yield* repo.balance(tenantId)).toBe("0.00")
        // Every entry's balanceAfter is the previous one plus its amount.
        const ledger = (yield* repo.transactions(tenantId, {}, 0, 100)).items.slice().reverse() // oldest first
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
})
