import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { AuditEntry, AuditQuery } from "../schema/audit.ts"
import { Page, Success } from "../schema/envelope.ts"
import { errors, InvalidRequest, NotFound } from "../schema/errors.ts"
import { ApiKeyAuth, requires } from "./security.ts"
import { Operations } from "./openapi.ts"

/**
 * The tenant's own audit log. Reading it needs `iam:identities:write`: the owner's and admins'
 * permission, not every reader's (docs/api.md, "Audit log").
 */
export class AuditGroup extends HttpApiGroup.make("audit")
  .add(
    HttpApiEndpoint.get("list", "/audit", {
      query: AuditQuery,
      success: Success(Page(AuditEntry)),
      error: errors(InvalidRequest)
    }).pipe(requires("iam:identities:write"))
  )
  .middleware(ApiKeyAuth)
  .prefix("/v1/iam")
  .annotate(OpenApi.Description, "The tenant's log of security events.")
  .annotate(Operations, {
    list: ["Read the audit log", "Security events of the tenant, newest first, filtered by identity, action and time."]
  })
{}

/** Any tenant's audit log, for super-admins; like the rest of `/v1/admin`, not in the public document. */
export class AdminAuditGroup extends HttpApiGroup.make("adminAudit")
  .add(
    HttpApiEndpoint.get("list", "/tenants/:tenantId/audit", {
      params: { tenantId: Schema.String },
      query: AuditQuery,
      success: Success(Page(AuditEntry)),
      error: errors(InvalidRequest, NotFound)
    })
  )
  .pipe(requires("cross_tenant:*:*"))
  .annotate(OpenApi.Exclude, true)
  .middleware(ApiKeyAuth)
  .prefix("/v1/admin")
{}
