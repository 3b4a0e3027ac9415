import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Success } from "../schema/envelope.ts"
import { errors, Unavailable } from "../schema/errors.ts"
import { Operations } from "./openapi.ts"

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
  .annotate(OpenApi.Description, "Liveness and readiness of this node; no authentication.")
  .annotate(Operations, {
    healthz: ["Liveness", "Answers while the process runs; it checks no dependency."],
    readyz: ["Readiness", "Whether this node can serve: the database, Redis (when configured) and the cluster. 503 while one of them cannot be reached."]
  })
{}
