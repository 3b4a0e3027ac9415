import { describe, expect, it } from "vitest"
import { planRefusal } from "../../src/billing/plan-gate.ts"
import { planRefusalCodes } from "../../src/billing/plan-rules.ts"
import { monthlyUnits, planQuota, subscriptionFaults } from "../../src/billing/plans.ts"
import { periodBoundary, prorationUnits, renewalEntryId } from "../../src/billing/subscriptions.ts"
import { loadConfig } from "../../src/config.ts"

const at = (iso: string) => Date.parse(iso)

describe("subscription periods", () => {
  it("are calendar months from the anchor, a day past a month's end being its last day", () => {
    const jan31 = at("2026-01-31T10:00:00.000Z")
    expect(new Date(periodBoundary(jan31, 1, undefined)).toISOString()).toBe("2026-02-28T10:00:00.000Z")
    expect(new Date(periodBoundary(jan31, 2, undefined)).toISOString()).toBe("2026-03-31T10:00:00.000Z")
    expect(new Date(periodBoundary(jan31, 13, undefined)).toISOString()).toBe("2027-02-28T10:00:00.000Z")
    expect(new Date(periodBoundary(at("2027-12-15T00:00:00.000Z"), 1, undefined)).toISOString()).toBe("2028-01-15T00:00:00.000Z")
    expect(new Date(periodBoundary(at("2028-01-29T00:00:00.000Z"), 1, undefined)).toISOString()).toBe("2028-02-29T00:00:00.000Z")
  })

  it("are SUBSCRIPTION_PERIOD_SECONDS long when a test sets it, which production refuses", () => {
    expect(periodBoundary(1000, 3, 5)).toBe(16_000)
    expect(loadConfig({ SUBSCRIPTION_PERIOD_SECONDS: "3" }).subscriptionPeriodSeconds).toBe(3)
    expect(loadConfig({}).subscriptionPeriodSeconds).toBeUndefined()
    expect(() => loadConfig({ SUBSCRIPTION_PERIOD_SECONDS: "0" })).toThrow(/SUBSCRIPTION_PERIOD_SECONDS/)
    expect(() => loadConfig({ SUBSCRIPTION_PERIOD_SECONDS: "1.5" })).toThrow(/SUBSCRIPTION_PERIOD_SECONDS/)
    expect(() => loadConfig({ NODE_ENV: "production", INTERNAL_TOKEN: "x".repeat(32), SECRET_KEY: "a".repeat(64), SUBSCRIPTION_PERIOD_SECONDS: "3" }))
      .toThrow(/SUBSCRIPTION_PERIOD_SECONDS cannot be set/)
  })
})

describe("proration", () => {
  it("is the fee difference times the share of the period left, rounded to 0.0001 EUR", () => {
    // Half the period left, 40.00 EUR more a month: 20.00 now.
    expect(prorationUnits(90_000, 490_000, 0, 1000, 500)).toBe(200_000)
    expect(prorationUnits(490_000, 90_000, 0, 1000, 500)).toBe(-200_000)
    expect(prorationUnits(90_000, 90_000, 0, 1000, 500)).toBe(0)
    // A third left: rounded.
    expect(prorationUnits(0, 10_000, 0, 3000, 2000)).toBe(3333)
    // Outside the period: nothing left, or all of it.
    expect(prorationUnits(0, 10_000, 0, 1000, 2000)).toBe(0)
    expect(prorationUnits(0, 10_000, 1000, 2000, 0)).toBe(10_000)
  })

  it("and a renewal's ledger entry id is one per tenant and period", () => {
    expect(renewalEntryId("ten_a", 1000)).toBe(renewalEntryId("ten_a", 1000))
    expect(renewalEntryId("ten_a", 1000)).not.toBe(renewalEntryId("ten_a", 2000))
    expect(renewalEntryId("ten_a", 1000)).not.toBe(renewalEntryId("ten_b", 1000))
    expect(renewalEntryId("ten_a", 1000)).toMatch(/^txn_[0-9a-hjkmnp-tv-z]{26}$/)
  })
})

