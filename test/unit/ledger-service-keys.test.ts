import { describe, expect, it } from "vitest"
import { EXTRACTION_SERVICE_KEY, IP_LOOKUP_SERVICE_KEY, JOB_SERVICE_KEY, MAP_SERVICE_KEY, priceList } from "../../src/billing/pricing.ts"
import { SUBSCRIPTION_SERVICE_KEY } from "../../src/billing/subscriptions.ts"
import { LEDGER_SERVICE_KEYS } from "../../src/schema/tenant.ts"

describe("ledger service keys", () => {
  it("are the services that write ledger entries, so a filter by any of them can find entries", () => {
    expect([...LEDGER_SERVICE_KEYS].sort()).toEqual([JOB_SERVICE_KEY, MAP_SERVICE_KEY, EXTRACTION_SERVICE_KEY, IP_LOOKUP_SERVICE_KEY, SUBSCRIPTION_SERVICE_KEY].sort())
    // Every per-call price is a service a filter may name.
    for (const { serviceKey } of priceList().items) expect(LEDGER_SERVICE_KEYS as ReadonlyArray<string>).toContain(serviceKey)
  })
})
