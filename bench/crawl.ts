/**
 * Crawl benchmark: Trawl's crawl path against a bare Crawlee HttpCrawler and a bare undici loop,
 * and Trawl's job creation against a bare `node:http` + one INSERT handler.
 *
 *   npm run bench:crawl
 *   npm run bench:crawl -- --pages 2000 --warm 500 --concurrency 32 --create-seconds 8 --create-connections 32
 *   npm run bench:crawl -- --profile            # also --cpu-prof the Trawl server and summarize it
 *   KEEP_PROFILE=/tmp/a.cpuprofile npm run bench:crawl -- --profile   # and keep round 1's profile there
 *   npm run bench:crawl -- --phases a           # only some phases (a, b, c, d, e); no ratio line without a-d
 *   npm run bench:crawl -- --rounds 5           # rounds of (a), (b), (c) in turn (default 3); medians reported
 *
 * Fixture site (bench/crawl-support/fixture-server.ts, own process): `--pages` distinct ~50 KB HTML
 * pages. All loopback addresses are one "domain" each for Trawl's politeness limit
 * (config/crawl.json perDomainConcurrency, 2), so the site listens on concurrency/2 addresses
 * 127.0.0.2, 127.0.0.3, ... (Linux routes all of 127/8 to lo) and page i lives on address i mod n.
 * Trawl's effective crawl concurrency is then min(addresses x perDomainConcurrency, the node's job
 * capacity NODE_JOB_CAPACITY); Crawlee and undici get exactly that concurrency.
 *
 * (a) Trawl (real server process, ALLOW_PRIVATE_TARGETS=true, embedded PGlite or DATABASE_URL):
 *     pages spread over tenants (at most 40 each, under the 50 concurrent-jobs quota), one bulk
 *     request per tenant (owner key), then wait for every job's job.done/failed/dead on the
 *     tenants' event streams. pages/s = pages / (first submit .. last terminal event); CPU = the
 *     server's utime+stime from /proc over the same span.
 * (b) Crawlee HttpCrawler in a child process, defaults except min = max concurrency and
 *     persistStorage: false. (c) undici loop in a child process. Both after a warm-up run; CPU is
 *     the child's own process CPU over the measured run. (a) has the same warm-up.
 * (d) POST /v1/scraper/jobs at fixed concurrency for --create-seconds (after a warm-up), round-robin
 *     over many tenants' owner keys (84 req/s per key, 50 active jobs per tenant), each job pointing
 *     at a tiny fixture page; against the bare INSERT server (bench/crawl-support/bare-insert-server.ts)
 *     on its own PGlite, or on the same DATABASE_URL database. Any non-201 is printed loudly.
 * (e) The fixed design's floor (bench/crawl-support/floor-runner.ts, own process, own database): every
 *     job is a sharded entity created by a persisted message, so each job costs at least one
 *     persisted message to a fresh entity. The same number of such messages, on Trawl's cluster wiring
 *     and message storage, to an entity that does nothing: messages/s and CPU ms per message, to set
 *     against (a)'s pages/s and CPU per page and against the goals' budgets.
 *
 * Rounds: (a), (b) and (c) run in turn `--rounds` times, each a fresh process that warms up, is
 * measured and stops (Trawl on one data directory, its tenants made once; each round fetches pages
 * no earlier round fetched). The crawl figures and ratios are the medians over the rounds, and
 * each round's ratio is printed too. (d) runs on one more fresh Trawl server after the rounds.
 *
 * Last line: `crawl ratio_crawlee=<a/b> ratio_ceiling=<a/c> create_ratio=<trawl/bare>`.
 */
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { cpus, loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { client, createTestDatabase, freePort, INTERNAL_TOKEN, type RunningServer, startServer } from "../test/support/server-process.ts"
import { type LoadResult, openSse, runPostLoad, type SseStream } from "./crawl-support/load.ts"
import { cleanupAll, cpuMs, dropDatabase, threadCpuMs, installExitHandlers, onCleanup, root, runMain, spawnTs, toggleProfiler } from "./support/processes.ts"
import { summarizeProfile } from "./crawl-support/profile.ts"
import { connectStats, diffCounts, listeningPorts, type SqlStats, type TableCounts } from "./crawl-support/sql-stats.ts"
import { median } from "./support/load.ts"
import { flag, numberOption, stringOption } from "./support/options.ts"
import { loadCrawlConfig } from "../src/crawl/config.ts"

// ---------------------------------------------------------------------------------------------
// Options

const opt = numberOption
const optStr = stringOption

// Enough pages, after enough warm-up, to measure steady state: a short run of a cold server
// mostly measures its JIT (and the embedded database's WebAssembly tier-up).
const pages = opt("pages", 2000)
const warmPages = opt("warm", 500)
const requestedConcurrency = opt("concurrency", 32)
const jobsPerTenant = Math.min(50, opt("jobs-per-tenant", 40))
const createSeconds = opt("create-seconds", 8)
const createWarmup = opt("create-warmup", 1.5)
const createConnections = opt("create-connections", 32)
const createTenants = opt("create-tenants", 64)
const pageBytes = opt("page-bytes", 50_000)
const profile = flag("profile")
const sqlStats = flag("sql-stats")
const phases = new Set(optStr("phases", "a,b,c,d,e").split(",").map((s) => s.trim()))
// The crawls (a), (b) and (c) run in turn this many times; the figures are the medians, so that a
// moment of load on this shared machine moves one round, not the result.
const rounds = Math.max(1, opt("rounds", 3))

const log = (line = "") => console.log(line)
const f = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : String(x))
const loud = (msg: string) => {
  log("")
  log(`!!!!!!!! ${msg} !!!!!!!!`)
  log("")
}
const withTimeout = <A>(p: Promise<A>, ms: number, what: string): Promise<A> => {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    p,
    new Promise<never>((_, rej) => (timer = setTimeout(() => rej(new Error(`${what} within ${ms / 1000} s`)), ms)))
  ]).finally(() => clearTimeout(timer))
}
/** The machine's load average: the box is shared, so every figure comes with it. */
const load = () => `load ${loadavg().map((x) => x.toFixed(1)).join(" ")} on ${cpus().length} cores`
const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms))