describe("the catalogue", () => {
  it("prices a month of a plan with its add-ons, and raises quotas by them", () => {
    expect(monthlyUnits("starter", [])).toBe(90_000)
    expect(monthlyUnits("pro", [{ key: "extra-concurrent-jobs", quantity: 2 }, { key: "extra-api-keys", quantity: 1 }])).toBe(490_000 + 40_000 + 10_000)
    expect(planQuota("starter", "scraper.jobs.concurrent", [{ key: "extra-concurrent-jobs", quantity: 2 }])).toBe(70)
    expect(planQuota("starter", "scraper.jobs.daily", [{ key: "extra-concurrent-jobs", quantity: 2 }])).toBe(10_000)
    // A plan no longer in the catalogue reads as the default one.
    expect(planQuota("retired", "scraper.jobs.concurrent")).toBe(50)
  })

  it("names every fault of a subscription at its path", () => {
    expect(subscriptionFaults("starter", [{ key: "extra-api-keys", quantity: 10 }])).toEqual([])
    expect(subscriptionFaults("internal", []).map((f) => f.path)).toEqual(["plan"])
    expect(subscriptionFaults("starter", [
      { key: "nope", quantity: 1 },
      { key: "extra-daily-extractions", quantity: 1 },
      { key: "extra-api-keys", quantity: 11 },
      { key: "extra-api-keys", quantity: 1 }
    ]).map((f) => f.path)).toEqual(["addOns.0.key", "addOns.1.key", "addOns.2.quantity", "addOns.3.key"])
  })
})

describe("the plan gate", () => {
  const active = (plan: string) => ({ plan, status: "active" as const })
  it("refuses a service the plan lacks, reads included", () => {
    expect(planRefusal(active("free"), "extractor:extractions:write")?.code).toBe("service_disabled_on_plan")
    expect(planRefusal(active("free"), "extractor:configs:read")?.code).toBe("service_disabled_on_plan")
    expect(planRefusal(active("free"), "network:ip:read")?.code).toBe("service_disabled_on_plan")
    expect(planRefusal(active("free"), "scraper:jobs:write")).toBeUndefined()
    expect(planRefusal(active("starter"), "network:ip:read")).toBeUndefined()
  })

  it("refuses paid work, and only that, while the subscription is not active", () => {
    for (const status of ["past_due", "cancelled"] as const) {
      const sub = { plan: "starter", status }
      expect(planRefusal(sub, "scraper:jobs:write")?.status).toBe(403)
      expect(planRefusal(sub, "scraper:jobs:write")?.code).toBe("no_active_plan")
      expect(planRefusal(sub, "extractor:extractions:write")?.code).toBe("no_active_plan")
      expect(planRefusal(sub, "network:ip:read")?.code).toBe("no_active_plan")
      expect(planRefusal(sub, "scraper:jobs:read")).toBeUndefined()
      expect(planRefusal(sub, "page-history:pages:read")).toBeUndefined()
      expect(planRefusal(sub, "billing:transactions:read")).toBeUndefined()
      expect(planRefusal(sub, "iam:api-keys:write")).toBeUndefined()
    }
    // A tenant without a subscription row (only the internal one can be) is not gated.
    expect(planRefusal(undefined, "scraper:jobs:write")).toBeUndefined()
  })

  it("can answer exactly the codes the OpenAPI document lists for a permission (planRefusalCodes)", () => {
    const permissions = ["scraper:jobs:write", "scraper:jobs:read", "extractor:configs:read", "extractor:extractions:write", "network:ip:read",
      "page-history:pages:read", "billing:transactions:read", "iam:api-keys:write", "any valid key or session"]
    const subscriptions = ["free", "starter"].flatMap((plan) => (["active", "past_due", "cancelled"] as const).map((status) => ({ plan, status })))
    for (const required of permissions) {
      const answered = new Set(subscriptions.map((sub) => planRefusal(sub, required)?.code).filter((c) => c !== undefined))
      expect([...answered].sort(), required).toEqual([...planRefusalCodes(required)].sort())
    }
  })
})
