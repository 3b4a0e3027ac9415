/**
 * The sweepers' lease check in the job and extraction test layers, on the TestClock (the parity
 * tests cannot move the live database's clock): a new row's lease runs out after a minute; the
 * sweep then takes it once and renews its lease (ten minutes for a queued job, five for an
 * extraction), so the next sweep skips it until that runs out too. Ended rows are never taken.
 */
import { expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { ExtractionRepo, ExtractionRepoTest } from "../../src/sql/extraction-repo.ts"
import { JobRepo, JobRepoTest } from "../../src/sql/job-repo.ts"
import { WebhookRepoTest } from "../../src/sql/webhook-repo.ts"

const repos = Layer.mergeAll(JobRepoTest, ExtractionRepoTest).pipe(Layer.provide(WebhookRepoTest))

const job = (id: string) => ({
  id, tenantId: "ten_1", url: "https://a.example/", normalizedUrl: "https://a.example/", domainId: "a.example", priority: 0, timeoutMs: 1_000,
  escalation: null, screenshot: false, webhookUrl: null, webhookSecretEnc: null, replayOf: null, requestId: null
})

it.effect("takes a row whose lease ran out once per renewed lease, and never an ended one", () =>
  Effect.gen(function*() {
    const jobs = yield* JobRepo
    const extractions = yield* ExtractionRepo
    yield* jobs.insert([job("job_a"), job("job_b")])
    yield* extractions.insert({
      id: "ext_a", tenantId: "ten_1", type: "article", url: null, domainId: null, inputFormat: "html", inputId: null, jobId: null, configId: null,
      llm: null, webhookUrl: null, webhookSecretEnc: null, webhookEventTypes: ["done"], replayOf: null, requestId: null, madeOwnJob: false
    })
    yield* jobs.cancel("ten_1", "job_b")
    expect(yield* jobs.stale(10)).toEqual([])
    yield* TestClock.adjust("61 seconds")
    expect(yield* jobs.stale(10)).toEqual([{ id: "job_a", tenant_id: "ten_1" }])
    expect(yield* extractions.stale(10)).toEqual([{ id: "ext_a" }])
    expect([yield* jobs.stale(10), yield* extractions.stale(10)]).toEqual([[], []])
    yield* TestClock.adjust("301 seconds")
    expect([yield* jobs.stale(10), yield* extractions.stale(10)]).toEqual([[], [{ id: "ext_a" }]])
    yield* TestClock.adjust("300 seconds")
    expect(yield* jobs.stale(10)).toEqual([{ id: "job_a", tenant_id: "ten_1" }])
  }).pipe(Effect.provide(repos)))
