/**
 * Resilience of scraper jobs: a node killed (SIGKILL) in the middle of crawls loses no accepted job,
 * and the per-tenant job quotas answer 429 (on every backend).
 *
 * All traffic goes to loopback: the fixture site, the servers, PostgreSQL and Redis on 127.0.0.1.
 */
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { MAX_RUNS } from "../src/actors/job-entity.ts"
import { ABANDONED_CLAIM_SECONDS } from "../src/http/idempotency.ts"
import { loadConfig } from "../src/config.ts"
import { decryptSecret } from "../src/webhooks/secret-box.ts"
import { databaseLayer } from "./support/databases.ts"
import { type FixtureSite, loopbackOnlyEnv, startFixtureSite } from "./support/fixture-site.ts"
import { backends, client, createTestDatabase, freePort, INTERNAL_TOKEN, pgQuery, type RunningServer, startServer } from "./support/server-process.ts"

const baseDbUrl = process.env.DATABASE_URL
const redis: Record<string, string> = process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}
const terminal = ["done", "failed", "dead"]
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))


// 20 slow jobs over 10 loopback hosts: Trawl crawls at most 2 pages per domain at once, so every
// job is in flight at the same time.
const SLOW_HOSTS = Array.from({ length: 10 }, (_, i) => `127.0.0.${11 + i}`)
const JOBS = 20
const SLOW_MS = 4000

const slowBody = (site: FixtureSite, i: number) => ({
  url: site.url(`/slow?ms=${SLOW_MS}&job=${i}`, i % SLOW_HOSTS.length),
  timeoutMs: 15_000,
  escalation: [{ engine: "http", attempts: 1, timeoutMs: 10_000 }]
})

/** Creates the jobs through `baseUrl`, then waits until the fixture is serving several of them. */
const createSlowJobs = async (site: FixtureSite, baseUrl: string, key: string) => {
  const api = client(baseUrl)
  const bulk = await api.post("/v1/scraper/jobs/bulk", { jobs: Array.from({ length: JOBS }, (_, i) => slowBody(site, i)) }, key)
  expect(bulk.status, bulk.text).toBe(201)
  const ids = bulk.json.data.created.map((j: any) => j.id as string)
  expect(ids).toHaveLength(JOBS)
  const deadline = Date.now() + 20_000
  while (site.hits("/slow") < JOBS / 2 && Date.now() < deadline) await sleep(50)
  expect(site.hits("/slow"), "the crawls did not start").toBeGreaterThanOrEqual(JOBS / 2)
  return ids as Array<string>
}

/** Polls every job through `baseUrl` until all are terminal or the time is up. */
const waitAllTerminal = async (baseUrl: string, key: string, ids: ReadonlyArray<string>, timeoutMs: number) => {
  const api = client(baseUrl)
  const deadline = Date.now() + timeoutMs
  const jobs = new Map<string, any>()
  for (;;) {
    for (const id of ids) {
      if (terminal.includes(jobs.get(id)?.status)) continue
      const res = await api.get(`/v1/scraper/jobs/${id}`, key)
      if (res.status === 200) jobs.set(id, res.json.data)
    }
    const open = ids.filter((id) => !terminal.includes(jobs.get(id)?.status))
    if (open.length === 0 || Date.now() > deadline) return { jobs, open }
    await sleep(500)
  }
}

const summary = (jobs: Map<string, any>) => {
  const counts: Record<string, number> = {}
  for (const j of jobs.values()) counts[`${j.status}/${j.result?.classification}`] = (counts[`${j.status}/${j.result?.classification}`] ?? 0) + 1
  return counts
}

/**
 * A fixture site on 127.0.0.31 (one domain) and a data directory that a test starts and restarts
 * servers on (push each to `servers`); all of them are torn down after the suite.
 */
const restartableNode = (dataDirPrefix: string) => {
  const node = { site: undefined as unknown as FixtureSite, dataDir: "", servers: [] as Array<RunningServer> }
  beforeAll(async () => {
    node.site = await startFixtureSite({ hosts: ["127.0.0.31"] })
    node.dataDir = mkdtempSync(join(tmpdir(), dataDirPrefix))
  })
  afterAll(async () => {
    for (const s of node.servers) await s.stop("SIGKILL").catch(() => undefined)
    await node.site?.close()
    if (node.dataDir) rmSync(node.dataDir, { recursive: true, force: true })
  })
  return node
}

