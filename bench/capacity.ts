/**
 * `npm run capacity`: the measured inputs of the capacity model (docs/scaling.md). One Trawl node
 * on a PostgreSQL of its own (bench/chaos/infra.ts, with pg_stat_statements loaded, so nothing else
 * writes there), phases one after another, each measured as a delta of the database's counters and
 * of the CPU time of the node and its browsers (from /proc), less what the idle node costs over the
 * same time:
 *   idle        the node doing nothing (the cluster's polling, its shard locks)
 *   jobs        plain-HTTP jobs of one ~2 KB page, no webhook
 *   webhooks    the same jobs with a webhook (receiver answers 200): the difference is one delivery
 *   extractions inline article extractions, no webhook
 *   browser     jobs that go straight to Chromium (`brave`)
 *
 *   npm run capacity -- --jobs 300 --extractions 150 --browser-jobs 30
 */
import { readdirSync, readFileSync } from "node:fs"
import { setTimeout as sleep } from "node:timers/promises"
import { startFakeLlm } from "../test/support/fake-llm.ts"
import { loopbackOnlyEnv, startFixtureSite } from "../test/support/fixture-site.ts"
import { INTERNAL_TOKEN, pgQuery, startServer } from "../test/support/server-process.ts"
import { execFileSync } from "node:child_process"
import { startPostgres, startRedis } from "./chaos/infra.ts"
import { startReceiver } from "./chaos/receiver.ts"
import { numberOption } from "./support/options.ts"

process.env.TRAWL_CHECK_RESPONSES = "0"

const jobsN = numberOption("jobs", 300)
const extractionsN = numberOption("extractions", 150)
const browserN = numberOption("browser-jobs", 30)
const idleS = numberOption("idle-seconds", 30)
const concurrency = numberOption("concurrency", 16)
const HOSTS = ["127.0.0.81", "127.0.0.82", "127.0.0.83", "127.0.0.84", "127.0.0.85", "127.0.0.86", "127.0.0.87", "127.0.0.88"]
const TICKS = 100 // USER_HZ on Linux

/** CPU seconds of a process tree: each live process's own time and that of its children already reaped. */
const treeCpu = (root: number): number => {
  const procs = new Map<number, { ppid: number; cpu: number }>()
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue
    try {
      const stat = readFileSync(`/proc/${e}/stat`, "utf8")
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      // After the command: state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14)
      procs.set(Number(e), { ppid: Number(f[1]), cpu: (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / TICKS })
    } catch {
      // gone meanwhile
    }
  }
  const inTree = (pid: number): boolean => pid === root || (pid > 1 && procs.has(pid) && inTree(procs.get(pid)!.ppid))
  let node = 0
  let others = 0
  for (const [pid, p] of procs) {
    if (pid === root) node = p.cpu
    else if (inTree(pid)) others += p.cpu
  }
  return node + others
}

interface Snap {
  readonly at: number
  readonly pgCpu: number
  readonly redisCommands: number
  readonly tables: ReadonlyMap<string, number>
  readonly statements: number
  readonly wal: bigint
  readonly commits: number
  readonly rows: number
  readonly cpu: number
}

