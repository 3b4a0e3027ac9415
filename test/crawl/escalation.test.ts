import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { loadCrawlConfig, loadEscalationConfig, validatePlan } from "../../src/crawl/config.ts"
import { createBraveEngine } from "../../src/crawl/engines/browser.ts"
import { createHttpEngine } from "../../src/crawl/engines/http.ts"
import type { Attempt, Classification, Engine, EngineName, FetchRequest } from "../../src/crawl/engines/types.ts"
import { ESCALATION_RULES, planForScreenshot, planFromHistory, runEscalation, type PlanEntry } from "../../src/crawl/escalation.ts"
import { ARTICLE, type Fixture, hasChromium, html, jsChallenge, NO_CHROMIUM_REASON, page, startFixture, testBrowserArgs } from "./fixture.ts"

/** An engine that answers from a script of classifications. */
const scripted = (name: EngineName, script: Classification[]): Engine & { calls: FetchRequest[] } => {
  const calls: FetchRequest[] = []
  return {
    name,
    calls,
    available: async () => true,
    fetch: async (req) => {
      calls.push(req)
      const c = script[Math.min(calls.length - 1, script.length - 1)]!
      const a: Attempt = {
        engine: name,
        classification: c,
        httpStatus: c === "ok" ? 200 : c === "not_found" ? 404 : c === "server_error" ? 503 : c === "blocked" ? 403 : null,
        finalUrl: req.url,
        contentType: "text/html",
        body: c === "ok" ? Buffer.from("<p>hi</p>") : null,
        bytes: 0,
        screenshot: null,
        durationMs: 1,
        redirects: []
      }
      return a
    }
  }
}

const plan2: PlanEntry[] = [
  { engine: "http", attempts: 2, timeoutMs: 15_000 },
  { engine: "brave", attempts: 1, timeoutMs: 60_000 }
]
const req = { url: "https://example.com/", allowPrivate: false }
const run = (engines: Partial<Record<EngineName, Engine>>, plan = plan2, extra: Partial<Parameters<typeof runEscalation>[3]> = {}) =>
  runEscalation(plan, req, engines, { jobTimeoutMs: 120_000, retryDelayMs: 0, ...extra })