describe("a server killed mid-crawl loses no accepted job (embedded backend, restart on the same DATA_DIR)", () => {
  let site: FixtureSite
  let dataDir: string
  const servers: Array<RunningServer> = []

  const env = { ALLOW_PRIVATE_TARGETS: "true", ...loopbackOnlyEnv() }
  let first: RunningServer

  beforeAll(async () => {
    site = await startFixtureSite({ hosts: SLOW_HOSTS })
    dataDir = mkdtempSync(join(tmpdir(), "trawl-kill-"))
    first = await startServer(env, { dataDir })
    servers.push(first)
  }, 120_000)
  afterAll(async () => {
    for (const s of servers) await s.stop("SIGKILL").catch(() => undefined)
    await site?.close()
    if (dataDir) rmSync(dataDir, { recursive: true, force: true })
  })

  it("finishes every job after SIGKILL and restart", async () => {
    const t = await client(first.baseUrl).createTenant()
    const ids = await createSlowJobs(site, first.baseUrl, t.apiKey)
    const hitsAtKill = site.hits("/slow")
    await first.stop("SIGKILL")
    expect(first.process.signalCode).toBe("SIGKILL")

    const second = await startServer(env, { dataDir })
    servers.push(second)
    const restartedAt = Date.now()
    const { jobs, open } = await waitAllTerminal(second.baseUrl, t.apiKey, ids, 35_000)
    console.log(`embedded kill test: ${JSON.stringify(summary(jobs))} ${Date.now() - restartedAt} ms after restart; fixture hits at kill ${hitsAtKill}, after ${site.hits("/slow")}`)
    expect(open, `jobs still open after restart: ${JSON.stringify(open.map((id) => jobs.get(id)))}`).toEqual([])
    // a crawl interrupted once is run again and succeeds
    for (const j of jobs.values()) expect(j.status, JSON.stringify(j)).toBe("done")
    // the crawls in flight at the kill were fetched again
    expect(site.hits("/slow")).toBeGreaterThan(hitsAtKill)
    // every job is listed once
    const list = await client(second.baseUrl).get("/v1/scraper/jobs?limit=200", t.apiKey)
    expect(list.json.data.pagination.total).toBe(JOBS)
  }, 60_000)
})

describe("jobs that only waited for a slot when their node died lose no run (embedded backend, restart on the same DATA_DIR)", () => {
  // One domain, 2 slots: 2 jobs fetch at a time, the others wait on the node for a slot.
  const WAITING_JOBS = 8
  const node = restartableNode("trawl-waiting-")
  const env = { ALLOW_PRIVATE_TARGETS: "true", ...loopbackOnlyEnv() }

  it("survives MAX_RUNS node deaths, which counted claims would have made dead: only the fetches a death cut off count", async () => {
    let server = await startServer(env, { dataDir: node.dataDir })
    node.servers.push(server)
    const t = await client(server.baseUrl).createTenant()
    const bulk = await client(server.baseUrl).post("/v1/scraper/jobs/bulk", {
      jobs: Array.from({ length: WAITING_JOBS }, (_, i) => ({
        url: node.site.url(`/slow?ms=2000&job=${i}`),
        timeoutMs: 15_000,
        escalation: [{ engine: "http", attempts: 1, timeoutMs: 10_000 }]
      }))
    }, t.apiKey)
    expect(bulk.status, bulk.text).toBe(201)
    const ids = bulk.json.data.created.map((j: any) => j.id as string)
    for (let death = 1; death <= MAX_RUNS; death++) {
      // Killed while two jobs fetch and the rest wait.
      const before = node.site.hits("/slow")
      const deadline = Date.now() + 20_000
      while (node.site.hits("/slow") < before + 2 && Date.now() < deadline) await sleep(50)
      expect(node.site.hits("/slow"), `the fetches did not start before death ${death}`).toBeGreaterThanOrEqual(before + 2)
      await server.stop("SIGKILL")
      server = await startServer(env, { dataDir: node.dataDir })
      node.servers.push(server)
    }
    const { jobs, open } = await waitAllTerminal(server.baseUrl, t.apiKey, ids, 60_000)
    console.log(`waiting-jobs kill test: ${JSON.stringify(summary(jobs))}; fetches begun ${node.site.hits("/slow")}`)
    expect(open).toEqual([])
    // A job ends dead only after MAX_RUNS of its own fetches were cut off: at most the 2 that
    // fetched at every death. Counting claims instead made every job dead on its claim after the
    // last death, most of them never fetched.
    const dead = [...jobs.values()].filter((j) => j.status === "dead")
    expect(dead.length, JSON.stringify(summary(jobs))).toBeLessThanOrEqual(2)
    // Each of a dead job's runs was cut off in its fetch, and counts as an attempt (none was recorded).
    for (const j of dead) expect(j.attempts, JSON.stringify(j)).toBe(MAX_RUNS)
    for (const j of jobs.values()) if (j.status !== "dead") expect(j.status, JSON.stringify(j)).toBe("done")
  }, 150_000)
})