// ---------------------------------------------------------------------------------------------
// Concurrency: politeness per loopback address, node job capacity

const perDomain = loadCrawlConfig().perDomainConcurrency
const nodeCapacity = (() => {
  // NODE_JOB_CAPACITY in src/crawl/crawl-service.ts (read, not imported: the import would load every engine).
  try {
    const m = /NODE_JOB_CAPACITY\s*=\s*(\d+)/.exec(readFileSync(join(root, "src/crawl/crawl-service.ts"), "utf8"))
    return m ? Number(m[1]) : undefined
  } catch {
    return undefined
  }
})()
const concurrency = Math.min(requestedConcurrency, nodeCapacity ?? requestedConcurrency)
const domainCount = Math.max(1, Math.ceil(concurrency / perDomain))
if (domainCount > 250) throw new Error("too many loopback addresses needed; lower --concurrency")
const hosts = Array.from({ length: domainCount }, (_, i) => `127.0.0.${i + 2}`)

// ---------------------------------------------------------------------------------------------
// Fixture site

interface Fixture {
  readonly origins: ReadonlyArray<string>
  readonly url: (kind: "page" | "warm" | "tiny", n: number) => string
  /** The fixture process's CPU so far (ms). */
  readonly cpuMs: () => number | undefined
}

const startFixture = async (): Promise<Fixture> => {
  const child = spawnTs("fixture server", "bench/crawl-support/fixture-server.ts", {
    FIXTURE_HOSTS: hosts.join(","),
    PAGE_BYTES: String(pageBytes)
  })
  const ready = JSON.parse(await child.line("fixture ready", 30_000)) as { bound: Array<{ host: string; port: number }>; sample: number }
  const origins = ready.bound.map((b) => `http://${b.host}:${b.port}`)
  log(`fixture: ${origins.length} loopback addresses (${hosts[0]} .. ${hosts[hosts.length - 1]}), a page is ${ready.sample} bytes`)
  return { origins, url: (kind, n) => `${origins[n % origins.length]}/${kind}/${n}`, cpuMs: () => cpuMs(child.process.pid) }
}

// ---------------------------------------------------------------------------------------------
// Trawl: tenants, bulk submission, terminal events

interface Tenant {
  readonly tenantId: string
  readonly apiKey: string
}

const createTenantsOn = async (baseUrl: string, count: number, label: string): Promise<Array<Tenant>> => {
  const api = client(baseUrl)
  const out: Array<Tenant> = new Array(count)
  let next = 0
  const worker = async () => {
    for (let i = next++; i < count; i = next++) {
      const res = await api.call("POST", "/internal/v1/tenants", {
        token: INTERNAL_TOKEN,
        body: { name: `Bench ${label} ${i}`, ownerEmail: `bench-${label}-${i}-${Date.now().toString(36)}@example.com` }
      })
      if (res.status !== 201) throw new Error(`tenant creation failed: ${res.status} ${res.text}`)
      out[i] = { tenantId: res.json.data.tenantId, apiKey: res.json.data.apiKey }
    }
  }
  await Promise.all(Array.from({ length: 4 }, worker))
  return out
}

interface Terminal {
  readonly status: string
  readonly classification: string | undefined
  readonly at: number
}

/**
 * Event streams of some tenants; records the first terminal event per job id. `waitFor` answers
 * the server's CPU reading at the moment the last awaited job's event came: read once, there,
 * instead of at every event, so that the client takes less of the machine it shares with the server.
 */
