/**
 * `npm run chaos`: the fault campaign of issue 27 (docs/chaos.md). Three Trawl nodes on the
 * campaign's own PostgreSQL and Redis, a steady mixed load through all three, one fault per
 * scenario, then a drain and the checks of Trawl's promise: every accepted job or extraction ends
 * terminal once, its webhook arrives (one delivery id per resource and status), its debit is in the
 * ledger once, and every 5xx a client sees is a 503 with Retry-After; and politeness: no domain of
 * the fixture site ever had more fetches in flight than the per-domain limit (`chaos politeness_over`).
 *
 *   npm run chaos -- --scenarios 1,2 --load-seconds 60 --drain-seconds 120 --interval-ms 400
 */
import { randomBytes } from "node:crypto"
import { mkdirSync, writeFileSync } from "node:fs"
import { setTimeout as sleep } from "node:timers/promises"
import { createLoadTenant } from "./support/bootstrap.ts"
import { numberOption, stringOption } from "./support/options.ts"
import { startFakeLlm } from "../test/support/fake-llm.ts"
import { loopbackOnlyEnv, startFixtureSite } from "../test/support/fixture-site.ts"
import { freePort, pgQuery, type RunningServer, startServer } from "../test/support/server-process.ts"
import { startPostgres, startRedis } from "./chaos/infra.ts"
import { startReceiver } from "./chaos/receiver.ts"
import { loadCrawlConfig } from "../src/crawl/config.ts"

// The recording relay of the test helper would sit between the load and a frozen node; not wanted here.
process.env.TRAWL_CHECK_RESPONSES = "0"

const scenarios = stringOption("scenarios", "1,2,3,4,5").split(",").map(Number)
const loadSeconds = numberOption("load-seconds", 90)
const drainSeconds = numberOption("drain-seconds", 180)
const intervalMs = numberOption("interval-ms", 400)
const HOSTS = ["127.0.0.61", "127.0.0.62", "127.0.0.63", "127.0.0.64"]
/** A fifth domain the load never uses: `--probe-fresh-domain` sends the recovery probes there. */
const PROBE_HOST = "127.0.0.65"
const probeFreshDomain = process.argv.includes("--probe-fresh-domain")
/** `--node-logs DIR`: each node's output (since its last start) is written there after its scenario. */
const nodeLogs = stringOption("node-logs", "")
const SECRET = "chaos-webhook-secret-0123456789"
/** The per-domain limit of concurrent fetches the nodes run with (config/crawl.json). */
const perDomainLimit = loadCrawlConfig().perDomainConcurrency

const names: Record<number, string> = {
  1: "SIGKILL one node, restart 20 s later",
  2: "SIGSTOP one node 30 s, then SIGCONT",
  3: "PostgreSQL stopped 20 s (connections refused), then started",
  4: "Redis stopped 30 s, then started",
  5: "rolling restart of the three nodes"
}

