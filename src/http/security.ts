import { Context } from "effect"
import { type HttpApiEndpoint, type HttpApiGroup, HttpApiMiddleware, HttpApiSecurity } from "effect/http-api"
import { CurrentPrincipal } from "../iam/principal.ts"
import { type ErrorDetail, errors, Forbidden, InvalidRequest, NotFound, PayloadTooLarge, TooManyRequests, Unauthenticated, UnsupportedMediaType } from "../schema/errors.ts"

/**
 * The permission an endpoint needs, declared on the endpoint (or its group) by its policy:
 * `.pipe(requires("scraper:jobs:write"))`. `cross_tenant:*:*` marks the super-admin plane, and
 * `ANY_KEY` an endpoint open to every valid key (the price list). The docs table of endpoint →
 * permission is read from it.
 */
export const ANY_KEY = "any valid key or session"
export const Requires = Context.Reference<string | undefined>("trawl/Requires", { defaultValue: () => undefined })

/** The header by which a delegate acts for its delegator (docs/delegations.md). */
export const ON_BEHALF_HEADER = "x-on-behalf-of"
/** The longest `x-on-behalf-of` (an identity id) the header takes; the document states it. */
export const MAX_ON_BEHALF_LENGTH = 100

/**
 * What a delegate may not do on behalf of its delegator (docs/delegations.md): manage the
 * delegator's own account (the `auth` group: password, TOTP, sessions' refresh and logout; its profile and
 * session list), or make credentials that would outlive the delegation (API keys).
 */
export const notOnBehalf = (group: string, endpoint: string) =>
  group === "auth" || (group === "users" && (endpoint === "updateMe" || endpoint.toLowerCase().includes("session"))) ||
  (group === "iam" && (endpoint === "createApiKey" || endpoint === "updateApiKey"))

/**
 * Marks a route of the caller's own account (its password, second factor, profile, sessions): the
 * person's own session may always call it, whatever its role, while an API key (a narrower
 * credential, and the one most likely to leak) needs the route's `Requires` permission. Not a
 * delegate acting on behalf: that needs the permission too (docs/identity.md, "Own account").
 */
export const OwnSession = Context.Reference<boolean>("trawl/OwnSession", { defaultValue: () => false })

/**
 * Marks a route that stops work (cancelling a job, a site crawl, an extraction): the tenant's plan
 * never refuses it. Stopped work is not charged, so a tenant whose subscription lapsed must still be
 * able to stop what it would otherwise pay for (docs/api.md, "Gating").
 */
export const StopsWork = Context.Reference<boolean>("trawl/StopsWork", { defaultValue: () => false })

/** The cookie that carries an identity session in a browser (docs/identity.md, "Sessions"). */
export const SESSION_COOKIE = "trawl_session"

/**
 * Endpoints that act on the caller's identity session itself (its CSRF token, its refresh, its
 * logout): an API key is refused with 400 `session_required` by `ApiKeyAuth`, before the handler.
 * Declared on the endpoint: `.annotate(SessionOnly, true)`.
 */
export const SessionOnly = Context.Reference<boolean>("trawl/SessionOnly", { defaultValue: () => false })

/**
 * The ways to authenticate, as the OpenAPI document names them (its `securitySchemes`). What each
 * endpoint accepts is `credentialsOf` it, read from the middleware it runs and its `SessionOnly`.
 */
export const securitySchemes = {
  apiKey: { type: "apiKey", in: "header", name: "x-api-key", description: "An API key of the tenant (docs/api.md, \"Authentication\")." },
  sessionBearer: {
    type: "http",
    scheme: "bearer",
    description: "An identity session: the sessionId of POST /v1/iam/auth/login (or a magic link), sent as Authorization: Bearer <sessionId>."
  },
  sessionCookie: {
    type: "apiKey",
    in: "cookie",
    name: SESSION_COOKIE,
    description: `An identity session in the ${SESSION_COOKIE} cookie set at login. On unsafe methods (not GET, HEAD, OPTIONS) the request also needs the x-csrf-token header, the csrfToken of the login answer or of GET /v1/iam/auth/csrf; without it 403 csrf_failed.`,
    "x-csrf-header": "x-csrf-token"
  },
  internalToken: { type: "apiKey", in: "header", name: "x-internal-token", description: "The node's INTERNAL_TOKEN: the control plane only." }
} as const
export type SecurityScheme = keyof typeof securitySchemes

/**
 * The credentials an endpoint accepts, any one of them: what `ApiKeyAuth` (a key or a session, a
 * session alone where `SessionOnly`) or `InternalAuth` checks; none for the open routes.
 */
export const credentialsOf = (endpoint: {
  readonly annotations: Context.Context<never>
  readonly middlewares: ReadonlySet<Context.Key<any, any>>
}): ReadonlyArray<SecurityScheme> =>
  endpoint.middlewares.has(ApiKeyAuth)
    ? Context.get(endpoint.annotations, SessionOnly) ? ["sessionBearer", "sessionCookie"] : ["apiKey", "sessionBearer", "sessionCookie"]
    : endpoint.middlewares.has(InternalAuth) ? ["internalToken"]
    : []

