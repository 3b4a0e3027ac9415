import { Schema } from "effect"
import { quotaKeys } from "../billing/plans.ts"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Page, Success } from "../schema/envelope.ts"
import { Conflict, errors, InvalidRequest, NotFound, Unprocessable } from "../schema/errors.ts"
import {
  AdminQuotaRequestQuery,
  createQuotaRequestBody,
  QuotaDecisionBody,
  QuotaRequest,
  QuotaRequestQuery,
  WithdrawnQuotaRequest
} from "../schema/quota-request.ts"
import { ApiKeyAuth, requires } from "./security.ts"
import { Operations } from "./openapi.ts"

const id = { id: Schema.String }

/** A tenant's requests to raise its quotas (docs/api.md, "Quota increase requests"). */
export class QuotaRequestsGroup extends HttpApiGroup.make("quotaRequests")
  .add(
    HttpApiEndpoint.get("list", "/quotas/me/requests", {
      query: QuotaRequestQuery,
      success: Success(Page(QuotaRequest)),
      error: errors(InvalidRequest)
    }).pipe(requires("quotas:requests:read")),
    HttpApiEndpoint.post("create", "/quotas/me/requests", {
      payload: createQuotaRequestBody(quotaKeys),
      success: Success(QuotaRequest, 201),
      error: errors(InvalidRequest, NotFound, Conflict, Unprocessable)
    }).pipe(requires("quotas:requests:write")),
    HttpApiEndpoint.delete("withdraw", "/quotas/me/requests/:id", {
      params: id,
      success: Success(WithdrawnQuotaRequest),
      error: errors(NotFound, Conflict)
    }).pipe(requires("quotas:requests:write"))
  )
  .middleware(ApiKeyAuth)
  .prefix("/v1/iam")
  .annotate(OpenApi.Description, "Requests to raise a quota.")
  .annotate(Operations, {
    list: ["List quota requests", "The tenant's quota increase requests, newest first; filter by status."],
    create: ["Request a higher quota", "Asks for a higher limit of one quota; one pending request per quota."],
    withdraw: ["Withdraw a quota request", "Withdraws a pending request."]
  })
{}

/** Every tenant's requests and the decisions on them, for super-admins; like the rest of `/v1/admin`, not in the public document. */
export class AdminQuotaRequestsGroup extends HttpApiGroup.make("adminQuotaRequests")
  .add(
    HttpApiEndpoint.get("list", "/quota-requests", {
      query: AdminQuotaRequestQuery,
      success: Success(Page(QuotaRequest)),
      error: errors(InvalidRequest)
    }),
    HttpApiEndpoint.post("approve", "/quota-requests/:id/approve", {
      params: id,
      // No body at all (there is no note) reads as null.
      payload: [QuotaDecisionBody, Schema.Null],
      success: Success(QuotaRequest),
      error: errors(InvalidRequest, NotFound, Conflict)
    }),
    HttpApiEndpoint.post("reject", "/quota-requests/:id/reject", {
      params: id,
      // No body at all (there is no note) reads as null.
      payload: [QuotaDecisionBody, Schema.Null],
      success: Success(QuotaRequest),
      error: errors(InvalidRequest, NotFound, Conflict)
    })
  )
  .pipe(requires("cross_tenant:*:*"))
  .annotate(OpenApi.Exclude, true)
  .middleware(ApiKeyAuth)
  .prefix("/v1/admin")
{}
