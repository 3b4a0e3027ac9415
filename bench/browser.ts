/**
 * Browser pool memory: steady-state RSS of the `brave` engine over a long run.
 *
 *   npm run bench:browser                    # 180 s
 *   npm run bench:browser -- --seconds 60
 *
 * The engine is built from config/crawl.json the way createEngines (src/crawl/engines/index.ts)
 * builds it, plus the one launch flag the crawl tests add (testBrowserArgs: Chromium resolves no
 * name itself), and every fetch has allowPrivate, as with ALLOW_PRIVATE_TARGETS=true. Workers equal
 * to the engine's page cap (browser.maxPages) crawl the fixture site
 * (bench/browser-support/fixture-server.ts, own process, 127.0.0.1 only) without pause; every 4th
 * page asks for a screenshot (PNG of the viewport, every 3rd of those a full-page JPEG).
 *
 * Once a second: this process's RSS, and the summed RSS of every Chromium process descended from
 * it, from /proc; on the timeline lines also their summed PSS (summed RSS counts shared pages, such
 * as the Chromium binary, once per process, so it overstates the real footprint). The crashpad
 * handlers re-parent themselves to init and are not counted (about 4 MB each). Browser launches are
 * counted as distinct PIDs of Chromium processes whose parent is this process.
 *
 * Steady state = median of the last third of the samples; growth = that minus the median of the
 * middle third (the first third is warm-up).
 *
 * Last line: `browser rss_peak_mb=<n> rss_steady_mb=<n> growth_pct=<n> pages=<n>`.
 */
import { readdirSync, readFileSync } from "node:fs"
import { readFile } from "node:fs/promises"
import { cpus, loadavg } from "node:os"
import { loadCrawlConfig, loadEscalationConfig } from "../src/crawl/config.ts"
import { createBraveEngine } from "../src/crawl/engines/browser.ts"
import type { Attempt, FetchRequest } from "../src/crawl/engines/types.ts"
import { CHROMIUM_PATH, testBrowserArgs } from "../test/crawl/fixture.ts"
import { checkInterrupted, cleanupAll, installExitHandlers, onCleanup, onInterrupt, runMain, spawnTs } from "./support/processes.ts"
import { median } from "./support/load.ts"
import { numberOption } from "./support/options.ts"

// ---------------------------------------------------------------------------------------------
// Options

const opt = numberOption
const seconds = opt("seconds", 180)
const timelineEvery = opt("every", 10)

const log = (line = "") => console.log(line)
const f = (x: number, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : String(x))
const load = () => `load ${loadavg().map((x) => x.toFixed(1)).join(" ")} on ${cpus().length} cores`
const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms))

// ---------------------------------------------------------------------------------------------
// /proc sampling

interface ProcInfo {
  ppid: number
  comm: string
  state: string
}

/** Every process's parent and name, from /proc/<pid>/stat. */
const processTable = (): Map<number, ProcInfo> => {
  const table = new Map<number, ProcInfo>()
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8")
      // comm is in parentheses and may contain spaces: split after the last ")"
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"))
      const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      table.set(Number(name), { ppid: Number(rest[1]), comm, state: rest[0]! })
    } catch {
      // the process ended while we listed /proc
    }
  }
  return table
}

/** A `Key:   123 kB` line of a /proc file, in kB; 0 when the process is gone. */
const procKb = (pid: number, file: string, key: string): number => {
  try {
    const m = new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(readFileSync(`/proc/${pid}/${file}`, "utf8"))
    return m ? Number(m[1]) : 0
  } catch {
    return 0
  }
}

interface Sample {
  t: number // seconds since the crawl started
  pages: number
  nodeMb: number
  heapMb: number // V8 heap in use: tells a JS leak apart from RSS the allocator keeps
  chromeMb: number
  chromePssMb: number
  totalMb: number
  procs: number
  browsers: number // live browser processes (more than 1 while a retiring browser finishes its pages)
  renderers: number // one per open page; left-over renderers when idle would mean unclosed contexts
  handles: number // this process's active handles/requests (guard proxies, sockets, timers)
  pids: number[]
}

