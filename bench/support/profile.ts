/**
 * CPU profile of the server under the load of `npm run bench:api` (embedded defaults).
 *
 *   node --import tsx bench/support/profile.ts [--target full|bare] [--bench api|network] [--duration 10] [--top 30] [--callers N] [--keep]
 *
 * `--tracing`: the server exports over OTLP to a sink in this process that drops what it gets
 * (as `bench:api -- --tracing` does).
 * `--bench network` loads `GET /v1/network/ip/lookup` (as bench:network does, with credit) instead
 * of bench:api's key reads; `--target bare` is bench:api's bare server only.
 *
 * Starts the target with `--cpu-prof`, bootstraps the same tenants and keys, loads it like the
 * benchmark (warm-up 2 s, then --duration s at 64 connections), stops it gracefully so that V8
 * writes the profile, and prints the top self-time functions and packages of the measured window
 * (--callers N: also the caller stacks of the N hottest named functions). --keep leaves the
 * .cpuprofile (path printed) for Chrome DevTools / speedscope.
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs"
import { createServer } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { startServer } from "../../test/support/server-process.ts"
import { bootstrap } from "./bootstrap.ts"
import { nowUs, printSummary } from "./cpuprofile.ts"
import { runLoad } from "./load.ts"
import { flag, stringOption } from "./options.ts"
import { cleanupAll, installExitHandlers, onCleanup, runMain, startBare } from "./processes.ts"

const opt = stringOption
const target = opt("target", "full")
const duration = Number(opt("duration", "10"))
const top = Number(opt("top", "30"))
const keep = flag("keep")
const callers = Number(opt("callers", "0"))
const bench = opt("bench", "api")
const addresses = ["8.8.8.8", "1.1.1.1", "193.0.6.139", "2001:4860:4860::8888", "2a00:1450:4001::1"]

const main = async () => {
  installExitHandlers()
  const profDir = mkdtempSync(join(tmpdir(), "trawl-bench-prof-"))
  if (!keep) onCleanup("profile dir", () => rmSync(profDir, { recursive: true, force: true }))
  const nodeOptions = `--cpu-prof --cpu-prof-dir=${profDir}`
  const dataDir = mkdtempSync(join(tmpdir(), "trawl-bench-api-"))
  onCleanup("trawl data dir", () => rmSync(dataDir, { recursive: true, force: true }))
  // The bootstrap always needs Trawl; only the profiled process gets --cpu-prof.
  const otlp: Record<string, string> = {}
  if (flag("tracing")) {
    const sink = createServer((req, res) => {
      req.resume()
      req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end("{}"))
    })
    await new Promise<void>((resolve) => sink.listen(0, "127.0.0.1", resolve))
    onCleanup("OTLP sink", () => new Promise<void>((resolve) => (sink.close(() => resolve()), sink.closeAllConnections())))
    otlp.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${(sink.address() as { port: number }).port}`
  }
  const trawl = await startServer(target === "full" ? { NODE_OPTIONS: process.env.PROFILE_NODE_OPTIONS ?? nodeOptions, ...otlp } : otlp, { dataDir, timeoutMs: 180_000 })
  const stopTrawl = onCleanup("trawl server", () => trawl.stop())
  const booted = await bootstrap(trawl.baseUrl, { tenants: 4, keysPerTenant: 19, rateLimitPerMinute: 5000, ...(bench === "network" ? { credits: "100000.00" } : {}) })
  const { rows } = booted
  const targets = bench === "network"
    ? booted.targets.map((t, i) => ({ path: `/v1/network/ip/lookup?ip=${encodeURIComponent(addresses[i % addresses.length]!)}`, headers: t.headers }))
    : booted.targets
  let baseUrl = trawl.baseUrl
  let stop = stopTrawl
  if (target === "bare") {
    await stopTrawl()
    const bare = await startBare({ rows, nodeOptions })
    baseUrl = bare.baseUrl
    stop = bare.stop
  }
  await runLoad(baseUrl, targets, { connections: 64, duration: 2 })
  const fromUs = nowUs()
  const r = await runLoad(baseUrl, targets, { connections: 64, duration })
  const toUs = nowUs()
  console.log(
    `${target}: ${r.rps.toFixed(1)} req/s  p50 ${r.p50.toFixed(3)} ms  p99 ${r.p99.toFixed(3)} ms  non-2xx ${r.non2xx}` +
      ` (under --cpu-prof)`
  )
  await stop()
  // The main thread's profile is the largest (tsx's loader thread writes a small one too).
  const files = readdirSync(profDir)
    .filter((f) => f.endsWith(".cpuprofile"))
    .map((f) => join(profDir, f))
    .sort((a, b) => statSync(b).size - statSync(a).size)
  if (files.length === 0) throw new Error(`no .cpuprofile was written to ${profDir}`)
  printSummary(files[0]!, top, { fromUs, toUs }, callers)
  if (keep) console.log(`\nkept ${profDir}`)
  await cleanupAll()
}

runMain(main)
