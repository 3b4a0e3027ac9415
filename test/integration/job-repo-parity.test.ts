/**
 * The job test layer (JobRepoTest) answers as the live repository does for the moves the services
 * make: inserts (a repeated id written once), reads, searches, claims and their runs, finishes with
 * pages, versions, artifacts and a webhook delivery, cancels, counts and the sweeper's lease check.
 * The same moves run on both and their answers are compared, without times and generated ids.
 */
import { Effect, Layer } from "effect"
import { describe, expect, it } from "vitest"
import { newId } from "../../src/ids.ts"
import type { JobResult, PageVersion } from "../../src/schema/job.ts"
import { JobRepo, JobRepoLive, JobRepoTest, type JobRow, type NewJob } from "../../src/sql/job-repo.ts"
import { WebhookRepo, WebhookRepoLive, WebhookRepoTest } from "../../src/sql/webhook-repo.ts"
import { databaseLayer, onMigratedTenants, testDatabases } from "../support/databases.ts"

const tenantA = newId("ten")
const tenantB = newId("ten")

const result = (classification: string): JobResult => ({
  httpStatus: 200,
  finalUrl: null,
  classification,
  engine: "http",
  durationMs: 5,
  contentType: "text/html",
  bytes: 10,
  startedWith: { engine: "http", reason: "parity" },
  screenshot: { taken: false, reason: null },
  attempts: []
})

const job = (id: string, tenantId: string, url: string, priority: number): NewJob => ({
  id,
  tenantId,
  url,
  normalizedUrl: url,
  domainId: new URL(url).hostname,
  priority,
  timeoutMs: 10_000,
  escalation: priority > 0 ? [{ engine: "http", attempts: 1, timeoutMs: 5_000 }] : null,
  screenshot: priority > 1 ? { fullPage: true } : false,
  webhookUrl: null,
  webhookSecretEnc: null,
  replayOf: null,
  requestId: `req_${id}`
})

/** The columns of JobRow (the live `SELECT *` has more), without the times, which come from different clocks. */
const columns = ["id", "tenant_id", "url", "normalized_url", "domain_id", "status", "priority", "attempts", "timeout_ms", "escalation", "screenshot", "webhook_url", "webhook_secret_enc", "result", "replay_of", "request_id", "runs"] as const
const row = (r: JobRow | undefined) =>
  r && { ...Object.fromEntries(columns.map((c) => [c, r[c]])), created: r.created_at instanceof Date, finished: r.finished_at !== null }
const version = (v: PageVersion | undefined) => v && { jobId: v.jobId, url: v.url, size: v.size, httpStatus: v.httpStatus, contentType: v.contentType, hash: v.contentHash, changed: v.changed }