const browserPids = new Set<number>()

/** Chromium processes descended from this process (the fixture and esbuild are node/Go, not counted). */
const chromiumTree = () => {
  const table = processTable()
  const children = new Map<number, number[]>()
  for (const [pid, p] of table) {
    const list = children.get(p.ppid)
    if (list) list.push(pid)
    else children.set(p.ppid, [pid])
  }
  const out: number[] = []
  const browsers: number[] = []
  const renderers: number[] = []
  const queue = [process.pid]
  while (queue.length > 0) {
    const pid = queue.shift()!
    for (const c of children.get(pid) ?? []) {
      queue.push(c)
      const p = table.get(c)!
      if (!p.comm.startsWith("chrom") || p.state === "Z") continue
      out.push(c)
      if (p.ppid === process.pid) browsers.push(c)
      else if (isRenderer(c)) renderers.push(c)
    }
  }
  return { pids: out, browsers, renderers }
}

const isRenderer = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "latin1").includes("--type=renderer")
  } catch {
    return false
  }
}

let samplerMs = 0
let samplerRuns = 0

const sample = (t: number, pages: number): Sample => {
  const t0 = performance.now()
  const tree = chromiumTree()
  for (const b of tree.browsers) browserPids.add(b)
  let rss = 0
  for (const pid of tree.pids) rss += procKb(pid, "status", "VmRSS")
  const mem = process.memoryUsage()
  const nodeMb = mem.rss / 1048576
  samplerMs += performance.now() - t0
  samplerRuns++
  return {
    t,
    pages,
    nodeMb,
    heapMb: mem.heapUsed / 1048576,
    chromeMb: rss / 1024,
    chromePssMb: NaN,
    totalMb: nodeMb + rss / 1024,
    procs: tree.pids.length,
    browsers: tree.browsers.length,
    renderers: tree.renderers.length,
    handles: process.getActiveResourcesInfo().length,
    pids: tree.pids
  }
}

/**
 * Summed PSS in MB. Costly (the kernel walks every mapping, tens of ms per Chromium process), so
 * read only for the timeline lines, and asynchronously so that it does not stall the crawl.
 */
const pssMb = async (pids: number[]): Promise<number> => {
  const kb = await Promise.all(
    pids.map((pid) =>
      readFile(`/proc/${pid}/smaps_rollup`, "utf8").then(
        (text) => Number(/^Pss:\s+(\d+) kB/m.exec(text)?.[1] ?? 0),
        () => 0
      )
    )
  )
  return kb.reduce((a, b) => a + b, 0) / 1024
}

// ---------------------------------------------------------------------------------------------
// Fixture site

const startFixture = async () => {
  const child = spawnTs("browser fixture server", "bench/browser-support/fixture-server.ts", {})
  const ready = JSON.parse(await child.line("fixture ready", 30_000)) as { port: number; imageKB: number }
  return { origin: `http://127.0.0.1:${ready.port}`, imageKB: ready.imageKB }
}

// ---------------------------------------------------------------------------------------------

