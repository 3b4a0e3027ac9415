/**
 * `npm run soak`: the soak of issue 27 (docs/chaos.md). One Trawl node on a private database of
 * the machine's PostgreSQL (DATABASE_URL, default 127.0.0.1:5432), a steady mixed load where a
 * fifth of the jobs need Chromium (the fixture site's /blocked pages, and hostile pages: pop-ups, a
 * memory hog, a page reloading itself, a huge DOM), sampled every 10 s: RSS of the node and of its
 * browsers, browser processes, open file descriptors (all from /proc), the event loop's delay (from
 * /metrics) and the p99 of the create requests' latency. At the end: the least-squares slope of RSS
 * over the last two thirds of the run, the peaks, the issue's goals as met or NOT met, the samples
 * as CSV and a chart as SVG in the output folder.
 *
 *   npm run soak -- --minutes 30 --interval-ms 1000 --out /tmp/soak
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { setTimeout as sleep } from "node:timers/promises"
import { browserUsage } from "../src/observability/browser-processes.ts"
import { hostilePages } from "../test/crawl/hostile-pages.ts"
import { startFixture } from "../test/crawl/fixture.ts"
import { startFakeLlm } from "../test/support/fake-llm.ts"
import { loopbackOnlyEnv, startFixtureSite } from "../test/support/fixture-site.ts"
import { createTestDatabase, INTERNAL_TOKEN, pgQuery, startServer } from "../test/support/server-process.ts"
import { createLoadTenant } from "./support/bootstrap.ts"
import { numberOption, stringOption } from "./support/options.ts"
import { loadCrawlConfig } from "../src/crawl/config.ts"

process.env.TRAWL_CHECK_RESPONSES = "0"

const minutes = numberOption("minutes", 30)
const intervalMs = numberOption("interval-ms", 1000)
const sampleMs = numberOption("sample-ms", 10_000)
const outDir = stringOption("out", `/tmp/trawl-soak-${new Date().toISOString().replace(/[:.]/g, "-")}`)
const baseDb = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres"
const HOSTS = ["127.0.0.71", "127.0.0.72", "127.0.0.73", "127.0.0.74"]
const HOSTILE_HOST = "127.0.0.75"
const HOSTILE_PATHS = ["/popups", "/hog", "/refresh-loop", "/huge-dom"]
/** The browser config of config/crawl.json the cap is derived from. */
const browserConfig = loadCrawlConfig().browser
/**
 * The most top-level browsers the node may run: one current browser per engine (only `brave` runs
 * here), plus retiring ones, each of which still has a page open, and pages are capped node-wide.
 */
const BROWSER_CAP = browserConfig.maxPages + 1

