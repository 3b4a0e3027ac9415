import pricingFile from "../../config/pricing.json" with { type: "json" }
import { money } from "../schema/common.ts"

/**
 * Prices (config/pricing.json) and what a call costs. Money is counted in units of a
 * ten-thousandth of a euro, the ledger's precision (numeric(18,4)), so sums are exact.
 */
export const toUnits = (eur: string | number): number => Math.round(Number(eur) * 10_000)
export const fromUnits = (units: number): string => money(units / 10_000)

export const JOB_SERVICE_KEY = "scraper.jobs"
export const EXTRACTION_SERVICE_KEY = "extractor.extractions"
export const IP_LOOKUP_SERVICE_KEY = "network.ip"
export const MAP_SERVICE_KEY = "scraper.map"

const jobPrices = pricingFile[JOB_SERVICE_KEY]
const attemptUnits: Readonly<Record<string, number>> = Object.fromEntries(
  Object.entries(jobPrices.perAttempt).map(([engine, price]) => [engine, toUnits(price)])
)
const screenshotUnits = toUnits(jobPrices.screenshot)

/** The least a job can cost, one attempt of the cheapest engine: the credit a new job needs free. */
export const jobMinimumUnits = Math.min(...Object.values(attemptUnits))

// An attempt that ran nothing (no such engine here, or stopped by a cancel before it began) is free.
const freeAttempts = new Set(["engine_unavailable", "cancelled"])

export interface JobUsage {
  readonly classification?: string | undefined
  readonly attempts: ReadonlyArray<{ readonly engine: string; readonly classification: string }>
  readonly screenshot?: { readonly taken: boolean } | undefined
}

/**
 * What a job used and costs: each attempt at its engine's price, and a screenshot taken. A job
 * cancelled by its tenant costs nothing, whatever its run had done when the cancel stopped it.
 */
export const jobCharge = (usage: JobUsage | null): { readonly units: number; readonly note: string } => {
  if (usage?.classification === "cancelled") return { units: 0, note: "cancelled" }
  const perEngine = new Map<string, number>()
  for (const a of usage?.attempts ?? []) {
    if (!freeAttempts.has(a.classification)) perEngine.set(a.engine, (perEngine.get(a.engine) ?? 0) + 1)
  }
  let units = 0
  const parts: Array<string> = []
  for (const [engine, n] of perEngine) {
    units += n * (attemptUnits[engine] ?? jobMinimumUnits)
    parts.push(`${engine} x${n}`)
  }
  if (usage?.screenshot?.taken) {
    units += screenshotUnits
    parts.push("screenshot")
  }
  return { units, note: parts.length > 0 ? parts.join(", ") : "nothing fetched" }
}

const extractionPrices = pricingFile[EXTRACTION_SERVICE_KEY]
const extractionUnits = toUnits(extractionPrices.perExtraction)
const thousandTokenUnits = toUnits(extractionPrices.perThousandLlmTokens)

/** The least an extraction can cost: the credit a new one needs free. */
export const extractionMinimumUnits = extractionUnits

export interface ExtractionUsage {
  readonly status: string
  /** Times its result was served from the extraction cache: a cached refinement used no LLM tokens. */
  readonly cacheHits: number
  readonly metadata: { readonly llm?: { readonly promptTokens?: number; readonly completionTokens?: number } } | null
}

/**
 * What an ended extraction costs: a done one its price, and the LLM tokens any refinement used
 * (also when the extraction failed in the end); a cancelled one nothing.
 */
export const extractionCharge = (usage: ExtractionUsage): { readonly units: number; readonly note: string } => {
  if (usage.status === "cancelled") return { units: 0, note: "cancelled" }
  const llm = usage.cacheHits === 0 ? usage.metadata?.llm : undefined
  const tokens = (llm?.promptTokens ?? 0) + (llm?.completionTokens ?? 0)
  const tokenUnits = Math.ceil((tokens * thousandTokenUnits) / 1000)
  const base = usage.status === "done" ? extractionUnits : 0
  const parts = [...(base > 0 ? ["extraction"] : []), ...(tokens > 0 ? [`${tokens} LLM tokens`] : [])]
  return { units: base + tokenUnits, note: parts.length > 0 ? parts.join(", ") : `${usage.status}, nothing used` }
}

/** What one IP lookup costs, debited when it is answered (docs/api.md "Network"). */
export const ipLookupUnits = toUnits(pricingFile[IP_LOOKUP_SERVICE_KEY].perLookup)

/** What one site map costs, debited before it starts fetching (docs/site-crawls.md, "Billing"). */
export const mapUnits = toUnits(pricingFile[MAP_SERVICE_KEY].perMap)

export interface PriceItem {
  readonly serviceKey: string
  readonly item: string
  readonly unit: string
  readonly price: string
  readonly description: string
}

/** The price list that `GET /v1/billing/pricing` answers. */
export const priceList = (): { readonly currency: string; readonly items: ReadonlyArray<PriceItem> } => ({
  currency: pricingFile.currency,
  items: [
    ...Object.entries(attemptUnits).map(([engine, units]) => ({
      serviceKey: JOB_SERVICE_KEY,
      item: `attempt.${engine}`,
      unit: "attempt",
      price: fromUnits(units),
      description: `one fetch attempt of a crawl job with the ${engine} engine`
    })),
    {
      serviceKey: JOB_SERVICE_KEY,
      item: "screenshot",
      unit: "screenshot",
      price: fromUnits(screenshotUnits),
      description: "a screenshot taken for a crawl job"
    },
    {
      serviceKey: JOB_SERVICE_KEY,
      item: "minimum",
      unit: "job",
      price: fromUnits(jobMinimumUnits),
      description: "the credit a new job needs free (one attempt of the cheapest engine); the job is charged what it used once it ends"
    },
    {
      serviceKey: EXTRACTION_SERVICE_KEY,
      item: "extraction",
      unit: "extraction",
      price: fromUnits(extractionUnits),
      description: "an extraction that ends done"
    },
    {
      serviceKey: EXTRACTION_SERVICE_KEY,
      item: "llm.tokens",
      unit: "1000 tokens",
      price: fromUnits(thousandTokenUnits),
      description: "LLM tokens (prompt and completion) an extraction's refinement used, rounded up to the price's precision"
    },
    {
      serviceKey: EXTRACTION_SERVICE_KEY,
      item: "minimum",
      unit: "extraction",
      price: fromUnits(extractionUnits),
      description: "the credit a new extraction needs free; it is charged what it used once it ends"
    },
    {
      serviceKey: MAP_SERVICE_KEY,
      item: "map",
      unit: "map",
      price: fromUnits(mapUnits),
      description: "one site map (POST /v1/scraper/map), debited when it is accepted, before anything is fetched, whatever it finds"
    },
    {
      serviceKey: IP_LOOKUP_SERVICE_KEY,
      item: "lookup",
      unit: "lookup",
      price: fromUnits(ipLookupUnits),
      description: "one answered IP geolocation lookup (GET /v1/network/ip/lookup or /v1/network/ip/me), debited when it is answered"
    }
  ]
})
