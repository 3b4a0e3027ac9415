/**
 * Webhook delivery benchmark: Trawl's delivery path against a bare sign-and-POST loop.
 *
 *   npm run bench:webhooks
 *   npm run bench:webhooks -- --jobs 800 --hosts 16 --concurrency 16 --duration 3 --cpu-prof /tmp/prof
 *   (--cpu-prof: a V8 CPU profile of the server's main thread over the measured phase, from the
 *   first bulk request to the last delivery, written to the given directory)
 *
 * 1. Trawl: the real server process (embedded PGlite, or DATABASE_URL [+ REDIS_URL] on a fresh test
 *    database, dropped at the end), with ALLOW_PRIVATE_TARGETS. A receiver on 127.0.0.1 answers
 *    `200 ok` at once and records each arrival (time, X-Service-Jobid, delivery id, raw body).
 *    Tiny fixture pages are served on 127.0.0.2 … (one domain each, so the per-domain politeness
 *    limit of 2 fetches does not serialize the crawl). A warm-up tenant runs a first batch; then
 *    `--jobs` jobs, 50 per tenant (the plan's concurrent-job quota), are created with one bulk
 *    request per tenant, all at once, each with `webhookUrl` = the receiver and a known secret.
 *    Measured: deliveries/s from the first to the last arrival and overall (from the first bulk
 *    request), and per delivery the latency from the job's `finishedAt` (read back from
 *    `GET /v1/scraper/jobs`, the same field as `GET /v1/scraper/jobs/{id}`) to its arrival.
 *    Checked: every job delivered exactly once (duplicates counted), every signature valid.
 *    Then a redelivery burst (`--redeliver-concurrency`, default 32; 0 skips it): every delivery
 *    redelivered once by super-admins, to show the delivery plane's own rate when no job
 *    completions pace it. Its arrivals are left out of the exactly-once check.
 * 2. Bare (bench/webhooks-support/bare-sender.ts, its own process, after the server stopped):
 *    `buildDeliveryHeaders` (both HMACs, fresh timestamp) + undici POST of the bodies Trawl sent
 *    (~300 B) and of 2 KB bodies, to the same receiver, at `--concurrency`.
 * 3. Last line: `webhooks ratio=<trawl first→last rate / bare rate (Trawl's bodies)> p99_ms=<n>`.
 *
 * Goals: ratio ≥ 0.5 while jobs keep completing; p99 ≤ 4 × entityMessagePollInterval (2000 ms).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { shardingTuning } from "../src/actors/cluster.ts"
import { verifyWebhookSignature } from "../src/webhooks/signing.ts"
import { jobWebhookBody } from "../src/webhooks/sender.ts"
import { client, createTestDatabase, INTERNAL_TOKEN, startServer } from "../test/support/server-process.ts"
import { percentile } from "./support/load.ts"
import { checkInterrupted, cleanupAll, dropDatabase, installExitHandlers, onCleanup, runMain, spawnTs, toggleProfiler } from "./support/processes.ts"
import { numberOption, optionalString } from "./support/options.ts"
import { type Arrival, nowMs, startFixture, startReceiver } from "./webhooks-support/servers.ts"

const opt = (name: string, dflt: number) => numberOption(name, dflt, true)
const optString = optionalString
const jobCount = opt("jobs", 600)
const hostCount = Math.min(200, Math.max(1, opt("hosts", 16)))
const bareConcurrency = Math.max(1, opt("concurrency", 16))
const bareSeconds = opt("duration", 3)
const warmupJobs = Math.min(50, opt("warmup-jobs", 50))
const deliveryTimeoutMs = opt("timeout", 90) * 1000
const cpuProfDir = optString("cpu-prof")
/** Bulk requests in flight at once while creating the measured jobs; 0: all at once. */
const createConcurrency = opt("create-concurrency", 0)
/** Redelivery requests in flight in the burst phase; 0 skips it. */
const redeliverConcurrency = opt("redeliver-concurrency", 32)
const PER_TENANT = 50 // plan quota scraper.jobs.concurrent
const pollMs = parseMs(shardingTuning.entityMessagePollInterval)
const p99GoalMs = 4 * pollMs

function parseMs(d: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*(millis|ms|seconds|s)$/.exec(d.trim())
  if (!m) return 500
  return m[2]!.startsWith("s") ? Number(m[1]) * 1000 : Number(m[1])
}

