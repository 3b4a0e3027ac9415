/** Start of the UTC day of `now` (daily quotas reset there), in epoch milliseconds. */
export const utcDayStart = (now: number = Date.now()): number => {
  const d = new Date(now)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate())
}

/** Seconds until the next UTC day, at least 1: the `Retry-After` of a used-up daily quota. */
export const secondsToNextUtcDay = (now: number = Date.now()): number =>
  Math.max(1, Math.ceil((utcDayStart(now) + 86_400_000 - now) / 1000))
