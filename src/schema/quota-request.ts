import { Schema } from "effect"
import { CheckedByHandler, DateTime, NullableDateTime, Text } from "./common.ts"
import { PageQuery } from "./envelope.ts"

/**
 * The highest limit a request may ask for: the same bound as a super-admin's override
 * (`PUT /v1/admin/tenants/{tenantId}/quotas/{quotaKey}`), since approval writes it as one.
 */
export const MAX_REQUESTED_LIMIT = 100_000_000

/** Statuses as the API shows them; `withdrawn` is stored as `cancelled`. */
export const quotaRequestStatuses = ["pending", "approved", "rejected", "withdrawn"] as const
export type QuotaRequestStatus = (typeof quotaRequestStatuses)[number]

export const QuotaRequest = Schema.Struct({
  id: Schema.String,
  tenantId: Schema.String,
  quotaKey: Schema.String,
  requestedBy: Schema.String,
  requestedLimit: Schema.String,
  reason: Schema.String,
  status: Schema.Literals(quotaRequestStatuses),
  decidedBy: Schema.NullOr(Schema.String),
  decidedAt: NullableDateTime,
  decisionNote: Schema.NullOr(Schema.String),
  createdAt: DateTime,
  updatedAt: DateTime
}).annotate({ identifier: "QuotaRequest" })
export type QuotaRequest = typeof QuotaRequest.Type

export const WithdrawnQuotaRequest = Schema.Struct({
  ...QuotaRequest.fields,
  withdrawn: Schema.Literal(true),
  withdrawnAt: DateTime
}).annotate({ identifier: "WithdrawnQuotaRequest" })

/**
 * `requestedLimit`: a whole number in decimal digits without leading zeros, 1 to
 * MAX_REQUESTED_LIMIT. Whether it is a known quota key and above the current limit is the
 * handler's check (404, 422).
 */
export const REQUESTED_LIMIT_PATTERN = `^(?:[1-9][0-9]{0,${String(MAX_REQUESTED_LIMIT).length - 2}}|${MAX_REQUESTED_LIMIT})$`
export const RequestedLimit = Schema.String.check(
  Schema.makeFilter((s: string) => /^[1-9]\d{0,8}$/.test(s) && Number(s) <= MAX_REQUESTED_LIMIT, {
    expected: `a whole number from 1 to ${MAX_REQUESTED_LIMIT}, in decimal digits, as a string`,
    // 1 to 99999999, or 100000000 itself: the pattern is the whole range.
    toJsonSchema: () => ({ pattern: REQUESTED_LIMIT_PATTERN, minLength: 1, maxLength: String(MAX_REQUESTED_LIMIT).length })
  })
)

/**
 * A request's body, for the quota keys of the catalogue (config/plans.json, given by the API
 * definition): a key outside it is refused with the body's other faults, and the document lists them.
 */
export const createQuotaRequestBody = <const Keys extends ReadonlyArray<string>>(quotaKeys: Keys) =>
  Schema.Struct({
    quotaKey: Schema.Literals(quotaKeys),
    requestedLimit: RequestedLimit,
    reason: Text(1, 1000)
  })

/** A super-admin's decision: an optional note to the tenant. */
export const QuotaDecisionBody = Schema.Struct({
  note: Schema.optional(Schema.NullOr(Text(0, 1000)))
})

/** Filters are read by the handler, which names every bad one (`invalid_filter`). */
export const QuotaRequestQuery = {
  ...PageQuery,
  status: Schema.optional(CheckedByHandler({ enum: [...quotaRequestStatuses] }))
}

/** The longest `tenantId` filter of the super-admin list (quota-requests.http.ts). */
export const MAX_TENANT_ID_FILTER_LENGTH = 200

export const AdminQuotaRequestQuery = {
  ...QuotaRequestQuery,
  tenantId: Schema.optional(CheckedByHandler({ minLength: 1, maxLength: MAX_TENANT_ID_FILTER_LENGTH }))
}
