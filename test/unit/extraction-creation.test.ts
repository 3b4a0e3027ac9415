/**
 * ExtractionCreation (src/actors/extraction-creation.ts) on test layers only (test/support/actor-layers.ts):
 * the real tenant entity on the in-memory cluster takes each extraction's place in the day's quota and
 * its credit; the job and extraction entities are recording stand-ins. The HTTP side is covered by
 * test/extractions.e2e.test.ts and test/extraction-quota.e2e.test.ts.
 */
import { expect, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer } from "effect"
import { EntityMessages } from "../../src/actors/entity-test.ts"
import { ExtractionCreation, ExtractionCreationLive, type ExtractionSource } from "../../src/actors/extraction-creation.ts"
import { JobCreationLive } from "../../src/actors/job-creation.ts"
import { EventLog } from "../../src/events/event-log.ts"
import { newId } from "../../src/ids.ts"
import type { CreateExtractionBody } from "../../src/schema/extraction.ts"
import { ExtractionRepo } from "../../src/sql/extraction-repo.ts"
import { JobRepo } from "../../src/sql/job-repo.ts"
import { TenantRepo } from "../../src/sql/tenant-repo.ts"
import { actorTestLayers } from "../support/actor-layers.ts"

const tenants = ["ten_input", "ten_keyed", "ten_broke", "ten_daily", "ten_url", "ten_rules", "ten_replay"].map((id) => ({ id, balance: id === "ten_broke" ? "0" : "100" }))

const Creation = ExtractionCreationLive.pipe(Layer.provideMerge(JobCreationLive), Layer.provideMerge(actorTestLayers(tenants)))

const fresh: ExtractionSource = { replayOf: null, recycleCount: 0 }
const html: CreateExtractionBody = { type: "article", input: "<html><h1>Title</h1><p>Body</p></html>" }

const create = (tenantId: string, body: CreateExtractionBody, source: ExtractionSource = fresh) =>
  Effect.flatMap(Effect.service(ExtractionCreation), (c) => c.create(tenantId, body, source))

const failure = <A, E extends { readonly status: number; readonly code: string }, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.flip(effect), (e) => ({ status: e.status, code: e.code, e }))

const handedOn = (type: string, id: string, count = 1, within?: number) =>
  Effect.flatMap(Effect.service(EntityMessages), (m) => m.of(type, count, within)).pipe(Effect.map((all) => all.filter((m) => m.entityId === id)))

