import { Schema } from "effect"
import { DateTime, NullableDateTime } from "./common.ts"

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
  event: Schema.String,
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
