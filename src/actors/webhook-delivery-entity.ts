import { DateTime, Effect, Schema } from "effect"
import { ClusterSchema, DeliverAt, Entity, Singleton } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { RESOURCE_ENTITY_IDLE } from "./cluster.ts"
import { type AppConfig, Config } from "../config.ts"
import { classifierFor } from "../crawl/ssrf-policy.ts"
import { KeyedLimiter, Semaphore } from "../crawl/semaphore.ts"
import { createSafeLookup } from "../crawl/ssrf.ts"
import { WebhookRepo, type DeliveryRow } from "../sql/webhook-repo.ts"
import { createRetrySchedule, webhooksConfig } from "../webhooks/schedule.ts"
import { decryptSecret } from "../webhooks/secret-box.ts"
import { buildDeliveryHeaders, sendWebhook } from "../webhooks/sender.ts"
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
 * Deliveries in flight per node, and per receiving host: a slow receiver only slows itself, and it
 * takes 16 slow hosts to fill a node. A receiver gets as many connections (config/webhooks.json
 * `connectionsPerOrigin`): with 4 of them a busy node's deliveries to one host fell behind its
 * job completions (about 500/s here), since each connection waits out a round trip.
 */
const NODE_DELIVERIES = 256
const HOST_DELIVERIES = 16
const nodeSlots = new Semaphore(NODE_DELIVERIES)
const hostSlots = new KeyedLimiter(HOST_DELIVERIES)
// One guarded lookup per node, so every delivery shares one pooled agent (keep-alive).
let sharedLookup: ReturnType<typeof createSafeLookup> | undefined
const lookupFor = (config: AppConfig) =>
  sharedLookup ??= createSafeLookup({ allowPrivate: config.allowPrivateTargets, classify: classifierFor(config) })

export const WebhookDeliveryEntityLive = WebhookDeliveryEntity.toLayer(
  Effect.gen(function*() {
    const deliveryId = (yield* Entity.CurrentAddress).entityId
    const repo = yield* WebhookRepo
    const config = yield* Config
    const self = yield* WebhookDeliveryEntity.client
    const schedule = createRetrySchedule(undefined, { scale: config.webhookRetryScale })
    const lookup = lookupFor(config)

    const send = (d: DeliveryRow) =>
      Effect.promise(async () => {
        const host = new URL(d.url).host
        const releaseNode = await nodeSlots.acquire()
        const releaseHost = await hostSlots.acquire(host)
        try {
          const secret = decryptSecret(config.secretKey, d.secret_enc, "webhook")
          const headers = buildDeliveryHeaders({
            kind: d.resource_type,
            resourceId: d.resource_id,
            deliveryId: d.id,
            secret,
            body: d.body
          })
          return await sendWebhook({
            url: d.url,
            body: d.body,
            headers,
            timeoutMs: webhooksConfig.delivery.timeoutMs,
            maxResponseBytes: webhooksConfig.delivery.maxResponseBytes,
            lookup
          })
        } finally {
          releaseHost()
          releaseNode()
        }
      })

    const attempt = (payload: DueAttempt) =>
        Effect.gen(function*() {
          const d = yield* repo.byId(deliveryId)
          // Already made (a re-delivered message), or the delivery is settled.
          if (!d || d.status !== "pending" || d.attempts >= payload.attempt) return
          // Once the request is out, its result is recorded even if the entity is being stopped,
          // so an interruption never causes a second identical attempt.
          yield* Effect.uninterruptible(Effect.gen(function*() {
          const result = yield* send(d)
          const elapsedMs = d.first_attempt_at ? Date.now() - new Date(d.first_attempt_at).getTime() : 0
          // A 2xx whose answer did not complete in time (its body stalled) was no answer: it is retried.
          const answered = result.httpStatus !== null && result.httpStatus >= 200 && result.httpStatus < 300 ? null : result.httpStatus
          const delay = result.ok ? null : schedule.delayAfterResponse(payload.attempt, answered, result.retryAfter, { elapsedMs })
          const status = result.ok ? "delivered" : delay === null ? "failed" : "pending"
          const nextAt = delay === null ? null : Date.now() + delay
          recordWebhookAttempt(d.resource_type, status === "pending" ? "retry" : status, result.durationMs / 1000)
          yield* Effect.annotateCurrentSpan({ "http.response.status_code": result.httpStatus ?? 0, "trawl.webhook.outcome": status })
          yield* repo.recordAttempt(deliveryId, {
            attempt: payload.attempt,
            manual: false,
            httpStatus: result.httpStatus,
            error: result.error,
            durationMs: Math.round(result.durationMs),
            responseBody: result.responseBody
          }, { status, nextAttemptAt: nextAt === null ? null : new Date(nextAt) })
          if (nextAt !== null) {
            yield* self(deliveryId).Attempt(new DueAttempt({ attempt: payload.attempt + 1, dueAt: nextAt }), { discard: true })
          }
          }))
        }).pipe(
          Effect.withSpan("webhook.attempt", { attributes: { "trawl.webhook.delivery": deliveryId, "trawl.webhook.attempt": payload.attempt } }, { captureStackTrace: false }),
          Effect.orDie
        )

    return WebhookDeliveryEntity.of({
      Attempt: ({ payload }) => attempt(payload),
      AttemptNow: ({ payload }) => attempt(payload),
      Redeliver: () =>
        Effect.gen(function*() {
          const d = yield* repo.byId(deliveryId)
          if (!d) return yield* Effect.die(new Error(`delivery ${deliveryId} is missing`))
          const result = yield* send(d)
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
