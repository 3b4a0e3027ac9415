/**
 * The ledger under concurrency across nodes (issue 25, "Ledger guarantees"): 200 billable calls at
 * once (IP lookups, job creations, extraction creations), after one call of each kind, spread over two server processes on one
 * PostgreSQL database (and Redis when REDIS_URL is set), against a balance that covers only some of
 * them. Every call answered 2xx is debited exactly once (a lookup when made, a job or extraction
 * once it ended), every other call is 402 insufficient_credit, the chain of `balanceAfter` is
 * intact, no entry takes the balance below zero, and the final balance is the start less the debits.
 */
import { randomBytes } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FixtureSite, loopbackOnlyEnv, startFixtureSite } from "./support/fixture-site.ts"
import { client, createTestDatabase, type RunningServer, startServer } from "./support/server-process.ts"

const baseUrl = process.env.DATABASE_URL
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
/** Money as the ledger writes it, in 1/10000 EUR, so that sums are exact. */
const units = (amount: string) => Math.round(Number(amount) * 10_000)

// Two nodes need a database they can share; the embedded database serves one process only.
describe.skipIf(!baseUrl)("the ledger under 200 concurrent billable calls on two nodes (DATABASE_URL unset: two nodes need a shared PostgreSQL)", () => {
  let a: RunningServer
  let b: RunningServer
  let site: FixtureSite

  beforeAll(async () => {
    site = await startFixtureSite()
    const env = {
      DATABASE_URL: await createTestDatabase(baseUrl!),
      // One installation: both nodes hash API keys with the same secret.
      SECRET_KEY: randomBytes(32).toString("hex"),
      ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}),
      ALLOW_PRIVATE_TARGETS: "true",
      ...loopbackOnlyEnv()
    }
    a = await startServer(env)
    b = await startServer(env)
  }, 120_000)
  afterAll(async () => {
    await a?.stop()
    await b?.stop()
    await site?.close()
  })

  it("debits each answered call once, refuses the rest with 402, and keeps the chain and the balance", async () => {
    const nodes = [client(a.baseUrl), client(b.baseUrl)]
    const api = nodes[0]!
    const pricing = (await api.get("/v1/billing/pricing", (await api.createTenant()).apiKey)).json.data.items as Array<any>
    const price = (serviceKey: string, item: string) => units(pricing.find((i) => i.serviceKey === serviceKey && i.item === item).price)
    const lookupPrice = price("network.ip", "lookup")
    const jobMinimum = price("scraper.jobs", "minimum")
    const extractionMinimum = price("extractor.extractions", "minimum")
    for (const p of [lookupPrice, jobMinimum, extractionMinimum]) expect(p).toBeGreaterThan(0)

    // 67 lookups, 67 jobs, 66 extractions would need at least 0.2325 EUR at today's prices;
    // the balance covers about a fifth of that.
    const start = 500
    const tenant = await api.createTenant({ credits: (start / 10_000).toFixed(4) })
    // Four keys of the owner's role, so that no key's rate limit (at most 84 requests a second) refuses any of the 200.
    const keys = [tenant.apiKey]
    for (let k = 1; k < 4; k++) {
      const res = await api.post(`/v1/iam/identities/${tenant.ownerIdentityId}/api-keys`, { name: `ledger-${k}`, roleId: tenant.roleId, rateLimitPerMinute: 5000, currentPassword: "correct horse battery" }, tenant.apiKey)
      expect(res.status, res.text).toBe(201)
      keys.push(res.json.data.rawKey)
    }
    const key = tenant.apiKey
    const page = (i: number) => `<html><body><article><h1>Ledger ${i}</h1><p>Some text about the harbour, number ${i}.</p></article></body></html>`
    // Three leaders (one call of each kind), then 200 at once. Which kinds win the race for the
    // balance depends on timing: a job's creation takes longer to reach the tenant's entity than a
    // lookup or an extraction, and on a loaded machine the others took all of it in 2 of 7 runs, so
    // no job was answered. The leaders make sure each kind's charge is checked every run.
    const calls = Array.from({ length: 203 }, (_, i) => {
      const node = nodes[i % 2]!
      const key = keys[Math.floor(i / 2) % keys.length]!
      switch (i % 3) {
        case 0:
          return { kind: "lookup" as const, send: () => node.get(`/v1/network/ip/lookup?ip=${i % 2 ? "8.8.8.8" : "2001:4860:4860::8888"}`, key) }
        case 1:
          return { kind: "job" as const, send: () => node.post("/v1/scraper/jobs", { url: site.url(`/page?case=ledger-${i}`) }, key) }
        default:
          return { kind: "extraction" as const, send: () => node.post("/v1/extractor/extractions", { type: "article", input: page(i) }, key) }
      }
    })
    const sendAll = (batch: typeof calls) => Promise.all(batch.map(async (call) => ({ kind: call.kind, res: await call.send() })))
    const leaders = await sendAll(calls.slice(0, 3))
    // The balance (500) covers the three (5 + 10 + 20 at today's prices) whatever else happens.
    for (const { res } of leaders) expect(res.status, res.text).toBeLessThan(300)
    const answers = [...leaders, ...await sendAll(calls.slice(3))]

    const accepted = answers.filter((x) => x.res.status >= 200 && x.res.status < 300)
    const refused = answers.filter((x) => !(x.res.status >= 200 && x.res.status < 300))
    for (const { res } of refused) {
      expect(res.status, res.text).toBe(402)
      expect(res.json.code).toBe("insufficient_credit")
    }
    // The balance covers some of the calls and not all of them.
    expect(accepted.length).toBeGreaterThan(0)
    expect(refused.length).toBeGreaterThan(0)
    const idsOf = (kind: string) => new Set(accepted.filter((x) => x.kind === kind).map((x) => x.res.json.data.id as string))
    const jobIds = idsOf("job")
    const extractionIds = idsOf("extraction")
    const lookups = accepted.filter((x) => x.kind === "lookup").length

    // Jobs and extractions are charged once they end; wait for every one to end and be charged.
    const ledger = async () => {
      const entries: Array<any> = []
      for (let offset = 0;; offset += 100) {
        const res = await nodes[offset / 100 % 2]!.get(`/v1/billing/me/transactions?limit=100&offset=${offset}`, key)
        expect(res.status, res.text).toBe(200)
        entries.push(...res.json.data.items)
        if (!res.json.data.pagination.hasMore) break
      }
      return entries.reverse() // oldest first
    }
    let entries: Array<any> = []
    for (const deadline = Date.now() + 90_000; Date.now() < deadline; await sleep(500)) {
      entries = await ledger()
      if (entries.filter((e) => e.type === "debit").length >= accepted.length) break
    }
    // A charge written late (twice, or one too many) would show up here.
    await sleep(3_000)
    entries = await ledger()

    const debits = entries.filter((e) => e.type === "debit")
    expect(debits.length).toBe(accepted.length)
    const debitedIds = (resourceType: string) => debits.filter((d) => d.resourceType === resourceType).map((d) => d.resourceId as string)
    expect(new Set(debitedIds("job"))).toEqual(jobIds)
    expect(debitedIds("job")).toHaveLength(jobIds.size)
    expect(new Set(debitedIds("extraction"))).toEqual(extractionIds)
    expect(debitedIds("extraction")).toHaveLength(extractionIds.size)
    expect(debitedIds("ip_lookup")).toHaveLength(lookups)
    // A job that used more than its minimum (retries on a loaded machine) may find less left than
    // it cost: it is charged what is left, possibly 0.00, and still has its entry (docs/api.md).
    for (const d of debits) expect(units(d.amount), JSON.stringify(d)).toBeLessThanOrEqual(0)

    // The chain: each entry's balanceAfter is the one before plus its amount, never below zero.
    expect(entries[0]).toMatchObject({ type: "topup" })
    expect(units(entries[0].balanceAfter)).toBe(start)
    for (let i = 1; i < entries.length; i++) {
      expect(units(entries[i].balanceAfter), `entry ${i}: ${JSON.stringify(entries[i])}`).toBe(units(entries[i - 1].balanceAfter) + units(entries[i].amount))
      expect(units(entries[i].balanceAfter)).toBeGreaterThanOrEqual(0)
    }
    const spent = debits.reduce((sum, d) => sum - units(d.amount), 0)
    const final = units(entries.at(-1).balanceAfter)
    expect(final).toBe(start - spent)
    for (const node of nodes) expect(units((await node.get("/v1/billing/me/balance", key)).json.data.balance)).toBe(final)

    expect(final).toBeLessThan(start)
    // Nothing refused was created.
    const total = async (path: string) => (await api.get(`${path}?limit=1`, key)).json.data.pagination.total as number
    expect(await total("/v1/scraper/jobs")).toBe(jobIds.size)
    expect(await total("/v1/extractor/extractions")).toBe(extractionIds.size)
    // Each kind had some of its calls answered and charged (the leaders at least).
    expect([lookups, jobIds.size, extractionIds.size].every((n) => n > 0), `${lookups} lookups, ${jobIds.size} jobs, ${extractionIds.size} extractions`).toBe(true)
  }, 180_000)
})