/**
 * The session token a request presents and how: `Authorization: Bearer <token>` first, then the
 * `trawl_session` cookie (which needs the CSRF header on unsafe methods); undefined when neither.
 */
export const presentedSession = (headers: Readonly<Record<string, string | undefined>>, cookies: Readonly<Record<string, string>>) => {
  const bearer = headers.authorization === undefined ? undefined : /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(headers.authorization)?.[1]
  if (bearer !== undefined) return { token: bearer, via: "bearer" as const }
  const cookie = cookies[SESSION_COOKIE]
  return cookie === undefined || cookie === "" ? undefined : { token: cookie, via: "cookie" as const }
}

/**
 * Authentication (an `x-api-key`, or an identity session as a bearer token or cookie), rate limit
 * and permission check for the public and super-admin planes.
 */
export class ApiKeyAuth extends HttpApiMiddleware.Service<ApiKeyAuth, { provides: CurrentPrincipal }>()("trawl/ApiKeyAuth", {
  security: { apiKey: HttpApiSecurity.apiKey({ key: "x-api-key", in: "header" }) },
  error: errors(InvalidRequest, Unauthenticated, Forbidden, NotFound, PayloadTooLarge, UnsupportedMediaType, TooManyRequests)
}) {}

/** `x-internal-token` authentication for the control plane. */
export class InternalAuth extends HttpApiMiddleware.Service<InternalAuth>()("trawl/InternalAuth", {
  security: { internalToken: HttpApiSecurity.apiKey({ key: "x-internal-token", in: "header" }) },
  error: errors(InvalidRequest, Unauthenticated, NotFound, PayloadTooLarge, UnsupportedMediaType)
}) {}

/** No authentication: routes that open a session or redeem a mailed token. Body checks still apply. */
export class Anonymous extends HttpApiMiddleware.Service<Anonymous>()("trawl/Anonymous", {
  error: errors(InvalidRequest, NotFound, PayloadTooLarge, UnsupportedMediaType)
}) {}

/**
 * The policy check of an endpoint under `ApiKeyAuth`: the principal's permission for the
 * endpoint's `Requires`, then the tenant's plan, then the request's own checks. It runs inside
 * `ApiKeyAuth` (which provides the principal), so a route without a policy is a compile error in
 * `api.ts` rather than a request that dies.
 */
export class Authorize extends HttpApiMiddleware.Service<Authorize, { requires: CurrentPrincipal }>()("trawl/Authorize", {
  error: errors(Forbidden, NotFound, InvalidRequest, PayloadTooLarge, UnsupportedMediaType)
}) {}

type WithPolicy<A> = A extends HttpApiGroup.HttpApiGroup<infer Id, infer Endpoints, infer TopLevel>
  ? HttpApiGroup.HttpApiGroup<Id, HttpApiEndpoint.AddMiddleware<Endpoints, Authorize>, TopLevel>
  : HttpApiEndpoint.AddMiddleware<A, Authorize>

/**
 * An endpoint's (or a whole group's) policy: the permission it needs, checked by `Authorize`.
 * The one way to give a route under `ApiKeyAuth` its permission; put it before `.middleware(ApiKeyAuth)`.
 */
export const requires = (permission: string) => <A extends HttpApiEndpoint.Constraint | HttpApiGroup.Constraint>(self: A): WithPolicy<A> =>
  (self as unknown as HttpApiGroup.Top).annotate(Requires, permission).middleware(Authorize) as never

/**
 * The policy of a route of the caller's own account: `permission` for a key, nothing more than
 * being signed in for the person's own session (`OwnSession`).
 */
export const requiresUnlessOwnSession = (permission: string) => <A extends HttpApiEndpoint.Constraint>(self: A): WithPolicy<A> =>
  requires(permission)((self as unknown as HttpApiGroup.Top).annotate(OwnSession, true) as unknown as A)

/** The policy of a route that stops work (`StopsWork`): `permission`, and no plan check. */
export const requiresToStop = (permission: string) => <A extends HttpApiEndpoint.Constraint>(self: A): WithPolicy<A> =>
  requires(permission)((self as unknown as HttpApiGroup.Top).annotate(StopsWork, true) as unknown as A)

/**
 * The rules across a body's fields that an endpoint's service checks once the schema passed
 * ("webhookSecret only with webhookUrl"), read off the raw JSON object: when the schema refuses the
 * body, the envelope middleware's answer names these faults too, so that one answer lists
 * everything to mend (contract §4). Presence only: a rule reads which fields were sent, never their
 * decoded values. Declared on the endpoint: `.annotate(CrossFieldRules, rules)`.
 */
export type CrossFieldRules = (body: Readonly<Record<string, unknown>>) => ReadonlyArray<ErrorDetail>
export const CrossFieldRules = Context.Reference<CrossFieldRules | undefined>("trawl/CrossFieldRules", { defaultValue: () => undefined })
