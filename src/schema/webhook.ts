import { Schema } from "effect"
import { DateTime, NullableDateTime, WrittenWithin } from "./common.ts"
import type { ErrorDetail } from "./errors.ts"

export const WebhookAttempt = Schema.Struct({
  attempt: Schema.Int,
  manual: Schema.Boolean,
  at: DateTime,
  httpStatus: Schema.NullOr(Schema.Int),
  error: Schema.NullOr(Schema.String),
  durationMs: Schema.Int,
  responseBody: Schema.NullOr(Schema.String)
})

export const WebhookDelivery = Schema.Struct({
  id: Schema.String,
  status: Schema.Literals(["pending", "delivered", "failed"]),
  url: Schema.String,
  // The resource's status the delivery tells of (the body's `status`).
  event: WrittenWithin(Schema.String, { enum: ["done", "failed", "dead"] }),
  createdAt: DateTime,
  deliveredAt: NullableDateTime,
  nextAttemptAt: NullableDateTime,
  attempts: Schema.Array(WebhookAttempt)
}).annotate({ identifier: "WebhookDelivery" })

export const RedeliveryResult = Schema.Struct({
  deliveryId: Schema.String,
  ok: Schema.Boolean,
  httpStatus: Schema.NullOr(Schema.Int),
  error: Schema.NullOr(Schema.String),
  durationMs: Schema.Int
})

/**
 * A create body's webhook options sent without its `webhookUrl`: one fault each (a rule across the
 * body's fields, read from which fields were sent, null counting as absent; see CrossFieldRules in http/security.ts).
 */
export const webhookOptionFaults = (body: Readonly<Record<string, unknown>>, options: ReadonlyArray<string>): Array<ErrorDetail> =>
  body.webhookUrl === undefined || body.webhookUrl === "" || body.webhookUrl === null
    ? options.filter((k) => body[k] !== undefined && body[k] !== null).map((k) => ({ path: k, code: "invalid_value", message: "only with webhookUrl" }))
    : []

/** The rule of a job's and a crawl's create body: `webhookSecret` only with `webhookUrl`. */
export const webhookSecretFaults = (body: Readonly<Record<string, unknown>>): Array<ErrorDetail> => webhookOptionFaults(body, ["webhookSecret"])
