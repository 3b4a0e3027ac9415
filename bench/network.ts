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
 * Effect floor: bench/support/bare-effect-server.ts, the smallest Effect HttpApi server (same effect
 * and @effect/platform-node versions) with one GET endpoint doing the same lookup: a query and a
 * success schema, nothing of Trawl's. Loaded in the same rounds; its ratio to the bare server
 * (`effect-floor ratio`) is what Effect's own request pipeline leaves, the ceiling of Trawl's ratio.
 *
 * Load: autocannon in this process (separate from both servers), fixed concurrency, keep-alive.
 * A warm-up of each, then the measured `--duration` seconds of each split into `--rounds` slices
 * taken in the order full, bare, floor, floor, bare, full, ... so that drifting load from other processes on a
 * shared machine hits both alike. Last line: `network ratio=<full rps / bare rps>`.
 */
import { freePort } from "../test/support/server-process.ts"
import { bootstrap } from "./support/bootstrap.ts"
import { f, log, logSettings, measure, options, probe, runComparison, startTrawl, summarize } from "./support/compare.ts"
import { cleanupAll, installExitHandlers, spawnTs } from "./support/processes.ts"

/** Public addresses the packaged database maps (read from the file, never contacted), IPv4 and IPv6. */
const addresses = ["8.8.8.8", "1.1.1.1", "193.0.6.139", "81.2.69.160", "9.9.9.9", "2001:4860:4860::8888", "2a00:1450:4001::1", "2a02:2e0::1", "2606:4700:4700::1111"]

const main = async () => {
  installExitHandlers()
  logSettings("network")

  // 1. The real Trawl server.
  const trawl = await startTrawl("network")
  // Credit for far more lookups than a run makes, so that no answer is a 402.
  const keyed = await bootstrap(trawl.baseUrl, { tenants: options.tenants, keysPerTenant: options.keysPerTenant, rateLimitPerMinute: options.keyRpm, credits: "100000.00" })
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

  // 3. The Effect floor, same URLs and headers.
  const floorPort = await freePort()
  const floorChild = spawnTs("effect floor server", "bench/support/bare-effect-server.ts", { BARE_PORT: String(floorPort) })
  await floorChild.line("bare listening on", 60_000)
  const floor = { baseUrl: `http://127.0.0.1:${floorPort}`, pid: floorChild.process.pid, stop: floorChild.stop }
  const floorSample = await probe(floor.baseUrl, targets, "effect floor")
  log(`effect floor (minimal HttpApi server): same URLs and headers; a response is ${Buffer.byteLength(floorSample)} bytes`)

  // 4. Warm-up, measured rounds, summary.
  const measured = await measure({ full: trawl, bare, floor }, targets)
  const { ratio } = summarize(
    measured,
    (ratio, p99Ratio) => `throughput full/bare ${f(ratio, 3)} (goal >= 0.50: ${ratio >= 0.5 ? "met" : "NOT met"}), p99 full/bare ${f(p99Ratio, 3)}`
  )
  const floorRatio = measured.floor!.rps / measured.bare.rps
  log(`effect-floor ratio=${f(floorRatio, 3)} (minimal Effect HttpApi server / bare node:http); full stack / effect floor ${f(ratio / floorRatio, 3)}`)
  await cleanupAll()
  log(`network ratio=${f(ratio, 3)}`)
}

runComparison(main)