describe("runEscalation rules (scripted engines)", () => {
  it("ok on the first try is done", async () => {
    const http = scripted("http", ["ok"])
    const r = await run({ http })
    expect(r).toMatchObject({ outcome: "done", classification: "ok" })
    expect(r.winning?.engine).toBe("http")
    expect(r.attempts).toHaveLength(1)
  })

  it("not_found ends the job done at once", async () => {
    const http = scripted("http", ["not_found"])
    const brave = scripted("brave", ["ok"])
    const r = await run({ http, brave })
    expect(r).toMatchObject({ outcome: "done", classification: "not_found" })
    expect(brave.calls).toHaveLength(0)
  })

  it.each<Classification>(["timeout", "server_error", "connection_error"])("%s retries the same step, then escalates", async (c) => {
    const http = scripted("http", [c, c])
    const brave = scripted("brave", ["ok"])
    const r = await run({ http, brave })
    expect(http.calls).toHaveLength(2)
    expect(r.attempts.map((a) => `${a.engine}:${a.classification}`)).toEqual([`http:${c}`, `http:${c}`, "brave:ok"])
    expect(r).toMatchObject({ outcome: "done", classification: "ok" })
  })

  it("a retry that succeeds stays on the step", async () => {
    const http = scripted("http", ["server_error", "ok"])
    const brave = scripted("brave", ["ok"])
    const r = await run({ http, brave })
    expect(r.winning?.engine).toBe("http")
    expect(brave.calls).toHaveLength(0)
  })

  it.each<Classification>(["blocked", "empty", "engine_unavailable", "tls_error"])("%s escalates at once", async (c) => {
    const http = scripted("http", [c])
    const brave = scripted("brave", ["ok"])
    const r = await run({ http, brave })
    expect(http.calls).toHaveLength(1)
    expect(r).toMatchObject({ outcome: "done", classification: "ok" })
  })

  it.each<Classification>(["unsafe_url", "dns_error", "too_large"])("%s fails the job at once", async (c) => {
    const http = scripted("http", [c])
    const brave = scripted("brave", ["ok"])
    const r = await run({ http, brave })
    expect(r).toMatchObject({ outcome: "failed", classification: c })
    expect(brave.calls).toHaveLength(0)
  })

  it("blocked by every engine ends failed/blocked; an unavailable engine does not hide it", async () => {
    const http = scripted("http", ["blocked"])
    const r1 = await run({ http, brave: scripted("brave", ["blocked"]) })
    expect(r1).toMatchObject({ outcome: "failed", classification: "blocked" })
    const r2 = await run({ http, brave: scripted("brave", ["engine_unavailable"]) })
    expect(r2).toMatchObject({ outcome: "failed", classification: "blocked" })
    // an engine missing from the map counts as engine_unavailable
    const r3 = await run({ http: scripted("http", ["blocked"]) })
    expect(r3.attempts.map((a) => a.classification)).toEqual(["blocked", "engine_unavailable"])
    expect(r3.classification).toBe("blocked")
  })

  it("cancellation stops the job with outcome cancelled", async () => {
    const ac = new AbortController()
    // The caller cancels while the attempt is under way.
    const http = scripted("http", ["cancelled"])
    const fetch = http.fetch
    http.fetch = async (r) => {
      ac.abort()
      return fetch(r)
    }
    const r = await run({ http, brave: scripted("brave", ["ok"]) }, plan2, { signal: ac.signal })
    expect(r).toMatchObject({ outcome: "cancelled", classification: "cancelled" })
    const r2 = await run({ http: scripted("http", ["ok"]) }, plan2, { signal: ac.signal })
    expect(r2.outcome).toBe("cancelled")
  })

  it("only the caller's signal cancels: an abort an engine met by itself is a failed fetch", async () => {
    const ac = new AbortController()
    const r = await run({ http: scripted("http", ["cancelled"]), brave: scripted("brave", ["ok"]) }, plan2, { signal: ac.signal })
    expect(r.outcome).toBe("done")
    expect(r.attempts[0]!.classification).toBe("connection_error")
    expect(r.attempts.at(-1)).toMatchObject({ engine: "brave", classification: "ok" })
  })

  it("each attempt's timeout is the step's, capped by what is left of the job", async () => {
    const http = scripted("http", ["server_error"])
    await run({ http }, [{ engine: "http", attempts: 1, timeoutMs: 15_000 }], { jobTimeoutMs: 5_000 })
    // What is left of the job: its 5 s less the moments spent before the attempt started.
    expect(http.calls[0]!.timeoutMs).toBeLessThanOrEqual(5_000)
    expect(http.calls[0]!.timeoutMs).toBeGreaterThan(4_000)
    const roomy = scripted("http", ["server_error"])
    await run({ http: roomy }, [{ engine: "http", attempts: 1, timeoutMs: 15_000 }], { jobTimeoutMs: 120_000 })
    expect(roomy.calls[0]!.timeoutMs).toBe(15_000)
  })

  it("onAttempt sees every attempt; a failing observer does not break the job", async () => {
    const seen: string[] = []
    const r = await run({ http: scripted("http", ["timeout", "ok"]) }, plan2, {
      onAttempt: (a, pos) => {
        seen.push(`${pos.step}.${pos.attempt}:${a.classification}`)
        throw new Error("observer bug")
      }
    })
    expect(seen).toEqual(["0.0:timeout", "0.1:ok"])
    expect(r.outcome).toBe("done")
  })

  it("the rule table covers every classification", () => {
    expect(Object.keys(ESCALATION_RULES).sort()).toEqual(
      ["blocked", "cancelled", "connection_error", "dns_error", "empty", "engine_unavailable", "not_found", "ok", "server_error", "timeout", "tls_error", "too_large", "unsafe_url"].sort()
    )
  })
})