describe("a node killed between writing new jobs and answering (embedded backend, restart on the same DATA_DIR)", () => {
  let site: FixtureSite
  let dataDir: string
  const servers: Array<RunningServer> = []
  const secretKey = randomBytes(32)
  const env = { ALLOW_PRIVATE_TARGETS: "true", SECRET_KEY: secretKey.toString("hex"), ...loopbackOnlyEnv() }

  beforeAll(async () => {
    site = await startFixtureSite({ hosts: ["127.0.0.31", "127.0.0.32"] })
    dataDir = mkdtempSync(join(tmpdir(), "trawl-crash-"))
  }, 60_000)
  afterAll(async () => {
    for (const s of servers) await s.stop("SIGKILL").catch(() => undefined)
    await site?.close()
    if (dataDir) rmSync(dataDir, { recursive: true, force: true })
  })

  /** Sends the request that makes the node kill itself (test/support/fault-server.ts), and waits until it is dead. */
  const crashWith = async (node: RunningServer, send: () => Promise<unknown>) => {
    await expect(send()).rejects.toThrow()
    const died = node.process
    if (died.exitCode === null && died.signalCode === null) await new Promise((res) => died.once("exit", res))
    expect(died.signalCode).toBe("SIGKILL")
  }

  /** SQL on the embedded database of a stopped server. */
  const onDatabase = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
    Effect.runPromise(Effect.gen(function*() {
      return yield* f(yield* SqlClient.SqlClient)
    }).pipe(Effect.provide(databaseLayer(loadConfig({ DATA_DIR: dataDir, SECRET_KEY: env.SECRET_KEY }))), Effect.scoped))

  it("a retry under the same Idempotency-Key meets the jobs the dead try wrote: none twice, none stranded, same webhook secrets", async () => {
    const crashing = await startServer(env, { dataDir, fault: "crash-after-job-insert" })
    servers.push(crashing)
    const api = client(crashing.baseUrl)
    const t = await api.createTenant()
    // Room for three running jobs: the fourth valid item is refused for quota, by both tries.
    const admin = await api.call("POST", "/internal/v1/internal-admins", { token: INTERNAL_TOKEN, body: { email: `crash-ops-${Date.now()}@trawl.dev` } })
    const quota = await api.call("PUT", `/v1/admin/tenants/${t.tenantId}/quotas/scraper.jobs.concurrent`, { key: admin.json.data.apiKey, body: { limit: 3 } })
    expect(quota.status, quota.text).toBe(200)
    const body = {
      jobs: [
        { url: site.url("/page?case=crash-1", 0), webhookUrl: site.url("/hook", 1) },
        { url: site.url("/page?case=crash-2", 1) },
        { url: "ftp://example.com/refused" },
        { url: site.url("/page?case=crash-3", 0), webhookUrl: site.url("/hook", 1) },
        { url: site.url("/page?case=crash-4", 1) }
      ]
    }
    const send = (baseUrl: string) =>
      client(baseUrl).call("POST", "/v1/scraper/jobs/bulk", { key: t.apiKey, body, headers: { "idempotency-key": "crash-key" } })
    // The node dies once the rows are written: no answer, no hand-off.
    await crashWith(crashing, () => send(crashing.baseUrl))

    // What it left: three queued jobs and the key's claim, which is free at once for the next
    // process on this embedded database (its node is gone), not after a minute.
    const left = await onDatabase((sql) => sql<{ id: string; status: string }>`SELECT id, status FROM jobs WHERE tenant_id = ${t.tenantId} ORDER BY id`)
    expect(left.map((j) => j.status)).toEqual(["queued", "queued", "queued"])

    const second = await startServer(env, { dataDir })
    servers.push(second)
    const retry = await send(second.baseUrl)
    expect(retry.status, retry.text).toBe(207)
    const created = retry.json.data.created as Array<{ id: string; webhookSecret?: string }>
    // The jobs the dead try wrote, in request order; the others are refused as that try refused them
    // (with the three jobs still holding the tenant's slots, the fifth item finds no room).
    expect(created.map((j) => j.id)).toEqual(left.map((j) => j.id))
    expect(retry.json.data.failed.map((f: { index: number; reason: string }) => [f.index, f.reason.split(":")[0]])).toEqual([
      [2, "unsafe_url"],
      [4, "concurrent_limit_exceeded"]
    ])
    // A third send answers the stored response.
    expect((await send(second.baseUrl)).text).toBe(retry.text)

    // The jobs run now (the retry handed them on), not after their hand-off lease.
    const { jobs, open } = await waitAllTerminal(second.baseUrl, t.apiKey, created.map((j) => j.id), 30_000)
    expect(open).toEqual([])
    for (const j of jobs.values()) expect(j.status, JSON.stringify(j)).toBe("done")
    const list = await client(second.baseUrl).get("/v1/scraper/jobs?limit=50", t.apiKey)
    expect(list.json.data.pagination.total).toBe(3)

    // The generated webhook secrets the retry answered are the ones the jobs sign with.
    const withHook = created.filter((j) => j.webhookSecret !== undefined)
    expect(withHook).toHaveLength(2)
    await second.stop("SIGTERM")
    const stored = await onDatabase((sql) => sql<{ id: string; webhook_secret_enc: string }>`
      SELECT id, webhook_secret_enc FROM jobs WHERE tenant_id = ${t.tenantId} AND webhook_secret_enc IS NOT NULL`)
    const storedSecret = new Map(stored.map((r) => [r.id, decryptSecret(secretKey, r.webhook_secret_enc, "webhook")]))
    for (const j of withHook) expect(storedSecret.get(j.id)).toBe(j.webhookSecret)
  }, 120_000)

  it("a retry of an extraction whose node died after writing its page's job meets that job and creates one extraction", async () => {
    const crashing = await startServer(env, { dataDir, fault: "crash-after-job-insert" })
    servers.push(crashing)
    const t = await client(crashing.baseUrl).createTenant()
    const body = { url: site.url("/page?case=crash-extraction", 0), type: "article", webhookUrl: site.url("/hook", 1) }
    const send = (baseUrl: string) =>
      client(baseUrl).call("POST", "/v1/extractor/extractions", { key: t.apiKey, body, headers: { "idempotency-key": "extraction-key" } })
    await crashWith(crashing, () => send(crashing.baseUrl))
    const left = await onDatabase((sql) =>
      Effect.gen(function*() {
        return {
          jobs: yield* sql<{ id: string }>`SELECT id FROM jobs WHERE tenant_id = ${t.tenantId}`,
          extractions: yield* sql<{ id: string }>`SELECT id FROM extractions WHERE tenant_id = ${t.tenantId}`
        }
      }))
    expect(left.jobs).toHaveLength(1)
    expect(left.extractions).toHaveLength(0)

    const second = await startServer(env, { dataDir })
    servers.push(second)
    const retry = await send(second.baseUrl)
    expect(retry.status, retry.text).toBe(201)
    expect(retry.json.data.jobId).toBe(left.jobs[0]!.id)
    expect((await send(second.baseUrl)).text).toBe(retry.text)
    const api = client(second.baseUrl)
    const deadline = Date.now() + 30_000
    let extraction: any
    do {
      await sleep(300)
      extraction = (await api.get(`/v1/extractor/extractions/${retry.json.data.id}`, t.apiKey)).json.data
    } while (!["done", "failed", "dead"].includes(extraction?.status) && Date.now() < deadline)
    expect(extraction.status, JSON.stringify(extraction)).toBe("done")
    expect((await api.get("/v1/scraper/jobs?limit=50", t.apiKey)).json.data.pagination.total).toBe(1)
    expect((await api.get("/v1/extractor/extractions?limit=50", t.apiKey)).json.data.pagination.total).toBe(1)
    await second.stop("SIGTERM")
    const [row] = await onDatabase((sql) => sql<{ webhook_secret_enc: string }>`SELECT webhook_secret_enc FROM extractions WHERE id = ${retry.json.data.id}`)
    expect(decryptSecret(secretKey, row!.webhook_secret_enc, "webhook")).toBe(retry.json.data.webhookSecret)
  }, 120_000)
})