const log = (s: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${s}`)

interface Sample {
  readonly t: number
  readonly nodeRssMb: number
  readonly browserRssMb: number
  /** The browsers' proportional set size: shared pages divided among the processes sharing them. */
  readonly browserPssMb: number
  /** Each browser's pid and PSS; a new pid is a recycled browser (config/crawl.json browser.recycleAfterPages). */
  readonly browserTrees: ReadonlyArray<{ readonly pid: number; readonly pssMb: number }>
  readonly heapUsedMb: number
  readonly externalMb: number
  readonly arrayBuffersMb: number
  readonly browsers: number
  readonly fds: number
  readonly loopP99Ms: number
  readonly loopMaxMs: number
  readonly apiP99Ms: number
  readonly requests: number
  readonly accepted: number
  readonly refused: number
}

const quantile = (xs: ReadonlyArray<number>, q: number) => {
  if (xs.length === 0) return 0
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!
}

/** Least squares slope of y over x. */
const slope = (xs: ReadonlyArray<number>, ys: ReadonlyArray<number>) => {
  const n = xs.length
  if (n < 2) return 0
  const mx = xs.reduce((a, b) => a + b, 0) / n
  const my = ys.reduce((a, b) => a + b, 0) / n
  let num = 0
  let den = 0
  for (let i = 0; i < n; i++) {
    num += (xs[i]! - mx) * (ys[i]! - my)
    den += (xs[i]! - mx) ** 2
  }
  return den === 0 ? 0 : num / den
}

const rssMb = (pid: number) => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))
  return m ? Number(m[1]) / 1024 : 0
}

/**
 * The browsers below `root` (its direct children whose command is a browser's, as
 * src/observability/browser-processes.ts counts them) and each one's PSS with all its descendants.
 * PSS, not RSS: RSS summed over a Chromium tree counts the pages its processes share (the binary,
 * the zygote's forked memory, shared memory between renderers and the browser) once per process;
 * in an 8-minute run the summed RSS was 3 to 4 times the PSS (docs/chaos.md "The soak").
 */
const browsersPss = (root: number): Map<number, number> => {
  const children = new Map<number, Array<number>>()
  const command = new Map<number, string>()
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue
    try {
      const stat = readFileSync(`/proc/${e}/stat`, "utf8")
      const close = stat.lastIndexOf(")")
      const ppid = Number(stat.slice(close + 2).split(" ")[1])
      command.set(Number(e), stat.slice(stat.indexOf("(") + 1, close))
      children.set(ppid, [...(children.get(ppid) ?? []), Number(e)])
    } catch {
      // gone between the listing and the read
    }
  }
  const pssKb = (pid: number): number => {
    let own = 0
    try {
      own = Number(/Pss:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"))?.[1] ?? 0)
    } catch {
      // gone
    }
    return own + (children.get(pid) ?? []).reduce((sum, c) => sum + pssKb(c), 0)
  }
  const browsers = (children.get(root) ?? []).filter((c) => /chrom|brave|firefox|camoufox/i.test(command.get(c) ?? ""))
  return new Map(browsers.map((b) => [b, pssKb(b) / 1024]))
}

/** The node's memoryUsage(), written every 2 s by bench/soak-memory.mjs. */
const nodeMemory = (file: string) => {
  try {
    return JSON.parse(readFileSync(file, "utf8")) as { heapUsed: number; external: number; arrayBuffers: number }
  } catch {
    return { heapUsed: 0, external: 0, arrayBuffers: 0 }
  }
}

const metric = (text: string, name: string, labels: string) => {
  const line = text.split("\n").find((l) => l.startsWith(name) && l.includes(labels))
  return line ? Number(line.trim().split(/\s+/).pop()) : 0
}

const main = async () => {
  mkdirSync(outDir, { recursive: true })
  const site = await startFixtureSite({ hosts: HOSTS })
  // The hostile pages of the browser tests; `/popups` loads an image from `/slow-img` for a second.
  const hostile = await startFixture({
    ...hostilePages,
    "/slow-img": (_req, res) => {
      const t = setTimeout(() => res.writeHead(200, { "content-type": "image/gif" }).end(), 1000)
      res.on("close", () => clearTimeout(t))
    }
  }, HOSTILE_HOST)
  const llm = await startFakeLlm()
  const dbUrl = await createTestDatabase(baseDb)
  const dbName = new URL(dbUrl).pathname.slice(1)
  const memoryFile = join(outDir, "node-memory.json")
  const server = await startServer({
    DATABASE_URL: dbUrl,
    ALLOW_PRIVATE_TARGETS: "true",
    LLM_BASE_URL: llm.baseUrl,
    LLM_MODEL: "soak-model",
    SOAK_MEMORY_FILE: memoryFile,
    NODE_OPTIONS: `${loopbackOnlyEnv().NODE_OPTIONS} --import ${new URL("./soak-memory.mjs", import.meta.url).pathname}`
  }, { timeoutMs: 120_000 })
  const pid = server.process.pid!
  const base = `http://127.0.0.1:${server.port}`
  try {
    const tenant = await createLoadTenant(base, "Soak")
    for (const key of ["scraper.jobs.concurrent", "scraper.jobs.daily", "extractor.extractions.daily"]) {
      await pgQuery(dbUrl, "INSERT INTO quota_overrides (tenant_id, quota_key, quota_limit) VALUES ($1, $2, 1000000)", [tenant.tenantId, key])
    }
    log(`node pid ${pid} on ${base}, database ${dbName}; ${minutes} min, one request every ${intervalMs} ms; output ${outDir}`)

    // The load: ten shapes in turn, two of which need Chromium (/blocked escalates, hostile pages go straight to it).
    const window: Array<number> = []
    let requests = 0
    let accepted = 0
    let refused = 0
    const inflight = new Set<Promise<void>>()
    const shape = (n: number): { path: string; body: unknown } => {
      const host = n % HOSTS.length
      const job = (url: string, extra: Record<string, unknown> = {}) => ({ path: "/v1/scraper/jobs", body: { url, ...extra } })
      switch (n % 10) {
        case 1:
          return job(site.url(`/slow?ms=800&n=${n}`, host))
        case 2:
          return {
            path: "/v1/extractor/extractions",
            body: { type: "article", input: `<html><body><article><h1>Soak ${n}</h1><p>${"Inline text for the soak. ".repeat(30)}</p></article></body></html>` }
          }
        case 3:
          return job(site.url(`/blocked?n=${n}`, host))
        case 5:
          return job(site.url(`/redirect?n=${n}`, host))
        case 6:
          return { path: "/v1/extractor/extractions", body: { type: "article", url: site.url(`/page?x=${n}`, host) } }
        case 7:
          return job(`${hostile.origin}${HOSTILE_PATHS[Math.floor(n / 10) % HOSTILE_PATHS.length]}?n=${n}`, {
            escalation: [{ engine: "brave", attempts: 1, timeoutMs: 20_000 }]
          })
        default:
          return job(site.url(`/page?n=${n}`, host))
      }
    }
    const send = async (n: number) => {
      const req = shape(n)
      const t0 = performance.now()
      requests++
      try {
        const res = await fetch(base + req.path, {
          method: "POST",
          headers: { "content-type": "application/json", "x-api-key": tenant.apiKey },
          body: JSON.stringify(req.body),
          signal: AbortSignal.timeout(30_000)
        })
        await res.arrayBuffer()
        if (res.status >= 200 && res.status < 300) accepted++
        else refused++
      } catch {
        refused++
      }
      window.push(performance.now() - t0)
    }

    const samples: Array<Sample> = []
    const started = Date.now()
    const takeSample = async () => {
      const usage = await browserUsage(pid)
      const text = await fetch(`${base}/metrics`, { headers: { "x-internal-token": INTERNAL_TOKEN } }).then((r) => r.text()).catch(() => "")
      const mem = nodeMemory(memoryFile)
      const pss = browsersPss(pid)
      const MB = 1024 * 1024
      const s: Sample = {
        t: (Date.now() - started) / 1000,
        nodeRssMb: rssMb(pid),
        browserRssMb: usage.rssBytes / MB,
        browserPssMb: [...pss.values()].reduce((a, b) => a + b, 0),
        browserTrees: [...pss].map(([pid, pssMb]) => ({ pid, pssMb })),
        heapUsedMb: mem.heapUsed / MB,
        externalMb: mem.external / MB,
        arrayBuffersMb: mem.arrayBuffers / MB,
        browsers: usage.processes,
        fds: readdirSync(`/proc/${pid}/fd`).length,
        loopP99Ms: metric(text, "trawl_event_loop_delay_seconds", `quantile="p99"`) * 1000,
        loopMaxMs: metric(text, "trawl_event_loop_delay_seconds", `quantile="max"`) * 1000,
        apiP99Ms: quantile(window.splice(0), 0.99),
        requests,
        accepted,
        refused
      }
      samples.push(s)
      if (samples.length % 6 === 0) {
        log(`  ${(s.t / 60).toFixed(1)} min: node ${s.nodeRssMb.toFixed(0)} MB (heap ${s.heapUsedMb.toFixed(0)}, external ${s.externalMb.toFixed(0)}), browsers ${s.browsers} (RSS ${s.browserRssMb.toFixed(0)} MB, PSS ${s.browserPssMb.toFixed(0)} MB), fds ${s.fds}, loop p99 ${s.loopP99Ms.toFixed(0)} ms, create p99 ${s.apiP99Ms.toFixed(0)} ms, ${accepted}/${requests} accepted`)
      }
    }
    // Browsers are read more often than the samples are taken, so that a short-lived extra one is seen.
    let browsersPeak = 0
    const end = started + minutes * 60_000
    let n = 0
    let nextSample = started + sampleMs
    let nextBrowserCheck = started
    while (Date.now() < end) {
      const p = send(n++)
      inflight.add(p)
      void p.finally(() => inflight.delete(p))
      if (Date.now() >= nextBrowserCheck) {
        nextBrowserCheck += 2000
        browsersPeak = Math.max(browsersPeak, (await browserUsage(pid)).processes)
      }
      if (Date.now() >= nextSample) {
        nextSample += sampleMs
        await takeSample()
      }
      await sleep(intervalMs)
    }
    await Promise.all([...inflight])
    await takeSample()

    // Job turnaround (created to finished) in the first and last five minutes of the run.
    const turnaround = async (fromS: number, toS: number) => {
      const rows = await pgQuery<{ ms: string }>(
        dbUrl,
        `SELECT extract(epoch FROM (finished_at - created_at)) * 1000 AS ms FROM jobs
         WHERE finished_at IS NOT NULL AND created_at >= $1 AND created_at < $2`,
        [new Date(started + fromS * 1000), new Date(started + toS * 1000)]
      )
      return quantile(rows.map((r) => Number(r.ms)), 0.99)
    }
    const runS = (Date.now() - started) / 1000
    const head = Math.min(300, runS / 6)
    const firstP99 = await turnaround(0, head)
    // Jobs still running at the end are left out; wait for the last five minutes' jobs to end first.
    await sleep(25_000)
    const lastP99 = await turnaround(runS - head, runS)
    const apiFirst = quantile(samples.filter((s) => s.t <= head).map((s) => s.apiP99Ms), 0.5)
    const apiLast = quantile(samples.filter((s) => s.t >= runS - head).map((s) => s.apiP99Ms), 0.5)
    const statuses = await pgQuery<{ status: string; n: string }>(dbUrl, "SELECT status, count(*) AS n FROM jobs GROUP BY 1 ORDER BY 1")

    const tail = samples.filter((s) => s.t >= runS / 3)
    const perMin = (ys: ReadonlyArray<number>) => slope(tail.map((s) => s.t / 60), ys)
    const nodeSlope = perMin(tail.map((s) => s.nodeRssMb))
    const heapSlope = perMin(tail.map((s) => s.heapUsedMb))
    const externalSlope = perMin(tail.map((s) => s.externalMb))
    const rssSumSlope = perMin(tail.map((s) => s.browserRssMb))
    // Browser memory is a saw-tooth: a browser's tree grows over its life and is gone at its
    // recycle (every recycleAfterPages pages, 10-20 minutes at this load). A least-squares line
    // over a window that is not a whole number of lives measures the phase, not a leak; so the
    // browsers' slope is fitted from the first recycle in the window to the last one (whole lives).
    const recycles = samples.flatMap((s, i) => (i > 0 && s.browserTrees.some((b) => !samples[i - 1]!.browserTrees.some((c) => c.pid === b.pid)) ? [s.t] : []))
    const lifeStarts = recycles.filter((t) => t >= runS / 3)
    const wholeLives = lifeStarts.length >= 2 ? samples.filter((s) => s.t >= lifeStarts[0]! && s.t < lifeStarts.at(-1)!) : []
    const browserSlope = wholeLives.length >= 2 ? slope(wholeLives.map((s) => s.t / 60), wholeLives.map((s) => s.browserPssMb)) : undefined
    // Each browser's highest PSS: a leak across recycles would show as peaks that climb.
    const lifePeaks = new Map<number, number>()
    for (const s of samples) for (const b of s.browserTrees) lifePeaks.set(b.pid, Math.max(lifePeaks.get(b.pid) ?? 0, b.pssMb))
    const peak = (f: (s: Sample) => number) => Math.max(...samples.map(f))
    const met = (ok: boolean) => (ok ? "met" : "NOT met")
    browsersPeak = Math.max(browsersPeak, peak((s) => s.browsers))

    const csv = ["t_s,node_rss_mb,browser_rss_mb,browser_pss_mb,heap_used_mb,external_mb,array_buffers_mb,browsers,browser_pids,fds,loop_p99_ms,loop_max_ms,create_p99_ms,requests,accepted,refused"]
      .concat(samples.map((s) => [s.t.toFixed(0), s.nodeRssMb.toFixed(1), s.browserRssMb.toFixed(1), s.browserPssMb.toFixed(1), s.heapUsedMb.toFixed(1), s.externalMb.toFixed(1), s.arrayBuffersMb.toFixed(1), s.browsers, s.browserTrees.map((b) => b.pid).join(" "), s.fds, s.loopP99Ms.toFixed(1), s.loopMaxMs.toFixed(1), s.apiP99Ms.toFixed(1), s.requests, s.accepted, s.refused].join(",")))
      .join("\n") + "\n"
    writeFileSync(join(outDir, "samples.csv"), csv)
    writeFileSync(join(outDir, "chart.svg"), chart(samples, runS / 3))

    const summary = [
      `soak: ${(runS / 60).toFixed(1)} min, ${requests} requests (${accepted} accepted, ${refused} refused or failed), jobs by status ${statuses.map((r) => `${r.status}=${r.n}`).join(" ")}`,
      `  node: RSS slope over the last two thirds (least squares) ${nodeSlope.toFixed(2)} MB/min; heap used ${heapSlope.toFixed(2)} MB/min, external ${externalSlope.toFixed(2)} MB/min`,
      `  browsers: PSS slope over whole lives (${lifeStarts.length >= 2 ? `${(lifeStarts[0]! / 60).toFixed(1)}-${(lifeStarts.at(-1)! / 60).toFixed(1)} min` : "fewer than two recycles after warm-up"}) ${browserSlope === undefined ? "n/a" : `${browserSlope.toFixed(2)} MB/min`}; recycles at ${recycles.map((t) => (t / 60).toFixed(1)).join(", ") || "none"} min; peak PSS per browser ${[...lifePeaks.values()].map((v) => v.toFixed(0)).join(", ")} MB; summed RSS over the last two thirds ${rssSumSlope.toFixed(2)} MB/min (counts shared pages once per process)`,
      `  peaks: node RSS ${peak((s) => s.nodeRssMb).toFixed(0)} MB, browser PSS ${peak((s) => s.browserPssMb).toFixed(0)} MB (summed RSS ${peak((s) => s.browserRssMb).toFixed(0)} MB), browsers ${browsersPeak}, fds ${peak((s) => s.fds)}, loop delay p99 ${peak((s) => s.loopP99Ms).toFixed(0)} ms / max ${peak((s) => s.loopMaxMs).toFixed(0)} ms, create p99 ${peak((s) => s.apiP99Ms).toFixed(0)} ms`,
      `  job turnaround p99: first ${(head / 60).toFixed(1)} min ${(firstP99 / 1000).toFixed(1)} s, last ${(head / 60).toFixed(1)} min ${(lastP99 / 1000).toFixed(1)} s; create p99 (median of the samples): ${apiFirst.toFixed(0)} ms, ${apiLast.toFixed(0)} ms`,
      `  goal RSS slope < 1 MB/min after warm-up (node RSS, plus browsers' PSS over whole lives where there are two recycles): ${met(nodeSlope + (browserSlope ?? 0) < 1)} (${(nodeSlope + (browserSlope ?? 0)).toFixed(2)} MB/min)`,
      `  goal browsers never above the cap (${BROWSER_CAP}: browser.maxPages ${browserConfig.maxPages} + the current one): ${met(browsersPeak <= BROWSER_CAP)} (peak ${browsersPeak})`,
      `  goal p99 of the last 5 min within 1.5x of the first 5 (job turnaround): ${met(lastP99 <= 1.5 * firstP99)} (${(lastP99 / Math.max(1, firstP99)).toFixed(2)}x)`,
      `  samples: ${join(outDir, "samples.csv")}, chart: ${join(outDir, "chart.svg")}`
    ].join("\n")
    writeFileSync(join(outDir, "summary.txt"), summary + "\n")
    console.log(summary)
  } finally {
    await server.stop("SIGTERM").catch(() => undefined)
    await llm.close()
    await hostile.close()
    await site.close()
    await pgQuery(baseDb, `DROP DATABASE IF EXISTS "${dbName}"`).catch(() => undefined)
  }
}


