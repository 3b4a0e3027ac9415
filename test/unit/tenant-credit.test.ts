import { describe, expect, it } from "vitest"
import { extractionMinimumUnits, jobCharge, jobMinimumUnits, extractionCharge } from "../../src/billing/pricing.ts"
import { TenantCredit } from "../../src/billing/tenant-credit.ts"

describe("a tenant's credit", () => {
  it("covers new work only while the balance less the minimums of uncharged work allows", () => {
    const credit = new TenantCredit({ pendingTtlMs: 30_000 })
    credit.reconcile({ balance: 3 * jobMinimumUnits + extractionMinimumUnits, jobs: 1, extractions: 0 }, 1, new Set())
    // One job in SQL and one pending leave room for one more job and the extraction.
    expect(credit.jobRoom()).toBe(1 + Math.floor(extractionMinimumUnits / jobMinimumUnits))
    expect(credit.extractionFits("e1", false)).toBe(true)
    credit.extractionReserved("e1", 0)
    expect(credit.jobRoom()).toBe(1)
    // A try of the same request fits again, and takes nothing more.
    expect(credit.extractionFits("e1", false)).toBe(true)
    credit.extractionReserved("e1", 0)
    expect(credit.jobRoom()).toBe(1)
    credit.jobsReserved(1)
    expect(credit.jobRoom()).toBe(0)
    expect(credit.extractionFits("e2", false)).toBe(false)
    // Charged work frees its minimum; what it cost comes off the balance.
    credit.charged("jobs", 2, jobMinimumUnits + extractionMinimumUnits, credit.generation)
    expect(credit.free).toBe(0)
    // A charge that a reconcile overtook is in the reconciled counts already: not taken off twice.
    const began = credit.generation
    credit.reconcile({ balance: jobMinimumUnits, jobs: 0, extractions: 1 }, 0, new Set())
    const reconciled = credit.free
    credit.charged("extractions", 1, jobMinimumUnits, began)
    expect(credit.free).toBe(reconciled)
    // One that began after it is taken off.
    credit.charged("extractions", 1, jobMinimumUnits, credit.generation)
    expect(credit.free).toBe(reconciled + extractionMinimumUnits)
  })

  it("asks room for the job an extraction makes as well, and gives an unwritten extraction's credit back", () => {
    const credit = new TenantCredit({ pendingTtlMs: 30_000 })
    credit.reconcile({ balance: extractionMinimumUnits, jobs: 0, extractions: 0 }, 0, new Set())
    expect(credit.extractionFits("e", false)).toBe(true)
    expect(credit.extractionFits("e", true)).toBe(jobMinimumUnits <= 0)
    expect(credit.extractionReserved("e", 0)).toBe(true)
    expect(credit.extractionReserved("e", 0)).toBe(false)
    expect(credit.free).toBe(0)
    expect(credit.extractionReleased("e")).toBe(true)
    expect(credit.extractionReleased("e")).toBe(false)
    expect(credit.free).toBe(extractionMinimumUnits)
  })

  it("forgets an extraction reservation once its row is written, or when its request died", () => {
    const credit = new TenantCredit({ pendingTtlMs: 30_000 })
    credit.reconcile({ balance: 10 * extractionMinimumUnits, jobs: 0, extractions: 0 }, 0, new Set())
    credit.extractionReserved("written", 0)
    credit.extractionReserved("died", 0)
    expect(credit.pendingExtractionIds(1_000)).toEqual(["written", "died"])
    // SQL counts the written one; the pending one not written is still counted.
    credit.reconcile({ balance: 10 * extractionMinimumUnits, jobs: 0, extractions: 1 }, 0, new Set(["written"]))
    expect(credit.free).toBe(8 * extractionMinimumUnits)
    expect(credit.pendingExtractionIds(31_000)).toEqual([])
    credit.reconcile({ balance: 10 * extractionMinimumUnits, jobs: 0, extractions: 1 }, 0, new Set())
    expect(credit.free).toBe(9 * extractionMinimumUnits)
  })
})

describe("prices", () => {
  it("charge a job each attempt that ran, and a cancelled job nothing", () => {
    const usage = { attempts: [{ engine: "http", classification: "blocked" }, { engine: "brave", classification: "ok" }, { engine: "camoufox", classification: "engine_unavailable" }], screenshot: { taken: true } }
    expect(jobCharge(usage).note).toBe("http x1, brave x1, screenshot")
    expect(jobCharge(usage).units).toBeGreaterThan(jobMinimumUnits)
    expect(jobCharge({ ...usage, classification: "cancelled" })).toEqual({ units: 0, note: "cancelled" })
    expect(jobCharge(null).units).toBe(0)
  })

  it("charge a done extraction its price and any LLM tokens, a failed one its tokens, a cached one no tokens", () => {
    const metadata = { llm: { promptTokens: 1000, completionTokens: 0 } }
    const done = extractionCharge({ status: "done", cacheHits: 0, metadata })
    expect(done.note).toBe("extraction, 1000 LLM tokens")
    expect(done.units).toBeGreaterThan(extractionMinimumUnits)
    expect(extractionCharge({ status: "dead", cacheHits: 0, metadata }).units).toBe(done.units - extractionMinimumUnits)
    expect(extractionCharge({ status: "done", cacheHits: 1, metadata })).toEqual({ units: extractionMinimumUnits, note: "extraction" })
    expect(extractionCharge({ status: "cancelled", cacheHits: 0, metadata }).units).toBe(0)
  })
})

describe("calls priced when made (IP lookups)", () => {
  it("hold their price while their debit is written, so concurrent ones cannot take more than is free", () => {
    const credit = new TenantCredit({ pendingTtlMs: 30_000 })
    credit.reconcile({ balance: 10, jobs: 0, extractions: 0 }, 0, new Set())
    expect(credit.callReserved(4)).toBe(true)
    expect(credit.callReserved(4)).toBe(true)
    // 2 left free: a third of 4 does not fit, and takes nothing.
    expect(credit.callReserved(4)).toBe(false)
    expect(credit.free).toBe(2)
    expect(credit.needed(4)).toBe(12)
    // The first is written: the balance is the new one, its hold is let go.
    credit.callDone(4, 6)
    expect(credit.free).toBe(2)
    // The second is refused by the ledger (no balance known): its hold goes back.
    credit.callDone(4, undefined)
    expect(credit.free).toBe(6)
    // A reconcile does not forget a hold still in flight.
    expect(credit.callReserved(5)).toBe(true)
    credit.reconcile({ balance: 6, jobs: 0, extractions: 0 }, 0, new Set())
    expect(credit.free).toBe(1)
  })

  it("leave room for the minimum of uncharged jobs", () => {
    const credit = new TenantCredit({ pendingTtlMs: 30_000 })
    credit.reconcile({ balance: jobMinimumUnits + 3, jobs: 1, extractions: 0 }, 0, new Set())
    expect(credit.callReserved(4)).toBe(false)
    expect(credit.callReserved(3)).toBe(true)
    expect(credit.jobRoom()).toBe(0)
  })
})
