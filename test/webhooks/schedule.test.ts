import { describe, expect, it } from "vitest"
import {
  createRetrySchedule,
  defaultRetrySchedule,
  delayAfterResponse,
  nextAttemptDelayMs,
  parseRetryAfterMs,
  parseWebhooksConfig,
  webhooksConfig
} from "../../src/webhooks/schedule.ts"

const HOUR = 3_600_000
const mid = () => 0.5 // no jitter
const low = () => 0
const high = () => 0.999_999_999

/** Sum of every wait until give-up, with a given rng. */
const total = (rng: () => number, schedule = defaultRetrySchedule) => {
  let sum = 0
  for (let attempt = 1; ; attempt++) {
    const delay = schedule.nextAttemptDelayMs(attempt, rng)
    if (delay === null) return { sum, attempts: attempt }
    sum += delay
  }
}

describe("retry schedule", () => {
  it("matches the documented table: 8 attempts over about 7 hours", () => {
    expect(defaultRetrySchedule.table.map((row) => [row.attempt, row.delayMs / 1000, row.atMs / 1000])).toEqual([
      [1, 0, 0],
      [2, 30, 30],
      [3, 120, 150],
      [4, 480, 630],
      [5, 1800, 2430],
      [6, 3600, 6030],
      [7, 7200, 13230],
      [8, 12000, 25230]
    ])
    const nominal = total(mid)
    expect(nominal.attempts).toBe(8)
    expect(nominal.sum).toBe(25_230_000)
    expect(Math.abs(nominal.sum - 7 * HOUR)).toBeLessThan(60_000)
    expect(defaultRetrySchedule.windowMs).toBe(7.5 * HOUR)
  })

  it("grows monotonically, even with the worst jitter", () => {
    for (let attempt = 1; attempt < defaultRetrySchedule.maxAttempts - 1; attempt++) {
      expect(nextAttemptDelayMs(attempt + 1, low)!).toBeGreaterThan(nextAttemptDelayMs(attempt, high)!)
    }
  })

  it("keeps jitter within ±10% of each wait and the total within 6.3 h – 7.7 h", () => {
    const ratio = webhooksConfig.retry.jitterRatio
    for (let attempt = 1; attempt < defaultRetrySchedule.maxAttempts; attempt++) {
      const base = defaultRetrySchedule.table[attempt]!.delayMs
      for (let i = 0; i < 200; i++) {
        const delay = nextAttemptDelayMs(attempt)!
        expect(delay).toBeGreaterThanOrEqual(Math.floor(base * (1 - ratio)))
        expect(delay).toBeLessThanOrEqual(Math.ceil(base * (1 + ratio)))
      }
    }
    expect(total(low).sum).toBeGreaterThanOrEqual(6.3 * HOUR)
    expect(total(high).sum).toBeLessThanOrEqual(7.71 * HOUR)
  })

  it("gives up after the last attempt and refuses attempt numbers below 1", () => {
    expect(nextAttemptDelayMs(7, mid)).toBe(12_000_000)
    expect(nextAttemptDelayMs(8, mid)).toBeNull()
    expect(nextAttemptDelayMs(100, mid)).toBeNull()
    expect(() => nextAttemptDelayMs(0, mid)).toThrow(RangeError)
  })

  it("scales every wait and the window", () => {
    const fast = createRetrySchedule(undefined, { scale: 0.001 })
    expect(fast.nextAttemptDelayMs(1, mid)).toBe(30)
    expect(total(mid, fast).sum).toBe(25_230)
    expect(fast.windowMs).toBe(27_000)
    expect(fast.delayAfterResponse(1, 429, "120", { rng: mid })).toBe(120)
    expect(() => createRetrySchedule(undefined, { scale: 0 })).toThrow(RangeError)
  })
})

