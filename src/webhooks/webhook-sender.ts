import { Context, Effect, Layer } from "effect"
import { Config } from "../config.ts"
import { classifierFor } from "../crawl/ssrf-policy.ts"
import { KeyedLimiter, Semaphore } from "../crawl/semaphore.ts"
import { createSafeLookup } from "../crawl/ssrf.ts"
import { webhooksConfig } from "./schedule.ts"
import { decryptSecret } from "./secret-box.ts"
import { buildDeliveryHeaders, type SendWebhookResult, sendWebhook, type WebhookKind } from "./sender.ts"

/** One webhook request to make: a stored delivery's fields (src/sql/webhook-repo.ts `DeliveryRow`). */
export interface OutgoingWebhook {
  readonly id: string
  readonly resource_type: WebhookKind
  readonly resource_id: string
  readonly url: string
  readonly secret_enc: string
  readonly body: string
}

export interface WebhookSenderShape {
  /** Signs and sends one attempt of a delivery; every failure is in the result, none in the error channel. */
  readonly send: (webhook: OutgoingWebhook) => Effect.Effect<SendWebhookResult>
}

/** Sends webhook requests: over the network with the SSRF guard (live), or into memory (test). */
export class WebhookSender extends Context.Service<WebhookSender, WebhookSenderShape>()("trawl/WebhookSender") {}

/**
 * Deliveries in flight per node, and per receiving host: a slow receiver only slows itself, and it
 * takes 16 slow hosts to fill a node. A receiver gets as many connections (config/webhooks.json
 * `connectionsPerOrigin`): with 4 of them a busy node's deliveries to one host fell behind its
 * job completions (about 500/s here), since each connection waits out a round trip.
 */
const NODE_DELIVERIES = 256
const HOST_DELIVERIES = 16

/** One per node: its slots and its guarded lookup (so every delivery shares one pooled agent) live in the layer. */
export const WebhookSenderLive = Layer.effect(
  WebhookSender,
  Effect.gen(function*() {
    const config = yield* Config
    const nodeSlots = new Semaphore(NODE_DELIVERIES)
    const hostSlots = new KeyedLimiter(HOST_DELIVERIES)
    const lookup = createSafeLookup({ allowPrivate: config.allowPrivateTargets, classify: classifierFor(config) })
    return WebhookSender.of({
      send: (d) =>
        Effect.promise(async () => {
          const releaseNode = await nodeSlots.acquire()
          const releaseHost = await hostSlots.acquire(new URL(d.url).host)
          try {
            const headers = buildDeliveryHeaders({
              kind: d.resource_type,
              resourceId: d.resource_id,
              deliveryId: d.id,
              secret: decryptSecret(config.secretKey, d.secret_enc, "webhook"),
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
    })
  })
)

/** What a receiver answers in a test: a status, or no answer at all (a network error); `durationMs` is how long the attempt is said to have taken (1). */
export type TestAnswer = ({ readonly status: number; readonly retryAfter?: string } | { readonly error: "network_error" | "timeout" }) & { readonly durationMs?: number }

export interface SentWebhooksShape {
  /** Every request sent so far, oldest first. */
  readonly all: Effect.Effect<ReadonlyArray<OutgoingWebhook>>
  /** The answers of the next requests, in order; after them every request is answered 200. */
  readonly answer: (...answers: ReadonlyArray<TestAnswer>) => Effect.Effect<void>
}

/** The requests a `WebhookSenderTest` captured, and the answers it gives. */
export class SentWebhooks extends Context.Service<SentWebhooks, SentWebhooksShape>()("trawl/SentWebhooks") {}

/** A sender for tests: captures requests in memory and answers as told (200 by default); each build starts empty. */
export const WebhookSenderTest: Layer.Layer<WebhookSender | SentWebhooks> = Layer.unwrap(Effect.sync(() => {
  const sent: Array<OutgoingWebhook> = []
  const queued: Array<TestAnswer> = []
  const result = (answer: TestAnswer): SendWebhookResult =>
    "status" in answer
      ? {
        ok: answer.status >= 200 && answer.status < 300,
        httpStatus: answer.status,
        error: null,
        errorDetail: null,
        durationMs: answer.durationMs ?? 1,
        responseBody: "",
        retryAfter: answer.retryAfter ?? null
      }
      : { ok: false, httpStatus: null, error: answer.error, errorDetail: answer.error, durationMs: answer.durationMs ?? 1, responseBody: "", retryAfter: null }
  return Layer.mergeAll(
    Layer.succeed(WebhookSender, WebhookSender.of({
      send: (d) =>
        Effect.sync(() => {
          sent.push({ id: d.id, resource_type: d.resource_type, resource_id: d.resource_id, url: d.url, secret_enc: d.secret_enc, body: d.body })
          return result(queued.shift() ?? { status: 200 })
        })
    })),
    Layer.succeed(SentWebhooks, SentWebhooks.of({
      all: Effect.sync(() => [...sent]),
      answer: (...answers) => Effect.sync(() => void queued.push(...answers))
    }))
  )
}))
