import { Effect, Option } from "effect"
import { HttpServerRequest } from "effect/http"
import type { ClientContext } from "../iam/session-service.ts"

/**
 * The caller's address and user agent, for sessions and the audit log. The address is the TCP
 * peer's: forwarded-for headers are not believed, since anyone can send them (docs/identity.md).
 */
export const clientContext: Effect.Effect<ClientContext, never, HttpServerRequest.HttpServerRequest> = Effect.map(
  HttpServerRequest.HttpServerRequest,
  (request) => ({
    ip: Option.getOrNull(request.remoteAddress)?.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, "") ?? null,
    userAgent: request.headers["user-agent"]?.slice(0, 512) ?? null
  })
)
