/**
 * The webhook retry schedule, as data (`config/webhooks.json`, section `retry`).
 *
 * Attempt 1 is sent at once. After a failed attempt n the next one waits `delaysSeconds[n - 1]`
 * (± `jitterRatio`, scaled by `scale`); when the list is exhausted the delivery is `failed`. No
 * attempt is scheduled later than `windowSeconds` after the first one. `scale` shrinks every wait
 * (tests use e.g. 0.001; production uses 1).
 */
import rawConfig from "../../config/webhooks.json" with { type: "json" }

export interface RetryScheduleConfig {
  /** Multiplies every wait, Retry-After included, and the window. 1 in production. */
  readonly scale: number
  /** Wait after failed attempt n (1-based) is `delaysSeconds[n - 1]`; attempts = length + 1. */
  readonly delaysSeconds: readonly number[]
  /** Each wait is drawn uniformly from `delay × [1 - jitterRatio, 1 + jitterRatio]`. */
  readonly jitterRatio: number
  /** No attempt later than this after the first attempt (bounds Retry-After and jitter). */
  readonly windowSeconds: number
  /** Statuses whose `Retry-After` is honoured when it asks for a longer wait than the schedule. */
  readonly retryAfterStatuses: readonly number[]
  /** Statuses that end the delivery at once (`failed`, no further attempt). */
  readonly stopStatuses: readonly number[]
}

export interface DeliveryConfig {
  readonly timeoutMs: number
  readonly maxResponseBytes: number
  readonly connectionsPerOrigin: number
  readonly keepAliveTimeoutMs: number
}

export interface WebhooksConfig {
  readonly delivery: DeliveryConfig
  readonly retry: RetryScheduleConfig
}

/** A number in [0, 1), like `Math.random`. */
export type Rng = () => number

const fail = (path: string, expected: string): never => {
  throw new TypeError(`config/webhooks.json: ${path} must be ${expected}`)
}
const positive = (value: unknown, path: string): number =>
  typeof value === "number" && Number.isFinite(value) && value > 0 ? value : fail(path, "a positive number")
const statusList = (value: unknown, path: string): readonly number[] =>
  Array.isArray(value) && value.every((s) => Number.isInteger(s) && s >= 100 && s <= 599)
    ? value
    : fail(path, "an array of HTTP statuses")

/** Validates a webhooks config object (the JSON file, or a test's own). */
export const parseWebhooksConfig = (input: unknown): WebhooksConfig => {
  const root = (input ?? {}) as { delivery?: Record<string, unknown>; retry?: Record<string, unknown> }
  const delivery = root.delivery ?? fail("delivery", "an object")
  const retry = root.retry ?? fail("retry", "an object")
  const delaysSeconds = Array.isArray(retry.delaysSeconds)
    ? retry.delaysSeconds.map((d, i) => positive(d, `retry.delaysSeconds[${i}]`))
    : fail("retry.delaysSeconds", "an array")
  const jitterRatio = retry.jitterRatio
  if (typeof jitterRatio !== "number" || !(jitterRatio >= 0 && jitterRatio < 1)) fail("retry.jitterRatio", "in [0, 1)")
  return {
    delivery: {
      timeoutMs: positive(delivery.timeoutMs, "delivery.timeoutMs"),
      maxResponseBytes: positive(delivery.maxResponseBytes, "delivery.maxResponseBytes"),
      connectionsPerOrigin: positive(delivery.connectionsPerOrigin, "delivery.connectionsPerOrigin"),
      keepAliveTimeoutMs: positive(delivery.keepAliveTimeoutMs, "delivery.keepAliveTimeoutMs")
    },
    retry: {
      scale: positive(retry.scale, "retry.scale"),
      delaysSeconds,
      jitterRatio: jitterRatio as number,
      windowSeconds: positive(retry.windowSeconds, "retry.windowSeconds"),
      retryAfterStatuses: statusList(retry.retryAfterStatuses, "retry.retryAfterStatuses"),
      stopStatuses: statusList(retry.stopStatuses, "retry.stopStatuses")
    }
  }
}

/** `config/webhooks.json`, validated at load. */
export const webhooksConfig: WebhooksConfig = parseWebhooksConfig(rawConfig)

const HTTP_DATE_START = /^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*,? /

/**
 * Milliseconds to wait as asked by a `Retry-After` value: delta-seconds or an HTTP date (relative to
 * `nowMs`; a date in the past is 0). Null when absent or unparseable.
 */
export const parseRetryAfterMs = (header: string | null | undefined, nowMs: number = Date.now()): number | null => {
  const value = header?.trim()
  if (!value) return null
  if (/^\d+$/.test(value)) return Number(value) * 1000
  // An HTTP date (IMF-fixdate, RFC 850 or asctime) starts with a day name; Date.parse alone would
  // also take "-5" or "2026" as dates.
  if (!HTTP_DATE_START.test(value)) return null
  // asctime carries no zone but means GMT; Date.parse would read it as local time.
  const date = Date.parse(/GMT$/i.test(value) ? value : `${value} GMT`)
  return Number.isNaN(date) ? null : Math.max(0, date - nowMs)
}

