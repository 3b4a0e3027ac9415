/**
 * Network benchmark: authenticated, debited IP lookups through the full Trawl stack against a bare
 * `node:http` server doing the same MMDB lookup and nothing else.
 *
 *   npm run bench:network
 *   npm run bench:network -- --connections 64 --duration 10 --warmup 2 --rounds 2 --tenants 8 --keys 19
 *
 * Full stack: the real server process (embedded PGlite, or DATABASE_URL [+ REDIS_URL] on a fresh
 * test database), `GET /v1/network/ip/lookup?ip=<ip>` with `x-api-key`: routing, envelope
 * middleware, key authentication (cached), per-key rate limit, permission check, query validation,
 * the MMDB lookup, the debit (a message to the tenant's entity, which takes the price from the free
 * credit, and one ledger entry per lookup, lookups that come together written by one statement),
 * response schema encoding. Requests are spread over tenants x keys API keys (each 5000/min, so at
 * most 84/s per key) so that none is rate-limited at the measured rate, and over public IPv4 and
 * IPv6 addresses the database maps (read from the file; never contacted). Each tenant starts with
 * enough credit for the whole run.
 *
 * Bare: bench/support/bare-geoip-server.ts, `node:http` + the same `maxmind` reader on the same file
 * with the same cache, answering JSON.stringify of the lookup. Same URLs, same headers, same load.
 *
 * Load: autocannon in this process (separate from both servers), fixed concurrency, keep-alive.
 * A warm-up of each, then the measured `--duration` seconds of each split into `--rounds` slices
 * taken in the order full, bare, bare, full, ... so that drifting load from other processes on a
 * shared machine hits both alike. Last line: `network ratio=<full rps / bare rps>`.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createTestDatabase, freePort, startServer } from "../test/support/server-process.ts"
import { bootstrap } from "./support/bootstrap.ts"
import { type LoadResult, mergeResults, runLoad, type Target } from "./support/load.ts"
import { checkInterrupted, cleanupAll, cpuMs, dropDatabase, installExitHandlers, onCleanup, runMain, spawnTs } from "./support/processes.ts"
import { numberOption } from "./support/options.ts"

const opt = numberOption
const connections = opt("connections", 64)
const duration = opt("duration", 10)
const warmup = opt("warmup", 2)
const tenantCount = opt("tenants", 8)
const keysPerTenant = opt("keys", 19)
const rounds = Math.round(opt("rounds", 2))
const keyRpm = 5000
/** Public addresses the packaged database maps (read from the file, never contacted), IPv4 and IPv6. */
const addresses = ["8.8.8.8", "1.1.1.1", "193.0.6.139", "81.2.69.160", "9.9.9.9", "2001:4860:4860::8888", "2a00:1450:4001::1", "2a02:2e0::1", "2606:4700:4700::1111"]
const perKeyPerSecond = Math.ceil(keyRpm / 60)

const log = (line: string) => console.log(line)
const f = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : String(x))

/** One request per target, each must be 2xx (also warms caches a little). */
const probe = async (baseUrl: string, targets: ReadonlyArray<Target>, label: string) => {
  const first = await fetch(baseUrl + targets[0]!.path, { headers: targets[0]!.headers })
  const sample = await first.text()
  if (first.status !== 200) throw new Error(`${label}: probe got ${first.status}: ${sample}`)
  for (const t of targets.slice(1)) {
    const res = await fetch(baseUrl + t.path, { headers: t.headers })
    await res.arrayBuffer()
    if (res.status !== 200) throw new Error(`${label}: probe of ${t.path} got ${res.status}`)
  }
  return sample
}

interface Server {
  readonly baseUrl: string
  readonly pid: number | undefined
}

/** CPU seconds of the server and of this (load generator) process, per target, over measured phases. */
const cpu = { full: { server: 0, loader: 0 }, bare: { server: 0, loader: 0 } }

