/**
 * Fixed-concurrency load with autocannon, run in this (the bench) process, which is separate from
 * both server processes. Latencies are taken from autocannon's per-response event in fractional
 * milliseconds (its own histogram rounds to whole ms, too coarse for a sub-ms baseline).
 */
import { onInterrupt } from "./processes.ts"
import autocannon, { type AutocannonClient, type AutocannonRequest } from "autocannon"

export interface Target {
  readonly path: string
  readonly headers: Record<string, string>
}

export interface LoadOptions {
  readonly connections: number
  /** Seconds. */
  readonly duration: number
  /** Seconds per request before it counts as a timeout. */
  readonly timeout?: number
}

export interface LoadResult {
  /** Every response's latency in ms, sorted. */
  readonly latencies: Float64Array
  readonly requests: number
  readonly seconds: number
  readonly rps: number
  readonly p50: number
  readonly p90: number
  readonly p99: number
  readonly max: number
  readonly mean: number
  readonly non2xx: number
  readonly statuses: Record<string, number>
  readonly errors: number
  readonly timeouts: number
}

/** The median of `xs` (the mean of the middle two when their number is even); NaN when empty. */
export const median = (xs: ReadonlyArray<number>): number => {
  if (xs.length === 0) return NaN
  const sorted = [...xs].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/** The `p`th percentile (nearest rank) of ascending `sorted`; NaN when empty. */
export const percentile = (sorted: ArrayLike<number>, p: number): number => {
  if (sorted.length === 0) return NaN
  const rank = Math.ceil((p / 100) * sorted.length) - 1
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank))]!
}

/**
 * Runs `connections` keep-alive connections against `baseUrl` for `duration` seconds. Every
 * connection cycles through all targets, each connection starting at a different offset, so at
 * any moment the load is spread evenly over the targets (and so over the API keys).
 */
export const runLoad = async (baseUrl: string, targets: ReadonlyArray<Target>, options: LoadOptions): Promise<LoadResult> => {
  if (targets.length === 0) throw new Error("no targets")
  const requests = (offset: number): Array<AutocannonRequest> =>
    targets.map((_, i) => {
      const t = targets[(i + offset) % targets.length]!
      return { method: "GET", path: t.path, headers: { ...t.headers } }
    })
  let nextClient = 0
  const latencies: Array<number> = []
  const statuses: Record<string, number> = {}
  let non2xx = 0
  const instance = autocannon({
    url: baseUrl,
    connections: options.connections,
    duration: options.duration,
    timeout: options.timeout ?? 10,
    requests: requests(0),
    setupClient: (client: AutocannonClient) => {
      const offset = Math.floor((nextClient++ * targets.length) / options.connections)
      client.setRequests(requests(offset))
    }
  })
  instance.on("response", (_client: unknown, status: number, _bytes: number, responseTime: number) => {
    latencies.push(responseTime)
    statuses[status] = (statuses[status] ?? 0) + 1
    if (status < 200 || status > 299) non2xx++
  })
  const unsubscribe = onInterrupt(() => instance.stop())
  const started = performance.now()
  const result = await instance.then((r) => r, (e) => {
    unsubscribe()
    throw e
  })
  unsubscribe()
  const seconds = (performance.now() - started) / 1000
  const sorted = Float64Array.from(latencies).sort()
  return summarise(sorted, seconds, statuses, Math.max(non2xx, result.non2xx), result.errors, result.timeouts)
}

const summarise = (
  sorted: Float64Array,
  seconds: number,
  statuses: Record<string, number>,
  non2xx: number,
  errors: number,
  timeouts: number
): LoadResult => {
  let sum = 0
  for (const x of sorted) sum += x
  return {
    latencies: sorted,
    requests: sorted.length,
    seconds,
    rps: sorted.length / seconds,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted.length ? sorted[sorted.length - 1]! : NaN,
    mean: sorted.length ? sum / sorted.length : NaN,
    non2xx,
    statuses,
    errors,
    timeouts
  }
}

/** Several phases against one target as one result: all responses over the summed time. */
export const mergeResults = (parts: ReadonlyArray<LoadResult>): LoadResult => {
  const all = new Float64Array(parts.reduce((n, p) => n + p.latencies.length, 0))
  let at = 0
  for (const p of parts) {
    all.set(p.latencies, at)
    at += p.latencies.length
  }
  all.sort()
  const statuses: Record<string, number> = {}
  for (const p of parts) for (const [s, n] of Object.entries(p.statuses)) statuses[s] = (statuses[s] ?? 0) + n
  const sum = (f: (p: LoadResult) => number) => parts.reduce((n, p) => n + f(p), 0)
  return summarise(all, sum((p) => p.seconds), statuses, sum((p) => p.non2xx), sum((p) => p.errors), sum((p) => p.timeouts))
}
