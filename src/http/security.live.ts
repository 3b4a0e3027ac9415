import { Cause, Context, Effect, Exit, Layer, Redacted, type Schema } from "effect"
import { HttpServerRequest } from "effect/http"
import { PlanGate } from "../billing/plan-gate.ts"
import { Config } from "../config.ts"
import { ApiKeyAuthenticator } from "../iam/api-key-auth.ts"
import { allows, permissionsOnBehalf } from "../iam/permissions.ts"
import { CurrentPrincipal, isSuperAdmin, type Principal } from "../iam/principal.ts"
import { API_KEY_PREFIX, constantTimeEqual, isOneOfTokens } from "../iam/secrets.ts"
import { SessionAuthenticator } from "../iam/session-auth.ts"
import { SessionService } from "../iam/session-service.ts"
import { fail, Forbidden, isApiError, ResponseHeaders, TooManyRequests, Unauthenticated } from "../schema/errors.ts"
import { AuditLog, credentialData } from "../sql/audit-log.ts"
import { DelegationRepo } from "../sql/delegation-repo.ts"
import { clientContext } from "./client-context.ts"
import { RefusedUnlessReplayed } from "./idempotency.ts"
import { KeyMeter, noteEndpointReached, refuseMalformedRequest } from "./envelope-middleware.ts"
import { RateLimiter, type RateLimiterShape } from "./rate-limit.ts"
import { Anonymous, ANY_KEY, ApiKeyAuth, Authorize, InternalAuth, MAX_ON_BEHALF_LENGTH, notOnBehalf, ON_BEHALF_HEADER, OwnSession, presentedSession, Requires, SessionOnly, StopsWork } from "./security.ts"
import type { IdentityId } from "../schema/ids.ts"

const unauthorized = (message: string) => new Unauthenticated({ code: "unauthorized", message })

/** Counts a request of `principal`'s key, writes the rate-limit headers, and refuses it over the limit. */
const countRequest = (limiter: RateLimiterShape, principal: Principal) =>
  Effect.gen(function*() {
    const rate = yield* limiter.check(principal.credentialId, principal.rateLimitPerMinute)
    const bag = yield* ResponseHeaders
    if (bag) {
      bag["ratelimit-limit"] = String(rate.limit)
      // A refused request has nothing left until the window that refused it turns (the per-second
      // spread may refuse while the minute still has room).
      bag["ratelimit-remaining"] = rate.allowed ? String(rate.remaining) : "0"
      bag["ratelimit-reset"] = String(rate.allowed ? rate.reset : rate.retryAfter)
    }
    if (!rate.allowed) {
      return yield* new TooManyRequests({
        code: "rate_limited",
        message: rate.refusedBy === "second"
          ? `rate limit of ${Math.ceil(rate.limit / 60)} requests per second (${rate.limit} per minute, spread over its seconds) exceeded`
          : `rate limit of ${rate.limit} requests per minute exceeded`,
        retryAfter: rate.retryAfter
      })
    }
  })

/**
 * How a request made on behalf ended, for its audit entry: `done` with the answer's status, `refused`
 * (401 or 403, with the code), `failed` (any other error), or `interrupted`.
 */
const outcomeOf = <A extends { readonly status: number }, E>(exit: Exit.Exit<A, E>): Record<string, unknown> => {
  if (Exit.isSuccess(exit)) return { outcome: "done", status: exit.value.status }
  if (Cause.hasInterruptsOnly(exit.cause)) return { outcome: "interrupted" }
  const squashed = Cause.squash(exit.cause)
  // The endpoint's own failures reach a security middleware wrapped by the API builder (its `error`).
  const error = typeof squashed === "object" && squashed !== null && !isApiError(squashed) && "error" in squashed ? squashed.error : squashed
  if (!isApiError(error)) return { outcome: "failed" }
  return { outcome: error.status === 401 || error.status === 403 ? "refused" : "failed", status: error.status, code: error.code }
}

/** Methods that change nothing, which a cookie-borne session may call without the CSRF header. */
const safeMethods = new Set(["GET", "HEAD", "OPTIONS"])

/**
 * Authentication of the public and super-admin planes: an `x-api-key`, or an identity session as
 * `Authorization: Bearer <sessionId>` or the `trawl_session` cookie (which needs `x-csrf-token` on
 * unsafe methods). Each yields the same principal; then the rate limit and the endpoint's permission.
 */
