/**
 * Client side of `npm run bench:crawl`: a fixed-concurrency POST load (undici, keep-alive) with
 * latency percentiles, and a small server-sent-events reader.
 */
import { request as httpRequest, type IncomingMessage } from "node:http"
import { Pool } from "undici"
import { percentile } from "../support/load.ts"

export interface PostTarget {
  readonly headers: Record<string, string>
  readonly body: string
}

export interface LoadResult {
  readonly requests: number
  readonly seconds: number
  readonly rps: number
  readonly p50: number
  readonly p90: number
  readonly p99: number
  readonly max: number
  readonly statuses: Record<string, number>
  /** Responses with a status other than `expect`, plus transport errors. */
  readonly unexpected: number
  readonly errors: number
  readonly sampleError?: string
}

/**
 * `connections` workers on one pool of as many keep-alive connections, for `seconds`; each request
 * takes the next target (round-robin over all of them, so the load is spread over keys evenly).
 */
export const runPostLoad = async (
  baseUrl: string,
  path: string,
  targets: (i: number) => PostTarget,
  options: { connections: number; seconds: number; expect: number }
): Promise<LoadResult> => {
  const pool = new Pool(baseUrl, { connections: options.connections, pipelining: 1, keepAliveTimeout: 30_000 })
  const latencies: Array<number> = []
  const statuses: Record<string, number> = {}
  let unexpected = 0
  let errors = 0
  let sampleError: string | undefined
  let next = 0
  const started = performance.now()
  const deadline = started + options.seconds * 1000
  const worker = async () => {
    while (performance.now() < deadline) {
      const t = targets(next++)
      const t0 = performance.now()
      try {
        const res = await pool.request({ method: "POST", path, headers: { "content-type": "application/json", ...t.headers }, body: t.body })
        const text = await res.body.text()
        latencies.push(performance.now() - t0)
        statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1
        if (res.statusCode !== options.expect) {
          unexpected++
          sampleError ??= `${res.statusCode} ${text.slice(0, 300)}`
        }
      } catch (error) {
        errors++
        unexpected++
        sampleError ??= String(error)
      }
    }
  }
  await Promise.all(Array.from({ length: options.connections }, worker))
  const seconds = (performance.now() - started) / 1000
  await pool.close()
  const sorted = Float64Array.from(latencies).sort()
  return {
    requests: latencies.length,
    seconds,
    rps: latencies.length / seconds,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted.length ? sorted[sorted.length - 1]! : NaN,
    statuses,
    unexpected,
    errors,
    ...(sampleError !== undefined ? { sampleError } : {})
  }
}

export interface SseEvent {
  readonly id: string | undefined
  readonly event: string
  readonly data: string
}

export interface SseStream {
  /** Resolves once the server sent its first bytes (Trawl sends ": connected"). */
  readonly connected: Promise<void>
  readonly close: () => void
}

/** Reads `text/event-stream` from GET baseUrl+path; calls `onEvent` per event. */
export const openSse = (baseUrl: string, path: string, headers: Record<string, string>, onEvent: (e: SseEvent) => void, onError: (e: Error) => void): SseStream => {
  let res: IncomingMessage | undefined
  let closed = false
  let resolveConnected!: () => void
  let rejectConnected!: (e: Error) => void
  const connected = new Promise<void>((res, rej) => {
    resolveConnected = res
    rejectConnected = rej
  })
  const req = httpRequest(baseUrl + path, { method: "GET", headers: { accept: "text/event-stream", ...headers } }, (r) => {
    res = r
    if (r.statusCode !== 200) {
      let text = ""
      r.on("data", (d) => (text += d))
      r.on("end", () => rejectConnected(new Error(`SSE ${path}: ${r.statusCode} ${text.slice(0, 300)}`)))
      return
    }
    r.setEncoding("utf8")
    let buf = ""
    let first = true
    r.on("data", (chunk: string) => {
      if (first) {
        first = false
        resolveConnected()
      }
      buf += chunk
      let sep: number
      while ((sep = buf.indexOf("\n\n")) >= 0) {
        const block = buf.slice(0, sep)
        buf = buf.slice(sep + 2)
        let id: string | undefined
        let event = "message"
        const data: Array<string> = []
        for (const line of block.split("\n")) {
          if (line.startsWith(":")) continue
          const colon = line.indexOf(":")
          const field = colon < 0 ? line : line.slice(0, colon)
          const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "")
          if (field === "id") id = value
          else if (field === "event") event = value
          else if (field === "data") data.push(value)
        }
        if (data.length > 0) onEvent({ id, event, data: data.join("\n") })
      }
    })
    r.on("end", () => {
      if (!closed) onError(new Error(`SSE ${path} ended by the server`))
    })
    r.on("error", (e) => {
      if (!closed) onError(e)
    })
  })
  req.on("error", (e) => {
    rejectConnected(e)
    if (!closed) onError(e)
  })
  req.end()
  return {
    connected,
    close: () => {
      closed = true
      res?.destroy()
      req.destroy()
    }
  }
}
