import { gzipSync } from "node:zlib"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { describe, expect, it } from "vitest"
import { newId } from "../../src/ids.ts"
import type { JobResult } from "../../src/schema/job.ts"
import { JobRepo, JobRepoLive, type NewJob } from "../../src/sql/job-repo.ts"
import { migrations, runMigrations } from "../../src/sql/migrate.ts"
import type { loadConfig } from "../../src/config.ts"
import { databaseLayer, testDatabases } from "../support/databases.ts"

const layerFor = (config: ReturnType<typeof loadConfig>) => JobRepoLive.pipe(Layer.provideMerge(databaseLayer(config)))

const result: JobResult = {
  httpStatus: 200,
  finalUrl: null,
  classification: "ok",
  engine: "http",
  durationMs: 1,
  contentType: "text/html",
  bytes: 0,
  startedWith: { engine: "http", reason: "test" },
  screenshot: { taken: false, reason: null },
  attempts: []
}

const tenantSql = (sql: SqlClient.SqlClient, id: string) =>
  sql`INSERT INTO tenants (id, name, is_internal, plan, balance) VALUES (${id}, ${id}, false, 'starter', 0)`

const newJob = (tenantId: string, url: string): NewJob => ({
  id: newId("job"),
  tenantId,
  url,
  normalizedUrl: url,
  domainId: "example.com",
  priority: 0,
  timeoutMs: 10_000,
  escalation: null,
  screenshot: false,
  webhookUrl: null,
  webhookSecretEnc: null,
  replayOf: null,
  requestId: null
})