/** A hand-written SVG: three panels sharing the time axis (memory, browsers and fds, latencies). */
const chart = (samples: ReadonlyArray<Sample>, warmupS: number) => {
  const W = 900
  const PH = 180
  const L = 60
  const R = 20
  const T = 30
  const GAP = 40
  const maxT = Math.max(1, ...samples.map((s) => s.t))
  const x = (t: number) => L + ((W - L - R) * t) / maxT
  const panel = (i: number, title: string, series: ReadonlyArray<{ name: string; color: string; value: (s: Sample) => number }>, unit: string) => {
    const top = T + i * (PH + GAP)
    const max = Math.max(1, ...series.flatMap((se) => samples.map(se.value))) * 1.1
    const y = (v: number) => top + PH - (PH * v) / max
    const lines = series.map((se) =>
      `<polyline fill="none" stroke="${se.color}" stroke-width="1.5" points="${samples.map((s) => `${x(s.t).toFixed(1)},${y(se.value(s)).toFixed(1)}`).join(" ")}"/>`
    )
    const legend = series.map((se, k) => `<text x="${L + 10 + k * 170}" y="${top + 14}" fill="${se.color}" font-size="12">${se.name}</text>`)
    const ticks = [0, 0.5, 1].map((f) => `<text x="${L - 6}" y="${(y(max * f / 1.1) + 4).toFixed(1)}" font-size="10" text-anchor="end">${(max * f / 1.1).toFixed(0)}</text>`)
    return [
      `<text x="${L}" y="${top - 8}" font-size="13" font-weight="bold">${title} (${unit})</text>`,
      `<rect x="${L}" y="${top}" width="${W - L - R}" height="${PH}" fill="none" stroke="#999"/>`,
      `<line x1="${x(warmupS).toFixed(1)}" y1="${top}" x2="${x(warmupS).toFixed(1)}" y2="${top + PH}" stroke="#bbb" stroke-dasharray="4 3"/>`,
      ...ticks,
      ...lines,
      ...legend
    ].join("\n")
  }
  const H = T + 3 * (PH + GAP) + 10
  const minutesAxis = Array.from({ length: Math.floor(maxT / 300) + 1 }, (_, k) => k * 300)
    .map((t) => `<text x="${x(t).toFixed(1)}" y="${H - 12}" font-size="10" text-anchor="middle">${t / 60} min</text>`)
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    panel(0, "Resident memory; dashed: start of the slope's window", [
      { name: "node RSS", color: "#1f77b4", value: (s) => s.nodeRssMb },
      { name: "node heap used", color: "#17becf", value: (s) => s.heapUsedMb },
      { name: "browsers PSS", color: "#d62728", value: (s) => s.browserPssMb },
      { name: "browsers summed RSS", color: "#f7b6d2", value: (s) => s.browserRssMb }
    ], "MB"),
    panel(1, "Browsers and open file descriptors", [
      { name: "browsers x10", color: "#d62728", value: (s) => s.browsers * 10 },
      { name: "fds", color: "#2ca02c", value: (s) => s.fds }
    ], "count"),
    panel(2, "Latency", [
      { name: "create p99", color: "#9467bd", value: (s) => s.apiP99Ms },
      { name: "event loop p99", color: "#ff7f0e", value: (s) => s.loopP99Ms },
      { name: "event loop max", color: "#8c564b", value: (s) => s.loopMaxMs }
    ], "ms"),
    ...minutesAxis,
    `</svg>`
  ].join("\n")
}

await main()
