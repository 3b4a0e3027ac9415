import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { Success } from "../schema/envelope.ts"
import { errors, Forbidden, InvalidRequest, NotFound, TooManyRequests, Unprocessable } from "../schema/errors.ts"
import { CreateApiKeyBody, CreatedApiKey, ApiKey, Quota, RevokedApiKey, UpdateApiKeyBody } from "../schema/iam.ts"
import { ApiKeyAuth, requires } from "./security.ts"
import { ApiKeyId, IdentityId } from "../schema/ids.ts"

const keyParams = { id: IdentityId, kid: ApiKeyId }

export class IamGroup extends HttpApiGroup.make("iam")
  .add(
    HttpApiEndpoint.post("createApiKey", "/identities/:id/api-keys", {
      params: { id: IdentityId },
      payload: CreateApiKeyBody,
      success: Success(CreatedApiKey, 201),
      error: errors(InvalidRequest, Forbidden, NotFound, Unprocessable, TooManyRequests)
    }).pipe(requires("iam:api-keys:write")),
    HttpApiEndpoint.get("listApiKeys", "/identities/:id/api-keys", {
      params: { id: IdentityId },
      success: Success(Schema.Struct({ items: Schema.Array(ApiKey) })),
      error: errors(NotFound)
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
      error: errors(InvalidRequest, NotFound)
    }).pipe(requires("iam:api-keys:write")),
    HttpApiEndpoint.delete("revokeApiKey", "/identities/:id/api-keys/:kid", {
      params: keyParams,
      success: Success(RevokedApiKey),
      error: errors(NotFound)
    }).pipe(requires("iam:api-keys:write")),
    HttpApiEndpoint.get("myQuotas", "/quotas/me", {
      success: Success(Schema.Struct({ items: Schema.Array(Quota) }))
    }).pipe(requires("quotas:quotas:read"))
  )
  .middleware(ApiKeyAuth)
  .prefix("/v1/iam")
{}
