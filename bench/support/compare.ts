/**
 * What bench:api and bench:network share: the real Trawl server against a bare `node:http` server
 * answering the same URLs, loaded one at a time (a warm-up of each, then the measured time of each
 * in rounds full, bare, bare, full, ... so that drifting load from other processes on a shared
 * machine hits both alike), and the summary of the two.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { createTestDatabase, startServer } from "../../test/support/server-process.ts"
import { type LoadResult, mergeResults, runLoad, type Target } from "./load.ts"
import { flag, numberOption as opt } from "./options.ts"
import { checkInterrupted, cpuMs, dropDatabase, onCleanup, runMain } from "./processes.ts"

/**
 * `--tracing` compares two Trawl servers, both cold at the start: their first rounds after a 2 s
 * warm-up ran 15 to 20 % slower than their later ones (JIT), and the first measured round is the
 * traced server's, so it gets a longer warm-up and more rounds by default (docs/performance.md).
 */
const twoTrawls = flag("tracing")

export const options = {
  connections: opt("connections", 64),
  duration: opt("duration", twoTrawls ? 20 : 10),
  warmup: opt("warmup", twoTrawls ? 5 : 2),
  tenants: opt("tenants", 8),
  keysPerTenant: opt("keys", 19),
  rounds: Math.round(opt("rounds", twoTrawls ? 4 : 2)),
  keyRpm: 5000
}
/** The most requests per second one API key takes before its rate limit answers 429. */
export const perKeyPerSecond = Math.ceil(options.keyRpm / 60)

export const log = (line: string) => console.log(line)
export const f = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : String(x))

/** The first line: backend and load settings. */
export const logSettings = (bench: string) => {
  const { connections, warmup, duration, rounds, tenants, keysPerTenant, keyRpm } = options
  const backend = process.env.DATABASE_URL ? "postgres" : "embedded"
  const keyCount = tenants * keysPerTenant
  log(
    `bench:${bench}  backend=${backend}${process.env.DATABASE_URL && process.env.REDIS_URL ? "+redis" : ""}  connections=${connections}` +
      `  warm-up=${warmup}s  measured=${duration}s in ${rounds} rounds  keys=${keyCount} (${tenants} tenants x ${keysPerTenant}, ` +
      `${keyRpm}/min each: full stack stays unthrottled up to ~${keyCount * perKeyPerSecond} req/s)`
  )
}

export interface Server {
  readonly baseUrl: string
  readonly pid: number | undefined
  readonly stop: () => Promise<void>
}

let serverOutput: (() => string) | undefined

/**
 * The real Trawl server: embedded PGlite, or a fresh test database on DATABASE_URL (+ REDIS_URL),
 * dropped at the end. `databaseUrl` is that test database, for a bare server reading the same one.
 */
export const startTrawl = async (bench: string, extraEnv: Record<string, string> = {}): Promise<Server & { readonly databaseUrl: string | undefined }> => {
  const baseDatabaseUrl = process.env.DATABASE_URL
  let databaseUrl: string | undefined
  const env: Record<string, string> = { ...extraEnv }
  if (baseDatabaseUrl) {
    databaseUrl = await createTestDatabase(baseDatabaseUrl)
    onCleanup("test database", () => dropDatabase(baseDatabaseUrl, databaseUrl!))
    env.DATABASE_URL = databaseUrl
    log(`test database ${new URL(databaseUrl).pathname.slice(1)} (dropped at the end)`)
    if (process.env.REDIS_URL) env.REDIS_URL = process.env.REDIS_URL
  }
  // Our own data dir, so that it is removed even if the server fails to start.
  const dataDir = mkdtempSync(join(tmpdir(), `trawl-bench-${bench}-`))
  onCleanup("trawl data dir", () => rmSync(dataDir, { recursive: true, force: true }))
  // A shared, loaded machine can take well over a minute to start the server.
  const trawl = await startServer(env, { dataDir, timeoutMs: 180_000 })
  const stop = onCleanup("trawl server", () => trawl.stop())
  serverOutput = trawl.output
  return { baseUrl: trawl.baseUrl, pid: trawl.process.pid, stop, databaseUrl }
}

/** Runs `main`; on failure prints the error and the tail of the Trawl server's output. */
export const runComparison = (main: () => Promise<void>) =>
  runMain(main, (error) => {
    if (error instanceof Error && error.message === "interrupted") return 130
    console.error(error instanceof Error ? error.stack ?? error.message : error)
    if (error instanceof Error && error.cause !== undefined) console.error("cause:", error.cause)
    if (serverOutput) console.error(`--- trawl server output (tail) ---\n${serverOutput().slice(-4000)}`)
  })

