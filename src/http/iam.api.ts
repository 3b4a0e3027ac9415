import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Page, PageQuery, Success } from "../schema/envelope.ts"
import { errors, Forbidden, InvalidRequest, NotFound, TooManyRequests, Unprocessable } from "../schema/errors.ts"
import { defaultPlan, planQuota, quotaKeys } from "../billing/plans.ts"
import { CreateApiKeyBody, CreatedApiKey, ApiKey, createQuota, RevokedApiKey, UpdateApiKeyBody } from "../schema/iam.ts"
import { ApiKeyAuth, requires } from "./security.ts"
import { Operations } from "./openapi.ts"

const keyParams = { id: Schema.String, kid: Schema.String }

export class IamGroup extends HttpApiGroup.make("iam")
  .add(
    HttpApiEndpoint.post("createApiKey", "/identities/:id/api-keys", {
      params: { id: Schema.String },
      payload: CreateApiKeyBody,
      success: Success(CreatedApiKey, 201),
      error: errors(InvalidRequest, Forbidden, NotFound, Unprocessable, TooManyRequests)
    }).pipe(requires("iam:api-keys:write")),
    HttpApiEndpoint.get("listApiKeys", "/identities/:id/api-keys", {
      params: { id: Schema.String },
      query: PageQuery,
      success: Success(Page(ApiKey)),
      error: errors(InvalidRequest, NotFound)
    }).pipe(requires("iam:api-keys:read")),
    HttpApiEndpoint.get("getApiKey", "/identities/:id/api-keys/:kid", {
      params: keyParams,
      success: Success(ApiKey),
      error: errors(NotFound)
    }).pipe(requires("iam:api-keys:read")),
    HttpApiEndpoint.patch("updateApiKey", "/identities/:id/api-keys/:kid", {
      params: keyParams,
      payload: UpdateApiKeyBody,
      success: Success(ApiKey),
      error: errors(InvalidRequest, Forbidden, NotFound)
    }).pipe(requires("iam:api-keys:write")),
    HttpApiEndpoint.delete("revokeApiKey", "/identities/:id/api-keys/:kid", {
      params: keyParams,
      success: Success(RevokedApiKey),
      error: errors(Forbidden, NotFound)
    }).pipe(requires("iam:api-keys:write")),
    HttpApiEndpoint.get("myQuotas", "/quotas/me", {
      success: Success(Schema.Struct({ items: Schema.Array(createQuota(quotaKeys.map((key) => [key, planQuota(defaultPlan, key)] as const), defaultPlan)) }))
    }).pipe(requires("quotas:quotas:read"))
  )
  .middleware(ApiKeyAuth)
  .prefix("/v1/iam")
  .annotate(OpenApi.Description, "API keys of identities, and the caller's quotas.")
  .annotate(Operations, {
    createApiKey: ["Create an API key", "Creates a key for an identity with a role; the key is shown once. Roles with every permission need re-authentication."],
    listApiKeys: ["List API keys", "An identity's keys, without their secrets."],
    getApiKey: ["Get an API key", "One key of an identity, without its secret."],
    updateApiKey: ["Update an API key", "Changes a key's description, rate limit or expiry (its name is kept)."],
    revokeApiKey: ["Revoke an API key", "Revokes a key; every node refuses it from the next request."],
    myQuotas: ["My quotas", "The tenant's quotas with their limits and current use."]
  })
{}