describe("graceful restarts do not count as interrupted runs (embedded backend)", () => {
  const node = restartableNode("trawl-restart-")
  const env = { ALLOW_PRIVATE_TARGETS: "true", ...loopbackOnlyEnv() }

  it("finishes jobs whose runs were stopped by more SIGTERM restarts than MAX_RUNS", async () => {
    // Ten jobs on one domain: two crawl (claimed), eight wait for the domain's slots (queued). A
    // SIGTERM stops every run at once (the process exits by itself); each runs again after the
    // restart, so every job sees MAX_RUNS + 1 restarts or ends before.
    let server = await startServer(env, { dataDir: node.dataDir })
    node.servers.push(server)
    const t = await client(server.baseUrl).createTenant()
    const body = (i: number) => ({ url: node.site.url(`/slow?ms=3000&job=${i}`), timeoutMs: 15_000, escalation: [{ engine: "http", attempts: 1, timeoutMs: 10_000 }] })
    const bulk = await client(server.baseUrl).post("/v1/scraper/jobs/bulk", { jobs: Array.from({ length: 10 }, (_, i) => body(i)) }, t.apiKey)
    expect(bulk.status, bulk.text).toBe(201)
    const ids = bulk.json.data.created.map((j: any) => j.id as string)
    for (let restart = 1; restart <= MAX_RUNS + 1; restart++) {
      const hits = node.site.hits("/slow")
      const deadline = Date.now() + 30_000
      while (node.site.hits("/slow") <= hits && Date.now() < deadline) await sleep(50)
      expect(node.site.hits("/slow"), `crawls running before restart ${restart}`).toBeGreaterThan(hits)
      await server.stop("SIGTERM")
      expect(server.process.signalCode, "the server did not exit by itself within 10 s of SIGTERM").not.toBe("SIGKILL")
      server = await startServer(env, { dataDir: node.dataDir })
      node.servers.push(server)
    }
    const { jobs, open } = await waitAllTerminal(server.baseUrl, t.apiKey, ids, 60_000)
    expect(open).toEqual([])
    for (const j of jobs.values()) expect(`${j.status}/${j.result?.classification}`, JSON.stringify(j.result)).toBe("done/ok")
  }, 150_000)
})

