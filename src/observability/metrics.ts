import { Context, Metric } from "effect"

/**
 * Every metric of Trawl, in one place (docs/observability.md lists them with their labels). They
 * live in the process's default metric registry, which `GET /metrics` formats for Prometheus and
 * the OTLP exporter reads when OTEL_EXPORTER_OTLP_ENDPOINT is set. The cluster library adds its
 * own (`effect_cluster_*`: entities per type, shards, runners) to the same registry.
 *
 * Updates are plain synchronous calls, so that engines and callbacks outside Effect can record
 * too. A series is one metric object per label set, made once and kept: labels take a small,
 * fixed set of values (route templates, statuses, engines, classifications), never ids or URLs.
 */

const registry = Context.empty()

const latencySeconds = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

/** One metric per label set, made on first use; `labels` keys come in a fixed order per metric. */
const series = <M>(make: (attributes: Record<string, string>) => M) => {
  const made = new Map<string, M>()
  return (attributes: Record<string, string>): M => {
    const key = Object.values(attributes).join("\u0000")
    let m = made.get(key)
    if (m === undefined) {
      m = make(attributes)
      made.set(key, m)
    }
    return m
  }
}

const counter = (name: string, description: string) =>
  series((attributes) => Metric.counter(name, { description, attributes, incremental: true }))
const histogram = (name: string, description: string, boundaries: ReadonlyArray<number>) =>
  series((attributes) => Metric.histogram(name, { description, attributes, boundaries }))
const gauge = (name: string, description: string) => series((attributes) => Metric.gauge(name, { description, attributes }))

const httpRequests = counter("trawl_http_requests_total", "HTTP requests answered, by method, route template and status")
const httpDuration = histogram("trawl_http_request_duration_seconds", "HTTP request latency until the response is written, by method and route template", latencySeconds)

/** One answered HTTP request; `route` is the matched template (`/v1/scraper/jobs/:id`) or `unmatched`. */
export const recordHttpRequest = (method: string, route: string, status: number, seconds: number) => {
  httpRequests({ method, route, status: String(status) }).updateUnsafe(1, registry)
  httpDuration({ method, route }).updateUnsafe(seconds, registry)
}

const jobsFinished = counter("trawl_jobs_finished_total", "Jobs ended, by outcome (done, failed, dead), winning or last engine and classification")
const jobAttempts = histogram("trawl_job_attempts", "Crawl attempts a job made in all, observed when it ends", [1, 2, 3, 4, 5, 6, 8, 10, 15])
const crawlAttempts = counter("trawl_crawl_attempts_total", "Crawl attempts, by engine and classification")
const crawlAttemptDuration = histogram("trawl_crawl_attempt_duration_seconds", "Crawl attempt latency by engine", latencySeconds)

export const recordJobFinished = (outcome: string, engine: string | null, classification: string, attempts: number) => {
  jobsFinished({ outcome, engine: engine ?? "none", classification }).updateUnsafe(1, registry)
  jobAttempts({}).updateUnsafe(attempts, registry)
}

export const recordCrawlAttempt = (engine: string, classification: string, seconds: number) => {
  crawlAttempts({ engine, classification }).updateUnsafe(1, registry)
  crawlAttemptDuration({ engine }).updateUnsafe(seconds, registry)
}

const webhookAttempts = counter("trawl_webhook_attempts_total", "Webhook delivery attempts, by resource type and outcome (delivered, retry, failed, manual_ok, manual_failed)")
const webhookDuration = histogram("trawl_webhook_attempt_duration_seconds", "Webhook delivery attempt latency (request sent to answer read), by outcome", latencySeconds)

export const recordWebhookAttempt = (resource: string, outcome: string, seconds: number) => {
  webhookAttempts({ resource, outcome }).updateUnsafe(1, registry)
  webhookDuration({ outcome }).updateUnsafe(seconds, registry)
}

const extractions = counter("trawl_extractions_finished_total", "Extractions ended, by type and outcome")
const extractionDuration = histogram("trawl_extraction_duration_seconds", "Extraction latency (the extraction work itself), by type and outcome", latencySeconds)

export const recordExtraction = (type: string, outcome: string, seconds: number) => {
  extractions({ type, outcome }).updateUnsafe(1, registry)
  extractionDuration({ type, outcome }).updateUnsafe(seconds, registry)
}

/** Read at each scrape (and each OTLP export): what the database and the machine say now. */
const queued = gauge("trawl_queue_depth", "Resources waiting to be worked on, by kind (jobs and extractions queued, webhook deliveries pending)")
const oldestQueued = gauge("trawl_queue_oldest_age_seconds", "Age of the oldest queued resource, by kind (0 when none waits)")
const poolConnections = gauge("trawl_db_pool_connections", "This node's database connections, by state (active, idle, idle_in_transaction, ...)")
const poolMax = gauge("trawl_db_pool_max_connections", "The most database connections this node opens")
const browserProcesses = gauge("trawl_browser_processes", "Browser processes this node runs (top-level, one per browser)")
const browserRss = gauge("trawl_browser_rss_bytes", "Resident memory of this node's browsers with all their child processes")
const eventLoopDelay = gauge("trawl_event_loop_delay_seconds", "How late this node's event loop ran its timers, by quantile (p50, p99, max), over the time since the previous scrape")

export interface QueueSample {
  readonly kind: "jobs" | "extractions" | "webhook_deliveries"
  readonly depth: number
  readonly oldestAgeSeconds: number
}

export const setQueue = (samples: ReadonlyArray<QueueSample>) => {
  for (const s of samples) {
    queued({ kind: s.kind }).updateUnsafe(s.depth, registry)
    oldestQueued({ kind: s.kind }).updateUnsafe(s.oldestAgeSeconds, registry)
  }
}

/** The states PostgreSQL reports a session in (pg_stat_activity.state), all set so that a state that emptied reads 0. */
const POOL_STATES = ["active", "idle", "idle_in_transaction", "idle_in_transaction_aborted", "fastpath_function_call", "disabled"]

export const setPool = (max: number, byState: ReadonlyMap<string, number>) => {
  poolMax({}).updateUnsafe(max, registry)
  for (const state of new Set([...POOL_STATES, ...byState.keys()])) poolConnections({ state }).updateUnsafe(byState.get(state) ?? 0, registry)
}

export const setBrowsers = (processes: number, rssBytes: number) => {
  browserProcesses({}).updateUnsafe(processes, registry)
  browserRss({}).updateUnsafe(rssBytes, registry)
}

/** The event loop's delay since the previous reading, in seconds by quantile. */
export const setEventLoopDelay = (p50: number, p99: number, max: number) => {
  eventLoopDelay({ quantile: "p50" }).updateUnsafe(p50, registry)
  eventLoopDelay({ quantile: "p99" }).updateUnsafe(p99, registry)
  eventLoopDelay({ quantile: "max" }).updateUnsafe(max, registry)
}
