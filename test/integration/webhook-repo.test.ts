import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { describe, expect, it } from "vitest"
import { newId } from "../../src/ids.ts"
import { runMigrations } from "../../src/sql/migrate.ts"
import { type NewDelivery, WebhookRepo, WebhookRepoLive } from "../../src/sql/webhook-repo.ts"
import type { loadConfig } from "../../src/config.ts"
import { databaseLayer, testDatabases } from "../support/databases.ts"

const layerFor = (config: ReturnType<typeof loadConfig>) => WebhookRepoLive.pipe(Layer.provideMerge(databaseLayer(config)))

/** The migrated database, its repository, and a tenant row of its own. */
const withTenant = Effect.gen(function*() {
  yield* runMigrations
  const sql = yield* SqlClient.SqlClient
  const repo = yield* WebhookRepo
  const tenant = newId("ten")
  yield* sql`INSERT INTO tenants (id, name, is_internal, plan, balance) VALUES (${tenant}, ${tenant}, false, 'starter', 0)`
  return { sql, repo, tenant }
})

describe.each(testDatabases)("webhook repository ($name)", (db) => {
  it("keeps one delivery per resource, status and occurrence, however often it is written", async () => {
    await Effect.runPromise(Effect.gen(function*() {
      const { sql, repo, tenant } = yield* withTenant
      const delivery = (resourceId: string, eventStatus: string, eventSeq?: number): NewDelivery => ({
        id: newId("whd"), tenantId: tenant, resourceType: "extraction", resourceId, eventStatus,
        ...(eventSeq === undefined ? {} : { eventSeq }), url: "http://127.0.0.1:9/hook", secretEnc: "x", body: "{}"
      })
      const extraction = newId("ext")
      // an extraction failing on attempts 1 and 2, each written twice (a re-run of the same finish), then dead
      for (const d of [delivery(extraction, "failed", 1), delivery(extraction, "failed", 1), delivery(extraction, "failed", 2),
        delivery(extraction, "failed", 2), delivery(extraction, "dead"), delivery(extraction, "dead")]) yield* repo.insert(d)
      const rows = yield* sql<{ event_status: string; event_seq: number }>`
        SELECT event_status, event_seq FROM webhook_deliveries WHERE resource_id = ${extraction} ORDER BY event_status, event_seq`
      expect(rows.map((r) => `${r.event_status}#${r.event_seq}`)).toEqual(["dead#0", "failed#1", "failed#2"])
    }).pipe(Effect.provide(layerFor(await db.config())), Effect.scoped))
  })

  it("dates a delivery's first attempt when it was sent, and keeps that date through later attempts", async () => {
    await Effect.runPromise(Effect.gen(function*() {
      const { repo, tenant } = yield* withTenant
      const id = newId("whd")
      yield* repo.insert({ id, tenantId: tenant, resourceType: "job", resourceId: newId("job"), eventStatus: "done", url: "http://127.0.0.1:9/hook", secretEnc: "x", body: "{}" })
      const attempt = (n: number, durationMs: number) =>
        repo.recordAttempt(id, { attempt: n, manual: false, httpStatus: null, error: "timeout", durationMs, responseBody: "" }, { status: "pending", nextAttemptAt: new Date(Date.now() + 60_000) })
      // the first attempt ran 10 s into its timeout: the retry window starts when it was sent
      const before = Date.now()
      yield* attempt(1, 10_000)
      const first = (yield* repo.byId(id))!.first_attempt_at!.getTime()
      expect(first).toBeLessThanOrEqual(Date.now() - 10_000 + 1_000)
      expect(first).toBeGreaterThanOrEqual(before - 10_000 - 1_000)
      yield* attempt(2, 5)
      expect((yield* repo.byId(id))!.first_attempt_at!.getTime()).toBe(first)
    }).pipe(Effect.provide(layerFor(await db.config())), Effect.scoped))
  })

  it("counts the endpoints used in the last 30 days: an idle one frees its place and takes one again when it comes back", async () => {
    await Effect.runPromise(Effect.gen(function*() {
      yield* runMigrations
      const sql = yield* SqlClient.SqlClient
      const repo = yield* WebhookRepo
      const tenant = newId("ten")
      const [a, b, c] = ["a", "b", "c"].map((n) => `http://127.0.0.1:9/${n}`)
      const age = (url: string, days: number) =>
        sql`UPDATE webhook_endpoints SET last_used_at = now() - ${days * 86_400} * interval '1 second' WHERE tenant_id = ${tenant} AND url = ${url}`
      const usedAt = (url: string) =>
        sql<{ t: Date }>`SELECT last_used_at AS t FROM webhook_endpoints WHERE tenant_id = ${tenant} AND url = ${url}`.pipe(Effect.map((r) => new Date(r[0]!.t).getTime()))
      expect([yield* repo.addEndpoint(tenant, a, 2), yield* repo.addEndpoint(tenant, b, 2), yield* repo.addEndpoint(tenant, c, 2)]).toEqual([true, true, false])
      // b has not been given for 31 days: its place is free for c
      yield* age(b, 31)
      expect(yield* repo.addEndpoint(tenant, c, 2)).toBe(true)
      // back after its idle time, b is a new endpoint again: refused while a and c are in use
      expect(yield* repo.addEndpoint(tenant, b, 2)).toBe(false)
      // a used again two days after its last use is marked used now; within a day it is not rewritten
      yield* age(a, 2)
      expect(yield* repo.addEndpoint(tenant, a, 2)).toBe(true)
      const marked = yield* usedAt(a)
      expect(Date.now() - marked).toBeLessThan(60_000)
      yield* age(a, 0.5)
      const halfDay = yield* usedAt(a)
      expect(yield* repo.addEndpoint(tenant, a, 2)).toBe(true)
      expect(yield* usedAt(a)).toBe(halfDay)
    }).pipe(Effect.provide(layerFor(await db.config())), Effect.scoped))
  })
})