const main = async () => {
  const pg = await startPostgres("-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all")
  const site = await startFixtureSite({ hosts: HOSTS })
  const llm = await startFakeLlm()
  const receiver = await startReceiver(0)
  const redis = await startRedis()
  const redisCommands = () =>
    Number(/total_commands_processed:(\d+)/.exec(execFileSync("redis-cli", ["-u", redis.url, "INFO", "stats"]).toString())?.[1] ?? 0)
  await pgQuery(pg.url, "CREATE DATABASE capacity")
  await pgQuery(pg.url, "CREATE EXTENSION pg_stat_statements")
  const dbUrl = pg.dbUrl("capacity")
  const server = await startServer({
    DATABASE_URL: dbUrl,
    REDIS_URL: redis.url,
    ALLOW_PRIVATE_TARGETS: "true",
    LLM_BASE_URL: llm.baseUrl,
    LLM_MODEL: "capacity-model",
    ...loopbackOnlyEnv()
  }, { timeoutMs: 120_000 })
  const pid = server.process.pid!
  const base = `http://127.0.0.1:${server.port}`
  try {
    const key = await createTenant(base, dbUrl)
    // Counters read from the `postgres` database, so the reads do not count in `capacity`'s figures.
    const snap = async (): Promise<Snap> => {
      // pg_stat_database is flushed by the backends about once a second.
      await sleep(1500)
      const [s] = await pgQuery<{ statements: string; wal: string; commits: string; rows: string }>(pg.url, `
        SELECT (SELECT coalesce(sum(calls), 0) FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = 'capacity') AS statements,
               pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::text AS wal,
               xact_commit AS commits, tup_inserted + tup_updated + tup_deleted AS rows
        FROM pg_stat_database WHERE datname = 'capacity'`)
      const tables = await pgQuery<{ relname: string; n: string }>(dbUrl, "SELECT relname, (n_tup_ins + n_tup_upd + n_tup_del)::text AS n FROM pg_stat_user_tables")
      return {
        at: Date.now(),
        statements: Number(s!.statements),
        wal: BigInt(s!.wal.split(".")[0]!),
        commits: Number(s!.commits),
        rows: Number(s!.rows),
        cpu: treeCpu(pid),
        pgCpu: treeCpu(pg.pid()),
        redisCommands: redisCommands(),
        tables: new Map(tables.map((t) => [t.relname, Number(t.n)]))
      }
    }
    const delta = (a: Snap, b: Snap) => ({
      seconds: (b.at - a.at) / 1000,
      statements: b.statements - a.statements,
      walBytes: Number(b.wal - a.wal),
      commits: b.commits - a.commits,
      rows: b.rows - a.rows,
      cpu: b.cpu - a.cpu,
      pgCpu: b.pgCpu - a.pgCpu,
      redisCommands: b.redisCommands - a.redisCommands,
      tables: new Map([...b.tables].map(([t, n]) => [t, n - (a.tables.get(t) ?? 0)] as const))
    })
    type Delta = ReturnType<typeof delta>

    // The idle node: its cost per second is taken off each phase.
    await sleep(10_000)
    const i0 = await snap()
    await sleep(idleS * 1000)
    const idle = delta(i0, await snap())
    const perSecond = (d: Delta) => ({
      statements: d.statements / d.seconds,
      walBytes: d.walBytes / d.seconds,
      commits: d.commits / d.seconds,
      rows: d.rows / d.seconds,
      cpu: d.cpu / d.seconds,
      pgCpu: d.pgCpu / d.seconds,
      redisCommands: d.redisCommands / d.seconds,
      tables: new Map([...d.tables].map(([t, n]) => [t, n / d.seconds] as const))
    })
    const idleRate = perSecond(idle)
    console.log(`idle node (${idle.seconds.toFixed(0)} s): per second ${idleRate.statements.toFixed(1)} statements, ${(idleRate.walBytes / 1024).toFixed(1)} KB WAL, ${idleRate.commits.toFixed(1)} commits, ${idleRate.rows.toFixed(1)} rows written, ${(idleRate.cpu * 1000).toFixed(0)} ms CPU of the node, ${(idleRate.pgCpu * 1000).toFixed(0)} ms of PostgreSQL, ${idleRate.redisCommands.toFixed(1)} Redis commands; rows by table ${[...idleRate.tables].filter(([, n]) => n > 0.05).map(([t, n]) => `${t} ${n.toFixed(1)}`).join(", ")}`)

    let retried = 0
    const post = (req: { path: string; body: unknown }) =>
      fetch(base + req.path, { method: "POST", headers: { "content-type": "application/json", "x-api-key": key }, body: JSON.stringify(req.body) })
    const phase = async (name: string, n: number, body: (i: number) => { path: string; body: unknown }, table: "jobs" | "extractions") => {
      const a = await snap()
      // This bench's own statements on the database during the phase (its polls, and the table
      // counters read just after the first snapshot) are not the node's.
      let own = 1
      const ids: Array<string> = []
      let next = 0
      await Promise.all(Array.from({ length: concurrency }, async () => {
        while (next < n) {
          const i = next++
          const req = body(i)
          let res = await post(req)
          // A 503 (the cluster busy on this loaded box) or a 429 (the key's rate limit) is resent after its Retry-After, as a client would.
          for (let tries = 0; (res.status === 503 || res.status === 429) && tries < 10; tries++) {
            retried++
            await sleep(Number(res.headers.get("retry-after") ?? 1) * 1000)
            res = await post(req)
          }
          const json = (await res.json()) as any
          if (res.status !== 201 && res.status !== 202) throw new Error(`${name}: ${res.status} ${JSON.stringify(json)}`)
          ids.push(json.data.id)
        }
      }))
      // Until every resource is terminal and settled, and no delivery is pending.
      for (;;) {
        const [o] = await pgQuery<{ open: string }>(dbUrl, `SELECT
          (SELECT count(*) FROM ${table} WHERE id = ANY($1) AND (settled_at IS NULL OR status NOT IN ('done', 'failed', 'dead', 'cancelled'))) +
          (SELECT count(*) FROM webhook_deliveries WHERE status = 'pending') AS open`, [ids])
        own++
        if (Number(o!.open) === 0) break
        await sleep(500)
      }
      const d = delta(a, await snap())
      const per = (x: number, rate: number) => (x - rate * d.seconds) / n
      const r = {
        name,
        n,
        seconds: d.seconds,
        statements: per(d.statements - own, idleRate.statements),
        walBytes: per(d.walBytes, idleRate.walBytes),
        commits: per(d.commits - own, idleRate.commits),
        rows: per(d.rows, idleRate.rows),
        cpuMs: per(d.cpu, idleRate.cpu) * 1000,
        pgCpuMs: per(d.pgCpu, idleRate.pgCpu) * 1000,
        redis: per(d.redisCommands, idleRate.redisCommands)
      }
      const byTable = [...d.tables].map(([t, x]) => [t, per(x, idleRate.tables.get(t) ?? 0)] as const).filter(([, x]) => x >= 0.05).sort((a, b) => b[1] - a[1])
      console.log(`${name}: ${n} in ${d.seconds.toFixed(1)} s; per unit (idle cost taken off): ${r.statements.toFixed(1)} statements, ${(r.walBytes / 1024).toFixed(1)} KB WAL, ${r.commits.toFixed(1)} commits, ${r.rows.toFixed(1)} rows written, ${r.cpuMs.toFixed(1)} ms CPU of the node and its browsers, ${r.pgCpuMs.toFixed(1)} ms of PostgreSQL, ${r.redis.toFixed(1)} Redis commands`)
      console.log(`  rows written by table: ${byTable.map(([t, x]) => `${t} ${x.toFixed(2)}`).join(", ")}`)
      return r
    }
    const pageJob = (i: number, hook: boolean) => ({
      path: "/v1/scraper/jobs",
      body: { url: site.url(`/page?c=${i}-${hook}`, i % HOSTS.length), ...(hook ? { webhookUrl: receiver.url, webhookSecret: "capacity-webhook-secret-0123456789" } : {}) }
    })
    const jobs = await phase("jobs", jobsN, (i) => pageJob(i, false), "jobs")
    const hooked = await phase("jobs with webhook", jobsN, (i) => pageJob(i, true), "jobs")
    const extractions = await phase("extractions", extractionsN, (i) => ({
      path: "/v1/extractor/extractions",
      body: { type: "article", input: `<html><body><article><h1>Capacity ${i}</h1><p>${"Inline text for the capacity run. ".repeat(30)}</p></article></body></html>` }
    }), "extractions")
    const browser = await phase("browser jobs", browserN, (i) => ({
      path: "/v1/scraper/jobs",
      body: { url: site.url(`/page?b=${i}`, i % HOSTS.length), escalation: [{ engine: "brave", attempts: 1, timeoutMs: 30_000 }] }
    }), "jobs")
    console.log(`requests resent after a 503 or 429: ${retried}`)
    const deliveries = receiver.log.length
    console.log(`webhook delivery (jobs with webhook less jobs, ${deliveries} arrivals for ${jobsN} jobs): ` +
      `${(hooked.statements - jobs.statements).toFixed(1)} statements, ${((hooked.walBytes - jobs.walBytes) / 1024).toFixed(1)} KB WAL, ` +
      `${(hooked.commits - jobs.commits).toFixed(1)} commits, ${(hooked.rows - jobs.rows).toFixed(1)} rows, ${(hooked.cpuMs - jobs.cpuMs).toFixed(1)} ms CPU of the node, ${(hooked.pgCpuMs - jobs.pgCpuMs).toFixed(1)} ms of PostgreSQL`)
    const top = await pgQuery<{ calls: string; query: string }>(pg.url, `
      SELECT calls::text, left(regexp_replace(query, '\\s+', ' ', 'g'), 110) AS query FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
      WHERE d.datname = 'capacity' ORDER BY s.calls DESC LIMIT 15`)
    console.log("most frequent statements over the whole run:")
    for (const t of top) console.log(`  ${t.calls.padStart(7)}  ${t.query}`)
    void extractions
    void browser
  } finally {
    await server.stop("SIGTERM").catch(() => undefined)
    await receiver.close()
    await llm.close()
    await site.close()
    await redis.stop()
    pg.destroy()
  }
}

