import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { Success } from "../schema/envelope.ts"
import { errors, Unavailable } from "../schema/errors.ts"

const Checks = Schema.Struct({
  database: Schema.Boolean,
  redis: Schema.Literals(["ok", "down", "not_configured"]),
  cluster: Schema.Boolean
})

/** Liveness and readiness; no authentication. */
export class SystemGroup extends HttpApiGroup.make("system")
  .add(
    HttpApiEndpoint.get("healthz", "/healthz", {
      success: Success(Schema.Struct({ alive: Schema.Boolean }))
    }),
    HttpApiEndpoint.get("readyz", "/readyz", {
      success: Success(Schema.Struct({ ready: Schema.Boolean, checks: Checks })),
      error: errors(Unavailable)
    })
  )
{}