const watchTenants = async (baseUrl: string, tenants: ReadonlyArray<Tenant>, serverPid: number) => {
  const terminal = new Map<string, Terminal>()
  let waiting: { ids: ReadonlySet<string>; resolve: (serverCpuMs: number) => void } | undefined
  let streamError: Error | undefined
  let lastTerminalAt = performance.now()
  const check = () => {
    if (!waiting) return
    for (const id of waiting.ids) if (!terminal.has(id)) return
    const w = waiting
    waiting = undefined
    w.resolve(cpuMs(serverPid) ?? NaN)
  }
  const streams: Array<SseStream> = tenants.map((t) =>
    openSse(baseUrl, "/v1/scraper/events", { "x-api-key": t.apiKey }, (e) => {
      if (e.event !== "job.done" && e.event !== "job.failed" && e.event !== "job.dead") return
      const data = JSON.parse(e.data) as { id: string; classification?: string }
      if (terminal.has(data.id)) return
      lastTerminalAt = performance.now()
      terminal.set(data.id, { status: e.event.slice(4), classification: data.classification, at: lastTerminalAt })
      check()
    }, (error) => {
      streamError ??= error
    })
  )
  const close = onCleanup("event streams", () => streams.forEach((s) => s.close()))
  await withTimeout(Promise.all(streams.map((s) => s.connected)), 30_000, "the event streams did not connect")
  /** Terminal events in each tenant's stored event log (replayed from the start) that the live streams did not deliver. */
  const missedLive = async () => {
    let inLog = 0
    let missed = 0
    await Promise.all(tenants.map(async (t) => {
      const seen = new Set<string>()
      const replay = openSse(baseUrl, "/v1/scraper/events", { "x-api-key": t.apiKey, "last-event-id": "0" }, (e) => {
        if (e.event === "job.done" || e.event === "job.failed" || e.event === "job.dead") seen.add((JSON.parse(e.data) as { id: string }).id)
      }, () => {})
      await replay.connected.catch(() => {})
      await sleep(2000)
      replay.close()
      inLog += seen.size
      for (const id of seen) if (!terminal.has(id)) missed++
    }))
    return { inLog, missed }
  }
  const waitFor = (ids: ReadonlySet<string>, timeoutMs: number, stallMs = 30_000) =>
    new Promise<number>((res, rej) => {
      const seen = () => [...ids].filter((id) => terminal.has(id)).length
      const started = performance.now()
      lastTerminalAt = started
      const fail = (why: string) => {
        clearInterval(progress)
        waiting = undefined
        const missing = ids.size - seen()
        void missedLive().then(
          (m) => `; the tenants' event logs hold ${m.inLog} terminal events, ${m.missed} of them never came on the live streams`,
          () => ""
        ).then((diag) =>
          rej(new Error(`${missing} of ${ids.size} jobs not terminal: ${why}${streamError ? ` (stream error: ${streamError.message})` : ""}${diag}`))
        )
      }
      const progress = setInterval(() => {
        const now = performance.now()
        if (now - started > timeoutMs) return fail(`not all terminal after ${timeoutMs / 1000} s`)
        if (now - lastTerminalAt > stallMs) return fail(`no terminal event for ${stallMs / 1000} s`)
        // What the server says about the first tenant's jobs, to tell a slow run from a stuck one.
        void Promise.all((["queued", "claimed", "done", "failed", "dead"] as const).map((st) =>
          client(baseUrl).get(`/v1/scraper/jobs?status=${st}&limit=1`, tenants[0]!.apiKey).then((r) => `${st} ${r.json?.data?.pagination?.total ?? r.status}`)
        )).then(
          (counts) => log(`  ... ${seen()} of ${ids.size} jobs terminal; first tenant: ${counts.join(", ")}`),
          () => log(`  ... ${seen()} of ${ids.size} jobs terminal`)
        )
      }, 10_000)
      waiting = {
        ids,
        resolve: (serverCpuMs) => {
          clearInterval(progress)
          res(serverCpuMs)
        }
      }
      check()
    })
  return { terminal, waitFor, close }
}

/** One bulk request per tenant (its share of `urls`), all at once; 429 retried after Retry-After. */
const submitBulk = async (baseUrl: string, tenants: ReadonlyArray<Tenant>, urls: ReadonlyArray<string>) => {
  const shares: Array<Array<string>> = tenants.map(() => [])
  urls.forEach((u, i) => shares[i % tenants.length]!.push(u))
  let retried429 = 0
  const failures: Array<string> = []
  const ids: Array<string> = []
  const api = client(baseUrl)
  await Promise.all(shares.map(async (share, t) => {
    for (let start = 0; start < share.length; start += 100) {
      const body = { jobs: share.slice(start, start + 100).map((url) => ({ url })) }
      for (;;) {
        const res = await api.call("POST", "/v1/scraper/jobs/bulk", { key: tenants[t]!.apiKey, body })
        if (res.status === 429) {
          retried429++
          await sleep(1000 * Math.max(1, Number(res.headers.get("retry-after") ?? "1")))
          continue
        }
        if (res.status !== 201 && res.status !== 207) throw new Error(`bulk create: ${res.status} ${res.text.slice(0, 500)}`)
        const data = res.json.data as { created: Array<{ id: string }>; failed: Array<{ index: number; reason: string }> }
        for (const c of data.created) ids.push(c.id)
        for (const x of data.failed) failures.push(`${body.jobs[x.index]?.url}: ${x.reason}`)
        break
      }
    }
  }))
  return { ids, retried429, failures }
}

interface CrawlFigures {
  readonly label: string
  readonly pages: number
  readonly ok: number
  readonly failed: number
  readonly wallMs: number
  readonly cpuMs: number
  readonly extra?: string
  /** The fixture site's CPU per page served over the child's life (warm-up included). */
  readonly siteCpuPerPage?: number
}
const pps = (r: CrawlFigures) => (r.pages / r.wallMs) * 1000
const cpuPerPage = (r: CrawlFigures) => r.cpuMs / r.pages

type Watch = Awaited<ReturnType<typeof watchTenants>>

