import { Context, Effect, Layer } from "effect"
import { Kv } from "../kv/kv.ts"

export interface RateDecision {
  readonly allowed: boolean
  readonly limit: number
  readonly remaining: number
  /** Seconds until the minute window resets. */
  readonly reset: number
  /** Seconds to wait when refused. */
  readonly retryAfter: number
}

export interface RateLimiterShape {
  readonly check: (apiKeyId: string, perMinute: number) => Effect.Effect<RateDecision>
}

export class RateLimiter extends Context.Service<RateLimiter, RateLimiterShape>()("trawl/RateLimiter") {}

/**
 * Per key: at most `perMinute` requests in a minute window, spread over seconds
 * (at most ceil(perMinute / 60) in any one second), counted in Kv so all nodes share it.
 */
export const RateLimiterLive = Layer.effect(
  RateLimiter,
  Effect.gen(function*() {
    const kv = yield* Kv
    return RateLimiter.of({
      check: (apiKeyId, perMinute) =>
        Effect.gen(function*() {
          const now = Date.now()
          const second = Math.floor(now / 1000)
          const minute = Math.floor(now / 60_000)
          const perSecond = Math.ceil(perMinute / 60)
          const [inSecond, inMinute] = yield* Effect.all([
            kv.incr(`rl:s:${apiKeyId}:${second}`, 2_000),
            kv.incr(`rl:m:${apiKeyId}:${minute}`, 61_000)
          ], { concurrency: 2 })
          const reset = Math.max(1, Math.ceil(((minute + 1) * 60_000 - now) / 1000))
          const overMinute = inMinute > perMinute
          const overSecond = inSecond > perSecond
          return {
            allowed: !overMinute && !overSecond,
            limit: perMinute,
            remaining: Math.max(0, perMinute - inMinute),
            reset,
            retryAfter: overMinute ? reset : 1
          }
        })
    })
  })
)