export const ApiKeyAuthLive = Layer.effect(
  ApiKeyAuth,
  Effect.gen(function*() {
    const authenticator = yield* ApiKeyAuthenticator
    const sessionAuth = yield* SessionAuthenticator
    const sessions = yield* SessionService
    const limiter = yield* RateLimiter
    const delegations = yield* DelegationRepo
    const audit = yield* AuditLog
    const config = yield* Config

    /**
     * Runs `httpEffect` on behalf of `delegatorId`: as the delegator's identity with its role's
     * permissions, never more, the caller as the actor. The grant is read from the database on every
     * request, so a revoked or expired delegation stops working at once on every node. Whatever
     * happens (no grant, an operation not made on behalf, a refusal by the route), the request is
     * audited as `delegation.act` with its outcome.
     */
    const actOnBehalf = <A extends { readonly status: number }, E, R>(
      principal: Principal,
      delegatorId: string,
      refusedOnBehalf: boolean,
      httpEffect: Effect.Effect<A, E, R>
    ) =>
      Effect.gen(function*() {
        const named = delegatorId !== "" && delegatorId.length <= 255
        const grant = !named || delegatorId === principal.identityId
          ? undefined
          : yield* delegations.activeGrant(principal.tenantId, delegatorId, principal.identityId)
        const request = yield* HttpServerRequest.HttpServerRequest
        const client = yield* Effect.provideService(clientContext, Config, config)
        const run = Effect.gen(function*() {
          // an operation never made on behalf is refused as such, whatever the header names
          if (refusedOnBehalf) {
            return yield* new Forbidden({
              code: "forbidden",
              message: `this operation is not made on behalf of someone: send it without ${ON_BEHALF_HEADER}`
            })
          }
          if (!grant) {
            return yield* new Forbidden({
              code: "delegation_required",
              message: `${ON_BEHALF_HEADER} names an identity that has no active delegation to the caller`
            })
          }
          // An identity of the tenant from here on: the active grant names it as the delegator.
          const permissions = permissionsOnBehalf(principal, grant.permissions)
          const acting: Principal = {
            ...principal,
            identityId: delegatorId as IdentityId,
            roleId: grant.roleId,
            permissions,
            actorId: principal.identityId,
            actorPermissions: principal.permissions
          }
          return yield* Effect.provideService(httpEffect, CurrentPrincipal, acting)
        })
        return yield* Effect.onExit(run, (exit) =>
          audit.write({
            tenantId: principal.tenantId,
            actorId: principal.identityId,
            onBehalfOf: named ? delegatorId : null,
            ip: client.ip,
            action: "delegation.act",
            targetId: grant?.delegationId ?? null,
            data: {
              method: request.method,
              path: request.url.split("?")[0]!.slice(0, 2048),
              ...outcomeOf(exit),
              // The delegate's own credential, when it is a key.
              ...credentialData(principal)
            }
          }))
      })

    const sessionPrincipal = Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const presented = presentedSession(request.headers, request.cookies)
      if (presented === undefined) {
        return yield* unauthorized("send an x-api-key header, or a session as Authorization: Bearer <sessionId> or the trawl_session cookie")
      }
      const principal = yield* sessionAuth.authenticate(presented.token)
      if (!principal) {
        // An API key sent the way many SDKs send tokens: say where keys go.
        return yield* unauthorized(presented.via === "bearer" && presented.token.startsWith(`${API_KEY_PREFIX}_`)
          ? "an API key goes in the x-api-key header; Authorization: Bearer takes a session id"
          : "the session is invalid, revoked or expired")
      }
      // Counted before its CSRF check: a refused request of a live session is still one of its requests.
      yield* countRequest(limiter, principal)
      // A cookie is sent by the browser whoever made the page: a change needs the header only our client can read.
      if (presented.via === "cookie" && !safeMethods.has(request.method)) {
        const given = request.headers["x-csrf-token"] ?? ""
        if (!constantTimeEqual(given, sessions.csrfToken(principal.credentialId))) {
          return yield* new Forbidden({ code: "csrf_failed", message: "a session cookie on an unsafe method needs a valid x-csrf-token header (GET /v1/iam/auth/csrf)" })
        }
      }
      return principal
    })

    return ApiKeyAuth.of({
      apiKey: (httpEffect, { credential, endpoint, group }) =>
        Effect.gen(function*() {
          yield* noteEndpointReached(endpoint)
          const raw = Redacted.value(credential)
          let principal: Principal
          if (raw === "") principal = yield* sessionPrincipal
          else {
            const found = yield* authenticator.authenticate(raw)
            if (!found) return yield* unauthorized("the API key is invalid, revoked or expired")
            principal = found
            yield* countRequest(limiter, principal)
          }
          // What the document states as this endpoint's security (security.ts, credentialsOf).
          if (principal.kind !== "session" && Context.get(endpoint.annotations, SessionOnly)) {
            return yield* fail(400, "session_required", "this operation acts on an identity session; it was called with an API key")
          }
          const onBehalfOf = (yield* HttpServerRequest.HttpServerRequest).headers[ON_BEHALF_HEADER]
          if (onBehalfOf !== undefined && onBehalfOf.length > MAX_ON_BEHALF_LENGTH) {
            return yield* fail(400, "validation_error", `${ON_BEHALF_HEADER} is not an identity id`, {
              details: [{ path: ON_BEHALF_HEADER, code: "invalid_value", message: `an identity id of at most ${MAX_ON_BEHALF_LENGTH} characters` }]
            })
          }
          if (onBehalfOf !== undefined) {
            return yield* actOnBehalf(principal, onBehalfOf, notOnBehalf(group.identifier, endpoint.identifier), httpEffect)
          }
          return yield* Effect.provideService(httpEffect, CurrentPrincipal, principal)
        })
    })
  })
)

