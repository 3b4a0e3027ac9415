import { Schema } from "effect"
import { DateTime, Text } from "./common.ts"

export const AddOnQuantity = Schema.Struct({
  key: Text(1, 60),
  quantity: Schema.Int
}).annotate({ identifier: "AddOnQuantity" })

export const SubscriptionStatus = Schema.Literals(["active", "past_due", "cancelled"])

export const Subscription = Schema.Struct({
  tenantId: Schema.String,
  plan: Schema.String,
  status: SubscriptionStatus,
  addOns: Schema.Array(AddOnQuantity),
  /** What a month of the plan with its add-ons costs, charged at each renewal (EUR). */
  monthlyPrice: Schema.String,
  currentPeriodStart: DateTime,
  currentPeriodEnd: DateTime,
  /** When the next renewal debits the month: the period's end while active, else null. */
  renewsAt: Schema.NullOr(DateTime)
}).annotate({ identifier: "Subscription" })
export type Subscription = typeof Subscription.Type

/** A super-admin's change of a tenant's subscription; `status` cancels it, or re-activates one that is not active. */
export const SubscriptionChangeBody = Schema.Struct({
  plan: Text(1, 60),
  addOns: Schema.optional(Schema.Array(AddOnQuantity).check(Schema.isMaxLength(20))),
  status: Schema.optional(Schema.Literals(["active", "cancelled"]))
})

export const PlanOffer = Schema.Struct({
  name: Schema.String,
  monthlyPrice: Schema.String,
  description: Schema.String,
  services: Schema.Array(Schema.String),
  quotas: Schema.Record(Schema.String, Schema.Int),
  addOns: Schema.Array(Schema.String)
}).annotate({ identifier: "PlanOffer" })

export const AddOnOffer = Schema.Struct({
  key: Schema.String,
  monthlyPrice: Schema.String,
  description: Schema.String,
  quota: Schema.String,
  perUnit: Schema.Int,
  maxQuantity: Schema.Int
}).annotate({ identifier: "AddOnOffer" })
