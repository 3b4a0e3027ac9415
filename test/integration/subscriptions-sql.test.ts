import { Effect, Layer } from "effect"
import { Migrator } from "effect/sql"
import { describe, expect, it } from "vitest"
import { newId } from "../../src/ids.ts"
import { migrations, runMigrations } from "../../src/sql/migrate.ts"
import { SubscriptionRepo, SubscriptionRepoLive } from "../../src/sql/subscription-repo.ts"
import { TenantRepo, TenantRepoLive } from "../../src/sql/tenant-repo.ts"
import type { loadConfig } from "../../src/config.ts"
import { databaseLayer, testDatabases } from "../support/databases.ts"

const layerFor = (config: ReturnType<typeof loadConfig>) =>
  Layer.mergeAll(TenantRepoLive, SubscriptionRepoLive).pipe(Layer.provideMerge(databaseLayer(config)))

/** The migrations before subscriptions existed. */
const before = Object.fromEntries(Object.entries(migrations).filter(([name]) => name < "0023"))

describe.each(testDatabases)("subscriptions SQL ($name)", (db) => {
  it("gives every tenant that existed before subscriptions one of its plan, active from the migration, raised quotas and all", async () => {
    const config = await db.config()
    await Effect.runPromise(
      Effect.gen(function*() {
        yield* Migrator.make({})({ loader: Migrator.fromRecord(before) })
        const repo = yield* TenantRepo
        const ids = { starter: newId("ten"), pro: newId("ten") }
        for (const [plan, tenantId] of Object.entries(ids)) {
          yield* repo.bootstrap({
            tenantId,
            name: plan,
            isInternal: false,
            plan,
            credits: "1.00",
            email: `${tenantId}@example.com`,
            passwordHash: null,
            apiKey: { id: newId("key"), prefix: "trawl_abcdef", hash: tenantId, rateLimitPerMinute: 600 }
          })
        }
        const migratedAt = Date.now()
        // 0023 adds subscriptions; any later migration runs after it.
        expect((yield* runMigrations).map(([id]) => id)[0]).toBe(23)
        const subscriptions = yield* SubscriptionRepo
        for (const [plan, tenantId] of Object.entries(ids)) {
          const sub = (yield* subscriptions.find(tenantId))!
          expect(sub).toMatchObject({ tenantId, plan, status: "active", addOns: [], periodIndex: 0, renewalScheduledFor: null })
          expect(Math.abs(sub.currentPeriodStart - migratedAt)).toBeLessThan(60_000)
          const days = (sub.currentPeriodEnd - sub.currentPeriodStart) / 86_400_000
          expect(days).toBeGreaterThanOrEqual(28)
          expect(days).toBeLessThanOrEqual(31)
        }
        // Their renewals are the start-up catch-up's to schedule.
        expect((yield* subscriptions.unscheduled(10)).map((s) => s.tenantId).sort()).toEqual(Object.values(ids).sort())
        // Quotas follow the subscription's plan and add-ons.
        expect(yield* repo.quotaLimit(ids.pro, "scraper.jobs.concurrent")).toBe(200)
        yield* subscriptions.change(ids.starter, { plan: "starter", addOns: [{ key: "extra-concurrent-jobs", quantity: 2 }], status: "active", periodPaidUnits: 0 })
        expect(yield* repo.quotaLimit(ids.starter, "scraper.jobs.concurrent")).toBe(70)
        yield* repo.setQuota(ids.starter, "scraper.jobs.concurrent", 3)
        expect(yield* repo.quotaLimit(ids.starter, "scraper.jobs.concurrent")).toBe(3)
        // The tenant's own row names the plan it has now.
        expect((yield* repo.find(ids.starter))!.plan).toBe("starter")
        expect(yield* subscriptions.ownerEmail(ids.pro)).toBe(`${ids.pro}@example.com`)
      }).pipe(Effect.provide(layerFor(config)), Effect.scoped)
    )
  }, 60_000)
})
