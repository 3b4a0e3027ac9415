/**
 * Crawl configuration: config/crawl.json, config/escalation.json, and validation of a
 * caller-supplied escalation plan (service interface: 1..8 entries, attempts 1..5,
 * timeoutMs 1000..180000, engine one of http|camoufox|brave|alternate).
 */
import { readFileSync } from "node:fs"
import { ENGINE_NAMES, type EngineName } from "./engines/types.ts"
import type { PlanEntry } from "./escalation.ts"

export interface CrawlConfig {
  perDomainConcurrency: number
  maxBodyBytes: number
  maxRedirects: number
  http: { transport: "native" | "got-scraping"; maxSocketsPerOrigin: number; headerPoolSize: number }
  browser: { maxPages: number; recycleAfterPages: number; settleMs: number; challengeWaitMs: number; maxTransferBytes: number }
}

export interface EscalationConfig {
  defaultPlan: PlanEntry[]
  retryDelayMs: number
  historyWindowMs: number
}

export const DEFAULT_CRAWL_CONFIG: CrawlConfig = {
  perDomainConcurrency: 2,
  maxBodyBytes: 10 * 1024 * 1024,
  maxRedirects: 10,
  http: { transport: "native", maxSocketsPerOrigin: 256, headerPoolSize: 32 },
  browser: { maxPages: 4, recycleAfterPages: 100, settleMs: 2000, challengeWaitMs: 8000, maxTransferBytes: 52_428_800 }
}

export const DEFAULT_ESCALATION_CONFIG: EscalationConfig = {
  defaultPlan: [
    { engine: "http", attempts: 2, timeoutMs: 15_000 },
    { engine: "brave", attempts: 1, timeoutMs: 60_000 }
  ],
  retryDelayMs: 500,
  historyWindowMs: 24 * 60 * 60 * 1000
}

export interface PlanIssue {
  path: string
  message: string
}

const isInt = (v: unknown, min: number, max: number): v is number => typeof v === "number" && Number.isInteger(v) && v >= min && v <= max

/** Validates an escalation plan (a job's `escalation` field or the configured default). */
export const validatePlan = (input: unknown, basePath = "escalation"): { ok: true; plan: PlanEntry[] } | { ok: false; issues: PlanIssue[] } => {
  const issues: PlanIssue[] = []
  if (!Array.isArray(input)) return { ok: false, issues: [{ path: basePath, message: "must be an array" }] }
  if (input.length < 1 || input.length > 8) issues.push({ path: basePath, message: "must have 1 to 8 entries" })
  const plan: PlanEntry[] = []
  input.forEach((e: unknown, i) => {
    const p = `${basePath}[${i}]`
    if (typeof e !== "object" || e === null || Array.isArray(e)) {
      issues.push({ path: p, message: "must be an object" })
      return
    }
    const { engine, attempts, timeoutMs } = e as Record<string, unknown>
    if (typeof engine !== "string" || !ENGINE_NAMES.includes(engine as EngineName)) {
      issues.push({ path: `${p}.engine`, message: `must be one of ${ENGINE_NAMES.join(", ")}` })
    }
    if (!isInt(attempts, 1, 5)) issues.push({ path: `${p}.attempts`, message: "must be an integer from 1 to 5" })
    if (!isInt(timeoutMs, 1000, 180_000)) issues.push({ path: `${p}.timeoutMs`, message: "must be an integer from 1000 to 180000" })
    plan.push({ engine: engine as EngineName, attempts: attempts as number, timeoutMs: timeoutMs as number })
  })
  return issues.length > 0 ? { ok: false, issues } : { ok: true, plan }
}

const configUrl = (file: string) => new URL(`../../config/${file}`, import.meta.url)

const readJson = (path: string | URL): unknown => JSON.parse(readFileSync(path, "utf8"))

const posInt = (v: unknown, fallback: number) => (typeof v === "number" && Number.isInteger(v) && v > 0 ? v : fallback)

/** Reads config/crawl.json (or `path`); missing or invalid values fall back to the defaults. */
export const loadCrawlConfig = (path: string | URL = configUrl("crawl.json")): CrawlConfig => {
  const raw = readJson(path) as Partial<Record<string, unknown>>
  const d = DEFAULT_CRAWL_CONFIG
  const h = (raw.http ?? {}) as Record<string, unknown>
  const b = (raw.browser ?? {}) as Record<string, unknown>
  return {
    perDomainConcurrency: posInt(raw.perDomainConcurrency, d.perDomainConcurrency),
    maxBodyBytes: posInt(raw.maxBodyBytes, d.maxBodyBytes),
    maxRedirects: posInt(raw.maxRedirects, d.maxRedirects),
    http: {
      transport: h.transport === "got-scraping" ? "got-scraping" : "native",
      maxSocketsPerOrigin: posInt(h.maxSocketsPerOrigin, d.http.maxSocketsPerOrigin),
      headerPoolSize: posInt(h.headerPoolSize, d.http.headerPoolSize)
    },
    browser: {
      maxPages: posInt(b.maxPages, d.browser.maxPages),
      recycleAfterPages: posInt(b.recycleAfterPages, d.browser.recycleAfterPages),
      settleMs: posInt(b.settleMs, d.browser.settleMs),
      challengeWaitMs: posInt(b.challengeWaitMs, d.browser.challengeWaitMs),
      maxTransferBytes: posInt(b.maxTransferBytes, d.browser.maxTransferBytes)
    }
  }
}

/** Reads config/escalation.json (or `path`); throws when the default plan is invalid. */
export const loadEscalationConfig = (path: string | URL = configUrl("escalation.json")): EscalationConfig => {
  const raw = readJson(path) as Partial<Record<string, unknown>>
  const v = validatePlan(raw.defaultPlan, "defaultPlan")
  if (!v.ok) throw new Error(`invalid escalation config: ${v.issues.map((i) => `${i.path} ${i.message}`).join("; ")}`)
  return {
    defaultPlan: v.plan,
    retryDelayMs: typeof raw.retryDelayMs === "number" && raw.retryDelayMs >= 0 ? raw.retryDelayMs : DEFAULT_ESCALATION_CONFIG.retryDelayMs,
    historyWindowMs: posInt(raw.historyWindowMs, DEFAULT_ESCALATION_CONFIG.historyWindowMs)
  }
}