const phase = async (label: "full" | "bare", kind: string, server: Server, targets: ReadonlyArray<Target>, seconds: number) => {
  checkInterrupted()
  const server0 = cpuMs(server.pid)
  const loader0 = process.cpuUsage()
  const r = await runLoad(server.baseUrl, targets, { connections, duration: seconds })
  const loader = process.cpuUsage(loader0)
  const serverCpu = server0 === undefined ? undefined : (cpuMs(server.pid)! - server0) / 1000
  checkInterrupted()
  if (kind !== "warm-up") {
    cpu[label].server += serverCpu ?? NaN
    cpu[label].loader += (loader.user + loader.system) / 1e6
  }
  const perRequest = serverCpu === undefined ? "" : `  server CPU ${f((serverCpu * 1000) / r.requests, 3)} ms/req`
  log(
    `${label.padEnd(4)} ${kind.padEnd(9)} ${f(r.rps, 1).padStart(7)} req/s  p50 ${f(r.p50, 3)} ms  p99 ${f(r.p99, 3)} ms` +
      `${perRequest}  non-2xx ${r.non2xx}  (${r.requests} in ${f(r.seconds, 1)} s` +
      `${r.errors ? `, ${r.errors} errors` : ""}${r.timeouts ? `, ${r.timeouts} timeouts` : ""})`
  )
  if (r.non2xx > 0 || r.errors > 0) loud(label, kind, r)
  return r
}

const loud = (label: string, kind: string, r: LoadResult) => {
  const codes = Object.entries(r.statuses).map(([s, n]) => `${s}: ${n}`).join(", ")
  log("")
  log(`!!!!!!!! ${label.toUpperCase()} ${kind.toUpperCase()}: ${r.non2xx} NON-2XX RESPONSES (${codes}), ${r.errors} CONNECTION ERRORS !!!!!!!!`)
  log(`!!!!!!!! THE ${label.toUpperCase()} FIGURES ARE NOT VALID${r.statuses["429"] ? " (rate-limited: use more --tenants / --keys)" : ""} !!!!!!!!`)
  log("")
}

let serverOutput: (() => string) | undefined