describe.skipIf(!baseDbUrl)("a node killed mid-crawl loses no accepted job (two nodes on one PostgreSQL)", () => {
  let site: FixtureSite
  let a: RunningServer
  let b: RunningServer
  let dbUrl: string

  beforeAll(async () => {
    site = await startFixtureSite({ hosts: SLOW_HOSTS })
    dbUrl = await createTestDatabase(baseDbUrl!)
    // Nodes of one cluster share SECRET_KEY (API keys are stored as an HMAC keyed by it).
    const env = { DATABASE_URL: dbUrl, ...redis, SECRET_KEY: randomBytes(32).toString("hex"), ALLOW_PRIVATE_TARGETS: "true", ...loopbackOnlyEnv() }
    a = await startServer({ ...env, RUNNER_PORT: String(await freePort()) })
    b = await startServer({ ...env, RUNNER_PORT: String(await freePort()) })
  }, 120_000)
  afterAll(async () => {
    await a?.stop()
    await b?.stop()
    await site?.close()
  })

  it("finishes every job on the survivor after the other node is SIGKILLed", async () => {
    const t = await client(a.baseUrl).createTenant()
    // jobs are sharded over both nodes; create them through the node that will die
    const ids = await createSlowJobs(site, b.baseUrl, t.apiKey)
    const hitsAtKill = site.hits("/slow")
    await b.stop("SIGKILL")
    const killedAt = Date.now()
    const { jobs, open } = await waitAllTerminal(a.baseUrl, t.apiKey, ids, 45_000)
    console.log(`postgres kill test: ${JSON.stringify(summary(jobs))} ${Date.now() - killedAt} ms after the kill; fixture hits at kill ${hitsAtKill}, after ${site.hits("/slow")}`)
    expect(open, `jobs still open on the survivor: ${JSON.stringify(open.map((id) => jobs.get(id)))}`).toEqual([])
    for (const j of jobs.values()) expect(j.status, JSON.stringify(j)).toBe("done")
    const list = await client(a.baseUrl).get("/v1/scraper/jobs?limit=200", t.apiKey)
    expect(list.json.data.pagination.total).toBe(JOBS)
  }, 60_000)

  it("frees an Idempotency-Key whose request died with its node once the claim is abandoned", async () => {
    const t = await client(a.baseUrl).createTenant()
    const url = site.url("/page?case=abandoned")
    // What a node killed mid-request leaves: the key claimed by it, no response stored.
    const claim = (key: string, agoSeconds: number) =>
      pgQuery(dbUrl, `INSERT INTO idempotency_keys (tenant_id, key, request_hash, id_seed, claim_token, created_at)
                    VALUES ($1, $2, 'hash-of-the-lost-request', 'seed_01m89hvef2vzpj76dvd3ahs8n4', 'claim-of-the-lost-request', now() - $3 * interval '1 second')`,
        [t.tenantId, key, agoSeconds])
    await claim("abandoned-key", ABANDONED_CLAIM_SECONDS + 1)
    const freed = await client(a.baseUrl).call("POST", "/v1/scraper/jobs", { key: t.apiKey, body: { url }, headers: { "idempotency-key": "abandoned-key" } })
    expect(freed.status, freed.text).toBe(201)
    const again = await client(a.baseUrl).call("POST", "/v1/scraper/jobs", { key: t.apiKey, body: { url }, headers: { "idempotency-key": "abandoned-key" } })
    expect(again.text).toBe(freed.text)
    // A claim younger than that is a request still running: a different body is a mismatch.
    await claim("running-key", 1)
    const mismatch = await client(a.baseUrl).call("POST", "/v1/scraper/jobs", { key: t.apiKey, body: { url }, headers: { "idempotency-key": "running-key" } })
    expect(mismatch.status).toBe(409)
    expect(mismatch.json.code).toBe("idempotency_mismatch")
  }, 30_000)

  it("frees at once a young claim whose node has no database session left, and keeps a live node's", async () => {
    const t = await client(a.baseUrl).createTenant()
    const url = site.url("/page?case=claim-node")
    const claim = (key: string, node: string) =>
      pgQuery(dbUrl, `INSERT INTO idempotency_keys (tenant_id, key, request_hash, id_seed, claim_token, claim_node)
                    VALUES ($1, $2, 'hash-of-another-request', 'seed_01m89hvef2vzpj76dvd3ahs8n4', 'claim-of-another-request', $3)`,
        [t.tenantId, key, node])
    const send = (key: string) => client(a.baseUrl).call("POST", "/v1/scraper/jobs", { key: t.apiKey, body: { url }, headers: { "idempotency-key": key } })
    // The live nodes' sessions (node a's at least; b may have been killed by an earlier test): a claim
    // of a live node is a request still running there.
    const sessions = await pgQuery<{ application_name: string }>(dbUrl, `SELECT DISTINCT application_name FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE 'trawl-%'`)
    const names = sessions.map((r) => r.application_name)
    expect(names.length).toBeGreaterThan(0)
    for (const [i, name] of names.entries()) {
      await claim(`live-node-key-${i}`, name)
      expect((await send(`live-node-key-${i}`)).json.code).toBe("idempotency_mismatch")
    }
    // A node that died (its process gone, so are its sessions): the retry runs now, not in a minute.
    await claim("dead-node-key", "trawl-4242-deadbeef")
    const retried = await send("dead-node-key")
    expect(retried.status, retried.text).toBe(201)
  }, 30_000)
})

