import { Context } from "effect"
import { HttpApiMiddleware, HttpApiSecurity } from "effect/http-api"
import { CurrentPrincipal } from "../iam/principal.ts"
import { errors } from "../schema/errors.ts"

/**
 * The permission an endpoint needs, declared on the endpoint itself:
 * `.annotate(Requires, "scraper:jobs:write")`. `cross_tenant:*:*` marks the
 * super-admin plane, and `ANY_KEY` an endpoint open to every valid key (the price list). The docs
 * table of endpoint → permission is read from it.
 */
export const ANY_KEY = "any valid key"
export const Requires = Context.Reference<string | undefined>("trawl/Requires", { defaultValue: () => undefined })

/** `x-api-key` authentication, rate limit and permission check for the public and super-admin planes. */
export class ApiKeyAuth extends HttpApiMiddleware.Service<ApiKeyAuth, { provides: CurrentPrincipal }>()("trawl/ApiKeyAuth", {
  security: { apiKey: HttpApiSecurity.apiKey({ key: "x-api-key", in: "header" }) },
  error: errors(400, 401, 403, 404, 413, 415, 429)
}) {}

/** `x-internal-token` authentication for the control plane. */
export class InternalAuth extends HttpApiMiddleware.Service<InternalAuth>()("trawl/InternalAuth", {
  security: { internalToken: HttpApiSecurity.apiKey({ key: "x-internal-token", in: "header" }) },
  error: errors(400, 401, 404, 413, 415)
}) {}