const main = async () => {
  installExitHandlers()
  const baseDatabaseUrl = process.env.DATABASE_URL
  const backend = baseDatabaseUrl ? "postgres" : "embedded"
  const keyCount = tenantCount * keysPerTenant
  log(
    `bench:network  backend=${backend}${baseDatabaseUrl && process.env.REDIS_URL ? "+redis" : ""}  connections=${connections}` +
      `  warm-up=${warmup}s  measured=${duration}s in ${rounds} rounds  keys=${keyCount} (${tenantCount} tenants x ${keysPerTenant}, ` +
      `${keyRpm}/min each: full stack stays unthrottled up to ~${keyCount * perKeyPerSecond} req/s)`
  )

  // 1. The real Trawl server.
  let databaseUrl: string | undefined
  const env: Record<string, string> = {}
  if (baseDatabaseUrl) {
    databaseUrl = await createTestDatabase(baseDatabaseUrl)
    onCleanup("test database", () => dropDatabase(baseDatabaseUrl, databaseUrl!))
    env.DATABASE_URL = databaseUrl
    log(`test database ${new URL(databaseUrl).pathname.slice(1)} (dropped at the end)`)
    if (process.env.REDIS_URL) env.REDIS_URL = process.env.REDIS_URL
  }
  // Our own data dir, so that it is removed even if the server fails to start.
  const dataDir = mkdtempSync(join(tmpdir(), "trawl-bench-network-"))
  onCleanup("trawl data dir", () => rmSync(dataDir, { recursive: true, force: true }))
  const trawl = await startServer(env, { dataDir })
  const stopTrawl = onCleanup("trawl server", () => trawl.stop())
  serverOutput = trawl.output

  // Credit for far more lookups than a run makes, so that no answer is a 402.
  const keyed = await bootstrap(trawl.baseUrl, { tenants: tenantCount, keysPerTenant, rateLimitPerMinute: keyRpm, credits: "100000.00" })
  const targets = keyed.targets.map((t, i) => ({ path: `/v1/network/ip/lookup?ip=${encodeURIComponent(addresses[i % addresses.length]!)}`, headers: t.headers }))
  const fullSample = await probe(trawl.baseUrl, targets, "full")
  log(`full stack: GET /v1/network/ip/lookup over ${targets.length} keys and ${addresses.length} addresses; a response is ${Buffer.byteLength(fullSample)} bytes`)

  // 2. The bare server, started now but loaded only in its own phases.
  const barePort = await freePort()
  const bareChild = spawnTs("bare geoip server", "bench/support/bare-geoip-server.ts", { BARE_PORT: String(barePort) })
  await bareChild.line("bare listening on", 60_000)
  const bare = { baseUrl: `http://127.0.0.1:${barePort}`, pid: bareChild.process.pid, stop: bareChild.stop }
  const bareSample = await probe(bare.baseUrl, targets, "bare")
  log(`bare node:http: same URLs and headers; a response is ${Buffer.byteLength(bareSample)} bytes`)

  // 3. Warm-up of each, then the measured time of each in rounds (full, bare, bare, full, ...), so
  //    that drifting load from other processes on the machine hits both alike. One target at a time.
  const servers = { full: { baseUrl: trawl.baseUrl, pid: trawl.process.pid }, bare }
  await phase("full", "warm-up", servers.full, targets, warmup)
  await phase("bare", "warm-up", servers.bare, targets, warmup)
  const parts: Record<"full" | "bare", Array<LoadResult>> = { full: [], bare: [] }
  const slice = duration / rounds
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? (["full", "bare"] as const) : (["bare", "full"] as const)
    for (const label of order) parts[label].push(await phase(label, `round ${r + 1}`, servers[label], targets, slice))
  }
  await bare.stop()
  await stopTrawl()
  const full = mergeResults(parts.full)
  const base = mergeResults(parts.bare)
  if (full.rps > 0.8 * targets.length * perKeyPerSecond) {
    log(`note: ${f(full.rps, 0)} req/s is close to the unthrottled ceiling of ${targets.length * perKeyPerSecond}; add --tenants`)
  }

  // 4. Summary.
  const ratio = full.rps / base.rps
  const p99Ratio = full.p99 / base.p99
  log("")
  log(`measured ${f(full.seconds, 1)} s each          req/s      p50 ms     p90 ms     p99 ms   non-2xx`)
  for (const [name, r] of [["full stack", full], ["bare", base]] as const) {
    log(
      `${name.padEnd(27)} ${f(r.rps, 1).padStart(9)} ${f(r.p50, 3).padStart(11)} ${f(r.p90, 3).padStart(10)}` +
        ` ${f(r.p99, 3).padStart(10)} ${String(r.non2xx).padStart(9)}`
    )
  }
  const cpuLine = (name: string, r: LoadResult, c: { server: number; loader: number }) =>
    `${name}: server ${f((c.server * 1000) / r.requests, 3)} ms CPU/request (${f((c.server / r.seconds) * 100, 0)}% of a core), ` +
    `load generator ${f((c.loader / r.seconds) * 100, 0)}% of a core`
  if (Number.isFinite(cpu.full.server)) {
    log(cpuLine("full stack", full, cpu.full))
    log(cpuLine("bare      ", base, cpu.bare))
    log(`server CPU per request full/bare ${f(cpu.full.server / full.requests / (cpu.bare.server / base.requests), 2)}x`)
  }
  log(
    `throughput full/bare ${f(ratio, 3)} (goal >= 0.50: ${ratio >= 0.5 ? "met" : "NOT met"}), p99 full/bare ${f(p99Ratio, 3)}`
  )
  if (full.non2xx > 0) loud("full", "measured", full)
  if (base.non2xx > 0) loud("bare", "measured", base)
  if (full.non2xx > 0 || base.non2xx > 0) log(`!!!!!!!! NON-2XX RESPONSES: full ${full.non2xx}, bare ${base.non2xx}: RATIOS NOT VALID !!!!!!!!`)
  await cleanupAll()
  log(`network ratio=${f(ratio, 3)}`)
}

runMain(main, (error) => {
  if (error instanceof Error && error.message === "interrupted") return 130
  console.error(error instanceof Error ? error.stack ?? error.message : error)
  if (error instanceof Error && error.cause !== undefined) console.error("cause:", error.cause)
  if (serverOutput) console.error(`--- trawl server output (tail) ---\n${serverOutput().slice(-4000)}`)
})