// Limits are lowered per tenant through the super-admin quota override, on every backend.
describe.each(backends())("job quotas answer 429 ($name)", (backend) => {
  let site: FixtureSite
  let server: RunningServer
  let dbUrl: string | undefined
  let api: ReturnType<typeof client>
  let adminKey: string

  beforeAll(async () => {
    site = await startFixtureSite({ hosts: ["127.0.0.31", "127.0.0.32", "127.0.0.33"] })
    const env = await backend.env()
    dbUrl = env.DATABASE_URL
    server = await startServer({ ...env, ALLOW_PRIVATE_TARGETS: "true", ...loopbackOnlyEnv() })
    api = client(server.baseUrl)
    const admin = await api.call("POST", "/internal/v1/internal-admins", { token: INTERNAL_TOKEN, body: { email: `quota-ops-${Date.now()}@trawl.dev` } })
    adminKey = admin.json.data.apiKey
  }, 120_000)
  afterAll(async () => {
    await server?.stop()
    await site?.close()
  })

  const override = async (tenantId: string, key: string, limit: number) => {
    const res = await api.call("PUT", `/v1/admin/tenants/${tenantId}/quotas/${key}`, { key: adminKey, body: { limit } })
    expect(res.status, res.text).toBe(200)
  }

  const expect429 = (res: { status: number; json: any; headers: Headers; text: string }, code: string) => {
    expect(res.status, res.text).toBe(429)
    expect(res.json.status).toBe("error")
    expect(res.json.code).toBe(code)
    expect(res.json.error.requestId).toBe(res.headers.get("x-request-id"))
  }

  const waitTerminal = async (id: string, key: string) => {
    const deadline = Date.now() + 30_000
    for (;;) {
      const j = (await api.get(`/v1/scraper/jobs/${id}`, key)).json.data
      if (terminal.includes(j.status)) return j
      if (Date.now() > deadline) throw new Error(`job ${id} still ${j.status}`)
      await sleep(200)
    }
  }

  it("scraper.jobs.concurrent: 429 concurrent_limit_exceeded while the slots are taken, 201 once one is freed", async () => {
    const t = await api.createTenant()
    await override(t.tenantId, "scraper.jobs.concurrent", 2)
    const slow = (i: number) => ({
      url: site.url(`/slow?ms=30000&q=${i}`, i % 2),
      timeoutMs: 60_000,
      escalation: [{ engine: "http", attempts: 1, timeoutMs: 45_000 }]
    })
    const j1 = await api.post("/v1/scraper/jobs", slow(1), t.apiKey)
    const j2 = await api.post("/v1/scraper/jobs", slow(2), t.apiKey)
    expect([j1.status, j2.status]).toEqual([201, 201])
    const third = await api.post("/v1/scraper/jobs", slow(3), t.apiKey)
    expect429(third, "concurrent_limit_exceeded")
    expect(Number(third.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
    expect429(await api.post("/v1/scraper/jobs/bulk", { jobs: [slow(4)] }, t.apiKey), "concurrent_limit_exceeded")
    // nothing was created by the refused calls
    expect((await api.get("/v1/scraper/jobs", t.apiKey)).json.data.pagination.total).toBe(2)

    // cancelling one frees its slot at once
    expect((await api.post(`/v1/scraper/jobs/${j1.json.data.id}/cancel`, undefined, t.apiKey)).status).toBe(200)
    const fast = await api.post("/v1/scraper/jobs", { url: site.url("/page?q=after-cancel", 2) }, t.apiKey)
    expect(fast.status, fast.text).toBe(201)
    // a job that ends frees its slot too
    await waitTerminal(fast.json.data.id, t.apiKey)
    const again = await api.post("/v1/scraper/jobs", { url: site.url("/page?q=after-done", 2) }, t.apiKey)
    expect(again.status, again.text).toBe(201)
    await waitTerminal(again.json.data.id, t.apiKey)

    // another tenant is not limited by this one
    const other = await api.createTenant()
    const free = await api.post("/v1/scraper/jobs", { url: site.url("/page?q=other", 2) }, other.apiKey)
    expect(free.status).toBe(201)
    await waitTerminal(free.json.data.id, other.apiKey)
    expect((await api.post(`/v1/scraper/jobs/${j2.json.data.id}/cancel`, undefined, t.apiKey)).status).toBe(200)

    // a bulk larger than the limit is not refused forever: what fits now is created, the rest reported
    const big = await api.post("/v1/scraper/jobs/bulk", { jobs: [slow(5), slow(6), slow(7)] }, t.apiKey)
    expect(big.status, big.text).toBe(207)
    expect(big.json.data.summary).toEqual({ total: 3, created: 2, failed: 1 })
    expect(big.json.data.failed).toEqual([{ index: 2, url: slow(7).url, reason: expect.stringMatching(/^concurrent_limit_exceeded: /), retryAfter: 1 }])
    for (const j of big.json.data.created) expect((await api.post(`/v1/scraper/jobs/${j.id}/cancel`, undefined, t.apiKey)).status).toBe(200)
  }, 60_000)

  it("scraper.jobs.daily: 429 quota_exceeded with Retry-After to the next UTC midnight", async () => {
    const t = await api.createTenant()
    await override(t.tenantId, "scraper.jobs.daily", 3)
    const body = (i: number) => ({ url: site.url(`/page?d=${i}`, 2) })
    const k1 = `daily-${Date.now()}`
    const first = await api.call("POST", "/v1/scraper/jobs", { key: t.apiKey, body: body(1), headers: { "idempotency-key": k1 } })
    expect(first.status).toBe(201)
    expect((await api.post("/v1/scraper/jobs", body(2), t.apiKey)).status).toBe(201)
    // a bulk that would overshoot creates what fits, in request order, and reports the rest as failed
    // (an invalid item's URL is echoed up to the longest a valid one can be)
    // (and is not cut between the halves of a surrogate pair)
    const huge = `http://127.0.0.1/${"a".repeat(100_000)}`
    const emoji = `http://127.0.0.1/${"a".repeat(2030)}${"\u{1F600}".repeat(20)}`
    const bulk = await api.post("/v1/scraper/jobs/bulk", { jobs: [body(3), body(4), { url: huge }, { url: emoji }] }, t.apiKey)
    expect(bulk.status, bulk.text).toBe(207)
    expect(bulk.json.data.summary).toEqual({ total: 4, created: 1, failed: 3 })
    expect(bulk.json.data.created.map((j: any) => j.url)).toEqual([body(3).url])
    expect(bulk.json.data.failed).toEqual([
      { index: 1, url: body(4).url, reason: expect.stringMatching(/^quota_exceeded: /), retryAfter: expect.any(Number) },
      { index: 2, url: `${huge.slice(0, 2048)}…`, reason: expect.stringMatching(/^validation_error: /) },
      { index: 3, url: `${emoji.slice(0, 2047)}…`, reason: expect.stringMatching(/^validation_error: /) }
    ])
    expect(bulk.text).not.toMatch(/\\ud83d…/i)
    expect(bulk.json.data.failed[0].retryAfter).toBeGreaterThan(0)

    const over = await api.post("/v1/scraper/jobs", body(4), t.apiKey)
    const now = Date.now()
    expect429(over, "quota_exceeded")
    const d = new Date(now)
    const toMidnight = (Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1) - now) / 1000
    const retryAfter = Number(over.headers.get("retry-after"))
    expect(Number.isInteger(retryAfter)).toBe(true)
    expect(Math.abs(retryAfter - toMidnight), `Retry-After ${retryAfter}, seconds to UTC midnight ${toMidnight}`).toBeLessThanOrEqual(5)
    expect429(await api.post("/v1/scraper/jobs/bulk", { jobs: [body(5)] }, t.apiKey), "quota_exceeded")
    // When nothing fits, the items that failed on their own are named in the 429 too.
    // (in item order, though a refused URL is found out later than a schema error)
    const withBad = await api.post("/v1/scraper/jobs/bulk", { jobs: [body(5), { url: "ftp://127.0.0.1/x" }, { url: 7 }, { url: "" }] }, t.apiKey)
    expect429(withBad, "quota_exceeded")
    expect(withBad.json.error.details).toEqual([
      { path: "jobs.1", code: "item_failed", message: expect.stringMatching(/^(validation_error|unsafe_url): /) },
      { path: "jobs.2", code: "item_failed", message: expect.stringMatching(/^validation_error: /) },
      { path: "jobs.3", code: "item_failed", message: expect.stringMatching(/^validation_error: /) }
    ])
    await waitTerminal(first.json.data.id, t.apiKey)
    expect429(await api.post(`/v1/scraper/jobs/${first.json.data.id}/replay`, undefined, t.apiKey), "quota_exceeded")

    // the stored response of an earlier idempotent request is still served; it costs no quota
    const again = await api.call("POST", "/v1/scraper/jobs", { key: t.apiKey, body: body(1), headers: { "idempotency-key": k1 } })
    expect(again.status).toBe(201)
    expect(again.json).toEqual(first.json)
    expect((await api.get("/v1/scraper/jobs", t.apiKey)).json.data.pagination.total).toBe(3)

    // finished jobs still count for the day
    const ids = (await api.get("/v1/scraper/jobs", t.apiKey)).json.data.items.map((j: any) => j.id)
    for (const id of ids) await waitTerminal(id, t.apiKey)
    expect429(await api.post("/v1/scraper/jobs", body(6), t.apiKey), "quota_exceeded")

    // raising the limit takes effect on the next reservation
    await override(t.tenantId, "scraper.jobs.daily", 4)
    const raised = await api.post("/v1/scraper/jobs", body(7), t.apiKey)
    expect(raised.status, raised.text).toBe(201)
    await waitTerminal(raised.json.data.id, t.apiKey)
  }, 60_000)

  // The stored copy is read straight from SQL, which needs a database the test can reach.
  it.skipIf(backend.name !== "postgres")("keeps an idempotent response that holds a generated webhook secret encrypted at rest", async () => {
    const t = await api.createTenant()
    const key = `secret-${Date.now()}`
    const body = { url: site.url("/page?idem-secret=1", 2), webhookUrl: site.url("/hook", 1) }
    const first = await api.call("POST", "/v1/scraper/jobs", { key: t.apiKey, body, headers: { "idempotency-key": key } })
    expect(first.status, first.text).toBe(201)
    const secret = first.json.data.webhookSecret as string
    expect(secret.length).toBeGreaterThanOrEqual(43)
    // the same client asking again gets its first response, secret included (it may never have read it)...
    const again = await api.call("POST", "/v1/scraper/jobs", { key: t.apiKey, body, headers: { "idempotency-key": key } })
    expect(again.text).toBe(first.text)
    // ...but the stored copy does not hold it in clear
    const [row] = await pgQuery<{ response: string }>(dbUrl!, "SELECT response FROM idempotency_keys WHERE tenant_id = $1 AND key = $2", [t.tenantId, key])
    expect(row!.response).not.toContain(secret)
    expect(row!.response).not.toContain(first.json.data.id)
    await waitTerminal(first.json.data.id, t.apiKey)
  }, 60_000)
})