/** Trawl's warm-up, the same number of pages as the children's (pages of its own in each round). */
const warmTrawl = async (trawl: RunningServer, fixture: Fixture, tenants: ReadonlyArray<Tenant>, watch: Watch, round: number) => {
  const warm = await submitBulk(trawl.baseUrl, tenants, Array.from({ length: warmPages }, (_, i) => fixture.url("warm", round * warmPages + i)))
  await watch.waitFor(new Set(warm.ids), 120_000)
}

/** One measured crawl of `pages` pages through the API; `round` picks pages no earlier round fetched. */
const runTrawlCrawl = async (
  trawl: RunningServer,
  fixture: Fixture,
  tenants: ReadonlyArray<Tenant>,
  watch: Watch,
  round: number,
  profiling: boolean,
  stats: SqlStats | undefined
): Promise<CrawlFigures> => {
  const pid = trawl.process.pid!
  const urls = roundUrls(fixture, round)
  const counts0 = await stats?.read()
  if (profiling) await toggleProfiler(trawl, "bench-profile started")
  const cpu0 = cpuMs(pid) ?? NaN
  const self0 = process.cpuUsage()
  const threads0 = threadCpuMs(pid)
  const t0 = performance.now()
  const sub = await submitBulk(trawl.baseUrl, tenants, urls)
  const submittedMs = performance.now() - t0
  const ids = new Set(sub.ids)
  let cpuAtLast: number
  try {
    cpuAtLast = await watch.waitFor(ids, 180_000)
  } finally {
    if (profiling) await toggleProfiler(trawl, "bench-profile written")
  }
  const threads1 = threadCpuMs(pid)
  const client = process.cpuUsage(self0)
  if (stats && counts0) printCounts("(a) SQL per page", counts0, await stats.read(), pages)
  let lastAt = t0
  const byStatus: Record<string, number> = {}
  for (const id of ids) {
    const t = watch.terminal.get(id)!
    if (t.at > lastAt) lastAt = t.at
    const k = t.status === "done" ? "done" : `${t.status}/${t.classification}`
    byStatus[k] = (byStatus[k] ?? 0) + 1
  }
  if (sub.failures.length > 0) loud(`TRAWL REFUSED ${sub.failures.length} OF THE BULK JOBS, e.g. ${sub.failures[0]}`)
  if (ids.size !== pages || (byStatus.done ?? 0) !== pages) {
    loud(`TRAWL: ${ids.size} jobs created of ${pages}, terminal: ${JSON.stringify(byStatus)}: FIGURES NOT VALID`)
  }
  return {
    label: "Trawl (API)",
    pages,
    ok: byStatus.done ?? 0,
    failed: pages - (byStatus.done ?? 0),
    wallMs: lastAt - t0,
    cpuMs: cpuAtLast - cpu0,
    extra: `bulk ${tenants.length} req in ${f(submittedMs, 0)} ms, 429 retries ${sub.retried429}; ` +
      `CPU ms/page by server thread: ${byThread(threads0, threads1, pages)}; ` +
      `this client (bulk requests, event streams) ${f((client.user + client.system) / 1000 / pages, 3)} CPU ms/page`
  }
}

/** The busiest threads' CPU between two readings, per page: where the server's CPU goes. */
const byThread = (before: Map<string, number>, after: Map<string, number>, pages: number) =>
  [...after]
    .map(([name, ms]) => [name, (ms - (before.get(name) ?? 0)) / pages] as const)
    .filter(([, ms]) => ms >= 0.05)
    .sort((x, y) => y[1] - x[1])
    .map(([name, ms]) => `${name} ${f(ms, 2)}`)
    .join(", ")

/** The measured pages of a round: distinct per round, so Trawl's page history stores each round's pages anew. */
const roundUrls = (fixture: Fixture, round: number) => Array.from({ length: pages }, (_, i) => fixture.url("page", round * pages + i))

const runChildCrawl = async (label: string, script: string, fixture: Fixture, dir: string, round: number): Promise<CrawlFigures> => {
  const urlsFile = join(dir, `${label.replace(/\W+/g, "-")}-urls.json`)
  writeFileSync(urlsFile, JSON.stringify({
    warm: Array.from({ length: warmPages }, (_, i) => fixture.url("warm", i)),
    measured: roundUrls(fixture, round)
  }))
  const storage = mkdtempSync(join(tmpdir(), "trawl-bench-crawl-storage-"))
  const site0 = fixture.cpuMs()
  const child = spawnTs(label, script, {
    URLS_FILE: urlsFile,
    CONCURRENCY: String(concurrency),
    CRAWLEE_STORAGE_DIR: storage,
    CRAWLEE_PERSIST_STORAGE: "false"
  })
  try {
    const r = JSON.parse(await child.line("result", 150_000)) as { pages: number; ok: number; failed: number; wallMs: number; cpuMs: number }
    if (r.ok !== pages) loud(`${label.toUpperCase()}: ${r.ok} OF ${pages} PAGES OK (${r.failed} failed): FIGURES NOT VALID`)
    const site1 = fixture.cpuMs()
    const siteCpuPerPage = site0 === undefined || site1 === undefined ? undefined : (site1 - site0) / (warmPages + pages)
    return { label, ...r, siteCpuPerPage }
  } finally {
    await child.stop()
    rmSync(storage, { recursive: true, force: true })
  }
}

