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
  /** What refused it: the minute's budget, or the second's share of it. */
  readonly refusedBy: "minute" | "second" | undefined
}

export interface RateLimiterShape {
  readonly check: (apiKeyId: string, perMinute: number) => Effect.Effect<RateDecision>
}

export class RateLimiter extends Context.Service<RateLimiter, RateLimiterShape>()("trawl/RateLimiter") {}

/**
 * Per key: at most `perMinute` requests in a minute window, spread over seconds: at most
 * ceil(perMinute / 60) in any one second (a sliding window, so no burst fits across the turn of a
 * second), counted in Kv so all nodes share it. A request the per-second limit refuses does not
 * use up the minute's budget.
 */
export const RateLimiterLive = Layer.effect(
  RateLimiter,
  Effect.gen(function*() {
    const kv = yield* Kv
    return RateLimiter.of({
      check: (apiKeyId, perMinute) =>
        Effect.gen(function*() {
          const now = Date.now()
          const minute = Math.floor(now / 60_000)
          const perSecond = Math.ceil(perMinute / 60)
          const minuteKey = `rl:m:${apiKeyId}:${minute}`
          const inSecond = yield* kv.admitInWindow(`rl:s:${apiKeyId}`, 1000, perSecond)
          const inMinute = inSecond ? yield* kv.incr(minuteKey, 61_000) : Number((yield* kv.get(minuteKey)) ?? 0)
          const reset = Math.max(1, Math.ceil(((minute + 1) * 60_000 - now) / 1000))
          // A request the second refused was not counted: the minute is spent when its count is already at the limit,
          // and then the wait is the minute's, not the second's (a client waiting 1 s would be refused again).
          const overMinute = inSecond ? inMinute > perMinute : inMinute >= perMinute
          const overSecond = !inSecond
          return {
            allowed: !overMinute && !overSecond,
            limit: perMinute,
            remaining: Math.max(0, perMinute - inMinute),
            reset,
            retryAfter: overMinute ? reset : 1,
            refusedBy: overMinute ? "minute" : overSecond ? "second" : undefined
          }
        })
    })
  })
)
