import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Page, PageQuery, Success } from "../schema/envelope.ts"
import { Conflict, errors, InvalidRequest, NotFound, PaymentRequired, Unavailable, Unprocessable } from "../schema/errors.ts"
import { Subscription, SubscriptionChangeBody } from "../schema/subscription.ts"
import { Transaction } from "../schema/tenant.ts"
import { ApiKeyAuth, requires } from "./security.ts"
import { Operations } from "./openapi.ts"

/** The tenant's own plan subscription (docs/api.md, "Plans and subscriptions"). */
export class SubscriptionGroup extends HttpApiGroup.make("subscription")
  .add(
    HttpApiEndpoint.get("subscription", "/me/subscription", {
      success: Success(Subscription)
    }),
    HttpApiEndpoint.get("subscriptionDebits", "/me/subscription/debits", {
      query: PageQuery,
      success: Success(Page(Transaction)),
      error: errors(InvalidRequest)
    })
  )
  .pipe(requires("billing:subscription:read"))
  .middleware(ApiKeyAuth)
  .prefix("/v1/billing")
  .annotate(OpenApi.Description, "The tenant's plan subscription.")
  .annotate(Operations, {
    subscription: ["My subscription", "The tenant's plan, add-ons and billing period."],
    subscriptionDebits: ["List subscription debits", "Debits of the subscription, newest first."]
  })
{}

export const SubscriptionChanged = Schema.Struct({
  subscription: Subscription,
  /** The prorated debit or credit (or the re-activation's debit) the change made; null when none. */
  ledgerEntry: Schema.NullOr(Transaction)
})

/** A super-admin's change of a tenant's subscription; not in the public document. */
export class AdminSubscriptionGroup extends HttpApiGroup.make("adminSubscription")
  .add(
    HttpApiEndpoint.put("changeSubscription", "/tenants/:tenantId/subscription", {
      params: { tenantId: Schema.String },
      payload: SubscriptionChangeBody,
      success: Success(SubscriptionChanged),
      error: errors(InvalidRequest, PaymentRequired, NotFound, Conflict, Unprocessable, Unavailable)
    })
  )
  .pipe(requires("cross_tenant:*:*"))
  .annotate(OpenApi.Exclude, true)
  .middleware(ApiKeyAuth)
  .prefix("/v1/admin")
{}