layer(Creation, { excludeTestServices: true })("ExtractionCreation", (it) => {
  it.effect("stashes the input, writes the extraction and hands it to its entity", () =>
    Effect.gen(function*() {
      const created = yield* create("ten_input", { ...html, inputFormat: "html" })
      expect([created.status, created.url, created.jobId, created.recycleCount]).toEqual(["queued", null, null, 0])
      const row = yield* (yield* ExtractionRepo).find("ten_input", created.id)
      expect((yield* (yield* ExtractionRepo).input(row!.input_id!))?.content).toBe(html.input)
      const runs = yield* handedOn("Extraction", created.id)
      expect(runs.map((m) => m.tag)).toEqual(["Run"])
    }))

  it.effect("meets the extraction an earlier try of a keyed request wrote: the same id and generated secret, one row", () =>
    Effect.gen(function*() {
      const seed = newId("idem")
      const body = { ...html, webhookUrl: "https://hooks.example/x" }
      const first = yield* create("ten_keyed", body, { ...fresh, keyed: { seed, resumed: false } })
      const again = yield* create("ten_keyed", body, { ...fresh, keyed: { seed, resumed: true } })
      expect(first.webhookSecret).toBeDefined()
      expect([again.id, again.webhookSecret]).toEqual([first.id, first.webhookSecret])
      expect((yield* (yield* ExtractionRepo).createdSince("ten_keyed", new Date(0)))).toBe(1)
      // Still queued, so handed on again (the dead try may not have).
      expect((yield* handedOn("Extraction", first.id, 2)).length).toBeGreaterThanOrEqual(2)
    }))

  it.effect("refuses with 402 insufficient_credit on a zero balance, writing nothing", () =>
    Effect.gen(function*() {
      const refused = yield* failure(create("ten_broke", html))
      expect([refused.status, refused.code]).toEqual([402, "insufficient_credit"])
      expect(refused.e.message).toContain("this extraction")
      expect(yield* (yield* ExtractionRepo).createdSince("ten_broke", new Date(0))).toBe(0)
    }))

  it.effect("refuses an extraction past extractor.extractions.daily with 429 quota_exceeded", () =>
    Effect.gen(function*() {
      yield* (yield* TenantRepo).setQuota("ten_daily", "extractor.extractions.daily", 1)
      yield* create("ten_daily", html)
      const refused = yield* failure(create("ten_daily", html))
      expect([refused.status, refused.code]).toEqual([429, "quota_exceeded"])
      expect(refused.e.message).toContain("extractor.extractions.daily (1)")
      expect(yield* (yield* ExtractionRepo).createdSince("ten_daily", new Date(0))).toBe(1)
    }))

  it.effect("creates the job that fetches a URL and hands both on; a job named by another tenant is refused with 422", () =>
    Effect.gen(function*() {
      const created = yield* create("ten_url", { type: "product", url: "https://shop.example/item/1" })
      expect(created.jobId).not.toBeNull()
      const job = yield* (yield* JobRepo).find("ten_url", created.jobId!)
      expect([job?.url, job?.status, created.domainId]).toEqual(["https://shop.example/item/1", "queued", "shop.example"])
      expect((yield* handedOn("Job", created.jobId!)).map((m) => m.tag)).toEqual(["Run"])
      const named = yield* create("ten_url", { type: "article", jobId: created.jobId! })
      expect([named.jobId, named.url]).toEqual([created.jobId, "https://shop.example/item/1"])
      const foreign = yield* failure(create("ten_input", { type: "article", jobId: created.jobId! }))
      expect([foreign.status, foreign.code]).toEqual([422, "invalid_job"])
    }))

  it.effect("refuses bodies that break a rule across fields (400) or name a config the tenant lacks (422) before reserving anything", () =>
    Effect.gen(function*() {
      const two = yield* failure(create("ten_rules", { ...html, url: "https://shop.example/" }))
      expect([two.status, two.code, two.e.details?.[0]?.code]).toEqual([400, "validation_error", "exactly_one_source"])
      const empty = yield* failure(create("ten_rules", { type: "article", input: "  " }))
      expect([empty.status, empty.e.details?.[0]?.path]).toEqual([400, "input"])
      const config = yield* failure(create("ten_rules", { ...html, configId: "cfg_missing" }))
      expect([config.status, config.code]).toEqual([422, "invalid_config"])
      expect(yield* (yield* ExtractionRepo).createdSince("ten_rules", new Date(0))).toBe(0)
    }))

  it.effect("replays a finished extraction with the same input (409 while it runs)", () =>
    Effect.gen(function*() {
      const creation = yield* ExtractionCreation
      const repo = yield* ExtractionRepo
      const first = yield* create("ten_replay", html)
      const early = yield* failure(creation.replay("ten_replay", first.id as never))
      expect([early.status, early.code]).toEqual([409, "cannot_replay_queued"])
      yield* repo.claim(first.id, 30_000)
      yield* repo.finish(first.id, { status: "done", data: { title: "Title" }, metadata: {}, errorClass: null, errorMessage: null, cacheHit: false, retryAt: null })
      const replay = yield* creation.replay("ten_replay", first.id as never)
      expect([replay.replayOf, replay.recycleCount, replay.status]).toEqual([first.id, 1, "queued"])
      const [a, b] = [yield* repo.find("ten_replay", first.id), yield* repo.find("ten_replay", replay.id)]
      expect(b?.input_id).toBe(a?.input_id)
      const missing = yield* failure(creation.replay("ten_replay", "ext_missing" as never))
      expect(missing.status).toBe(404)
    }))
})

/** An event log whose wake-up (sent between the row's insert and its hand-off) says when it starts and takes 200 ms. */
const notifying = Deferred.makeUnsafe<void>()
const SlowNotify = Layer.succeed(EventLog, EventLog.of({
  notify: () => Effect.sync(() => Deferred.doneUnsafe(notifying, Effect.void)).pipe(Effect.andThen(Effect.sleep("200 millis"))),
  since: () => Effect.succeed([]),
  latest: () => Effect.succeed("0"),
  subscribe: () => Effect.void
}))

layer(ExtractionCreationLive.pipe(Layer.provide(SlowNotify), Layer.provideMerge(JobCreationLive), Layer.provideMerge(actorTestLayers([{ id: "ten_gone", balance: "100" }]))), {
  excludeTestServices: true
})("ExtractionCreation, its client gone", (it) => {
  it.effect("hands on an extraction whose request was interrupted after its row was written (it waited a minute for the sweeper)", () =>
    Effect.gen(function*() {
      const request = yield* Effect.forkChild(create("ten_gone", html))
      yield* Deferred.await(notifying)
      // The client hangs up: its request is interrupted between the insert and the hand-off.
      yield* Fiber.interrupt(request)
      const [row] = (yield* (yield* ExtractionRepo).query({ tenantId: "ten_gone", where: {}, sort: [], offset: 0, limit: 10 })).items
      expect(row?.status).toBe("queued")
      expect((yield* handedOn("Extraction", row!.id, 1, 1000)).map((m) => m.tag)).toEqual(["Run"])
    }))
})