const printCounts = (label: string, before: TableCounts, after: TableCounts, per: number) => {
  const d = diffCounts(before, after, per)
  const rows = d.tables.map((t) => `${t.table} ${[t.ins && `+${f(t.ins, 1)}`, t.upd && `~${f(t.upd, 1)}`, t.del && `-${f(t.del, 1)}`].filter(Boolean).join(" ")}`)
  log(`${label}: ${f(d.commits, 1)} commits, ${f(d.rollbacks, 1)} rollbacks; rows (+insert ~update -delete): ${rows.join(", ")}`)
}

// ---------------------------------------------------------------------------------------------
// Job creation

const runCreate = async (
  label: string,
  baseUrl: string,
  keys: ReadonlyArray<string>,
  fixture: Fixture,
  profiler?: (on: boolean) => Promise<void>,
  pid?: number
): Promise<LoadResult & { warmRequests: number; clientCpuPerRequest: number }> => {
  const targets = (i: number) => ({
    headers: { "x-api-key": keys[i % keys.length]! },
    body: JSON.stringify({ url: fixture.url("tiny", i) })
  })
  const w = await runPostLoad(baseUrl, "/v1/scraper/jobs", targets, { connections: createConnections, seconds: createWarmup, expect: 201 })
  log(`${label.padEnd(5)} warm-up  ${f(w.rps, 0)} req/s  non-201 ${w.unexpected}`)
  await profiler?.(true)
  const threads0 = pid === undefined ? undefined : threadCpuMs(pid)
  const client0 = process.cpuUsage()
  const r = await runPostLoad(baseUrl, "/v1/scraper/jobs", targets, { connections: createConnections, seconds: createSeconds, expect: 201 })
  const client1 = process.cpuUsage(client0)
  const clientCpuPerRequest = (client1.user + client1.system) / 1000 / r.requests
  if (pid !== undefined && threads0) log(`${label.padEnd(5)} CPU ms/request by server thread: ${byThread(threads0, threadCpuMs(pid), r.requests)}`)
  await profiler?.(false)
  log(
    `${label.padEnd(5)} measured ${f(r.rps, 1)} req/s  p50 ${f(r.p50, 2)} ms  p90 ${f(r.p90, 2)} ms  p99 ${f(r.p99, 2)} ms` +
      `  max ${f(r.max, 1)} ms  non-201 ${r.unexpected}  (${r.requests} responses in ${f(r.seconds, 1)} s; this client ${f(clientCpuPerRequest, 3)} CPU ms/request)`
  )
  if (r.unexpected > 0 || w.unexpected > 0) {
    const codes = Object.entries(r.statuses).map(([s, n]) => `${s}: ${n}`).join(", ")
    loud(`${label.toUpperCase()}: ${r.unexpected} NON-201 RESPONSES (${codes}; ${r.errors} errors), ${w.unexpected} IN WARM-UP; e.g. ${r.sampleError ?? w.sampleError}`)
  }
  return { ...r, warmRequests: w.requests, clientCpuPerRequest }
}

// ---------------------------------------------------------------------------------------------

