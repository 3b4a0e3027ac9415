/**
 * JobCreation (src/actors/job-creation.ts) on test layers only (test/support/actor-layers.ts): the
 * real tenant entity on the in-memory cluster decides reservations over in-memory repositories, and
 * the job entity is a recording stand-in. The HTTP side is covered by test/jobs.e2e.test.ts and
 * test/quotas.e2e.test.ts.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { newId } from "../../src/ids.ts"
import { EntityMessages } from "../../src/actors/entity-test.ts"
import { JobCreation, JobCreationLive, type JobOrigin } from "../../src/actors/job-creation.ts"
import type { CreateJobBody } from "../../src/schema/job.ts"
import { JobRepo } from "../../src/sql/job-repo.ts"
import { TenantRepo } from "../../src/sql/tenant-repo.ts"
import { actorTestLayers } from "../support/actor-layers.ts"

const tenants = [
  { id: "ten_keyed", balance: "100" },
  { id: "ten_broke", balance: "0" },
  { id: "ten_daily", balance: "100" },
  { id: "ten_running", balance: "100" },
  { id: "ten_hooks", balance: "100" },
  { id: "ten_cancel", balance: "100" }
]

const Creation = JobCreationLive.pipe(Layer.provideMerge(actorTestLayers(tenants)))

const bodies = (n: number, more: Partial<CreateJobBody> = {}): Array<CreateJobBody> =>
  Array.from({ length: n }, (_, i) => ({ url: `https://shop.example/p/${i}`, ...more }))

/** Prepares and creates `jobs` for the tenant, as the jobs API does. */
const create = (tenantId: string, jobs: ReadonlyArray<CreateJobBody>, origin: (i: number) => JobOrigin = () => ({ requestId: null })) =>
  Effect.gen(function*() {
    const creation = yield* JobCreation
    const prepared = yield* Effect.forEach(jobs, (body, i) => creation.prepare(tenantId, body, origin(i)))
    return yield* creation.create(tenantId, prepared)
  })

const failure = <A, E extends { readonly status: number; readonly code: string }, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.flip(effect), (e) => ({ status: e.status, code: e.code, e }))

const runsOf = (tenantId: string) =>
  Effect.gen(function*() {
    const messages = yield* EntityMessages
    const jobs = yield* JobRepo
    const own = new Set((yield* jobs.query({ tenantId, where: {}, sort: [], offset: 0, limit: 100 })).items.map((j) => j.id))
    return (yield* messages.all).filter((m) => m.entityType === "Job" && own.has(m.entityId))
  })