describe("planFromHistory", () => {
  const now = Date.parse("2025-01-02T00:00:00Z")
  const plan3: PlanEntry[] = [
    { engine: "http", attempts: 2, timeoutMs: 15_000 },
    { engine: "alternate", attempts: 1, timeoutMs: 15_000 },
    { engine: "brave", attempts: 1, timeoutMs: 60_000 }
  ]
  const ago = (min: number) => new Date(now - min * 60_000).toISOString()

  it("no history → default plan", () => {
    expect(planFromHistory(plan3, [], { now })).toMatchObject({ plan: plan3, skipped: [] })
  })

  it("http recently failed and brave worked → start at brave", () => {
    const r = planFromHistory(plan3, [
      { engine: "http", ok: false, at: ago(10) },
      { engine: "alternate", ok: false, at: ago(9) },
      { engine: "brave", ok: true, at: ago(8) }
    ], { now })
    expect(r.plan.map((e) => e.engine)).toEqual(["brave"])
    expect(r.skipped).toEqual(["http", "alternate"])
    expect(r.reason).toMatch(/^learned: start at brave/)
    // The history is every tenant's: the reason tells no time another tenant's job crawled the domain.
    expect(r.reason).not.toMatch(/\d{4}-\d{2}-\d{2}T/)
    expect(r.reason).toMatch(/\(within 24 h\)$/)
    // A window shorter than an hour is said in minutes.
    const short = planFromHistory(plan3, [{ engine: "brave", ok: true, at: now - 1000 }], { now, windowMs: 10 * 60_000 })
    expect(short.reason).toMatch(/\(within 10 min\)$/)
  })

  it("an engine with no recent record is kept (probed again)", () => {
    const r = planFromHistory(plan3, [
      { engine: "http", ok: false, at: ago(10) },
      { engine: "brave", ok: true, at: ago(8) }
    ], { now })
    expect(r.plan.map((e) => e.engine)).toEqual(["alternate", "brave"])
  })

  it("the latest record per engine counts, and old records age out", () => {
    const recovered = planFromHistory(plan3, [
      { engine: "http", ok: false, at: ago(60) },
      { engine: "http", ok: true, at: ago(5) },
      { engine: "brave", ok: true, at: ago(30) }
    ], { now })
    expect(recovered.plan).toEqual(plan3)
    expect(recovered.reason).toMatch(/^default: http worked recently \(within 24 h\)$/)
    const stale = planFromHistory(plan3, [
      { engine: "http", ok: false, at: ago(3 * 24 * 60) },
      { engine: "brave", ok: true, at: ago(3 * 24 * 60) }
    ], { now })
    expect(stale.plan).toEqual(plan3)
  })

  it("all recent attempts failed → default plan", () => {
    const r = planFromHistory(plan3, [
      { engine: "http", ok: false, at: ago(1) },
      { engine: "brave", ok: false, at: ago(1) }
    ], { now })
    expect(r.plan).toEqual(plan3)
  })
})

describe("planForScreenshot", () => {
  const step = (engine: EngineName): PlanEntry => ({ engine, attempts: 1, timeoutMs: 5000 })
  it("starts at the first step whose engine renders pages, and keeps a plan that has none", () => {
    expect(planForScreenshot([step("http"), step("alternate"), step("brave"), step("http")])).toEqual([step("brave"), step("http")])
    expect(planForScreenshot([step("camoufox"), step("http")])).toEqual([step("camoufox"), step("http")])
    expect(planForScreenshot([step("http"), step("alternate")])).toEqual([step("http"), step("alternate")])
  })
})