const log = (s: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${s}`)

interface Accepted {
  readonly kind: "job" | "extraction"
  readonly id: string
}

const main = async () => {
  const pg = await startPostgres()
  const redis = await startRedis()
  const site = await startFixtureSite({ hosts: [...HOSTS, PROBE_HOST] })
  const llm = await startFakeLlm()
  const receiver = await startReceiver()
  const guard = loopbackOnlyEnv()
  // One secret key for the cluster: API key hashes and webhook secrets must read the same on every node.
  const secretKey = randomBytes(32).toString("hex")
  const totals = { lost: 0, stuck: 0, duplicates: 0, ledger: 0, recovery: 0, unannounced: 0, politenessOver: 0 }
  let nodes: Array<{ server: RunningServer; env: Record<string, string> }> = []
  const stopNodes = async () => {
    for (const n of nodes) {
      n.server.process.kill("SIGCONT")
      await n.server.stop("SIGKILL").catch(() => undefined)
    }
    nodes = []
  }
  try {
    for (const scenario of scenarios) {
      if (!names[scenario]) throw new Error(`no scenario ${scenario}`)
      log(`scenario ${scenario}: ${names[scenario]}`)
      const dbName = `chaos_${scenario}_${Date.now().toString(36)}`
      await pgQuery(pg.url, `CREATE DATABASE ${dbName}`)
      const dbUrl = pg.dbUrl(dbName)
      receiver.reset()
      const baseEnv = {
        DATABASE_URL: dbUrl,
        REDIS_URL: redis.url,
        ALLOW_PRIVATE_TARGETS: "true",
        LLM_BASE_URL: llm.baseUrl,
        LLM_MODEL: "chaos-model",
        WEBHOOK_RETRY_SCALE: "0.001",
        SECRET_KEY: secretKey,
        ...guard
      }
      for (let i = 0; i < 3; i++) {
        const env = { ...baseEnv, PORT: String(await freePort()), RUNNER_PORT: String(await freePort()) }
        nodes.push({ server: await startServer(env, { timeoutMs: 120_000 }), env })
      }
      const restart = async (i: number) => {
        const n = nodes[i]!
        await n.server.stop("SIGKILL").catch(() => undefined)
        n.server = await startServer(n.env, { timeoutMs: 120_000 })
      }
      const url = (i: number) => nodes[i]!.server.baseUrl
      const { apiKey: tenant, tenantId } = await createLoadTenant(url(0), "Chaos")
      // Quotas well above the campaign's volume, so refusals are faults and not quotas (set in the
      // table, as an operator's override would be, before the tenant's first job).
      for (const key of ["scraper.jobs.concurrent", "scraper.jobs.daily", "extractor.extractions.daily"]) {
        await pgQuery(dbUrl, "INSERT INTO quota_overrides (tenant_id, quota_key, quota_limit) VALUES ($1, $2, 1000000)", [tenantId, key])
      }
      site.peakInFlight(true)
      const result = await runScenario(scenario, { url, restart, nodes: () => nodes, pg, redis, tenant, site, dbUrl, receiver })
      // Politeness: no domain (a fixture host) ever had more fetches in flight than the limit.
      const peaks = site.peakInFlight()
      const over = [...peaks].filter(([, n]) => n > perDomainLimit)
      console.log(`  politeness: most fetches in flight at once per domain ${[...peaks].map(([h, n]) => `${h} ${n}`).join(", ")} (limit ${perDomainLimit}); domains over it ${over.length}`)
      totals.politenessOver += over.length
      if (nodeLogs) {
        mkdirSync(nodeLogs, { recursive: true })
        nodes.forEach((n, i) => writeFileSync(`${nodeLogs}/s${scenario}-node${i}.log`, n.server.output()))
      }
      totals.lost += result.lost
      totals.unannounced += result.unannounced
      totals.stuck += result.stuck
      totals.duplicates += result.duplicates
      totals.ledger += result.ledgerMismatch
      totals.recovery = Math.max(totals.recovery, result.recoveryS)
      await stopNodes()
    }
  } finally {
    await stopNodes()
    await receiver.close()
    await llm.close()
    await site.close()
    await redis.stop()
    pg.destroy()
  }
  // Not part of the promise's last line, but a client that resends after a 503 makes these twice.
  console.log(`chaos unannounced_creates=${totals.unannounced}`)
  console.log(`chaos politeness_over=${totals.politenessOver}`)
  console.log(`chaos lost=${totals.lost} stuck=${totals.stuck} duplicates=${totals.duplicates} ledger_mismatch=${totals.ledger} recovery_s=${totals.recovery.toFixed(1)}`)
}


interface Context {
  readonly url: (i: number) => string
  readonly restart: (i: number) => Promise<void>
  readonly nodes: () => ReadonlyArray<{ server: RunningServer }>
  readonly pg: Awaited<ReturnType<typeof startPostgres>>
  readonly redis: Awaited<ReturnType<typeof startRedis>>
  readonly tenant: string
  readonly site: Awaited<ReturnType<typeof startFixtureSite>>
  readonly dbUrl: string
  readonly receiver: Awaited<ReturnType<typeof startReceiver>>
}

/** The shapes of the mixed load, in turn. */
const requestFor = (site: Context["site"], webhookUrl: string, n: number, hostIndex?: number): { path: string; body: unknown; kind: "job" | "extraction"; bulk?: boolean } => {
  const host = hostIndex ?? n % HOSTS.length
  const hook = { webhookUrl, webhookSecret: SECRET }
  switch (n % 6) {
    case 0:
      return { kind: "job", path: "/v1/scraper/jobs", body: { url: site.url(`/page?n=${n}`, host), ...hook } }
    case 1:
      return { kind: "job", path: "/v1/scraper/jobs", body: { url: site.url(`/slow?ms=1500&n=${n}`, host), ...hook } }
    case 2:
      return {
        kind: "job",
        bulk: true,
        path: "/v1/scraper/jobs/bulk",
        body: { jobs: Array.from({ length: 4 }, (_, k) => ({ url: site.url(`/page?n=${n}&k=${k}`, (host + k) % HOSTS.length), ...hook })) }
      }
    case 3:
      // Plain HTTP is refused with a JS challenge: the job escalates to Chromium (default escalation).
      return n % 12 === 3
        ? { kind: "job", path: "/v1/scraper/jobs", body: { url: site.url(`/blocked?n=${n}`, host), ...hook } }
        : { kind: "job", path: "/v1/scraper/jobs", body: { url: site.url(`/redirect?n=${n}`, host), ...hook } }
    case 4:
      return { kind: "extraction", path: "/v1/extractor/extractions", body: { type: "article", url: site.url(`/page?x=${n}`, host), ...hook } }
    default:
      return {
        kind: "extraction",
        path: "/v1/extractor/extractions",
        body: { type: "article", input: `<html><body><article><h1>Chaos ${n}</h1><p>${"Inline text for the chaos campaign. ".repeat(20)}</p></article></body></html>`, ...hook }
      }
  }
}

interface Load {
  readonly accepted: Array<Accepted>
  readonly fiveXx: Array<{ status: number; retryAfter: string | null }>
  readonly other: Map<string, number>
  sent: number
}

const send = async (ctx: Context, load: Load, node: number, n: number, host?: number): Promise<Array<string>> => {
  const req = requestFor(ctx.site, ctx.receiver.url, n, host)
  load.sent++
  try {
    const res = await fetch(ctx.url(node) + req.path, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": ctx.tenant },
      body: JSON.stringify(req.body),
      signal: AbortSignal.timeout(15_000)
    })
    const json = (await res.json().catch(() => undefined)) as any
    if (res.status >= 500) load.fiveXx.push({ status: res.status, retryAfter: res.headers.get("retry-after") })
    if (res.status >= 200 && res.status < 300) {
      const ids: Array<string> = req.bulk ? json.data.created.map((j: any) => j.id) : [json.data.id]
      for (const id of ids) load.accepted.push({ kind: req.kind, id })
      return ids
    }
    const key = `http ${res.status} ${json?.code ?? json?.error?.code ?? ""}${res.status === 503 ? ` retry-after=${res.headers.get("retry-after")}` : ""}`
    load.other.set(key, (load.other.get(key) ?? 0) + 1)
  } catch (e) {
    const key = `client ${(e as any)?.cause?.code ?? (e as Error).name}`
    load.other.set(key, (load.other.get(key) ?? 0) + 1)
  }
  return []
}

const jobTerminal = ["done", "failed", "dead"]
const extractionTerminal = ["done", "dead", "cancelled"]

const isTerminal = async (ctx: Context, id: string) => {
  const rows = await pgQuery<{ status: string }>(ctx.dbUrl, "SELECT status FROM jobs WHERE id = $1", [id]).catch(() => [])
  return rows.length === 1 && jobTerminal.includes(rows[0]!.status)
}

/**
 * Time to full service after the fault ends: until a plain job sent through each of the three nodes
 * is accepted and ends terminal. The three nodes are probed at once, each on its own, so a node that
 * is slow to answer does not delay the others' probes; each probe's times are logged.
 */
const measureRecovery = async (ctx: Context, load: Load, faultEnd: number, counter: { n: number }) => {
  const since = () => (Date.now() - faultEnd) / 1000
  const probe = async (i: number): Promise<{ id?: string; accepted: number; terminal: number }> => {
    let id: string | undefined
    let accepted = Infinity
    while (Date.now() - faultEnd < 120_000) {
      if (!id) {
        id = (await send(ctx, load, i, counter.n++ * 6, probeFreshDomain ? HOSTS.length : undefined))[0] // shape 0: a plain page
        if (id) accepted = since()
      }
      if (id && (await isTerminal(ctx, id))) return { id, accepted, terminal: since() }
      await sleep(id ? 250 : 500)
    }
    return { accepted, terminal: Infinity }
  }
  const probes = await Promise.all([0, 1, 2].map(probe))
  probes.forEach((p, i) => log(`  probe ${p.id ?? "-"} via node ${i}: accepted ${p.accepted.toFixed(1)} s, terminal ${p.terminal.toFixed(1)} s after the fault`))
  log(`  all three nodes accepted a job ${Math.max(...probes.map((p) => p.accepted)).toFixed(1)} s after the fault`)
  return Math.max(...probes.map((p) => p.terminal))
}

const runScenario = async (scenario: number, ctx: Context) => {
  const load: Load = { accepted: [], fiveXx: [], other: new Map(), sent: 0 }
  const counter = { n: 0 }
  const started = Date.now()
  let stopLoad = false
  const inflight = new Set<Promise<unknown>>()
  const loadLoop = (async () => {
    while (!stopLoad && Date.now() - started < loadSeconds * 1000) {
      const p = send(ctx, load, counter.n % 3, counter.n++)
      inflight.add(p)
      void p.finally(() => inflight.delete(p))
      await sleep(intervalMs)
    }
  })()
  // The fault starts a fifth into the load.
  await sleep(Math.max(5, loadSeconds / 5) * 1000)
  log(`  fault starts (${load.accepted.length} accepted so far)`)
  const victim = 1
  switch (scenario) {
    case 1: {
      ctx.nodes()[victim]!.server.process.kill("SIGKILL")
      await sleep(20_000)
      await ctx.restart(victim)
      break
    }
    case 2: {
      ctx.nodes()[victim]!.server.process.kill("SIGSTOP")
      await sleep(30_000)
      ctx.nodes()[victim]!.server.process.kill("SIGCONT")
      break
    }
    case 3: {
      ctx.pg.stop()
      await sleep(20_000)
      ctx.pg.start()
      break
    }
    case 4: {
      await ctx.redis.stop()
      await sleep(30_000)
      await ctx.redis.start()
      break
    }
    case 5: {
      for (let i = 0; i < 3; i++) {
        const n = ctx.nodes()[i]!.server
        await n.stop("SIGTERM").catch(() => undefined)
        await ctx.restart(i)
        log(`  node ${i} restarted`)
      }
      break
    }
  }
  const faultEnd = Date.now()
  log(`  fault over after ${((faultEnd - started) / 1000).toFixed(0)} s of load; measuring recovery`)
  const recoveryS = await measureRecovery(ctx, load, faultEnd, counter)
  log(`  full service ${recoveryS.toFixed(1)} s after the fault`)
  await loadLoop
  stopLoad = true
  await Promise.all([...inflight])
  log(`  load over: ${load.sent} requests, ${load.accepted.length} accepted resources; draining (up to ${drainSeconds} s)`)
  return drainAndCheck(scenario, ctx, load, recoveryS)
}

const drainAndCheck = async (scenario: number, ctx: Context, load: Load, recoveryS: number) => {
  const jobIds = load.accepted.filter((a) => a.kind === "job").map((a) => a.id)
  const extractionIds = load.accepted.filter((a) => a.kind === "extraction").map((a) => a.id)
  const snapshot = async () => {
    const jobs = await pgQuery<{ id: string; status: string; charged: string | null; settled_at: Date | null }>(
      ctx.dbUrl,
      "SELECT id, status, charged, settled_at FROM jobs WHERE id = ANY($1)",
      [jobIds]
    )
    const extractions = await pgQuery<{ id: string; status: string; charged: string | null; settled_at: Date | null }>(
      ctx.dbUrl,
      "SELECT id, status, charged, settled_at FROM extractions WHERE id = ANY($1)",
      [extractionIds]
    )
    const deliveries = await pgQuery<{ resource_id: string; event_status: string; status: string }>(
      ctx.dbUrl,
      "SELECT resource_id, event_status, status FROM webhook_deliveries"
    )
    // Rows no 2xx announced must end too: the drain waits for them as well (counted as stuck if not).
    const [unannounced] = await pgQuery<{ n: string }>(
      ctx.dbUrl,
      `SELECT (SELECT count(*) FROM jobs WHERE NOT (id = ANY($1)) AND status NOT IN ('done', 'failed', 'dead')) +
              (SELECT count(*) FROM extractions WHERE NOT (id = ANY($2)) AND status NOT IN ('done', 'dead', 'cancelled')) AS n`,
      [jobIds, extractionIds]
    )
    return { jobs, extractions, deliveries, unannouncedOpen: Number(unannounced?.n ?? 0) }
  }
  const drainStart = Date.now()
  const deadline = drainStart + drainSeconds * 1000
  let s = await snapshot()
  const open = () =>
    s.jobs.filter((j) => !jobTerminal.includes(j.status) || j.settled_at === null).length +
    s.extractions.filter((x) => !extractionTerminal.includes(x.status) || x.settled_at === null).length +
    s.deliveries.filter((d) => d.status === "pending").length +
    s.unannouncedOpen
  while (open() > 0 && Date.now() < deadline) {
    await sleep(2000)
    s = await snapshot()
  }
  const drainedS = (Date.now() - drainStart) / 1000
  // Give retried webhooks their last round trip.
  await sleep(2000)

  const present = new Set([...s.jobs.map((j) => j.id), ...s.extractions.map((x) => x.id)])
  // Rows no 2xx told the client about (a request cut off by the fault, or answered 503 although it
  // created): they must end too. The job an extraction by URL makes for itself is not one of them.
  const orphans = await pgQuery<{ id: string; status: string; kind: string }>(
    ctx.dbUrl,
    `SELECT id, status, 'job' AS kind FROM jobs
     WHERE NOT (id = ANY($1)) AND id NOT IN (SELECT job_id FROM extractions WHERE made_own_job AND job_id IS NOT NULL)
     UNION ALL SELECT id, status, 'extraction' AS kind FROM extractions WHERE NOT (id = ANY($2))`,
    [jobIds, extractionIds]
  )
  const stuckOrphans = orphans.filter((o) => !(o.kind === "job" ? jobTerminal : extractionTerminal).includes(o.status))
  const lost = load.accepted.filter((a) => !present.has(a.id)).length
  const stuckJobs = s.jobs.filter((j) => !jobTerminal.includes(j.status))
  const stuckExtractions = s.extractions.filter((x) => !extractionTerminal.includes(x.status))
  const stuck = stuckJobs.length + stuckExtractions.length + stuckOrphans.length

  // Duplicate terminal transitions: more than one terminal event for one resource.
  const dupEvents = await pgQuery<{ id: string; n: string }>(
    ctx.dbUrl,
    `SELECT data->>'id' AS id, count(*) AS n FROM events
     WHERE type IN ('job.done', 'job.failed', 'job.dead', 'extraction.done', 'extraction.dead', 'extraction.cancelled')
     GROUP BY 1 HAVING count(*) > 1`
  )
  const duplicateTransitions = dupEvents.reduce((n, r) => n + Number(r.n) - 1, 0)

  // Webhooks: for each terminal state that is delivered, at least one 200 arrival and one delivery id.
  const expected: Array<{ id: string; status: string }> = [
    ...s.jobs.filter((j) => j.status === "done" || j.status === "failed").map((j) => ({ id: j.id, status: j.status })),
    ...s.extractions.filter((x) => x.status === "done" || x.status === "dead").map((x) => ({ id: x.id, status: x.status }))
  ]
  const byKey = new Map<string, { ok: number; ids: Set<string>; arrivals: number }>()
  for (const a of ctx.receiver.log) {
    const k = `${a.resourceId}|${a.status}`
    const e = byKey.get(k) ?? { ok: 0, ids: new Set(), arrivals: 0 }
    e.arrivals++
    e.ids.add(a.deliveryId)
    if (a.answered === 200) e.ok++
    byKey.set(k, e)
  }
  const missingWebhooks = expected.filter((e) => (byKey.get(`${e.id}|${e.status}`)?.ok ?? 0) === 0).length
  const duplicateDeliveryIds = [...byKey.values()].reduce((n, e) => n + Math.max(0, e.ids.size - 1), 0)
  const arrivals = ctx.receiver.log.length

  // Ledger: one debit per charged resource, and each tenant's balance chain adds up.
  const debits = await pgQuery<{ resource_id: string; n: string }>(
    ctx.dbUrl,
    "SELECT resource_id, count(*) AS n FROM credit_transactions WHERE type = 'debit' AND resource_id IS NOT NULL GROUP BY 1"
  )
  const debitCount = new Map(debits.map((d) => [d.resource_id, Number(d.n)]))
  const charged = [...s.jobs, ...s.extractions].filter((r) => r.charged !== null && Number(r.charged) > 0)
  const ledgerWrongCount = charged.filter((r) => debitCount.get(r.id) !== 1).length + debits.filter((d) => Number(d.n) > 1 && !charged.some((r) => r.id === d.resource_id)).length
  const chainBreaks = await pgQuery<{ n: string }>(
    ctx.dbUrl,
    `SELECT count(*) AS n FROM (
       SELECT balance_after, amount, lag(balance_after) OVER (PARTITION BY tenant_id ORDER BY seq) AS prev FROM credit_transactions
     ) t WHERE prev IS NOT NULL AND prev + amount <> balance_after`
  )
  const ledgerMismatch = ledgerWrongCount + Number(chainBreaks[0]?.n ?? 0)
  const billableSuccesses = [...s.jobs, ...s.extractions].filter((r) => r.status === "done").length
  const bad5xx = load.fiveXx.filter((f) => f.status !== 503 || f.retryAfter === null).length

  const duplicates = duplicateTransitions + duplicateDeliveryIds
  console.log(
    [
      `scenario ${scenario} (${names[scenario]}):`,
      `  requests sent ${load.sent}; accepted resources ${load.accepted.length} (jobs ${jobIds.length}, extractions ${extractionIds.length})`,
      `  drained (terminal, charged, no pending delivery) ${open() === 0 ? `in ${drainedS.toFixed(0)} s` : "never"} after the load`,
      `  terminal ${present.size - stuckJobs.length - stuckExtractions.length} of ${load.accepted.length}; lost ${lost}; stuck after drain ${stuck}` +
        (stuck ? ` [${[...stuckJobs, ...stuckExtractions, ...stuckOrphans].slice(0, 5).map((r) => `${r.id}:${r.status}`).join(" ")}]` : ""),
      `  rows no 2xx announced (created although the request was answered 503 or cut off): ${orphans.length} (not terminal: ${stuckOrphans.length})`,
      `  duplicate terminal transitions ${duplicateTransitions}${dupEvents.length ? ` [${dupEvents.slice(0, 5).map((d) => `${d.id}x${d.n}`).join(" ")}]` : ""}`,
      `  webhooks: ${arrivals} arrivals for ${expected.length} delivered states (${(arrivals / Math.max(1, load.accepted.length)).toFixed(2)} per accepted resource); missing ${missingWebhooks}; extra delivery ids ${duplicateDeliveryIds}`,
      `  ledger: ${charged.length} charged of ${billableSuccesses} successes; wrong debit count ${ledgerWrongCount}; chain breaks ${chainBreaks[0]?.n ?? 0}`,
      `  client 5xx ${load.fiveXx.length} (not 503 with Retry-After: ${bad5xx}); other refusals ${JSON.stringify(Object.fromEntries(load.other))}`,
      `  full service ${Number.isFinite(recoveryS) ? recoveryS.toFixed(1) : "never"} s after the fault`
    ].join("\n")
  )
  return { unannounced: orphans.length, lost: lost + missingWebhooks, stuck, duplicates, ledgerMismatch, recoveryS: Number.isFinite(recoveryS) ? recoveryS : 999 }
}

await main()
