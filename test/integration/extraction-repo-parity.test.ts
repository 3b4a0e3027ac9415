/**
 * The extraction test layer (ExtractionRepoTest) answers as the live repository does for the moves
 * the services and the extraction entity make: stashed input, inserts (a repeated id written once),
 * reads and searches, claims, finishes (a failed one waiting for its retry, a webhook delivery),
 * cancels, counts, the result cache and extractor configs with their per-tenant limit. The same
 * moves run on both and their answers are compared, without times.
 */
import { Effect, Exit, Layer } from "effect"
import { describe, expect, it } from "vitest"
import { newId } from "../../src/ids.ts"
import type { ConfigPayload } from "../../src/schema/extraction.ts"
import { type ConfigRow, ExtractionRepo, ExtractionRepoLive, ExtractionRepoTest, type ExtractionRow, type NewExtraction } from "../../src/sql/extraction-repo.ts"
import { WebhookRepo, WebhookRepoLive, WebhookRepoTest } from "../../src/sql/webhook-repo.ts"
import { databaseLayer, onMigratedTenants, testDatabases } from "../support/databases.ts"

const tenantA = newId("ten")
const tenantB = newId("ten")

const extraction = (id: string, tenantId: string, source: Partial<NewExtraction>): NewExtraction => ({
  id,
  tenantId,
  type: "article",
  url: null,
  domainId: null,
  inputFormat: "html",
  inputId: null,
  jobId: null,
  configId: null,
  llm: null,
  webhookUrl: null,
  webhookSecretEnc: null,
  webhookEventTypes: ["done", "dead"],
  replayOf: null,
  requestId: `req_${id}`,
  madeOwnJob: false,
  ...source
})

/** The columns of ExtractionRow (the live `SELECT *` has more), with the times only as present or not. */
const columns = [
  "id", "tenant_id", "type", "status", "url", "domain_id", "input_format", "input_id", "job_id", "config_id", "llm", "webhook_url",
  "webhook_secret_enc", "webhook_event_types", "data", "metadata", "error_class", "error_message", "attempts", "cache_hits",
  "recycle_count", "replay_of", "request_id", "made_own_job"
] as const
const row = (r: ExtractionRow | undefined) =>
  r && { ...Object.fromEntries(columns.map((c) => [c, r[c]])), finished: r.finished_at !== null, cancelled: r.cancelled_at !== null }
const config = (c: ConfigRow | undefined) => c && { id: c.id, tenant: c.tenant_id, type: c.type, priority: c.priority, enabled: c.enabled, payload: c.payload, notes: c.notes }

const newConfig = (id: string, tenantId: string | null, priority: number, type: "article" | "product" | null, enabled = true) => ({
  id,
  tenant_id: tenantId,
  scope: tenantId === null ? "global" as const : "tenant" as const,
  type,
  domain_id: null,
  url_pattern: null,
  priority,
  enabled,
  payload: { fields: { title: { selectors: ["h1"] } } } as unknown as ConfigPayload,
  notes: `config ${id}`
})