const main = async () => {
  installExitHandlers()
  const started = performance.now()
  const baseDatabaseUrl = process.env.DATABASE_URL
  const backend = baseDatabaseUrl ? `postgres${process.env.REDIS_URL ? "+redis" : ""}` : "embedded PGlite"
  log(
    `bench:crawl  backend=${backend}  pages=${pages} (+${warmPages} warm-up)  concurrency=${concurrency}` +
      `  (${domainCount} loopback addresses x perDomainConcurrency ${perDomain}; Trawl node job capacity ${nodeCapacity ?? "?"})`
  )
  log(`machine: ${load()}`)
  if (requestedConcurrency > concurrency) log(`note: --concurrency ${requestedConcurrency} capped to the node job capacity ${concurrency}`)

  const dir = mkdtempSync(join(tmpdir(), "trawl-bench-crawl-"))
  onCleanup("temp dir", () => rmSync(dir, { recursive: true, force: true }))
  const fixture = await startFixture()

  const aRounds: Array<CrawlFigures> = []
  const bRounds: Array<CrawlFigures> = []
  const cRounds: Array<CrawlFigures> = []
  let createTrawl: (LoadResult & { warmRequests: number }) | undefined
  let createBare: (LoadResult & { clientCpuPerRequest: number }) | undefined

  // 1. Trawl runs as a fresh server process for each round's (a) and again for (d), on one data
  //    directory: like each baseline's child, it warms up, is measured and stops, so that nothing
  //    else runs while the baselines are measured.
  let databaseUrl: string | undefined
  const env: Record<string, string> = { ALLOW_PRIVATE_TARGETS: "true" }
  if ((phases.has("a") || phases.has("d")) && baseDatabaseUrl) {
    databaseUrl = await createTestDatabase(baseDatabaseUrl)
    onCleanup("test database", () => dropDatabase(baseDatabaseUrl, databaseUrl!))
    env.DATABASE_URL = databaseUrl
    if (process.env.REDIS_URL) env.REDIS_URL = process.env.REDIS_URL
  }
  const dataDir = join(dir, "trawl-data")
  const profFile = join(dir, "trawl")
  const profiles: Array<{ file: string; span: string; tag: string }> = []
  let tenants: Array<Tenant> = []
  const crawlTenantCount = Math.ceil(pages / jobsPerTenant)

  /** Starts a Trawl server, runs `use` with it, and stops it, printing the warnings it logged. */
  const withTrawl = async (label: string, use: (server: RunningServer, stats: SqlStats | undefined) => Promise<void>) => {
    const t0 = performance.now()
    const server = await startServer({
      ...env,
      ...(profile ? { NODE_OPTIONS: `--import=${join(root, "bench/crawl-support/profile-hook.mjs")}`, BENCH_PROFILE_FILE: `${profFile}-${label}` } : {})
    }, { dataDir, keepDataDir: true })
    const stop = onCleanup("trawl server", () => server.stop())
    log(`trawl (${label}): pid ${server.process.pid} at ${server.baseUrl}, started in ${f((performance.now() - t0) / 1000, 1)} s`)
    let stats: SqlStats | undefined
    if (sqlStats) {
      stats = await connectStats(databaseUrl, listeningPorts(server.process.pid!).filter((p) => p !== server.port))
      if (!stats) log("sql-stats: could not reach the server's database")
    }
    try {
      if (tenants.length === 0) {
        const tenantCount = Math.max(phases.has("a") ? crawlTenantCount : 0, phases.has("d") ? createTenants : 0)
        const t1 = performance.now()
        tenants = await createTenantsOn(server.baseUrl, tenantCount, Date.now().toString(36))
        log(`trawl: ${tenantCount} tenants created in ${f((performance.now() - t1) / 1000, 1)} s`)
      }
      await use(server, stats)
    } finally {
      await stats?.close()
      const cpuTotal = cpuMs(server.process.pid!) ?? NaN
      // Warnings while measuring (e.g. shard-lock timeouts under load) explain stalls and re-runs.
      const notes = server.output().split("\n").filter((l) => /\b(WARN|ERROR|FATAL)\b/.test(l) && !/REDIS_URL is not set/.test(l))
      if (notes.length > 0) {
        log(`trawl: ${notes.length} warnings/errors in the server log, the last ones:`)
        for (const l of notes.slice(-6)) log(`  ${l.slice(0, 240)}`)
      }
      await stop()
      log(`trawl (${label}): stopped (server CPU over its life ${f(cpuTotal / 1000, 1)} s)`)
    }
  }

  // 2. Rounds: (a), (b) and (c) in turn.
  for (let round = 0; round < rounds; round++) {
    const of = `round ${round + 1} of ${rounds}`
    const profiling = profile && round === 0
    if (phases.has("a")) {
      await withTrawl(`a${round + 1}`, async (server, stats) => {
        const crawlTenants = tenants.slice(0, crawlTenantCount)
        const watch = await watchTenants(server.baseUrl, crawlTenants, server.process.pid!)
        try {
          await warmTrawl(server, fixture, crawlTenants, watch, round)
          log(`(a) Trawl, ${of}: ${pages} pages over ${crawlTenantCount} tenants (<= ${jobsPerTenant} jobs each), one bulk request per tenant  [${load()}]`)
          const a = await runTrawlCrawl(server, fixture, crawlTenants, watch, round, profiling, round === 0 ? stats : undefined)
          aRounds.push(a)
          log(`(a) Trawl: ${f(pps(a), 1)} pages/s  ${f(cpuPerPage(a), 3)} CPU ms/page (server)  ${a.ok} done  (${f(a.wallMs, 0)} ms; ${a.extra})`)
        } finally {
          await watch.close()
        }
      })
      if (profiling) profiles.push({ file: `${profFile}-a1-1.cpuprofile`, span: "(a) round 1, from the first submit to the last terminal event", tag: "a" })
    }
    if (phases.has("b")) {
      log(`(b) Crawlee HttpCrawler, ${of}: defaults except minConcurrency = maxConcurrency = ${concurrency}, persistStorage: false; own process  [${load()}]`)
      const b = await runChildCrawl("Crawlee HttpCrawler", "bench/crawl-support/crawlee-runner.ts", fixture, dir, round)
      bRounds.push(b)
      log(`(b) Crawlee: ${f(pps(b), 1)} pages/s  ${f(cpuPerPage(b), 3)} CPU ms/page  ${b.ok} ok  (${f(b.wallMs, 0)} ms)  [${load()}]`)
    }
    if (phases.has("c")) {
      log(`(c) undici, ${of}: ${concurrency} workers over one keep-alive Agent, whole body read; own process`)
      const c = await runChildCrawl("undici loop", "bench/crawl-support/undici-runner.ts", fixture, dir, round)
      cRounds.push(c)
      log(`(c) undici: ${f(pps(c), 1)} pages/s  ${f(cpuPerPage(c), 3)} CPU ms/page  ${c.ok} ok  (${f(c.wallMs, 0)} ms; fixture site ${f(c.siteCpuPerPage ?? NaN, 3)} CPU ms/page)  [${load()}]`)
    }
  }

  // 3. Job creation.
  if (phases.has("d")) {
    await withTrawl("d", async (server, stats) => {
      log(`(d) job creation: POST /v1/scraper/jobs, ${createConnections} connections, ${createTenants} tenants' owner keys, jobs on /tiny pages  [${load()}]`)
      const counts0 = await stats?.read()
      createTrawl = await runCreate("trawl", server.baseUrl, tenants.slice(0, createTenants).map((t) => t.apiKey), fixture,
        profile ? (on) => toggleProfiler(server, on ? "bench-profile started" : "bench-profile written") : undefined, server.process.pid)
      // Includes the warm-up's requests and whatever of the created jobs ran meanwhile.
      if (stats && counts0) printCounts("(d) SQL per create request (warm-up + measured, with the crawls of those jobs so far)", counts0, await stats.read(), createTrawl.requests + createTrawl.warmRequests)
    })
    if (profile) profiles.push({ file: `${profFile}-d-1.cpuprofile`, span: "(d), the measured seconds of job creation", tag: "d" })
  }
  for (const p of profiles) printProfile(p.file, p.span, p.tag)

  // 4. The bare INSERT server, after Trawl has stopped.
  if (phases.has("d")) {
    const bareDir = join(dir, "bare")
    const bare = spawnTs("bare insert server", "bench/crawl-support/bare-insert-server.ts", {
      BARE_PORT: "0",
      ...(databaseUrl ? { BARE_DATABASE_URL: databaseUrl } : { BARE_DATA_DIR: bareDir })
    })
    const port = Number(await bare.line("bare listening on", 60_000))
    const keys = Array.from({ length: createTenants }, (_, i) => `bare-key-${i}`)
    log(`(d) bare INSERT server (${databaseUrl ? "same PostgreSQL database" : "own PGlite behind EmbeddedPgServer"})  [${load()}]`)
    createBare = await runCreate("bare", `http://127.0.0.1:${port}`, keys, fixture)
    await bare.stop()
  }

  // 5. The floor of the fixed design, on a database of its own.
  let floor: FloorFigures | undefined
  if (phases.has("e")) floor = await runFloor(dir, baseDatabaseUrl)

  // 6. Summary: medians over the rounds.
  log("")
  log(`crawl of ${pages} pages at concurrency ${concurrency}, median of ${rounds} round(s)   pages/s   CPU ms/page   rounds' pages/s`)
  const rows = [aRounds, bRounds, cRounds].filter((r) => r.length > 0)
  for (const r of rows) {
    const ok = r.every((x) => x.ok === x.pages) ? "" : "  (SOME PAGES FAILED)"
    log(`  ${r[0]!.label.padEnd(22)} ${f(median(r.map(pps)), 1).padStart(22)} ${f(median(r.map(cpuPerPage)), 3).padStart(13)}   ${r.map((x) => f(pps(x), 1)).join(", ")}${ok}`)
  }
  const ratioCrawlee = aRounds.length && bRounds.length ? median(aRounds.map(pps)) / median(bRounds.map(pps)) : NaN
  const ratioCeiling = aRounds.length && cRounds.length ? median(aRounds.map(pps)) / median(cRounds.map(pps)) : NaN
  const perRound = (x: Array<CrawlFigures>, y: Array<CrawlFigures>) => x.map((r, i) => (y[i] ? f(pps(r) / pps(y[i]!), 3) : "-")).join(", ")
  if (aRounds.length && bRounds.length) {
    log(`  Trawl / Crawlee   ${f(ratioCrawlee, 3)} (goal >= 1.0: ${ratioCrawlee >= 1 ? "met" : "NOT met"}); each round ${perRound(aRounds, bRounds)}; CPU/page ${f(median(aRounds.map(cpuPerPage)) / median(bRounds.map(cpuPerPage)), 2)}x`)
  }
  if (aRounds.length && cRounds.length) {
    log(`  Trawl / undici    ${f(ratioCeiling, 3)} (goal >= 0.3: ${ratioCeiling >= 0.3 ? "met" : "NOT met"}); each round ${perRound(aRounds, cRounds)}; CPU/page ${f(median(aRounds.map(cpuPerPage)) / median(cRounds.map(cpuPerPage)), 2)}x`)
  }
  let createRatio = NaN
  if (createTrawl && createBare) {
    createRatio = createTrawl.rps / createBare.rps
    log(`job creation at ${createConnections} connections   req/s      p50 ms     p99 ms   non-201`)
    for (const [name, r] of [["Trawl", createTrawl], ["bare INSERT", createBare]] as const) {
      log(`  ${name.padEnd(22)} ${f(r.rps, 1).padStart(9)} ${f(r.p50, 2).padStart(11)} ${f(r.p99, 2).padStart(10)} ${String(r.unexpected).padStart(9)}`)
    }
    log(`  Trawl / bare      ${f(createRatio, 3)} (goal >= 0.5: ${createRatio >= 0.5 ? "met" : "NOT met"}); p99 ${f(createTrawl.p99 / createBare.p99, 2)}x`)
    if (createTrawl.unexpected > 0 || createBare.unexpected > 0) {
      loud(`NON-201 RESPONSES: Trawl ${createTrawl.unexpected}, bare ${createBare.unexpected}: CREATE RATIO NOT VALID`)
    }
  }
  if (floor) {
    const perMessage = floor.cpuMs / floor.messages
    log(`floor of the fixed design: one persisted message per job to a fresh entity that does nothing (Trawl's cluster and storage)`)
    log(`  ${f(floor.messages / (floor.wallMs / 1000), 1)} messages/s  ${f(perMessage, 3)} CPU ms/message (${floor.threads})`)
    if (aRounds.length) log(`  that is ${f((100 * perMessage) / median(aRounds.map(cpuPerPage)), 0)} % of Trawl's CPU per page in (a)`)
    if (cRounds.length) {
      // The ceiling goal's budget: the machine's CPU per page at 0.3 x the undici loop's pages/s,
      // for everything on the box (Trawl, the fixture site, this client).
      const budget = (cpus().length * 1000) / (0.3 * median(cRounds.map(pps)))
      log(`  the ceiling goal (0.3 x ${f(median(cRounds.map(pps)), 0)} pages/s) leaves ${f(budget, 3)} CPU ms/page of the whole box; the floor takes ${f((100 * perMessage) / budget, 0)} % of it`)
      // What any crawler pays per page however lean: the undici loop's own fetch and the site's serving.
      const fetchCost = median(cRounds.map(cpuPerPage)) + median(cRounds.map((r) => r.siteCpuPerPage ?? NaN))
      log(
        `  with the undici loop's fetch (client and fixture site, ${f(fetchCost, 3)} CPU ms/page) the floor leaves ${f(budget - perMessage - fetchCost, 3)} ms/page` +
          ` (${f((100 * (budget - perMessage - fetchCost)) / budget, 0)} % of the budget) to take the request, store the page and its history, write the job's end and publish its event`
      )
    }
    if (createBare) {
      // The creation goal's budget: the machine's CPU per request at 0.5 x the bare server's rate,
      // for everything on the box (Trawl, this client, and the run of the job each request creates).
      const budget = (cpus().length * 1000) / (0.5 * createBare.rps)
      log(`  the creation goal (0.5 x ${f(createBare.rps, 0)} requests/s) leaves ${f(budget, 3)} CPU ms/request of the whole box, the job's run included;` +
          ` the floor and this client's share (${f(createBare.clientCpuPerRequest, 3)} ms) take ${f((100 * (perMessage + createBare.clientCpuPerRequest)) / budget, 0)} % of it`)
    }
  }
  log(`total ${f((performance.now() - started) / 1000, 1)} s`)
  await cleanupAll()
  if (aRounds.length && bRounds.length && cRounds.length && createTrawl && createBare) {
    log(`crawl ratio_crawlee=${f(ratioCrawlee, 3)} ratio_ceiling=${f(ratioCeiling, 3)} create_ratio=${f(createRatio, 3)}`)
  }
}

