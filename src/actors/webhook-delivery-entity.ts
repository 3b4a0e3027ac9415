import { Clock, DateTime, Effect, Schema } from "effect"
import { ClusterSchema, DeliverAt, Entity, Singleton } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { RESOURCE_ENTITY_IDLE } from "./cluster.ts"
import { Config } from "../config.ts"
import { WebhookRepo } from "../sql/webhook-repo.ts"
import { createRetrySchedule, type RetrySchedule } from "../webhooks/schedule.ts"
import { WebhookSender } from "../webhooks/webhook-sender.ts"
import { sweepLoop } from "./sweep.ts"
import { recordWebhookAttempt } from "../observability/metrics.ts"

/** The n-th scheduled attempt, delivered by the cluster at `dueAt` (persisted, so it survives restarts). */
export class DueAttempt extends Schema.Class<DueAttempt>("trawl/DueAttempt")({
  attempt: Schema.Int,
  dueAt: Schema.Number
}) {
  [DeliverAt.symbol]() {
    return DateTime.makeUnsafe(this.dueAt)
  }
}

export const AttemptOutcome = Schema.Struct({
  ok: Schema.Boolean,
  httpStatus: Schema.NullOr(Schema.Int),
  error: Schema.NullOr(Schema.String),
  durationMs: Schema.Int
})

/**
 * One entity per webhook delivery. It owns the payload, the secret, the signing and
 * the retry schedule: each next attempt is a persisted message to itself, delivered
 * at its due time, so the 7-hour schedule survives the restart of every node.
 */
export const WebhookDeliveryEntity = Entity.make("WebhookDelivery", [
  Rpc.make("Attempt", { payload: DueAttempt }).annotate(ClusterSchema.Persisted, true),
  /**
   * The first attempt, sent right after the terminal state commits. It is not persisted, for
   * speed: the delivery row is durable, and the sweeper re-sends a first attempt that was lost.
   */
  Rpc.make("AttemptNow", { payload: DueAttempt }),
  /** A super-admin's manual redelivery: same payload and secret, fresh timestamp and signature. */
  Rpc.make("Redeliver", { success: AttemptOutcome }).annotate(ClusterSchema.Persisted, true)
])

/**
 * Makes scheduled attempt `attempt` of a delivery and records it with the delivery's new state; the
 * due time (epoch ms) of the next attempt, or null when there is none (delivered, given up, or
 * already made: a re-delivered message). Not interruptible once the request may be out, so an
 * interruption never causes a second identical attempt.
 */
export const makeScheduledAttempt = (deliveryId: string, attempt: number, schedule: RetrySchedule) =>
  Effect.gen(function*() {
    const repo = yield* WebhookRepo
    const sender = yield* WebhookSender
    const d = yield* repo.byId(deliveryId)
    if (!d || d.status !== "pending" || d.attempts >= attempt) return null
    const result = yield* sender.send(d)
    const now = yield* Clock.currentTimeMillis
    // The window runs from when the first attempt was sent (docs/webhooks.md), not from its answer.
    const elapsedMs = d.first_attempt_at ? now - new Date(d.first_attempt_at).getTime() : result.durationMs
    // A 2xx whose answer did not complete in time (its body stalled) was no answer: it is retried.
    const answered = result.httpStatus !== null && result.httpStatus >= 200 && result.httpStatus < 300 ? null : result.httpStatus
    const delay = result.ok ? null : schedule.delayAfterResponse(attempt, answered, result.retryAfter, { elapsedMs, nowMs: now })
    const status = result.ok ? "delivered" : delay === null ? "failed" : "pending"
    const nextAt = delay === null ? null : now + delay
    recordWebhookAttempt(d.resource_type, status === "pending" ? "retry" : status, result.durationMs / 1000)
    yield* Effect.annotateCurrentSpan({ "http.response.status_code": result.httpStatus ?? 0, "trawl.webhook.outcome": status })
    yield* repo.recordAttempt(deliveryId, {
      attempt,
      manual: false,
      httpStatus: result.httpStatus,
      error: result.error,
      durationMs: Math.round(result.durationMs),
      responseBody: result.responseBody
    }, { status, nextAttemptAt: nextAt === null ? null : new Date(nextAt) })
    return nextAt
  }).pipe(Effect.uninterruptible)

export const WebhookDeliveryEntityLive = WebhookDeliveryEntity.toLayer(
  Effect.gen(function*() {
    const deliveryId = (yield* Entity.CurrentAddress).entityId
    const repo = yield* WebhookRepo
    const sender = yield* WebhookSender
    const config = yield* Config
    const self = yield* WebhookDeliveryEntity.client
    const schedule = createRetrySchedule(undefined, { scale: config.webhookRetryScale })

    const attempt = (payload: DueAttempt) =>
      makeScheduledAttempt(deliveryId, payload.attempt, schedule).pipe(
        Effect.flatMap((nextAt) =>
          nextAt === null ? Effect.void : self(deliveryId).Attempt(new DueAttempt({ attempt: payload.attempt + 1, dueAt: nextAt }), { discard: true })
        ),
        Effect.uninterruptible,
        Effect.withSpan("webhook.attempt", { attributes: { "trawl.webhook.delivery": deliveryId, "trawl.webhook.attempt": payload.attempt } }, { captureStackTrace: false }),
        Effect.provideService(WebhookRepo, repo),
        Effect.provideService(WebhookSender, sender),
        Effect.orDie
      )

    return WebhookDeliveryEntity.of({
      Attempt: ({ payload }) => attempt(payload),
      AttemptNow: ({ payload }) => attempt(payload),
      Redeliver: () =>
        Effect.gen(function*() {
          const d = yield* repo.byId(deliveryId)
          if (!d) return yield* Effect.die(new Error(`delivery ${deliveryId} is missing`))
          const result = yield* sender.send(d)
          recordWebhookAttempt(d.resource_type, result.ok ? "manual_ok" : "manual_failed", result.durationMs / 1000)
          const n = (yield* repo.manualCount(deliveryId)) + 1
          yield* repo.recordAttempt(deliveryId, {
            attempt: n,
            manual: true,
            httpStatus: result.httpStatus,
            error: result.error,
            durationMs: Math.round(result.durationMs),
            responseBody: result.responseBody
          }, result.ok
            ? { status: "delivered", nextAttemptAt: null }
            : { status: d.status, nextAttemptAt: d.next_attempt_at })
          return { ok: result.ok, httpStatus: result.httpStatus, error: result.error, durationMs: Math.round(result.durationMs) }
        }).pipe(Effect.orDie)
    })
  }),
  { maxIdleTime: RESOURCE_ENTITY_IDLE }
)

/** Re-sends the next attempt of deliveries whose scheduled message went missing. */
export const WebhookSweeperLive = Singleton.make(
  "WebhookSweeper",
  Effect.gen(function*() {
    const repo = yield* WebhookRepo
    const deliveries = yield* WebhookDeliveryEntity.client
    yield* sweepLoop("overdue webhook attempts", "10 seconds", repo.overdue(15_000, 200), (d) =>
      deliveries(d.id).Attempt(new DueAttempt({ attempt: d.attempts + 1, dueAt: Date.now() }), { discard: true }))
  })
)