export interface ScheduleRow {
  /** 1-based attempt number. */
  readonly attempt: number
  /** Nominal wait before this attempt (0 for the first). */
  readonly delayMs: number
  /** Nominal time of this attempt after the first one. */
  readonly atMs: number
}

export interface ResponseContext {
  readonly rng?: Rng
  /** Time since the first attempt was sent; default: the nominal schedule up to this attempt. */
  readonly elapsedMs?: number
  /** Clock for an HTTP-date `Retry-After`; default `Date.now()`. */
  readonly nowMs?: number
}

export interface RetrySchedule {
  readonly config: RetryScheduleConfig
  /** Attempts in all, the first included. */
  readonly maxAttempts: number
  /** Scaled window: no attempt later than this after the first. */
  readonly windowMs: number
  /** Nominal (jitter-free, scaled) schedule: one row per attempt. */
  readonly table: readonly ScheduleRow[]
  /**
   * Wait after failed attempt `attemptNumber` (1-based) before the next one, jittered by `rng`;
   * null when it was the last attempt (the delivery becomes `failed`).
   */
  nextAttemptDelayMs(attemptNumber: number, rng?: Rng): number | null
  /**
   * Wait after attempt `attemptNumber` answered `status` (null: no HTTP answer, e.g. a timeout), or
   * null when there is no further attempt: a 2xx (delivered), a stop status such as 410, the last
   * attempt, or the window used up. On a Retry-After status the header is honoured when it asks for
   * a longer wait than the schedule; every wait is capped at the end of the window.
   */
  delayAfterResponse(
    attemptNumber: number,
    status: number | null,
    retryAfterHeader: string | null | undefined,
    context?: ResponseContext
  ): number | null
}

export const createRetrySchedule = (
  config: RetryScheduleConfig = webhooksConfig.retry,
  overrides: { readonly scale?: number } = {}
): RetrySchedule => {
  const scale = overrides.scale ?? config.scale
  if (!(Number.isFinite(scale) && scale > 0)) throw new RangeError("retry scale must be a positive number")
  const effective: RetryScheduleConfig = { ...config, scale }
  const baseMs = config.delaysSeconds.map((seconds) => seconds * 1000 * scale)
  const windowMs = config.windowSeconds * 1000 * scale

  let atMs = 0
  const table: ScheduleRow[] = [{ attempt: 1, delayMs: 0, atMs: 0 }]
  baseMs.forEach((delayMs, i) => {
    atMs += delayMs
    table.push({ attempt: i + 2, delayMs: Math.round(delayMs), atMs: Math.round(atMs) })
  })

  const checkAttempt = (attemptNumber: number) => {
    if (!Number.isInteger(attemptNumber) || attemptNumber < 1) throw new RangeError("attempt numbers start at 1")
  }

  const nextAttemptDelayMs = (attemptNumber: number, rng: Rng = Math.random): number | null => {
    checkAttempt(attemptNumber)
    const base = baseMs[attemptNumber - 1]
    if (base === undefined) return null
    const factor = 1 + config.jitterRatio * (2 * rng() - 1)
    return Math.round(base * factor)
  }

  const delayAfterResponse: RetrySchedule["delayAfterResponse"] = (attemptNumber, status, retryAfterHeader, context = {}) => {
    checkAttempt(attemptNumber)
    if (status !== null && status >= 200 && status < 300) return null
    if (status !== null && config.stopStatuses.includes(status)) return null
    const scheduled = nextAttemptDelayMs(attemptNumber, context.rng)
    if (scheduled === null) return null

    let delay = scheduled
    if (status !== null && config.retryAfterStatuses.includes(status)) {
      const asked = parseRetryAfterMs(retryAfterHeader, context.nowMs)
      if (asked !== null) delay = Math.max(delay, Math.round(asked * scale))
    }
    const elapsedMs = context.elapsedMs ?? table[attemptNumber - 1]!.atMs
    const remaining = windowMs - elapsedMs
    return remaining > 0 ? Math.min(delay, Math.round(remaining)) : null
  }

  return {
    config: effective,
    maxAttempts: table.length,
    windowMs,
    table,
    nextAttemptDelayMs,
    delayAfterResponse
  }
}

/** The production schedule from `config/webhooks.json`. */
export const defaultRetrySchedule: RetrySchedule = createRetrySchedule()

/** {@link RetrySchedule.nextAttemptDelayMs} of the configured schedule. */
export const nextAttemptDelayMs = (attemptNumber: number, rng?: Rng): number | null =>
  defaultRetrySchedule.nextAttemptDelayMs(attemptNumber, rng)

/** {@link RetrySchedule.delayAfterResponse} of the configured schedule. */
export const delayAfterResponse = (
  attemptNumber: number,
  status: number | null,
  retryAfterHeader: string | null | undefined,
  context?: ResponseContext
): number | null => defaultRetrySchedule.delayAfterResponse(attemptNumber, status, retryAfterHeader, context)
