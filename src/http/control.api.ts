import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Page, PageQuery, Success } from "../schema/envelope.ts"
import { Email, Text } from "../schema/common.ts"
import { Conflict, errors, InvalidRequest, Unavailable, Unprocessable } from "../schema/errors.ts"
import {
  ClusterState,
  CreatedInternalAdmin,
  CreatedTenant,
  CreateInternalAdminBody,
  CreateTenantBody,
  OutboxMail,
  ProbeResult
} from "../schema/tenant.ts"
import { InternalAuth } from "./security.ts"

/** The control plane (docs/api.md, "Control plane and cluster"): `x-internal-token`, not in the public document. */
export class ControlGroup extends HttpApiGroup.make("control")
  .add(
    HttpApiEndpoint.post("createTenant", "/tenants", {
      payload: CreateTenantBody,
      success: Success(CreatedTenant, 201),
      error: errors(InvalidRequest, Conflict, Unprocessable, Unavailable)
    }),
    HttpApiEndpoint.post("createInternalAdmin", "/internal-admins", {
      payload: CreateInternalAdminBody,
      success: Success(CreatedInternalAdmin, 201),
      error: errors(InvalidRequest, Conflict)
    }),
    HttpApiEndpoint.get("cluster", "/cluster", {
      success: Success(ClusterState)
    }),
    HttpApiEndpoint.post("probe", "/cluster/probe", {
      payload: Schema.Struct({
        entityId: Text(1, 100),
        probeId: Text(1, 100),
        durationMs: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 60_000 }))
      }),
      success: Success(ProbeResult),
      error: errors(InvalidRequest, Unavailable)
    }),
    // The mails kept when SMTP_URL is unset, newest first (docs/api.md, "Mail").
    HttpApiEndpoint.get("outbox", "/outbox", {
      query: { to: Email, ...PageQuery },
      success: Success(Page(OutboxMail)),
      error: errors(InvalidRequest)
    })
  )
  .annotate(OpenApi.Exclude, true)
  .middleware(InternalAuth)
  .prefix("/internal/v1")
{}