interface FloorFigures {
  readonly messages: number
  readonly wallMs: number
  readonly cpuMs: number
  readonly threads: string
}

/** (e): the floor runner in its own process, on a fresh embedded database or a fresh PostgreSQL database. */
const runFloor = async (dir: string, baseDatabaseUrl: string | undefined): Promise<FloorFigures> => {
  const env: Record<string, string> = { MESSAGES: String(pages), WARM: String(warmPages), CONCURRENCY: "32", DATA_DIR: join(dir, "floor-data") }
  if (baseDatabaseUrl) {
    const url = await createTestDatabase(baseDatabaseUrl)
    onCleanup("floor database", () => dropDatabase(baseDatabaseUrl, url))
    Object.assign(env, { DATABASE_URL: url, RUNNER_PORT: String(await freePort()) })
  }
  log(`(e) floor: ${pages} persisted messages (+${warmPages} warm-up) to fresh entities that do nothing; own process  [${load()}]`)
  const child = spawnTs("floor runner", "bench/crawl-support/floor-runner.ts", env)
  try {
    const r = JSON.parse(await child.line("result", 150_000)) as { messages: number; wallMs: number; cpuMs: number; byThread: Record<string, number> }
    const threads = Object.entries(r.byThread)
      .map(([name, ms]) => [name, ms / r.messages] as const)
      .filter(([, ms]) => ms >= 0.02)
      .sort((x, y) => y[1] - x[1])
      .map(([name, ms]) => `${name} ${f(ms, 2)}`)
      .join(", ")
    return { messages: r.messages, wallMs: r.wallMs, cpuMs: r.cpuMs, threads }
  } finally {
    await child.stop()
  }
}

