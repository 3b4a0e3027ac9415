import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { entityCall } from "../actors/entity-call.ts"
import { WebhookDeliveryEntity } from "../actors/webhook-delivery-entity.ts"
import { notFound } from "../schema/errors.ts"
import { WebhookRepo } from "../sql/webhook-repo.ts"
import { Api } from "./api.ts"

/** Manual redelivery by a super-admin. */
export const WebhooksAdminHandlers = HttpApiBuilder.group(
  Api,
  "webhooks-admin",
  Effect.fn(function*(handlers) {
    const webhooks = yield* WebhookRepo
    const deliveries = yield* WebhookDeliveryEntity.client
    return handlers.handle("redeliver", ({ params }) =>
      Effect.gen(function*() {
        if (!(yield* webhooks.byId(params.deliveryId))) return yield* notFound("webhook delivery")
        const outcome = yield* entityCall(deliveries(params.deliveryId).Redeliver())
        return { deliveryId: params.deliveryId, ...outcome }
      }))
  })
)
