/**
 * A webhook delivery's scheduled attempts (src/actors/webhook-delivery-entity.ts) on test layers: the
 * in-memory WebhookRepo, a sender that captures requests and answers as told, and the TestClock.
 * The real sending is covered by test/webhooks/sender.test.ts and the end-to-end webhook tests.
 */
import { expect, layer } from "@effect/vitest"
import { Clock, Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { makeScheduledAttempt } from "../../src/actors/webhook-delivery-entity.ts"
import { WebhookRepo, WebhookRepoTest } from "../../src/sql/webhook-repo.ts"
import { createRetrySchedule } from "../../src/webhooks/schedule.ts"
import { SentWebhooks, WebhookSenderTest } from "../../src/webhooks/webhook-sender.ts"

const schedule = createRetrySchedule()
const Deliveries = Layer.mergeAll(WebhookRepoTest, WebhookSenderTest)

const newDelivery = (id: string) =>
  Effect.flatMap(Effect.service(WebhookRepo), (repo) =>
    repo.insert({ id, tenantId: "ten_1", resourceType: "job", resourceId: `job_${id}`, eventStatus: "done", url: "https://hooks.example/h", secretEnc: "x", body: "{}" }))

const stored = (id: string) => Effect.flatMap(Effect.service(WebhookRepo), (repo) => repo.byId(id))

layer(Deliveries)("scheduled webhook attempts", (it) => {
  it.effect("a failed attempt is recorded and schedules the next one about 30 s later; a repeated message sends nothing", () =>
    Effect.gen(function*() {
      yield* newDelivery("d1")
      yield* (yield* SentWebhooks).answer({ status: 500 })
      const nextAt = yield* makeScheduledAttempt("d1", 1, schedule)
      // 30 s with ±10 % jitter, from the TestClock's time.
      expect(nextAt).toBeGreaterThanOrEqual(27_000)
      expect(nextAt).toBeLessThanOrEqual(33_000)
      expect(yield* stored("d1")).toMatchObject({ status: "pending", attempts: 1, next_attempt_at: new Date(nextAt!) })
      // The same attempt delivered twice (at-least-once messages) is not made again.
      expect(yield* makeScheduledAttempt("d1", 1, schedule)).toBeNull()
      expect((yield* (yield* SentWebhooks).all).filter((w) => w.id === "d1")).toHaveLength(1)
      // The second attempt gets a 2xx: delivered, nothing more scheduled.
      yield* TestClock.adjust("30 seconds")
      expect(yield* makeScheduledAttempt("d1", 2, schedule)).toBeNull()
      expect(yield* stored("d1")).toMatchObject({ status: "delivered", attempts: 2, next_attempt_at: null })
      expect(yield* makeScheduledAttempt("d1", 3, schedule)).toBeNull()
      expect((yield* (yield* SentWebhooks).all).filter((w) => w.id === "d1")).toHaveLength(2)
    }))

  it.effect("a 410 stops the delivery at once", () =>
    Effect.gen(function*() {
      yield* newDelivery("d2")
      yield* (yield* SentWebhooks).answer({ status: 410 })
      expect(yield* makeScheduledAttempt("d2", 1, schedule)).toBeNull()
      expect(yield* stored("d2")).toMatchObject({ status: "failed", attempts: 1 })
    }))

  it.effect("a 429's Retry-After longer than the schedule's wait is honoured", () =>
    Effect.gen(function*() {
      yield* newDelivery("d3")
      yield* (yield* SentWebhooks).answer({ status: 429, retryAfter: "600" })
      const before = yield* Clock.currentTimeMillis
      expect((yield* makeScheduledAttempt("d3", 1, schedule))! - before).toBe(600_000)
    }))

  it.effect("no attempt is scheduled past the retry window: a failure after it fails the delivery", () =>
    Effect.gen(function*() {
      yield* newDelivery("d4")
      yield* (yield* SentWebhooks).answer({ error: "network_error" }, { error: "timeout" })
      const first = yield* makeScheduledAttempt("d4", 1, schedule)
      expect(first).not.toBeNull()
      // The window is 7.5 hours from the first attempt (config/webhooks.json).
      yield* TestClock.adjust("8 hours")
      expect(yield* makeScheduledAttempt("d4", 2, schedule)).toBeNull()
      expect(yield* stored("d4")).toMatchObject({ status: "failed", attempts: 2 })
    }))

  it.effect("the retry window runs from when the first attempt was sent, not from its answer", () =>
    Effect.gen(function*() {
      yield* newDelivery("d5")
      // The first attempt ran into the 10 s timeout.
      yield* (yield* SentWebhooks).answer({ error: "timeout", durationMs: 10_000 })
      yield* makeScheduledAttempt("d5", 1, schedule)
      const answeredAt = yield* Clock.currentTimeMillis
      expect((yield* stored("d5"))!.first_attempt_at!.getTime()).toBe(answeredAt - 10_000)
    }))
})
