// Minimal typing of the parts of autocannon@9 the API benchmark uses (the package ships no types).
declare module "autocannon" {
  import type { EventEmitter } from "node:events"

  export interface AutocannonRequest {
    method?: string
    path?: string
    headers?: Record<string, string>
    body?: string | Buffer
  }

  export interface AutocannonClient {
    setRequests(requests: ReadonlyArray<AutocannonRequest>): void
  }

  export interface AutocannonOptions {
    url: string
    connections?: number
    duration?: number
    amount?: number
    pipelining?: number
    timeout?: number
    workers?: number
    headers?: Record<string, string>
    requests?: ReadonlyArray<AutocannonRequest>
    setupClient?: (client: AutocannonClient) => void
    skipAggregateResult?: boolean
  }

  export interface Histogram {
    average: number
    mean: number
    stddev: number
    min: number
    max: number
    total: number
    p50: number
    p90: number
    p99: number
    [key: string]: number
  }

  export interface AutocannonResult {
    duration: number
    start: Date
    finish: Date
    latency: Histogram
    requests: Histogram
    throughput: Histogram
    errors: number
    timeouts: number
    non2xx: number
    mismatches: number
    resets: number
    "1xx": number
    "2xx": number
    "3xx": number
    "4xx": number
    "5xx": number
    statusCodeStats: Record<string, { count: number }>
  }

  export interface Instance extends EventEmitter, PromiseLike<AutocannonResult> {
    stop(): void
  }

  function autocannon(options: AutocannonOptions): Instance
  export default autocannon
}