describe.each(testDatabases)("job repository ($name)", (db) => {
  /** Runs `body` on a fresh, migrated database with one tenant. */
  const withTenant = async (body: (c: { sql: SqlClient.SqlClient; repo: typeof JobRepo.Service; tenant: string }) => Effect.Effect<void, unknown>) =>
    Effect.runPromise(Effect.gen(function*() {
      yield* runMigrations
      const sql = yield* SqlClient.SqlClient
      const repo = yield* JobRepo
      const tenant = newId("ten")
      yield* tenantSql(sql, tenant)
      yield* body({ sql, repo, tenant })
    }).pipe(Effect.provide(layerFor(await db.config())), Effect.scoped))
  it("claims and finishes many concurrent jobs of several tenants in shared statements, with gap-free events and right page history", async () => {
    await Effect.runPromise(Effect.gen(function*() {
      yield* runMigrations
      const sql = yield* SqlClient.SqlClient
      const repo = yield* JobRepo
      const tenants = [newId("ten"), newId("ten"), newId("ten")]
      for (const t of tenants) yield* tenantSql(sql, t)
      // Every tenant fetches the same page 8 times at once: 24 jobs in all.
      const jobs = tenants.flatMap((t) => Array.from({ length: 8 }, () => newJob(t, "https://example.com/page")))
      for (const t of tenants) yield* repo.insert(jobs.filter((j) => j.tenantId === t))

      const claimed = yield* Effect.forEach(jobs, (j) => repo.claim(j.id), { concurrency: "unbounded" })
      expect(claimed.map((r) => r?.status)).toEqual(jobs.map(() => "claimed"))
      expect(yield* repo.claim("job_missing")).toBeUndefined()

      // Two bodies, each twice in a row, so some versions change and some do not.
      const ended = yield* Effect.forEach(jobs, (j, i) =>
        repo.finish({ id: j.id, tenant_id: j.tenantId, normalized_url: j.normalizedUrl }, {
          status: "done",
          result,
          attempts: 1,
          content: { body: Buffer.from(`<html>body ${(i >> 1) % 2}</html>`), contentType: "text/html", httpStatus: 200, finalUrl: null }
        }), { concurrency: "unbounded" })
      expect(ended).toEqual(jobs.map(() => true))
      // A second finish of an ended job changes nothing.
      expect(yield* repo.finish({ id: jobs[0]!.id, tenant_id: jobs[0]!.tenantId, normalized_url: jobs[0]!.normalizedUrl }, {
        status: "failed",
        result,
        attempts: 2
      })).toBe(false)

      for (const t of tenants) {
        const events = yield* sql<{ seq: string; type: string }>`SELECT seq, type FROM events WHERE tenant_id = ${t} ORDER BY seq`
        // created, claimed and done for each of its 8 jobs, numbered 1..24 without gaps.
        expect(events.map((e) => Number(e.seq))).toEqual(Array.from({ length: 24 }, (_, i) => i + 1))
        expect(events.filter((e) => e.type === "job.done")).toHaveLength(8)

        const { items } = yield* repo.timeline(t, "https://example.com/page", 0, 100)
        expect(items).toHaveLength(8)
        // No two versions of the page were written by one statement (all rows of a statement share
        // its now(); the API shows milliseconds, so the database's microseconds are read).
        const [times] = yield* sql<{ n: string }>`SELECT count(DISTINCT fetched_at) AS n FROM page_versions WHERE tenant_id = ${t}`
        expect(Number(times!.n)).toBe(items.length)
        // Newest first: each version is "changed" exactly when its hash differs from the one before it.
        const oldestFirst = items.slice().reverse()
        expect(items.some((v) => !v.changed)).toBe(true)
        oldestFirst.forEach((v, i) => expect(v.changed).toBe(i === 0 || v.contentHash !== oldestFirst[i - 1]!.contentHash))
        for (const v of items) {
          const body = (yield* repo.versionContent(t, v.contentHash))!.toString()
          expect(body).toMatch(/^<html>body [01]<\/html>$/)
        }
      }
    }).pipe(Effect.provide(layerFor(await db.config())), Effect.scoped))
  }, 60_000)

  it("gives back only the run its own claim counted: a later claim by another node stays counted", async () => {
    await withTenant(({ sql, repo, tenant }) => Effect.gen(function*() {
      const job = newJob(tenant, "https://example.com/runs")
      yield* repo.insert([job])
      const runsNow = () => sql<{ runs: number }>`SELECT runs FROM jobs WHERE id = ${job.id}`.pipe(Effect.map((r) => r[0]!.runs))
      const onA = (yield* repo.claim(job.id))!
      // A's shard lock lapsed while it was stuck; B took the shard and claimed the job again.
      const onB = (yield* repo.claim(job.id))!
      expect([onA.runs, onB.runs, onA.firstClaim, onB.firstClaim]).toEqual([1, 2, true, false])
      // A comes back and stops its own run: B's claim is not undone.
      yield* repo.giveBackRun(job.id, onA.runs)
      expect(yield* runsNow()).toBe(2)
      // B's node hands its shard on: its run is given back; A's, never given back, stays counted.
      yield* repo.giveBackRun(job.id, onB.runs)
      expect(yield* runsNow()).toBe(1)
    }))
  })

  it("stores a result whose texts hold what PostgreSQL cannot (a NUL, half a surrogate pair), with U+FFFD in their place", async () => {
    await withTenant(({ repo, tenant }) => Effect.gen(function*() {
      const job = newJob(tenant, "https://example.com/nul-result")
      yield* repo.insert([job])
      yield* repo.claim(job.id)
      // An engine's error can quote a target's own bytes (a certificate's names, say).
      const attempt = { engine: "http", classification: "tls_error", httpStatus: null, finalUrl: null, durationMs: 1, error: "bad\u0000name \ud800" }
      const ended = yield* repo.finish({ id: job.id, tenant_id: tenant, normalized_url: job.normalizedUrl }, {
        status: "failed",
        result: { ...result, classification: "tls_error", attempts: [attempt] },
        attempts: 1
      })
      expect(ended).toBe(true)
      const row = yield* repo.byId(job.id)
      expect((row!.result as JobResult).attempts[0]!.error).toBe("bad\ufffdname \ufffd")
    }))
  })

  it("gives back a first run too, and the claim after it records no second job.claimed", async () => {
    await withTenant(({ sql, repo, tenant }) => Effect.gen(function*() {
      const job = newJob(tenant, "https://example.com/first-run")
      yield* repo.insert([job])
      const first = (yield* repo.claim(job.id))!
      expect([first.runs, first.firstClaim]).toEqual([1, true])
      // Its own node stops the first run (a SIGTERM): it does not count towards MAX_RUNS.
      yield* repo.giveBackRun(job.id, first.runs)
      const again = (yield* repo.claim(job.id))!
      expect([again.runs, again.firstClaim]).toEqual([1, false])
      // A crash of that run: the next claim counts it.
      expect((yield* repo.claim(job.id))!.runs).toBe(2)
      const events = yield* sql<{ type: string }>`SELECT type FROM events WHERE tenant_id = ${tenant} ORDER BY seq`
      expect(events.map((e) => e.type)).toEqual(["job.created", "job.claimed"])
    }))
  })

  it("cancels a job and writes its job.dead event in the same statement; a second cancel changes nothing", async () => {
    await withTenant(({ sql, repo, tenant }) => Effect.gen(function*() {
      const job = newJob(tenant, "https://example.com/cancelled")
      yield* repo.insert([job])
      const first = yield* repo.cancel(tenant, job.id)
      expect(first).toMatchObject({ changed: true, row: { status: "dead" } })
      const again = yield* repo.cancel(tenant, job.id)
      expect(again).toMatchObject({ changed: false, row: { status: "dead" } })
      expect(yield* repo.cancel("ten_other", job.id)).toBeUndefined()
      const events = yield* sql<{ type: string; data: Record<string, unknown> }>`
        SELECT type, data FROM events WHERE tenant_id = ${tenant} ORDER BY seq`
      expect(events.map((e) => e.type)).toEqual(["job.created", "job.dead"])
      expect(events[1]!.data).toMatchObject({ id: job.id, status: "dead", classification: "cancelled", tenantId: tenant })
    }))
  })

  it("finds the version before another one written in the same millisecond", async () => {
    await withTenant(({ sql, repo, tenant }) => Effect.gen(function*() {
      const url = "https://example.com/same-ms"
      const version = (id: string, at: string) => sql`
        INSERT INTO page_versions (id, tenant_id, normalized_url, url, job_id, fetched_at, http_status, content_type, size, content_hash)
        VALUES (${id}, ${tenant}, ${url}, ${url}, ${`job-${id}`}, ${at}::timestamptz, 200, 'text/html', 1, ${id})`
      yield* version("pv_a", "2026-01-01T00:00:00.123100Z")
      yield* version("pv_b", "2026-01-01T00:00:00.123400Z")
      yield* version("pv_c", "2026-01-01T00:00:00.123700Z")
      const newest = (yield* repo.timeline(tenant, url, 0, 10)).items
      expect(newest.map((v) => v.id)).toEqual(["pv_c", "pv_b", "pv_a"])
      // changed: read from each version's predecessor in the timeline (pv_a and pv_b have the same content)
      yield* sql`UPDATE page_versions SET content_hash = 'same' WHERE id IN ('pv_a', 'pv_b') AND tenant_id = ${tenant}`
      const flags = (yield* repo.timeline(tenant, url, 0, 10)).items.map((v) => [v.id, v.changed])
      expect(flags).toEqual([["pv_c", true], ["pv_b", false], ["pv_a", true]])
      // ...also when a version is written after a later one, as a node finishing late would write it
      yield* version("pv_0", "2026-01-01T00:00:00.000001Z")
      yield* sql`UPDATE page_versions SET content_hash = 'same' WHERE id = 'pv_0' AND tenant_id = ${tenant}`
      expect((yield* repo.version(tenant, "pv_a"))?.changed).toBe(false)
      expect((yield* repo.version(tenant, "pv_0"))?.changed).toBe(true)
      // All of them read as the same millisecond; each one's predecessor is still the one before it.
      expect(new Set(newest.map((v) => v.fetchedAt)).size).toBe(1)
      expect((yield* repo.previousVersion(tenant, newest[0]!))?.id).toBe("pv_b")
      expect((yield* repo.previousVersion(tenant, newest[1]!))?.id).toBe("pv_a")
      expect((yield* repo.previousVersion(tenant, newest[2]!))?.id).toBe("pv_0")
    }))
  })

  it("hands the sweeper each lapsed job once per lease: oldest first, with its lease renewed, so the next sweep reaches the others", async () => {
    await withTenant(({ sql, repo, tenant }) => Effect.gen(function*() {
      const jobs = [newJob(tenant, "https://example.com/s1"), newJob(tenant, "https://example.com/s2"), newJob(tenant, "https://example.com/s3")]
      yield* repo.insert(jobs)
      // A new job's lease is the hand-off's: a minute, so a Run lost with its node is re-sent soon.
      const fresh = yield* sql<{ seconds: number }>`SELECT extract(epoch FROM lease_until - now())::int AS seconds FROM jobs WHERE tenant_id = ${tenant}`
      for (const { seconds } of fresh) expect(Number(seconds)).toBeGreaterThan(50)
      for (const { seconds } of fresh) expect(Number(seconds)).toBeLessThanOrEqual(60)
      yield* repo.claim(jobs[1]!.id)
      for (const [i, job] of jobs.entries()) {
        yield* sql`UPDATE jobs SET lease_until = now() - ${(3 - i) * 60} * interval '1 second' WHERE id = ${job.id}`
      }
      expect((yield* repo.stale(2)).map((j) => j.id).sort()).toEqual([jobs[0]!.id, jobs[1]!.id].sort())
      expect((yield* repo.stale(2)).map((j) => j.id)).toEqual([jobs[2]!.id])
      expect(yield* repo.stale(2)).toEqual([])
      const leases = yield* sql<{ id: string; seconds: number }>`
        SELECT id, extract(epoch FROM lease_until - now())::int AS seconds FROM jobs WHERE tenant_id = ${tenant} ORDER BY id`
      const byId = new Map(leases.map((l) => [l.id, Number(l.seconds)]))
      // queued: the sweeper's lease for a job still waiting (10 min); claimed: its timeout (10 s here) plus the claim grace (60 s)
      expect(byId.get(jobs[0]!.id)).toBeGreaterThan(590)
      expect(byId.get(jobs[1]!.id)).toBeGreaterThan(60)
      expect(byId.get(jobs[1]!.id)).toBeLessThanOrEqual(70)
    }))
  })

  it("reads page contents stored gzip-compressed by earlier versions", async () => {
    await Effect.runPromise(Effect.gen(function*() {
      yield* runMigrations
      const sql = yield* SqlClient.SqlClient
      const repo = yield* JobRepo
      const tenant = newId("ten")
      yield* tenantSql(sql, tenant)
      yield* sql`INSERT INTO page_contents (tenant_id, hash, compressed, size) VALUES (${tenant}, 'h-old', ${gzipSync("old page")}, 8)`
      expect((yield* repo.versionContent(tenant, "h-old"))!.toString()).toBe("old page")
    }).pipe(Effect.provide(layerFor(await db.config())), Effect.scoped))
  })

  it("moves page-history keys written with re-encoded queries to keys that keep the query as written (migration 0017)", async () => {
    await withTenant(({ sql, tenant }) =>
      Effect.gen(function*() {
        const old = [
          // Old keys: the query decoded (not UTF-8: U+FFFD) and form-encoded again.
          { url: "http://h.test/x?q=%FF", key: "http://h.test/x?q=%EF%BF%BD" },
          { url: "http://h.test/x?q=%FE", key: "http://h.test/x?q=%EF%BF%BD" },
          { url: "http://h.test/x?b=1&a=c:d", key: "http://h.test/x?a=c%3Ad&b=1" },
          // Unchanged by the new rule, and no query at all.
          { url: "http://h.test/x?b=1&a=2", key: "http://h.test/x?a=2&b=1" },
          { url: "http://h.test/y", key: "http://h.test/y" }
        ]
        const ids = old.map(() => newId("job"))
        for (const [i, o] of old.entries()) {
          yield* sql`INSERT INTO jobs (id, tenant_id, url, normalized_url, domain_id, status, priority, timeout_ms)
                     VALUES (${ids[i]!}, ${tenant}, ${o.url}, ${o.key}, 'h.test', 'done', 0, 30000)`
          yield* sql`INSERT INTO page_versions (id, tenant_id, normalized_url, url, job_id, fetched_at, size, content_hash)
                     VALUES (${newId("pv")}, ${tenant}, ${o.key}, ${o.url + "#final"}, ${ids[i]!}, now(), 1, 'h')`
        }
        yield* migrations["0017_page_keys_keep_query_bytes"].pipe(Effect.provideService(SqlClient.SqlClient, sql))
        const keys = (table: "jobs" | "page_versions", column: "id" | "job_id") =>
          Effect.forEach(ids, (id) => sql<{ k: string }>`SELECT normalized_url AS k FROM ${sql(table)} WHERE ${sql(column)} = ${id}`.pipe(Effect.map((r) => r[0]!.k)))
        const expected = ["http://h.test/x?q=%FF", "http://h.test/x?q=%FE", "http://h.test/x?a=c:d&b=1", "http://h.test/x?a=2&b=1", "http://h.test/y"]
        expect(yield* keys("jobs", "id")).toEqual(expected)
        expect(yield* keys("page_versions", "job_id")).toEqual(expected)
      })
    )
  })
})
