import { Context, Effect, Layer, Redacted } from "effect"
import { Config } from "../config.ts"
import { ApiKeyAuthenticator } from "../iam/api-key-auth.ts"
import { allows } from "../iam/permissions.ts"
import { CurrentPrincipal, isSuperAdmin, type Principal } from "../iam/principal.ts"
import { constantTimeEqual } from "../iam/secrets.ts"
import { ApiError, ResponseHeaders } from "../schema/errors.ts"
import { KeyMeter, noteEndpointReached, refuseMalformedRequest } from "./envelope-middleware.ts"
import { RateLimiter, type RateLimiterShape } from "./rate-limit.ts"
import { ANY_KEY, ApiKeyAuth, InternalAuth, Requires } from "./security.ts"

const unauthorized = (message: string) => new ApiError({ status: 401, code: "unauthorized", message })

/** Counts a request of `principal`'s key, writes the rate-limit headers, and refuses it over the limit. */
const countRequest = (limiter: RateLimiterShape, principal: Principal) =>
  Effect.gen(function*() {
    const rate = yield* limiter.check(principal.apiKeyId, principal.rateLimitPerMinute)
    const bag = yield* ResponseHeaders
    if (bag) {
      bag["ratelimit-limit"] = String(rate.limit)
      bag["ratelimit-remaining"] = String(rate.remaining)
      bag["ratelimit-reset"] = String(rate.reset)
    }
    if (!rate.allowed) {
      return yield* new ApiError({
        status: 429,
        code: "rate_limited",
        message: rate.refusedBy === "second"
          ? `rate limit of ${Math.ceil(rate.limit / 60)} requests per second (${rate.limit} per minute, spread over its seconds) exceeded`
          : `rate limit of ${rate.limit} requests per minute exceeded`,
        retryAfter: rate.retryAfter
      })
    }
  })

export const ApiKeyAuthLive = Layer.effect(
  ApiKeyAuth,
  Effect.gen(function*() {
    const authenticator = yield* ApiKeyAuthenticator
    const limiter = yield* RateLimiter
    return ApiKeyAuth.of({
      apiKey: (httpEffect, { credential, endpoint, group }) =>
        Effect.gen(function*() {
          yield* noteEndpointReached(endpoint)
          const raw = Redacted.value(credential)
          if (raw === "") return yield* unauthorized("the x-api-key header is missing")
          const principal = yield* authenticator.authenticate(raw)
          if (!principal) return yield* unauthorized("the API key is invalid, revoked or expired")
          yield* countRequest(limiter, principal)

          const required = Context.get(endpoint.annotations, Requires) ?? Context.get(group.annotations, Requires)
          if (required === undefined) {
            return yield* Effect.die(new Error(`endpoint ${endpoint.name} declares no permission`))
          }
          const permitted = required === ANY_KEY ? true : required.startsWith("cross_tenant:")
            ? isSuperAdmin(principal)
            : allows(principal.permissions, required)
          if (!permitted) {
            // The super-admin plane is not revealed to tenants.
            if (required.startsWith("cross_tenant:")) {
              return yield* new ApiError({ status: 403, code: "forbidden", message: "super-admin only" })
            }
            return yield* new ApiError({ status: 403, code: "forbidden", message: `this key lacks ${required}` })
          }
          return yield* refuseMalformedRequest(Effect.provideService(httpEffect, CurrentPrincipal, principal))
        })
    })
  })
)

export const InternalAuthLive = Layer.effect(
  InternalAuth,
  Effect.gen(function*() {
    const { internalTokens } = yield* Config
    return InternalAuth.of({
      internalToken: (httpEffect, { credential, endpoint }) => {
        const given = Redacted.value(credential)
        // Check every configured token, always, so timing tells nothing about which matched.
        let ok = false
        for (const token of internalTokens) ok = constantTimeEqual(given, token) || ok
        return Effect.andThen(
          noteEndpointReached(endpoint),
          ok && given !== "" ? refuseMalformedRequest(httpEffect) : Effect.fail(unauthorized("missing or invalid x-internal-token"))
        )
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