const log = (line: string) => console.log(line)
const f = (x: number, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : String(x))
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const until = async (what: string, done: () => boolean, timeoutMs: number) => {
  const end = Date.now() + timeoutMs
  while (!done()) {
    checkInterrupted()
    if (Date.now() > end) return false
    await sleep(25)
  }
  return true
}

interface JobInfo {
  readonly id: string
  readonly tenant: number
  readonly secret: string
  status?: string
  createdAt?: number
  finishedAt?: number
}

const main = async () => {
  const started = Date.now()
  installExitHandlers(175_000)
  log(`bench:webhooks  jobs=${jobCount} (${PER_TENANT}/tenant)  fixture hosts=${hostCount}  bare concurrency=${bareConcurrency}  ` +
    `load avg=${loadavg().map((l) => l.toFixed(2)).join(" ")}  cores=${(await import("node:os")).availableParallelism()}`)

  // --- loopback servers -------------------------------------------------------------------------
  const receiver = await startReceiver()
  onCleanup("receiver", receiver.close)
  const fixture = await startFixture(hostCount)
  onCleanup("fixture", fixture.close)

  // --- Trawl --------------------------------------------------------------------------------------
  const base = process.env.DATABASE_URL
  let dbEnv: Record<string, string> = {}
  if (base) {
    const url = await createTestDatabase(base)
    onCleanup("test database", () => dropDatabase(base, url))
    dbEnv = { DATABASE_URL: url, ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}) }
  }
  let profDir: string | undefined
  if (cpuProfDir) {
    profDir = cpuProfDir
    mkdirSync(profDir, { recursive: true })
    dbEnv.NODE_OPTIONS = `--import=${join(process.cwd(), "bench/crawl-support/profile-hook.mjs")}`
    dbEnv.BENCH_PROFILE_FILE = join(profDir, "trawl-webhooks")
  }
  checkInterrupted()
  const server = await startServer({ ALLOW_PRIVATE_TARGETS: "true", ...dbEnv })
  const stopServer = onCleanup("trawl server", () => server.stop())
  log(`trawl server up on ${server.baseUrl} (${base ? "postgres" : "embedded PGlite"}) after ${((Date.now() - started) / 1000).toFixed(1)} s`)
  const api = client(server.baseUrl)

  const tenantCount = Math.ceil(jobCount / PER_TENANT)
  const tenants: Array<{ apiKey: string }> = []
  for (let i = 0; i < tenantCount + 1; i += 4) {
    const batch = await Promise.all(Array.from({ length: Math.min(4, tenantCount + 1 - i) }, (_, k) => api.createTenant({ name: `Webhook bench ${i + k}` })))
    tenants.push(...batch)
  }
  const warmTenant = tenants.pop()!

  let pageSeq = 0
  const jobItem = (secret: string) => {
    const n = pageSeq++
    return { url: `${fixture.bases[n % fixture.bases.length]}/p/${n}`, webhookUrl: receiver.url, webhookSecret: secret }
  }
  const createBulk = async (apiKey: string, tenant: number, count: number, secret: string): Promise<Array<JobInfo>> => {
    const res = await api.post("/v1/scraper/jobs/bulk", { jobs: Array.from({ length: count }, () => jobItem(secret)) }, apiKey)
    if (res.status !== 201) throw new Error(`bulk creation: ${res.status} ${res.text.slice(0, 500)}`)
    return (res.json.data.created as Array<{ id: string }>).map((j) => ({ id: j.id, tenant, secret }))
  }

  const firstArrival = new Map<string, Arrival>()
  const arrivalsOf = new Map<string, number>()
  let scanned = 0
  // Arrivals past this index belong to the redelivery burst, not to the measured deliveries.
  let scanLimit = Infinity
  const scan = () => {
    for (; scanned < Math.min(scanLimit, receiver.arrivals.length); scanned++) {
      const a = receiver.arrivals[scanned]!
      if (!a.jobId) continue
      arrivalsOf.set(a.jobId, (arrivalsOf.get(a.jobId) ?? 0) + 1)
      if (!firstArrival.has(a.jobId)) firstArrival.set(a.jobId, a)
    }
  }

  // Warm-up (JIT, entity types, pools): not measured.
  if (warmupJobs > 0) {
    const w0 = Date.now()
    const warm = await createBulk(warmTenant.apiKey, -1, warmupJobs, "bench-warmup-secret-0123456789")
    const ok = await until("warm-up deliveries", () => (scan(), warm.every((j) => firstArrival.has(j.id))), 30_000)
    log(`warm-up: ${warmupJobs} jobs ${ok ? "delivered" : "NOT all delivered"} in ${((Date.now() - w0) / 1000).toFixed(1)} s`)
    await sleep(300)
  }

  // Measured phase.
  receiver.state.keepRaw = true
  if (profDir) await toggleProfiler(server, "bench-profile started")
  const arrivalsBefore = receiver.arrivals.length
  const connectionsBefore = receiver.state.connections
  const t0 = nowMs()
  const createdBy: Array<Array<JobInfo>> = []
  let nextTenant = 0
  const creator = async () => {
    for (let i = nextTenant++; i < tenants.length; i = nextTenant++) {
      const n = Math.min(PER_TENANT, jobCount - i * PER_TENANT)
      createdBy[i] = await createBulk(tenants[i]!.apiKey, i, n, `bench-secret-${i}-0123456789abcdef`)
    }
  }
  await Promise.all(Array.from({ length: createConcurrency > 0 ? Math.min(createConcurrency, tenants.length) : tenants.length }, creator))
  const created = createdBy.flat()
  const tCreated = nowMs()
  const jobs = new Map(created.map((j) => [j.id, j]))
  log(`created ${created.length} jobs in ${tenants.length} bulk requests, ${createConcurrency > 0 ? createConcurrency : "all"} at once (${f(tCreated - t0, 0)} ms)`)
  // Bounded so that the whole run stays within about 2.5 minutes.
  const waitMs = Math.max(10_000, Math.min(deliveryTimeoutMs, 150_000 - (Date.now() - started) - 15_000))
  const allIn = await until("deliveries", () => (scan(), created.every((j) => firstArrival.has(j.id))), waitMs)
  if (!allIn) log(`not every job was delivered within ${f(waitMs / 1000, 0)} s (dead or unfinished jobs, or lost deliveries): see below`)
  if (profDir) await toggleProfiler(server, "bench-profile written")
  await sleep(1000) // late duplicates
  scan()

  // Terminal times, read back from the API.
  for (const [i, t] of tenants.entries()) {
    for (let offset = 0; ; offset += 200) {
      const res = await api.get(`/v1/scraper/jobs?limit=200&offset=${offset}`, t.apiKey)
      if (res.status !== 200) throw new Error(`GET /v1/scraper/jobs: ${res.status} ${res.text.slice(0, 300)}`)
      const items = res.json.data.items as Array<{ id: string; status: string; createdAt: string; finishedAt: string | null }>
      for (const it of items) {
        const j = jobs.get(it.id)
        if (!j || j.tenant !== i) continue
        j.status = it.status
        j.createdAt = Date.parse(it.createdAt)
        if (it.finishedAt) j.finishedAt = Date.parse(it.finishedAt)
      }
      if (items.length < 200) break
    }
  }
  // Delivery logs of a few duplicated and of the latest jobs, to tell where the time went.
  const diag: Array<string> = []
  const latencyOf = (j: JobInfo) => (firstArrival.get(j.id)?.at ?? NaN) - (j.finishedAt ?? NaN)
  const dupJobs = created.filter((j) => (arrivalsOf.get(j.id) ?? 0) > 1).slice(0, 3)
  const lateJobs = created.filter((j) => latencyOf(j) > p99GoalMs).sort((a, b) => latencyOf(b) - latencyOf(a)).slice(0, 3)
  for (const [label, j] of [...dupJobs.map((j) => ["duplicate", j] as const), ...lateJobs.map((j) => ["late", j] as const)]) {
    const res = await api.get(`/v1/scraper/jobs/${j.id}/webhook-deliveries`, tenants[j.tenant]!.apiKey)
    const items = (res.json?.data?.items ?? []) as Array<{ id: string; status: string; createdAt: string; attempts: Array<{ attempt: number; manual: boolean; at: string; httpStatus: number | null; durationMs: number }> }>
    const rel = (t: number) => `${f(t - (j.finishedAt ?? t0), 0)}ms`
    const got = receiver.arrivals.filter((a) => a.jobId === j.id).map((a) => `${a.deliveryId}@${rel(a.at)}`).join(", ")
    diag.push(`  ${label} ${j.id}: arrivals [${got}] (relative to finishedAt); log: ${items.map((d) =>
      `${d.id} ${d.status} created@${rel(Date.parse(d.createdAt))} attempts [${d.attempts.map((a) => `#${a.attempt}${a.manual ? "m" : ""} ${a.httpStatus} at@${rel(Date.parse(a.at))} ${a.durationMs}ms`).join("; ")}]`).join(" | ")}`)
  }
  const trawlConnections = receiver.state.connections - connectionsBefore
  scan()
  scanLimit = receiver.arrivals.length
  const burst = redeliverConcurrency > 0 ? await redeliveryBurst(api, created.flatMap((j) => firstArrival.get(j.id)?.deliveryId ?? [])) : undefined
  await stopServer()
  receiver.state.keepRaw = false
  const serverOut = server.output()

  // --- Trawl figures --------------------------------------------------------------------------------
  const measured = receiver.arrivals.slice(arrivalsBefore, scanLimit).filter((a) => a.jobId && jobs.has(a.jobId))
  const strays = receiver.arrivals.slice(arrivalsBefore, scanLimit).filter((a) => !a.jobId || !jobs.has(a.jobId)).length
  const delivered = created.filter((j) => firstArrival.has(j.id))
  // Jobs notify on done and failed only; a dead job (e.g. its runs kept being interrupted) has no webhook.
  const expected = created.filter((j) => j.status === "done" || j.status === "failed")
  const missing = expected.filter((j) => !firstArrival.has(j.id)).length
  const unfinished = created.filter((j) => j.status === "queued" || j.status === "claimed").length
  const deadDelivered = created.filter((j) => j.status === "dead" && firstArrival.has(j.id)).length
  const duplicates = created.reduce((n, j) => n + Math.max(0, (arrivalsOf.get(j.id) ?? 0) - 1), 0)
  const duplicatedJobs = created.filter((j) => (arrivalsOf.get(j.id) ?? 0) > 1).length
  let badSignatures = 0
  for (const a of measured) {
    const j = jobs.get(a.jobId!)!
    const v = verifyWebhookSignature({ rawBody: a.raw!, headers: a.headers as Record<string, string>, secret: j.secret })
    if (!v.ok) badSignatures++
  }
  const firsts = delivered.map((j) => firstArrival.get(j.id)!.at).sort((a, b) => a - b)
  const firstAt = firsts[0] ?? NaN
  const lastAt = firsts[firsts.length - 1] ?? NaN
  const rateFirstLast = firsts.length > 1 ? (firsts.length - 1) / ((lastAt - firstAt) / 1000) : NaN
  const rateOverall = firsts.length / ((lastAt - t0) / 1000)
  const finished = created.filter((j) => j.finishedAt !== undefined).map((j) => j.finishedAt!).sort((a, b) => a - b)
  const completionRate = finished.length > 1 ? (finished.length - 1) / ((finished[finished.length - 1]! - finished[0]!) / 1000) : NaN
  const latencies = delivered.filter((j) => j.finishedAt !== undefined).map((j) => firstArrival.get(j.id)!.at - j.finishedAt!).sort((a, b) => a - b)
  const crawl = created.filter((j) => j.finishedAt !== undefined && j.createdAt !== undefined).map((j) => j.finishedAt! - j.createdAt!).sort((a, b) => a - b)
  const statuses = new Map<string, number>()
  for (const j of created) statuses.set(j.status ?? "?", (statuses.get(j.status ?? "?") ?? 0) + 1)
  const p50 = percentile(latencies, 50)
  const p99 = percentile(latencies, 99)

  log("")
  log("Trawl (job terminal state → webhook at the receiver)")
  log(`  jobs ${created.length}: ${[...statuses].map(([s, n]) => `${s} ${n}`).join(", ")}; crawl created→finished p50 ${f(percentile(crawl, 50), 0)} ms, p99 ${f(percentile(crawl, 99), 0)} ms`)
  log(`  job completions ${f(completionRate)} /s (first to last finishedAt, ${f((finished[finished.length - 1]! - finished[0]!) / 1000, 2)} s)`)
  log(`  deliveries ${delivered.length} for ${expected.length} done/failed jobs${allIn ? "" : ` (gave up waiting after ${f(waitMs / 1000, 0)} s)`}; ${unfinished} jobs never finished, ${created.length - expected.length - unfinished} dead (no webhook${deadDelivered ? `, yet ${deadDelivered} delivered` : ""})`)
  log(`  missing ${missing}, duplicates ${duplicates} (on ${duplicatedJobs} jobs), bad signatures ${badSignatures}, strays ${strays}; ${measured.length} arrivals on ${trawlConnections} TCP connections`)
  log(`  deliveries/s: ${f(rateFirstLast)} first→last arrival (${f((lastAt - firstAt) / 1000, 2)} s), ${f(rateOverall)} overall (from the first bulk request, ${f((lastAt - t0) / 1000, 2)} s)`)
  log(`  latency finishedAt → arrival: p50 ${f(p50, 0)} ms, p90 ${f(percentile(latencies, 90), 0)} ms, p99 ${f(p99, 0)} ms, max ${f(latencies[latencies.length - 1] ?? NaN, 0)} ms, min ${f(latencies[0] ?? NaN, 0)} ms (goal p99 ≤ ${p99GoalMs} ms = 4 × ${pollMs} ms poll)`)
  // One line per second: completions and deliveries, to see whether deliveries keep pace.
  const buckets = new Map<number, { done: number; delivered: number }>()
  const bucket = (t: number) => {
    const k = Math.floor((t - t0) / 1000)
    let b = buckets.get(k)
    if (!b) buckets.set(k, (b = { done: 0, delivered: 0 }))
    return b
  }
  for (const t of finished) bucket(t).done++
  for (const t of firsts) bucket(t).delivered++
  const keys = [...buckets.keys()].sort((a, b) => a - b)
  log(`  per second since the first bulk request [s: finished/delivered]: ${keys.map((k) => `${k}:${buckets.get(k)!.done}/${buckets.get(k)!.delivered}`).join(" ")}`)
  for (const line of diag) log(line)
  if (burst) {
    log(`  redelivery burst (the delivery plane unpaced by job completions): ${burst.ok} of ${burst.ids} deliveries redelivered by a super-admin, ` +
      `${redeliverConcurrency} requests in flight: ${f(burst.rate)} deliveries/s, request p50 ${f(burst.p50, 0)} ms p99 ${f(burst.p99, 0)} ms, ` +
      `not ok ${burst.ids - burst.ok}${burst.sample ? ` (e.g. ${burst.sample})` : ""}`)
  }
  const warnings = serverOut.split("\n").filter((l) => /warn|error/i.test(l)).length
  if (warnings > 0) {
    log(`  server logged ${warnings} warning/error lines, the first ones:`)
    for (const l of serverOut.split("\n").filter((l) => /warn|error/i.test(l)).slice(0, 5)) log(`    ${l.slice(0, 300)}`)
  }

  // --- Bare loop ------------------------------------------------------------------------------------
  checkInterrupted()
  const dir = mkdtempSync(join(tmpdir(), "trawl-bench-webhooks-"))
  onCleanup("bare bodies dir", () => rmSync(dir, { recursive: true, force: true }))
  const secret = "bench-bare-secret-0123456789abcdef"
  const realBodies = measured.slice(0, 1000).map((a) => ({ jobId: a.jobId!, deliveryId: a.deliveryId ?? "whd_bare", body: a.raw!.toString("utf8") }))
  const fallback = Array.from({ length: 200 }, (_, i) => ({
    jobId: `job_bare${i}`,
    deliveryId: `whd_bare${i}`,
    body: jobWebhookBody({ jobId: `job_bare${i}`, status: "done", httpStatus: 200, finalUrl: `http://127.0.0.2:8080/p/${i}`, classification: "ok", durationMs: 12, requestId: `req_bare${i}`, deliveredAt: new Date() })
  }))
  const small = realBodies.length > 0 ? realBodies : fallback
  const large = small.slice(0, 200).map((b) => {
    const parsed = JSON.parse(b.body) as Record<string, unknown>
    const pad = Math.max(0, 2048 - Buffer.byteLength(b.body))
    const body = jobWebhookBody({ ...(parsed as any), finalUrl: `${parsed.finalUrl ?? "http://127.0.0.2/p"}?${"q".repeat(pad)}` })
    return { ...b, body }
  })
  const file = join(dir, "bodies.json")
  writeFileSync(file, JSON.stringify({ secret, sets: [{ name: "trawl bodies", bodies: small }, { name: "2 KB bodies", bodies: large }] }))
  const bareArrivalsBefore = receiver.arrivals.length
  const bareConnectionsBefore = receiver.state.connections
  const bare = spawnTs("bare sender", "bench/webhooks-support/bare-sender.ts", {
    BARE_URL: receiver.url,
    BARE_BODIES_FILE: file,
    BARE_CONCURRENCY: String(bareConcurrency),
    BARE_WARMUP_MS: "500",
    BARE_DURATION_MS: String(Math.round(bareSeconds * 1000))
  })
  const code = await Promise.race([bare.exited, sleep(60_000).then(() => "timeout" as const)])
  await bare.stop()
  const results = bare.output().split("\n").filter((l) => l.startsWith("bare-result ")).map((l) => JSON.parse(l.slice("bare-result ".length)) as {
    name: string; bodyBytes: number; concurrency: number; requests: number; errors: number; seconds: number; rate: number; p50Ms: number; p99Ms: number
  })
  if (code !== 0 || results.length < 2) throw new Error(`bare sender failed (${code}):\n${bare.output().slice(-2000)}`)
  const bareArrivals = receiver.arrivals.length - bareArrivalsBefore
  const bareConnections = receiver.state.connections - bareConnectionsBefore
  log("")
  log(`Bare loop (buildDeliveryHeaders + undici POST, concurrency ${bareConcurrency}, own process, ${bareSeconds} s each after 0.5 s warm-up; ${bareArrivals} arrivals on ${bareConnections} TCP connections at the receiver)`)
  for (const r of results) {
    log(`  ${r.name} (~${r.bodyBytes} B): ${f(r.rate)} deliveries/s, ${r.requests} in ${f(r.seconds, 2)} s, errors ${r.errors}, request p50 ${f(r.p50Ms, 2)} ms p99 ${f(r.p99Ms, 2)} ms`)
  }

  await cleanupAll()
  const bareRate = results[0]!.rate
  const ratio = rateFirstLast / bareRate
  log("")
  log(`Summary: Trawl ${f(rateFirstLast)} deliveries/s (first→last; ${f(rateOverall)} overall; job completions ${f(completionRate)}/s) vs bare ${f(bareRate)}/s (~${results[0]!.bodyBytes} B), ${f(results[1]!.rate)}/s (2 KB)`)
  if (burst) log(`  redelivery burst ${f(burst.rate)} deliveries/s: ${f(burst.rate / bareRate, 3)} of the bare rate`)
  log(`  ratio ${f(ratio, 3)} (goal ≥ 0.5: ${ratio >= 0.5 ? "met" : "NOT met"}); p99 ${f(p99, 0)} ms (goal ≤ ${p99GoalMs} ms: ${p99 <= p99GoalMs ? "met" : "NOT met"}); exactly once: ${missing === 0 && duplicates === 0 ? "yes" : `NO (missing ${missing}, duplicates ${duplicates})`}${created.length - expected.length > 0 ? `; ${created.length - expected.length} of ${created.length} jobs did not end done/failed` : ""}`)
  if (profDir) log(`  server CPU profile of the measured phase: ${join(profDir, "trawl-webhooks-1.cpuprofile")}`)
  log(`  whole run ${((Date.now() - started) / 1000).toFixed(1)} s`)
  log(`webhooks ratio=${ratio.toFixed(3)} p99_ms=${Math.round(p99)}`)
}