/**
 * The policy of an endpoint under `ApiKeyAuth` (its `Requires`, given by `requires(...)`): the
 * principal's permission, then the tenant's plan, then the request's own checks.
 */
export const AuthorizeLive = Layer.effect(
  Authorize,
  Effect.gen(function*() {
    const planGate = yield* PlanGate
    return Authorize.of((httpEffect, { endpoint, group }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        const required = Context.get(endpoint.annotations, Requires) ?? Context.get(group.annotations, Requires)
        if (required === undefined) {
          return yield* Effect.die(new Error(`endpoint ${group.identifier}.${endpoint.identifier} declares no permission`))
        }
        // A person's own session may manage its own account whatever its role; a key or a delegate needs the permission.
        const ownSession = principal.kind === "session" && principal.actorId === principal.identityId &&
          (Context.get(endpoint.annotations, OwnSession) || Context.get(group.annotations, OwnSession))
        const permitted = required === ANY_KEY ? true : required.startsWith("cross_tenant:")
          ? isSuperAdmin(principal)
          : allows(principal.permissions, required) || ownSession
        if (!permitted) {
          // The super-admin plane is not revealed to tenants.
          if (required.startsWith("cross_tenant:")) {
            return yield* new Forbidden({ code: "forbidden", message: "super-admin only" })
          }
          return yield* new Forbidden({ code: "forbidden", message: `this ${principal.kind === "session" ? "session" : "key"} lacks ${required}` })
        }
        // The tenant's plan and subscription status may refuse what the permission allows, but
        // never a stop, and a retry of an answered request gets its stored answer (RefusedUnlessReplayed).
        if (required !== ANY_KEY && !ownSession && !Context.get(endpoint.annotations, StopsWork)) {
          const refusal = yield* Effect.flip(planGate.check(principal, required)).pipe(Effect.orElseSucceed(() => undefined))
          if (refusal !== undefined) {
            const keyed = takesIdempotencyKey(endpoint) && (yield* HttpServerRequest.HttpServerRequest).headers["idempotency-key"] !== undefined
            if (!keyed) return yield* refusal
            return yield* refuseMalformedRequest(httpEffect).pipe(Effect.provideService(RefusedUnlessReplayed, refusal))
          }
        }
        return yield* refuseMalformedRequest(httpEffect)
      })
    )
  })
)

/** Whether a route takes an Idempotency-Key (declares the header). */
const takesIdempotencyKey = (endpoint: { readonly headers: Schema.Top | undefined }): boolean => {
  const ast = endpoint.headers?.ast
  return ast?._tag === "Objects" && ast.propertySignatures.some((p) => p.name === "idempotency-key")
}

/** Routes open to anyone (logging in, redeeming a mailed token): only the request's own checks. */
export const AnonymousLive = Layer.succeed(
  Anonymous,
  Anonymous.of((httpEffect, { endpoint }) => Effect.andThen(noteEndpointReached(endpoint), refuseMalformedRequest(httpEffect)))
)

export const InternalAuthLive = Layer.effect(
  InternalAuth,
  Effect.gen(function*() {
    const { internalTokens } = yield* Config
    return InternalAuth.of({
      internalToken: (httpEffect, { credential, endpoint }) => {
        return isOneOfTokens(Redacted.value(credential), internalTokens)
          ? Effect.andThen(noteEndpointReached(endpoint), refuseMalformedRequest(httpEffect))
          : Effect.andThen(noteEndpointReached(endpoint), Effect.fail(unauthorized("missing or invalid x-internal-token")))
      }
    })
  })
)

/**
 * Requests answered without reaching an endpoint's security (no such route, a method the route
 * lacks) still count against a valid key's rate limit and carry its headers.
 */
export const KeyMeterLive = Layer.effect(
  KeyMeter,
  Effect.gen(function*() {
    const authenticator = yield* ApiKeyAuthenticator
    const limiter = yield* RateLimiter
    return KeyMeter.of((raw) =>
      authenticator.authenticate(raw).pipe(Effect.flatMap((principal) => (principal ? countRequest(limiter, principal) : Effect.void)))
    )
  })
)
