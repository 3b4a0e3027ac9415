import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Success } from "../schema/envelope.ts"
import { errors, NotFound, Unavailable } from "../schema/errors.ts"
import { RedeliveryResult } from "../schema/webhook.ts"
import { ApiKeyAuth, requires } from "./security.ts"

/** Manual redelivery: super-admin only, not in the public document. */
export class WebhooksAdminGroup extends HttpApiGroup.make("webhooks-admin")
  .add(
    HttpApiEndpoint.post("redeliver", "/webhooks/:deliveryId/redeliver", {
      params: { deliveryId: Schema.String },
      success: Success(RedeliveryResult),
      error: errors(NotFound, Unavailable)
    })
  )
  .pipe(requires("cross_tenant:*:*"))
  .annotate(OpenApi.Exclude, true)
  .middleware(ApiKeyAuth)
  .prefix("/v1/scraper")
{}