const scenario = Effect.gen(function*() {
  const jobs = yield* JobRepo
  const webhooks = yield* WebhookRepo
  const [a1, a2, a3, a4, b1] = ["job_parity_a1", "job_parity_a2", "job_parity_a3", "job_parity_a4", "job_parity_b1"]
  const first = yield* jobs.insert([job(a1, tenantA, "https://one.example/page", 0), job(a2, tenantA, "https://one.example/page", 2), job(a3, tenantA, "https://two.example/x", 1)])
  const again = yield* jobs.insert([job(a1, tenantA, "https://one.example/page", 0), job(a4, tenantA, "https://two.example/y", 3)])
  yield* jobs.insert([job(b1, tenantB, "https://one.example/page", 0)])
  const reads = {
    find: row(yield* jobs.find(tenantA, a1)),
    otherTenant: yield* jobs.find(tenantB, a1),
    many: (yield* jobs.findMany(tenantA, [a3, b1, "job_missing", a1])).map((r) => r.id).sort(),
    byId: row(yield* jobs.byId(b1)),
    existing: [...(yield* jobs.existing([a2, b1, "job_missing"]))].sort()
  }
  const search = (where: Parameters<typeof jobs.query>[0]["where"], sort: Parameters<typeof jobs.query>[0]["sort"], offset = 0, limit = 10) =>
    jobs.query({ tenantId: tenantA, where, sort, offset, limit }).pipe(Effect.map((p) => ({ total: p.total, ids: p.items.map((r) => r.id) })))
  const searches = [
    yield* search({}, [{ field: "priority", dir: "desc" }]),
    yield* search({ url: { prefix: "https://two." } }, [{ field: "id", dir: "asc" }]),
    yield* search({ priority: { gte: 1, lte: 2 }, domainId: "TWO.example." }, []),
    yield* search({}, [{ field: "createdAt", dir: "asc" }], 1, 2)
  ]
  const claims = [yield* jobs.claim(a1), yield* jobs.claim(a1), yield* jobs.claim("job_missing")].map((c) => c && { ...row(c), firstClaim: c.firstClaim })
  yield* jobs.giveBackRun(a1, 1)
  const notGivenBack = (yield* jobs.byId(a1))!.runs
  yield* jobs.giveBackRun(a1, 2)
  yield* jobs.recordAttempts(a1, 3)
  yield* jobs.recordAttempts(a1, 2)
  yield* jobs.recordAttempts(a2, 4)
  const counted = yield* jobs.counts(tenantA, new Date(0))
  const page = (html: string) => ({ body: Buffer.from(html), contentType: "text/html", httpStatus: 200, finalUrl: null })
  yield* jobs.claim(a2)
  const finishes = [
    yield* jobs.finish({ id: a1, tenant_id: tenantA, normalized_url: "https://one.example/page" }, {
      status: "done",
      result: result("ok"),
      attempts: 1,
      content: page("<p>first</p>"),
      screenshot: { bytes: Buffer.from([1, 2, 3]), type: "image/jpeg" }
    }),
    yield* jobs.finish({ id: a1, tenant_id: tenantA, normalized_url: "https://one.example/page" }, { status: "failed", result: result("again"), attempts: 9 }),
    yield* jobs.finish({ id: a2, tenant_id: tenantA, normalized_url: "https://one.example/page" }, {
      status: "done",
      result: result("ok"),
      attempts: 2,
      content: { ...page("<p>second</p>"), finalUrl: "https://one.example/page?moved" },
      delivery: { id: "whd_parity_a2", tenantId: tenantA, resourceType: "job", resourceId: a2, eventStatus: "done", url: "https://hooks.example/", secretEnc: "enc", body: "{}" }
    }),
    yield* jobs.finish({ id: b1, tenant_id: tenantB, normalized_url: "https://one.example/page" }, { status: "failed", result: result("blocked"), attempts: 1, content: page("<p>first</p>") })
  ]
  const timeline = yield* jobs.timeline(tenantA, "https://one.example/page", 0, 10)
  const newest = timeline.items[0]!
  const delivery = yield* webhooks.byId("whd_parity_a2")
  const pages = {
    timeline: { total: timeline.total, items: timeline.items.map(version) },
    otherTenant: (yield* jobs.timeline(tenantB, "https://one.example/page", 0, 10)).total,
    version: version(yield* jobs.version(tenantA, newest.id)),
    versionOfOther: yield* jobs.version(tenantB, newest.id),
    previous: version(yield* jobs.previousVersion(tenantA, newest)),
    beforeFirst: yield* jobs.previousVersion(tenantA, timeline.items[1]!),
    html: (yield* jobs.html(tenantA, a1))?.body.toString(),
    htmlOfFailed: (yield* jobs.html(tenantB, b1))?.body.toString(),
    htmlOfOther: yield* jobs.html(tenantB, a1),
    shot: yield* jobs.screenshot(tenantA, a1),
    noShot: yield* jobs.screenshot(tenantA, a2),
    content: (yield* jobs.versionContent(tenantA, newest.contentHash))?.toString(),
    delivery: delivery && { status: delivery.status, resource: delivery.resource_id, attempts: delivery.attempts }
  }
  const cancels = [yield* jobs.cancel(tenantA, a3), yield* jobs.cancel(tenantA, a3), yield* jobs.cancel(tenantA, a1), yield* jobs.cancel(tenantB, a4), yield* jobs.cancel(tenantA, "job_missing")]
    .map((c) => c && { row: row(c.row), changed: c.changed })
  yield* jobs.recordCancelledRun(a3, result("cancelled"), 2)
  yield* jobs.recordCancelledRun(a1, result("cancelled"), 7)
  const afterCancel = [row(yield* jobs.byId(a3)), row(yield* jobs.byId(a1))]
  const lateFinish = yield* jobs.finish({ id: a3, tenant_id: tenantA, normalized_url: "https://two.example/x" }, { status: "done", result: result("ok"), attempts: 1 })
  return {
    inserted: [first.map(row), again.map(row)],
    reads,
    searches,
    claims,
    notGivenBack,
    counted: { running: [...counted.runningIds].sort(), today: counted.today },
    finishes,
    pages,
    cancels,
    afterCancel,
    lateFinish,
    // Every lease is fresh: nothing for the sweeper.
    stale: yield* jobs.stale(10),
    countsAfter: yield* jobs.counts(tenantA, new Date(0)).pipe(Effect.map((c) => ({ running: [...c.runningIds].sort(), today: c.today })))
  }
})

describe.each(testDatabases)("the job test layer against the live one ($name)", (db) => {
  it("answers every move the services make alike", async () => {
    const config = await db.config()
    const live = await Effect.runPromise(onMigratedTenants([tenantA, tenantB], scenario).pipe(Effect.provide(Layer.mergeAll(JobRepoLive, WebhookRepoLive).pipe(Layer.provideMerge(databaseLayer(config)))), Effect.scoped))
    const fake = await Effect.runPromise(scenario.pipe(Effect.provide(JobRepoTest.pipe(Layer.provideMerge(WebhookRepoTest)))))
    // The scenario reaches each rule at least once.
    expect(live.inserted[1]!.length).toBe(1)
    expect(live.claims.map((c) => c?.firstClaim)).toEqual([true, false, undefined])
    expect(live.notGivenBack).toBe(2)
    expect(live.finishes).toEqual([true, false, true, true])
    expect(live.pages.timeline.items.map((v) => v?.changed)).toEqual([true, true])
    expect(live.pages.delivery?.status).toBe("pending")
    expect(live.cancels.map((c) => c?.changed)).toEqual([true, false, false, undefined, undefined])
    expect(fake).toEqual(live)
  }, 60_000)
})