describe("config", () => {
  it("loads config/escalation.json and config/crawl.json", () => {
    const esc = loadEscalationConfig()
    expect(esc.defaultPlan).toEqual([
      { engine: "http", attempts: 2, timeoutMs: 15_000 },
      { engine: "brave", attempts: 1, timeoutMs: 60_000 }
    ])
    const crawl = loadCrawlConfig()
    expect(crawl.perDomainConcurrency).toBe(2)
    expect(crawl.maxBodyBytes).toBe(10 * 1024 * 1024)
    expect(crawl.browser.maxPages).toBeGreaterThan(0)
    expect(crawl.browser.recycleAfterPages).toBeGreaterThan(0)
  })

  it("validates a caller-supplied plan", () => {
    expect(validatePlan([{ engine: "camoufox", attempts: 5, timeoutMs: 180_000 }]).ok).toBe(true)
    const bad = validatePlan([{ engine: "curl", attempts: 0, timeoutMs: 999 }])
    expect(bad.ok).toBe(false)
    if (!bad.ok) expect(bad.issues.map((i) => i.path)).toEqual(["escalation[0].engine", "escalation[0].attempts", "escalation[0].timeoutMs"])
    expect(validatePlan([]).ok).toBe(false)
    expect(validatePlan(new Array(9).fill({ engine: "http", attempts: 1, timeoutMs: 1000 })).ok).toBe(false)
  })
})

describe("runEscalation with real engines against a local fixture", () => {
  let site: Fixture
  let serverErrorHits = 0
  const http = createHttpEngine()
  const brave = createBraveEngine({ launchArgs: testBrowserArgs(), settleMs: 500 })
  beforeAll(async () => {
    site = await startFixture({
      "/ok": page(200, ARTICLE),
      "/missing": page(404, html("<h1>No such page</h1>")),
      "/always-500": (_req, res) => {
        serverErrorHits++
        res.writeHead(500, { "content-type": "text/html" }).end(html("<h1>Oops</h1>"))
      },
      "/challenge": jsChallenge
    })
  })
  afterAll(async () => {
    await http.close?.()
    await brave.close?.()
    await site.close()
  })
  const local = (path: string) => ({ url: site.url(path), allowPrivate: true })
  const opts = { jobTimeoutMs: 60_000, retryDelayMs: 10 }

  it("ok page: done on http", async () => {
    const r = await runEscalation(plan2, local("/ok"), { http, brave }, opts)
    expect(r).toMatchObject({ outcome: "done", classification: "ok" })
    expect(r.winning?.engine).toBe("http")
  })

  it("404: done with not_found and the status", async () => {
    const r = await runEscalation(plan2, local("/missing"), { http, brave }, opts)
    expect(r).toMatchObject({ outcome: "done", classification: "not_found" })
    expect(r.winning?.httpStatus).toBe(404)
  })

  it("500: retried on http, then escalated (to an engine that is unavailable here), then failed", async () => {
    const camoufoxMissing = createBraveEngine({ bravePath: "/nonexistent/browser" })
    const r = await runEscalation(plan2, local("/always-500"), { http, brave: camoufoxMissing }, opts)
    expect(r.attempts.map((a) => `${a.engine}:${a.classification}`)).toEqual(["http:server_error", "http:server_error", "brave:engine_unavailable"])
    expect(r).toMatchObject({ outcome: "failed", classification: "server_error" })
    expect(serverErrorHits).toBe(2)
  })

  it.skipIf(!hasChromium)("a page that blocks plain HTTP escalates to brave and succeeds", async () => {
    const r = await runEscalation(plan2, local("/challenge"), { http, brave }, opts)
    expect(r.attempts.map((a) => `${a.engine}:${a.classification}`)).toEqual(["http:blocked", "brave:ok"])
    expect(r).toMatchObject({ outcome: "done", classification: "ok" })
    expect(r.winning?.httpStatus).toBe(200)
    expect(r.winning?.body?.toString()).toContain("Real content behind the wall")
  })

  it.skipIf(hasChromium)(`skipped: ${NO_CHROMIUM_REASON}`, () => {})
})
