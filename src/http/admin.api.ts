import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { IdempotencyKeyHeader } from "../schema/common.ts"
import { Page, PageQuery, Success } from "../schema/envelope.ts"
import { Conflict, errors, InvalidRequest, NotFound, PaymentRequired, Unavailable, Unprocessable } from "../schema/errors.ts"
import { CreditAdjustmentBody, Tenant, Transaction } from "../schema/tenant.ts"
import { quotaKeys } from "../billing/plans.ts"
import { ApiKeyAuth, requires } from "./security.ts"

/** The super-admin plane: the `internal` tenant's `internal_admin` role only; not in the public document. */
export class AdminGroup extends HttpApiGroup.make("admin")
  .add(
    HttpApiEndpoint.get("listTenants", "/tenants", {
      query: PageQuery,
      success: Success(Page(Tenant)),
      error: errors(InvalidRequest)
    }),
    HttpApiEndpoint.get("getTenant", "/tenants/:tenantId", {
      params: { tenantId: Schema.String },
      success: Success(Tenant),
      error: errors(NotFound)
    }),
    HttpApiEndpoint.put("setQuota", "/tenants/:tenantId/quotas/:quotaKey", {
      params: { tenantId: Schema.String, quotaKey: Schema.Literals(quotaKeys) },
      // null removes the override: the plan's limit with its add-ons applies again.
      payload: Schema.Struct({ limit: Schema.NullOr(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 100_000_000 }))) }),
      success: Success(Schema.Struct({ tenantId: Schema.String, quotaKey: Schema.String, limit: Schema.NullOr(Schema.Int), effectiveLimit: Schema.Int })),
      error: errors(InvalidRequest, NotFound)
    }),
    HttpApiEndpoint.post("adjustCredits", "/tenants/:tenantId/credits", {
      params: { tenantId: Schema.String },
      // A retry with the same key (a timeout, say) answers the first adjustment instead of making a second.
      headers: { "idempotency-key": Schema.optional(IdempotencyKeyHeader) },
      payload: CreditAdjustmentBody,
      success: Success(Transaction, 201),
      // (the idempotency step's answers are typed as any API error; it gives 400, 409 and 503 here)
      error: errors(InvalidRequest, NotFound, Conflict, Unavailable, PaymentRequired, Unprocessable)
    })
  )
  .pipe(requires("cross_tenant:*:*"))
  .annotate(OpenApi.Exclude, true)
  .middleware(ApiKeyAuth)
  .prefix("/v1/admin")
{}