layer(Creation, { excludeTestServices: true })("JobCreation", (it) => {
  it.effect("writes the jobs and hands each to its entity; a keyed retry of a try that wrote them meets the same jobs and secret", () =>
    Effect.gen(function*() {
      const seed = newId("idem")
      const keyed = (resumed: boolean) => (index: number): JobOrigin => ({ requestId: "req_1", keyed: { attempt: { seed, resumed }, index } })
      const first = yield* create("ten_keyed", bodies(2, { webhookUrl: "https://hooks.example/in", priority: 3 }), keyed(false))
      expect(first.map((j) => j.status)).toEqual(["queued", "queued"])
      expect(first.every((j) => j.webhookSecret !== undefined)).toBe(true)
      yield* (yield* EntityMessages).of("Job", 2)
      const runs = yield* runsOf("ten_keyed")
      expect(runs.map((m) => [m.entityId, m.tag, m.payload])).toEqual(first.map((j) => [j.id, "Run", { domainId: "shop.example", priority: 3 }]))

      // The same request again under its key, its first try taken for dead: no new rows, the same
      // ids and generated secrets, and each job handed on again without a placement (its entity
      // reads the row, which may have ended since).
      const again = yield* create("ten_keyed", bodies(2, { webhookUrl: "https://hooks.example/in", priority: 3 }), keyed(true))
      expect(again.map((j) => [j.id, j.webhookSecret])).toEqual(first.map((j) => [j.id, j.webhookSecret]))
      const rows = yield* (yield* JobRepo).query({ tenantId: "ten_keyed", where: {}, sort: [], offset: 0, limit: 10 })
      expect(rows.total).toBe(2)
      yield* (yield* EntityMessages).of("Job", 4)
      expect((yield* runsOf("ten_keyed")).slice(2).map((m) => [m.entityId, m.payload ?? null])).toEqual(first.map((j) => [j.id, null]))
    }))

  it.effect("refuses with 402 insufficient_credit on a zero balance, writing nothing and running nothing", () =>
    Effect.gen(function*() {
      const refused = yield* failure(create("ten_broke", bodies(1)))
      expect([refused.status, refused.code]).toEqual([402, "insufficient_credit"])
      expect(refused.e.message).toContain("balance of 0.00 EUR")
      expect((yield* (yield* JobRepo).counts("ten_broke", new Date(0))).today).toBe(0)
      expect(yield* runsOf("ten_broke")).toEqual([])
    }))

  it.effect("refuses a request past the daily quota with 429 quota_exceeded; createWhatFits creates the jobs that fit and names the quota for the rest", () =>
    Effect.gen(function*() {
      yield* (yield* TenantRepo).setQuota("ten_daily", "scraper.jobs.daily", 2)
      const whole = yield* failure(create("ten_daily", bodies(3)))
      expect([whole.status, whole.code]).toEqual([429, "quota_exceeded"])
      expect(whole.e.message).toContain("scraper.jobs.daily (2)")
      expect((yield* (yield* JobRepo).counts("ten_daily", new Date(0))).today).toBe(0)

      const creation = yield* JobCreation
      const prepared = yield* Effect.forEach(bodies(3), (body) => creation.prepare("ten_daily", body, { requestId: null }))
      const fits = yield* creation.createWhatFits("ten_daily", prepared)
      expect(fits.created).toHaveLength(2)
      expect(fits.refused.map((r) => [r.position, r.error.status, r.error.code])).toEqual([[2, 429, "quota_exceeded"]])
      // And the day is used up now: one more is refused whole.
      const next = yield* failure(create("ten_daily", bodies(1)))
      expect(next.code).toBe("quota_exceeded")
    }))

  it.effect("refuses jobs past the concurrency limit with 429 concurrent_limit_exceeded until a running one is cancelled", () =>
    Effect.gen(function*() {
      yield* (yield* TenantRepo).setQuota("ten_running", "scraper.jobs.concurrent", 1)
      const [running] = yield* create("ten_running", bodies(1))
      const refused = yield* failure(create("ten_running", bodies(1)))
      expect([refused.status, refused.code]).toEqual([429, "concurrent_limit_exceeded"])
      const cancelled = yield* (yield* JobCreation).cancel("ten_running", running!.id as never)
      expect([cancelled?.row.status, cancelled?.changed]).toEqual(["dead", true])
      // The cancel aborts the run and gives the slot back (a one-way message): the next job fits.
      const aborts = (yield* (yield* EntityMessages).of("Job", 3)).filter((m) => m.entityId === running!.id && m.tag === "Abort")
      expect(aborts).toHaveLength(1)
      const next = yield* Effect.eventually(create("ten_running", bodies(1)).pipe(Effect.timeout("5 seconds")))
      expect(next).toHaveLength(1)
    }))

  it.effect("refuses a new webhook URL past webhooks.endpoints.total with 429, giving the reserved slots back", () =>
    Effect.gen(function*() {
      yield* (yield* TenantRepo).setQuota("ten_hooks", "webhooks.endpoints.total", 1)
      yield* create("ten_hooks", bodies(1, { webhookUrl: "https://hooks.example/a" }))
      const refused = yield* failure(create("ten_hooks", bodies(1, { webhookUrl: "https://hooks.example/b" })))
      expect([refused.status, refused.code]).toEqual([429, "quota_exceeded"])
      expect(refused.e.details?.[0]?.path).toBe("webhookUrl")
      // The URL already registered still takes jobs.
      expect(yield* create("ten_hooks", bodies(1, { webhookUrl: "HTTPS://hooks.example:443/a" }))).toHaveLength(1)
      expect((yield* (yield* JobRepo).counts("ten_hooks", new Date(0))).today).toBe(2)
    }))

  it.effect("answers a cancel of another tenant's job or a missing one with undefined, changing nothing", () =>
    Effect.gen(function*() {
      const [job] = yield* create("ten_cancel", bodies(1))
      const creation = yield* JobCreation
      expect(yield* creation.cancel("ten_keyed", job!.id as never)).toBeUndefined()
      expect(yield* creation.cancel("ten_cancel", "job_missing" as never)).toBeUndefined()
      expect((yield* (yield* JobRepo).find("ten_cancel", job!.id))?.status).toBe("queued")
    }))
})