const printProfile = (file: string, span: string, tag: string) => {
  if (!existsSync(file)) {
    log("profile: the server wrote no profile")
    return
  }
  if (process.env.KEEP_PROFILE) copyFileSync(file, process.env.KEEP_PROFILE)
  const s = summarizeProfile(file, root)
  log("")
  log(`profile of the Trawl server during ${span}: ${f(s.totalMs / 1000, 1)} s busy, ${f(s.idleMs / 1000, 1)} s idle`)
  log("  by module (self time):")
  for (const m of s.modules.slice(0, 15)) log(`    ${f((100 * m.selfMs) / s.totalMs, 1).padStart(5)} %  ${f(m.selfMs, 0).padStart(7)} ms  ${m.module}`)
  log("  top functions (self time):")
  for (const fn of s.functions.slice(0, 30)) {
    log(`    ${f((100 * fn.selfMs) / s.totalMs, 1).padStart(5)} %  ${f(fn.selfMs, 0).padStart(7)} ms  ${fn.name}  ${fn.where}`)
  }
  const keep = optStr("profile-out", "")
  if (keep) {
    const out = keep.replace(/(\.cpuprofile)?$/, `-${tag}.cpuprofile`)
    writeFileSync(out, readFileSync(file))
    log(`  profile written to ${out}`)
  }
  log("")
}

runMain(main, (error) => console.error("bench:crawl failed:", error))