/** One request per target, each must be 2xx (also warms caches a little). */
export const probe = async (baseUrl: string, targets: ReadonlyArray<Target>, label: string) => {
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

type Label = "full" | "bare"
/** `floor`: an optional third server (bench:network's minimal Effect server), loaded in the same rounds. */
type AnyLabel = Label | "floor"

/** CPU seconds of a server and of this (load generator) process over the measured phases. */
interface Cpu {
  server: number
  loader: number
}

export interface Measured {
  readonly full: LoadResult
  readonly bare: LoadResult
  readonly cpu: Record<AnyLabel, Cpu>
  /** The third server's results, when one was given. */
  readonly floor?: LoadResult
  /** Requests per second above which the full stack's keys would start to be rate-limited. */
  readonly ceiling: number
}

const loud = (label: string, kind: string, r: LoadResult) => {
  const codes = Object.entries(r.statuses).map(([s, n]) => `${s}: ${n}`).join(", ")
  log("")
  log(`!!!!!!!! ${label.toUpperCase()} ${kind.toUpperCase()}: ${r.non2xx} NON-2XX RESPONSES (${codes}), ${r.errors} CONNECTION ERRORS !!!!!!!!`)
  log(`!!!!!!!! THE ${label.toUpperCase()} FIGURES ARE NOT VALID${r.statuses["429"] ? " (rate-limited: use more --tenants / --keys)" : ""} !!!!!!!!`)
  log("")
}

/**
 * Warm-up of each server, then the measured time of each in rounds (full, bare, bare, full, ...),
 * one server loaded at a time; then stops both (bare first).
 */
export const measure = async (
  servers: Record<Label, Server> & { readonly floor?: Server },
  /** One list for both, or each server's own (two Trawl servers, each with its own keys). */
  targets: ReadonlyArray<Target> | Record<Label, ReadonlyArray<Target>>
): Promise<Measured> => {
  // The floor server answers the same URLs as the bare one.
  const targetsOf = (label: AnyLabel) => ("full" in targets ? targets[label === "floor" ? "bare" : label] : targets)
  const cpu: Record<AnyLabel, Cpu> = { full: { server: 0, loader: 0 }, bare: { server: 0, loader: 0 }, floor: { server: 0, loader: 0 } }
  const phase = async (label: AnyLabel, kind: string, seconds: number) => {
    checkInterrupted()
    const server = servers[label]!
    const server0 = cpuMs(server.pid)
    const loader0 = process.cpuUsage()
    const r = await runLoad(server.baseUrl, targetsOf(label), { connections: options.connections, duration: seconds })
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
  const labels: Array<AnyLabel> = servers.floor ? ["full", "bare", "floor"] : ["full", "bare"]
  for (const label of labels) await phase(label, "warm-up", options.warmup)
  const parts: Record<AnyLabel, Array<LoadResult>> = { full: [], bare: [], floor: [] }
  const slice = options.duration / options.rounds
  for (let r = 0; r < options.rounds; r++) {
    const order = r % 2 === 0 ? labels : [...labels].reverse()
    for (const label of order) parts[label].push(await phase(label, `round ${r + 1}`, slice))
  }
  if (servers.floor) await servers.floor.stop()
  await servers.bare.stop()
  await servers.full.stop()
  return {
    full: mergeResults(parts.full),
    bare: mergeResults(parts.bare),
    cpu,
    ...(servers.floor ? { floor: mergeResults(parts.floor) } : {}),
    ceiling: targetsOf("full").length * perKeyPerSecond
  }
}

/**
 * Prints the summary of both servers, with `goal` (given the throughput ratio full/bare and the
 * p99 ratio full/bare) as its verdict line, and returns the two ratios.
 */
export const summarize = (m: Measured, goal: (ratio: number, p99Ratio: number) => string) => {
  const { full, bare: base, cpu } = m
  if (full.rps > 0.8 * m.ceiling) {
    log(`note: ${f(full.rps, 0)} req/s is close to the unthrottled ceiling of ${m.ceiling}; add --tenants`)
  }
  const ratio = full.rps / base.rps
  const p99Ratio = full.p99 / base.p99
  log("")
  log(`measured ${f(full.seconds, 1)} s each          req/s      p50 ms     p90 ms     p99 ms   non-2xx`)
  const rows: Array<readonly [string, LoadResult]> = [["full stack", full], ["bare", base]]
  if (m.floor) rows.push(["effect floor", m.floor])
  for (const [name, r] of rows) {
    log(
      `${name.padEnd(27)} ${f(r.rps, 1).padStart(9)} ${f(r.p50, 3).padStart(11)} ${f(r.p90, 3).padStart(10)}` +
        ` ${f(r.p99, 3).padStart(10)} ${String(r.non2xx).padStart(9)}`
    )
  }
  const cpuLine = (name: string, r: LoadResult, c: Cpu) =>
    `${name}: server ${f((c.server * 1000) / r.requests, 3)} ms CPU/request (${f((c.server / r.seconds) * 100, 0)}% of a core), ` +
    `load generator ${f((c.loader / r.seconds) * 100, 0)}% of a core`
  if (Number.isFinite(cpu.full.server)) {
    log(cpuLine("full stack", full, cpu.full))
    log(cpuLine("bare      ", base, cpu.bare))
    if (m.floor) log(cpuLine("floor     ", m.floor, cpu.floor))
    log(`server CPU per request full/bare ${f(cpu.full.server / full.requests / (cpu.bare.server / base.requests), 2)}x`)
  }
  log(goal(ratio, p99Ratio))
  if (full.non2xx > 0) loud("full", "measured", full)
  if (base.non2xx > 0) loud("bare", "measured", base)
  if (full.non2xx > 0 || base.non2xx > 0) log(`!!!!!!!! NON-2XX RESPONSES: full ${full.non2xx}, bare ${base.non2xx}: RATIOS NOT VALID !!!!!!!!`)
  return { ratio, p99Ratio }
}