const scenario = Effect.gen(function*() {
  const repo = yield* ExtractionRepo
  const webhooks = yield* WebhookRepo
  const hash = yield* repo.stash(tenantA, "inp_parity_1", "<h1>Hello</h1>")
  const stashAgain = yield* repo.stash(tenantA, "inp_parity_1", "<h1>Hello</h1>")
  const stashOther = Exit.isFailure(yield* Effect.exit(repo.stash(tenantA, "inp_parity_1", "<h1>Other</h1>")))
  const input = yield* repo.input("inp_parity_1")
  const [e1, e2, e3, b1] = ["ext_parity_1", "ext_parity_2", "ext_parity_3", "ext_parity_b1"]
  const inserted = [
    yield* repo.insert(extraction(e1, tenantA, { inputId: "inp_parity_1", webhookUrl: "https://hooks.example/", webhookSecretEnc: "enc", webhookEventTypes: ["done", "failed"] })),
    yield* repo.insert(extraction(e2, tenantA, { type: "product", url: "https://shop.example/p/1", domainId: "shop.example", jobId: "job_parity", madeOwnJob: true, llm: { enabled: true, mode: "correct" } })),
    yield* repo.insert(extraction(e3, tenantA, { url: "https://news.example/a", domainId: "news.example", inputFormat: "markdown" })),
    yield* repo.insert(extraction(e1, tenantA, {})),
    yield* repo.insert(extraction(b1, tenantB, { url: "https://news.example/b", domainId: "news.example" }))
  ].map(row)
  const reads = { find: row(yield* repo.find(tenantA, e2)), otherTenant: yield* repo.find(tenantB, e2), byId: row(yield* repo.byId(b1)) }
  const search = (where: Parameters<typeof repo.query>[0]["where"], sort: Parameters<typeof repo.query>[0]["sort"], offset = 0, limit = 10) =>
    repo.query({ tenantId: tenantA, where, sort, offset, limit }).pipe(Effect.map((p) => ({ total: p.total, ids: p.items.map((r) => r.id) })))
  const claims = [yield* repo.claim(e1, 30_000), yield* repo.claim(e2, 30_000), yield* repo.claim("ext_missing", 30_000)].map(row)
  const finishes = [
    yield* repo.finish(e1, {
      status: "failed",
      data: {},
      metadata: { inputFormat: "html", note: "timeout" },
      errorClass: "timeout",
      errorMessage: "took too long",
      cacheHit: false,
      retryAt: new Date(Date.now() + 3_600_000),
      delivery: { id: "whd_parity_e1", tenantId: tenantA, resourceType: "extraction", resourceId: e1, eventStatus: "failed", eventSeq: 1, url: "https://hooks.example/", secretEnc: "enc", body: "{}" }
    }),
    yield* repo.finish(e2, { status: "done", data: { title: "Hello" }, metadata: { inputFormat: "html", strategiesUsed: ["css"] }, errorClass: null, errorMessage: null, cacheHit: true, retryAt: null }),
    yield* repo.finish(e3, { status: "done", data: {}, metadata: {}, errorClass: null, errorMessage: null, cacheHit: false, retryAt: null })
  ].map(row)
  // Its retry is not due for an hour: not claimed again.
  const retryEarly = yield* repo.claim(e1, 30_000)
  const searches = [
    yield* search({}, [{ field: "attempts", dir: "desc" }]),
    yield* search({ status: ["failed", "done"] }, [{ field: "status", dir: "asc" }]),
    yield* search({ url: { prefix: "https://news." } }, []),
    yield* search({ type: "product", domainId: "SHOP.example" }, []),
    yield* search({}, [{ field: "createdAt", dir: "asc" }], 1, 1)
  ]
  const delivery = yield* webhooks.byId("whd_parity_e1")
  const cancels = [yield* repo.cancel(tenantA, e1), yield* repo.cancel(tenantA, e2), yield* repo.cancel(tenantB, e3), yield* repo.cancel(tenantA, e3), yield* repo.cancel(tenantA, "ext_missing")]
    .map((c) => c && { row: row(c.row), changed: c.changed })
  yield* repo.setRecycleCount(e2, 3)
  yield* repo.cachePut("cache_parity", { title: "first" }, { inputFormat: "html" })
  yield* repo.cachePut("cache_parity", { title: "second" }, { inputFormat: "html" })
  const configs = yield* Effect.gen(function*() {
    const own1 = yield* repo.configs.insert(newConfig("cfg_parity_1", tenantA, 5, "article"), 2)
    const own2 = yield* repo.configs.insert(newConfig("cfg_parity_2", tenantA, 1, null, false), 2)
    const own3 = yield* repo.configs.insert(newConfig("cfg_parity_3", tenantA, 9, "article"), 2)
    const global = yield* repo.configs.insert(newConfig("cfg_parity_g", null, 5, "article"), 0)
    const otherTenant = yield* repo.configs.insert(newConfig("cfg_parity_b", tenantB, 7, "product"), 2)
    const updated = yield* repo.configs.update("cfg_parity_2", { enabled: true, priority: 8, payload: JSON.stringify({ fields: {} }) })
    const unchanged = yield* repo.configs.update("cfg_parity_1", {})
    const missing = yield* repo.configs.update("cfg_missing", { priority: 1 })
    const list = yield* repo.configs.list(tenantA, [{ field: "priority", dir: "desc" }], 0, 10)
    const candidates = yield* repo.configs.candidates(tenantA, "article")
    const removed = [yield* repo.configs.remove("cfg_parity_1"), yield* repo.configs.remove("cfg_parity_1")]
    return {
      inserted: [own1, own2, own3, global, otherTenant].map(config),
      found: [config(yield* repo.configs.find(tenantA, "cfg_parity_g")), config(yield* repo.configs.find(tenantA, "cfg_parity_b"))],
      updated: config(updated),
      unchanged: config(unchanged),
      missing,
      list: { total: list.total, ids: list.items.map((c) => c.id) },
      candidates: candidates.map((c) => c.id),
      removed,
      afterRemove: (yield* repo.configs.list(tenantA, [], 0, 10)).total
    }
  })
  return {
    stash: { same: hash === stashAgain, stashOther, input },
    inserted,
    reads,
    claims,
    finishes,
    retryEarly,
    searches,
    delivery: delivery && { status: delivery.status, resource: delivery.resource_id, event: delivery.event_status },
    cancels,
    recycled: (yield* repo.find(tenantA, e2))?.recycle_count,
    created: [yield* repo.createdSince(tenantA, new Date(0)), yield* repo.createdSince(tenantA, new Date(Date.now() + 60_000))],
    stale: yield* repo.stale(10),
    cache: [yield* repo.cacheGet("cache_parity"), yield* repo.cacheGet("cache_missing")],
    configs
  }
})

describe.each(testDatabases)("the extraction test layer against the live one ($name)", (db) => {
  it("answers every move the services make alike", async () => {
    const dbConfig = await db.config()
    const live = await Effect.runPromise(onMigratedTenants([tenantA, tenantB], scenario).pipe(Effect.provide(ExtractionRepoLive.pipe(Layer.provideMerge(WebhookRepoLive), Layer.provideMerge(databaseLayer(dbConfig)))), Effect.scoped))
    const fake = await Effect.runPromise(scenario.pipe(Effect.provide(ExtractionRepoTest.pipe(Layer.provideMerge(WebhookRepoTest)))))
    // The scenario reaches each rule at least once.
    expect(live.stash).toMatchObject({ same: true, stashOther: true })
    expect(live.inserted.map((r) => r === undefined)).toEqual([false, false, false, true, false])
    expect(live.finishes.map((r) => (r as { status?: string } | undefined)?.status)).toEqual(["failed", "done", undefined])
    expect(live.retryEarly).toBeUndefined()
    expect(live.cancels.map((c) => c?.changed)).toEqual([true, false, undefined, true, undefined])
    expect(live.configs.inserted.map((c) => c === undefined)).toEqual([false, false, true, false, false])
    expect(live.configs.candidates).toEqual(["cfg_parity_2", "cfg_parity_1", "cfg_parity_g"])
    expect(fake).toEqual(live)
  }, 60_000)
})
