/**
 * The metrics test layer (MetricsRepoTest) starts where the live repository stands on a fresh
 * database: the same three queue kinds, in the same order, each empty; and a queued job moves the
 * live figures the way a test sets them (depth 1, an age of zero or more seconds). Sessions come
 * from pg_stat_activity and are only checked for their shape.
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { describe, expect, it } from "vitest"
import { newId } from "../../src/ids.ts"
import { emptyQueues, MetricsRepo, MetricsRepoLive, MetricsRepoTest, TestMetricsFigures } from "../../src/sql/metrics-repo.ts"
import { runMigrations } from "../../src/sql/migrate.ts"
import { databaseLayer, testDatabases } from "../support/databases.ts"

describe.each(testDatabases)("the metrics test layer against the live one ($name)", (db) => {
  it("reads the same queues on an empty database, and one queued job alike", async () => {
    const config = await db.config()
    const live = await Effect.runPromise(Effect.gen(function*() {
      yield* runMigrations
      const metrics = yield* MetricsRepo
      const sql = yield* SqlClient.SqlClient
      const empty = yield* metrics.queues
      const tenant = newId("ten")
      yield* sql`INSERT INTO tenants (id, name, is_internal, plan, balance) VALUES (${tenant}, ${tenant}, false, 'starter', 0)`
      yield* sql`INSERT INTO jobs (id, tenant_id, url, normalized_url, domain_id, status, priority, timeout_ms)
                 VALUES ('job_metrics', ${tenant}, 'https://a.example/', 'https://a.example/', 'a.example', 'queued', 0, 1000)`
      const oneJob = yield* metrics.queues
      const sessions = yield* metrics.sessions("trawl-metrics-parity")
      return { empty, oneJob: oneJob.map((q) => ({ ...q, oldestAgeSeconds: q.oldestAgeSeconds >= 0 && q.oldestAgeSeconds < 60 ? 0 : q.oldestAgeSeconds })), sessions }
    }).pipe(Effect.provide(MetricsRepoLive.pipe(Layer.provideMerge(databaseLayer(config)))), Effect.scoped))
    const fake = await Effect.runPromise(Effect.gen(function*() {
      const metrics = yield* MetricsRepo
      const empty = yield* metrics.queues
      yield* (yield* TestMetricsFigures).setQueues(emptyQueues.map((q) => (q.kind === "jobs" ? { ...q, depth: 1 } : q)))
      return { empty, oneJob: yield* metrics.queues, sessions: yield* metrics.sessions("trawl-metrics-parity") }
    }).pipe(Effect.provide(MetricsRepoTest)))
    expect(live.empty).toEqual(emptyQueues)
    expect(live.sessions).toBeInstanceOf(Map)
    expect(fake).toEqual({ ...live, sessions: new Map() })
  }, 60_000)
})