const createTenant = async (base: string, dbUrl: string) => {
  const res = await fetch(`${base}/internal/v1/tenants`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-internal-token": INTERNAL_TOKEN },
    body: JSON.stringify({ name: "Capacity", ownerEmail: `capacity-${Date.now()}@example.com`, ownerPassword: "correct horse battery", credits: "100000.0000" })
  })
  const json = (await res.json()) as any
  if (res.status !== 201) throw new Error(`tenant: ${res.status} ${JSON.stringify(json)}`)
  const { apiKey, apiKeyId, ownerIdentityId, tenantId } = json.data
  const patched = await fetch(`${base}/v1/iam/identities/${ownerIdentityId}/api-keys/${apiKeyId}`, {
    method: "PATCH",
    headers: { "content-type": "application/json", "x-api-key": apiKey },
    body: JSON.stringify({ rateLimitPerMinute: 5000 })
  })
  if (patched.status !== 200) throw new Error(`key rate limit: ${patched.status}`)
  for (const k of ["scraper.jobs.concurrent", "scraper.jobs.daily", "extractor.extractions.daily"]) {
    await pgQuery(dbUrl, "INSERT INTO quota_overrides (tenant_id, quota_key, quota_limit) VALUES ($1, $2, 1000000)", [tenantId, k])
  }
  return apiKey as string
}

await main()
