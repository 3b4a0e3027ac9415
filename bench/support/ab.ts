/**
 * A/B of the request path: this checkout's server against an older tree's, under the same load in
 * alternating rounds (bench/support/compare.ts), so that a shared machine's drift hits both alike.
 *
 *   git archive <commit> | tar -x -C /tmp/base && ln -s "$(readlink -f node_modules)" /tmp/base/node_modules
 *   AB_BASE=/tmp/base AB_BENCH=network node --import tsx bench/support/ab.ts [--duration 10 --rounds 2 ...]
 *
 * AB_BENCH: `network` (debited IP lookups, as bench:network), `api` (bench:api's key read) or
 * `tracing` (bench:api's read with OTLP export to AB_OTLP). In the figures "full" is this checkout
 * and "bare" the base; the server CPU per request of each is the steadier figure on a busy machine.
 * Last line: `ab <bench> ratio=<current rps / base rps>`.
 */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { bootstrap } from "./bootstrap.ts"
import { f, log, measure, options, probe, runComparison, startTrawl, summarize } from "./compare.ts"
import { cleanupAll, installExitHandlers, onCleanup } from "./processes.ts"
const base = process.env.AB_BASE!
const which = process.env.AB_BENCH ?? "network"
const addresses = ["8.8.8.8", "1.1.1.1", "193.0.6.139", "2001:4860:4860::8888", "2a00:1450:4001::1"]
const main = async () => {
  installExitHandlers()
  const extra: Record<string, string> = which === "tracing" ? { OTEL_EXPORTER_OTLP_ENDPOINT: process.env.AB_OTLP! } : {}
  const cur = await startTrawl("ab-cur", extra)
  const { startServer } = await import(join(base, "test/support/server-process.ts"))
  const old = await startServer(extra, { dataDir: mkdtempSync(join(tmpdir(), "trawl-ab-")), timeoutMs: 180_000 })
  const stopOld = onCleanup("old server", () => old.stop())
  const settings = { tenants: options.tenants, keysPerTenant: options.keysPerTenant, rateLimitPerMinute: options.keyRpm, ...(which === "network" ? { credits: "100000.00" } : {}) }
  const map = (ts: ReadonlyArray<{ path: string; headers: Record<string, string> }>) =>
    which === "network" ? ts.map((t, i) => ({ path: `/v1/network/ip/lookup?ip=${encodeURIComponent(addresses[i % addresses.length]!)}`, headers: t.headers })) : ts
  const curT = map((await bootstrap(cur.baseUrl, settings)).targets)
  const oldT = map((await bootstrap(old.baseUrl, settings)).targets)
  await probe(cur.baseUrl, curT, "current"); await probe(old.baseUrl, oldT, "base")
  log(`A/B ${which}: "full" = current checkout, "bare" = ${base}`)
  const m = await measure({ full: cur, bare: { baseUrl: old.baseUrl, pid: old.process.pid, stop: stopOld } }, { full: curT, bare: oldT })
  const { ratio } = summarize(m, (r) => `throughput current/base ${f(r, 3)}`)
  await cleanupAll()
  log(`ab ${which} ratio=${f(ratio, 3)}`)
}
runComparison(main)
