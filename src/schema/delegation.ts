import { Schema } from "effect"
import { CheckedByHandler, DateTime, DateTimeInput, NullableDateTime, Text } from "./common.ts"
import { CurrentPassword, TotpCode } from "./auth.ts"
import { PageQuery } from "./envelope.ts"

/** `expired` is never stored: a pending or active delegation past `expiresAt` reads so. */
export const delegationStatuses = ["pending", "active", "declined", "revoked", "renounced", "expired"] as const
export type DelegationStatus = (typeof delegationStatuses)[number]

/** A delegation of one identity's permissions to another (docs/delegations.md). */
export const Delegation = Schema.Struct({
  id: Schema.String,
  tenantId: Schema.String,
  delegatorId: Schema.String,
  delegateId: Schema.String.annotate({
    description: "The delegate's identity; for one invited by e-mail (delegateEmail), the id the identity registering with the delegation's token gets"
  }),
  delegateEmail: Schema.NullOr(Schema.String).annotate({ description: "the address a registration token was mailed to, when the delegate was named by e-mail" }),
  reason: Schema.String,
  status: Schema.Literals(delegationStatuses),
  expiresAt: DateTime,
  invitedAt: DateTime,
  respondedAt: NullableDateTime,
  revokedAt: NullableDateTime,
  createdAt: DateTime,
  delegatorDisplayName: Schema.NullOr(Schema.String),
  delegateDisplayName: Schema.NullOr(Schema.String)
}).annotate({ identifier: "Delegation" })
export type Delegation = typeof Delegation.Type

export const CreateDelegationBody = Schema.Struct({
  delegateId: Text(1, 255).annotate({
    description: "an identity id of the caller's tenant, or the e-mail address of someone not yet registered"
  }),
  reason: Text(1, 500),
  expiresAt: DateTimeInput,
  // Asked when the delegator's role carries *:*:* or cross_tenant:*:* (docs/delegations.md).
  currentPassword: Schema.optionalKey(CurrentPassword),
  totpCode: Schema.optionalKey(TotpCode)
})

/** The lists' query: a `status` they do not take is a 400 invalid_filter, read by the handler. */
export const DelegationListQuery = {
  ...PageQuery,
  status: Schema.optional(CheckedByHandler({ enum: [...delegationStatuses] }))
}