const main = async () => {
  // A hung page cannot keep the run alive forever: the whole run gets the duration plus 3 minutes.
  installExitHandlers((seconds + 180) * 1000)
  const crawl = loadCrawlConfig()
  const b = crawl.browser
  const braveStep = loadEscalationConfig().defaultPlan.find((s) => s.engine === "brave")
  const timeoutMs = braveStep?.timeoutMs ?? 60_000
  const concurrency = b.maxPages

  // Same options as createEngines gives `brave` (it has no launchArgs, which the loopback setup needs).
  const engine = createBraveEngine({
    bravePath: CHROMIUM_PATH,
    maxBodyBytes: crawl.maxBodyBytes,
    maxPages: b.maxPages,
    recycleAfterPages: b.recycleAfterPages,
    settleMs: b.settleMs,
    challengeWaitMs: b.challengeWaitMs,
    launchArgs: testBrowserArgs()
  })
  if (!(await engine.available())) throw new Error(`bench:browser needs Chromium at ${CHROMIUM_PATH}`)
  onCleanup("brave engine", () => engine.close?.())

  const fixture = await startFixture()
  log(
    `bench:browser  ${seconds} s, ${concurrency} workers = browser.maxPages; recycleAfterPages ${b.recycleAfterPages}, ` +
      `settleMs ${b.settleMs}, attempt timeout ${timeoutMs} ms`
  )
  log(`fixture: ${fixture.origin} (pages 50-200 KB; images ~${fixture.imageKB} KB, CSS, JS allocating ~4-40 MB, late fetch, canvas)`)
  log(`machine: ${load()}`)
  const base = sample(0, 0)
  log(`before the first launch: node ${f(base.nodeMb)} MB, ${base.procs} chromium processes`)
  log("")

  // Crawl: workers take the next page number until the time is up.
  let next = 0
  let done = 0
  let screenshots = 0
  const classes = new Map<string, number>()
  const errors = new Map<string, number>()
  const stop = new AbortController()
  const unInterrupt = onInterrupt(() => stop.abort())
  const started = performance.now()
  const elapsed = () => (performance.now() - started) / 1000
  const endAt = started + seconds * 1000

  const worker = async () => {
    while (performance.now() < endAt && !stop.signal.aborted) {
      const n = next++
      const req: FetchRequest = { url: `${fixture.origin}/page/${n}`, timeoutMs, allowPrivate: true, signal: stop.signal }
      if (n % 4 === 0) req.screenshot = n % 12 === 0 ? { format: "jpeg", quality: 80, fullPage: true } : { format: "png" }
      const a: Attempt = await engine.fetch(req)
      done++
      if (a.screenshot) screenshots++
      classes.set(a.classification, (classes.get(a.classification) ?? 0) + 1)
      if (a.error) {
        const key = `${a.classification}: ${a.error.slice(0, 100)}`
        errors.set(key, (errors.get(key) ?? 0) + 1)
      }
    }
  }

  // Samples every second; a timeline line every `timelineEvery` seconds.
  const samples: Sample[] = []
  let lastLine = { t: 0, pages: 0 }
  log("    t s   pages  pages/s  node MB  heap MB  chromium MB  total MB  chr PSS MB  procs  browsers  renderers  handles")
  const line = (s: Sample) => {
    const rate = (s.pages - lastLine.pages) / Math.max(0.001, s.t - lastLine.t)
    lastLine = { t: s.t, pages: s.pages }
    log(
      `  ${f(s.t).padStart(5)} ${String(s.pages).padStart(7)} ${f(rate, 2).padStart(8)} ${f(s.nodeMb).padStart(8)} ${f(s.heapMb).padStart(8)} ${f(s.chromeMb).padStart(12)}` +
        ` ${f(s.totalMb).padStart(9)} ${f(s.chromePssMb).padStart(11)} ${String(s.procs).padStart(6)} ${String(s.browsers).padStart(9)} ${String(s.renderers).padStart(10)} ${String(s.handles).padStart(8)}`
    )
  }
  let lastDue = 0
  let printing = Promise.resolve()
  const sampler = setInterval(() => {
    const t = elapsed()
    const s = sample(t, done)
    if (s.t <= seconds + 0.5) samples.push(s)
    if (Math.floor(t / timelineEvery) > Math.floor(lastDue / timelineEvery)) {
      lastDue = t
      printing = printing.then(async () => {
        s.chromePssMb = await pssMb(s.pids)
        line(s)
      })
    }
  }, 1000)
  const stopSampler = onCleanup("sampler", () => clearInterval(sampler))

  await Promise.all(Array.from({ length: concurrency }, worker))
  const drainS = elapsed() - seconds
  await stopSampler()
  await printing
  unInterrupt()
  checkInterrupted()

  // After the run: what the pool holds while idle, then whether close() leaves anything behind.
  await sleep(2000)
  const idle = sample(elapsed(), done)
  idle.chromePssMb = await pssMb(idle.pids)
  await engine.close?.()
  await sleep(1000)
  const after = chromiumTree()

  // ------------------------------------------------------------------------------------------
  // Summary

  if (samples.length < 6) throw new Error("too few samples for a summary; use --seconds 10 or more")
  const third = Math.floor(samples.length / 3)
  const middle = samples.slice(third, 2 * third)
  const last = samples.slice(2 * third)
  const peak = samples.reduce((m, s) => (s.totalMb > m.totalMb ? s : m), samples[0]!)
  const steady = median(last.map((s) => s.totalMb))
  const mid = median(middle.map((s) => s.totalMb))
  const growthMb = steady - mid
  const growthPct = (100 * growthMb) / mid
  const steadyNode = median(last.map((s) => s.nodeMb))
  const steadyChrome = median(last.map((s) => s.chromeMb))
  const steadyPss = median(last.map((s) => s.chromePssMb).filter((x) => !Number.isNaN(x)))
  const peakProcs = Math.max(...samples.map((s) => s.procs))
  const peakBrowsers = Math.max(...samples.map((s) => s.browsers))
  // Least-squares slope of total RSS over the last two thirds: a leak shows as a steady climb.
  const tail = samples.slice(third)
  const mt = tail.reduce((a, s) => a + s.t, 0) / tail.length
  const mm = tail.reduce((a, s) => a + s.totalMb, 0) / tail.length
  const slope = (60 * tail.reduce((a, s) => a + (s.t - mt) * (s.totalMb - mm), 0)) / tail.reduce((a, s) => a + (s.t - mt) ** 2, 0)
  const launches = browserPids.size
  const expectedLaunches = Math.ceil(done / b.recycleAfterPages)

  log("")
  log(`run: ${done} pages in ${f(seconds + drainS, 1)} s (${f(done / (seconds + drainS), 2)} pages/s; last pages drained in ${f(drainS, 1)} s), ${screenshots} screenshots  [${load()}]`)
  log(`  classifications: ${[...classes].map(([c, k]) => `${c} ${k}`).join(", ")}`)
  for (const [e, k] of [...errors].sort((x, y) => y[1] - x[1]).slice(0, 5)) log(`  ${k} x ${e}`)
  log(`  browsers launched: ${launches} (recycles ${Math.max(0, launches - 1)}; expected about ${expectedLaunches} for recycleAfterPages ${b.recycleAfterPages}), at most ${peakBrowsers} alive at once`)
  log("")
  log(`memory over ${samples.length} samples (total = node RSS + summed chromium RSS)`)
  log(`  peak total RSS        ${f(peak.totalMb)} MB at ${f(peak.t)} s (node ${f(peak.nodeMb)}, chromium ${f(peak.chromeMb)}, ${peak.procs} processes, ${peak.browsers} browsers)`)
  log(`  steady total RSS      ${f(steady)} MB (median of the last third: node ${f(steadyNode)}, chromium ${f(steadyChrome)}; chromium PSS ${f(steadyPss)} on the timeline samples)`)
  log(`  middle third median   ${f(mid)} MB; growth to the last third ${f(growthMb, 1)} MB (${f(growthPct, 1)} %)`)
  log(`  trend over the last two thirds ${f(slope, 1)} MB/min; at most ${peakProcs} chromium processes`)
  log(`  sampling cost         ${f(samplerMs / samplerRuns, 1)} ms per sample on average (synchronous, in this process; PSS reads excluded)`)
  log(`  idle after the run    node ${f(idle.nodeMb)} MB (heap ${f(idle.heapMb)}), chromium ${f(idle.chromeMb)} MB (PSS ${f(idle.chromePssMb)}) in ${idle.procs} processes (${idle.renderers} renderers), ${idle.browsers} browsers, ${idle.handles} handles`)
  log(`  after engine.close()  ${after.pids.length} chromium processes left${after.pids.length ? ` (pids ${after.pids.join(" ")})` : ""}`)
  log("")
  log(`browser rss_peak_mb=${f(peak.totalMb)} rss_steady_mb=${f(steady)} growth_pct=${f(growthPct, 1)} pages=${done}`)
  await cleanupAll()
}

void runMain(main)