describe("delayAfterResponse", () => {
  const nowMs = Date.parse("2026-01-01T00:00:00Z")

  it("follows the schedule for 5xx, 4xx, 3xx and no answer", () => {
    for (const status of [500, 502, 404, 301, null]) expect(delayAfterResponse(1, status, null, { rng: mid })).toBe(30_000)
  })

  it("returns null for 2xx, 410 and after the last attempt", () => {
    expect(delayAfterResponse(1, 200, null, { rng: mid })).toBeNull()
    expect(delayAfterResponse(1, 204, null, { rng: mid })).toBeNull()
    expect(delayAfterResponse(1, 410, null, { rng: mid })).toBeNull()
    expect(delayAfterResponse(3, 410, "60", { rng: mid })).toBeNull()
    expect(delayAfterResponse(8, 500, null, { rng: mid })).toBeNull()
    expect(delayAfterResponse(8, 429, "10", { rng: mid })).toBeNull()
  })

  it("honours Retry-After seconds on 429/503 only when later than the schedule", () => {
    expect(delayAfterResponse(1, 429, "120", { rng: mid })).toBe(120_000)
    expect(delayAfterResponse(1, 503, " 600 ", { rng: mid })).toBe(600_000)
    expect(delayAfterResponse(1, 503, "5", { rng: mid })).toBe(30_000)
    expect(delayAfterResponse(1, 500, "600", { rng: mid })).toBe(30_000)
    expect(delayAfterResponse(1, 429, "soon", { rng: mid })).toBe(30_000)
  })

  it("honours Retry-After HTTP dates", () => {
    const in15min = new Date(nowMs + 15 * 60_000).toUTCString()
    expect(delayAfterResponse(1, 503, in15min, { rng: mid, nowMs })).toBe(15 * 60_000)
    const past = new Date(nowMs - 60_000).toUTCString()
    expect(delayAfterResponse(2, 429, past, { rng: mid, nowMs })).toBe(120_000)
  })

  it("caps every wait at the end of the window and stops once it is used up", () => {
    // After attempt 2 (nominally at 30 s), a 1-day Retry-After is cut to the rest of the 7.5 h window.
    expect(delayAfterResponse(2, 503, "86400", { rng: mid })).toBe(7.5 * HOUR - 30_000)
    expect(delayAfterResponse(2, 503, "86400", { rng: mid, elapsedMs: 7 * HOUR })).toBe(0.5 * HOUR)
    expect(delayAfterResponse(7, 500, null, { rng: high, elapsedMs: 4.2 * HOUR })).toBe(3.3 * HOUR)
    expect(delayAfterResponse(3, 500, null, { rng: mid, elapsedMs: 7.5 * HOUR })).toBeNull()
  })

  it("parses Retry-After", () => {
    expect(parseRetryAfterMs("0")).toBe(0)
    expect(parseRetryAfterMs("42")).toBe(42_000)
    expect(parseRetryAfterMs("Thu, 01 Jan 2026 00:01:00 GMT", nowMs)).toBe(60_000)
    expect(parseRetryAfterMs("Sunday, 01-Jan-26 00:02:00 GMT", nowMs)).toBe(120_000)
    expect(parseRetryAfterMs("Thu Jan  1 00:03:00 2026", nowMs)).toBe(180_000)
    expect(parseRetryAfterMs("-5")).toBeNull()
    expect(parseRetryAfterMs("2026-01-01")).toBeNull()
    expect(parseRetryAfterMs("")).toBeNull()
    expect(parseRetryAfterMs(null)).toBeNull()
  })
})

describe("config", () => {
  it("validates config/webhooks.json and rejects a bad one", () => {
    expect(webhooksConfig.retry.scale).toBe(1)
    expect(webhooksConfig.delivery.timeoutMs).toBe(10_000)
    expect(() => parseWebhooksConfig({ ...webhooksConfig, retry: { ...webhooksConfig.retry, jitterRatio: 1 } })).toThrow(/jitterRatio/)
    expect(() => parseWebhooksConfig({ ...webhooksConfig, retry: { ...webhooksConfig.retry, delaysSeconds: [30, -1] } })).toThrow(/delaysSeconds\[1\]/)
    expect(() => parseWebhooksConfig({})).toThrow(/delivery/)
  })
})