/**
 * Every delivery of the measured phase redelivered once (POST /v1/scraper/webhooks/{id}/redeliver
 * as a super-admin, which answers after the attempt): deliveries per second when nothing but the
 * requests paces them. Each is a message to the delivery's entity, a signed POST and its SQL record.
 */
const redeliveryBurst = async (api: ReturnType<typeof client>, ids: ReadonlyArray<string>) => {
  // Several admins: one key's rate limit (5000 per minute) would pace the burst.
  const keys = await Promise.all(Array.from({ length: 16 }, async (_, i) => {
    const admin = await api.call("POST", "/internal/v1/internal-admins", { token: INTERNAL_TOKEN, body: { email: `bench-${Date.now()}-${i}@trawl.dev` } })
    if (admin.status !== 201) throw new Error(`internal admin: ${admin.status} ${admin.text.slice(0, 300)}`)
    return admin.json.data.apiKey as string
  }))
  const latencies: Array<number> = []
  let ok = 0
  let sample: string | undefined
  let next = 0
  const t0 = nowMs()
  const worker = async () => {
    for (let i = next++; i < ids.length; i = next++) {
      const s = nowMs()
      const res = await api.post(`/v1/scraper/webhooks/${ids[i]}/redeliver`, {}, keys[i % keys.length]!)
      latencies.push(nowMs() - s)
      if (res.status === 200 && res.json.data.ok === true) ok++
      else sample ??= `${res.status} ${res.text.slice(0, 200)}`
    }
  }
  await Promise.all(Array.from({ length: Math.min(redeliverConcurrency, ids.length) }, worker))
  const seconds = (nowMs() - t0) / 1000
  latencies.sort((a, b) => a - b)
  return { ids: ids.length, ok, rate: ok / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99), sample }
}

runMain(main)
