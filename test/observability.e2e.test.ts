import { createServer, type Server } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "./support/otlp-receiver.ts"
import { client, createTestDatabase, freePort, INTERNAL_TOKEN, type RunningServer, startServer } from "./support/server-process.ts"
import { until as untilWithin } from "./support/until.ts"

/** The waits here cross nodes and exporters: 45 s by default rather than the shared 30 s. */
const until = <A>(what: string, f: () => A | undefined | false | Promise<A | undefined | false>, timeoutMs = 45_000) => untilWithin(what, f, timeoutMs)

/**
 * Observability through real server processes (docs/observability.md): a job's spans reach an
 * OTLP receiver as one trace, from the HTTP request to every webhook attempt; `/metrics` moves as
 * jobs, deliveries and extractions run.
 */


/** A loopback site whose pages answer after `delayMs`, and a webhook receiver whose answers are scripted. */
const listen = async (handler: Parameters<typeof createServer>[1]) => {
  const server: Server = createServer(handler)
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()))
  return {
    base: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r())
        server.closeAllConnections()
      })
  }
}

const site = (delayMs: number) =>
  listen((req, res) => {
    setTimeout(() => {
      res.writeHead(200, { "content-type": "text/html" })
      res.end(`<html><head><title>t</title></head><body><p>page ${req.url}</p></body></html>`)
    }, delayMs)
  })

const hooks = async (answer: (n: number) => number) => {
  let n = 0
  const server = await listen((req, res) => {
    req.resume()
    req.on("end", () => {
      n++
      res.writeHead(answer(n), { "content-type": "text/plain" }).end("ok")
    })
  })
  return { ...server, url: `${server.base}/hook`, count: () => n }
}

/** The spans of one trace, and a check that they hang together under its root. */
const traceOf = (spans: ReadonlyArray<ReceivedSpan>, traceId: string) => spans.filter((s) => s.traceId === traceId)

describe("traces over OTLP", () => {
  let otlp: OtlpReceiver
  let server: RunningServer
  let pages: Awaited<ReturnType<typeof site>>
  let hook: Awaited<ReturnType<typeof hooks>>

  beforeAll(async () => {
    otlp = await startOtlpReceiver()
    pages = await site(0)
    // The first delivery attempt is refused, so the job's trace holds two webhook attempts.
    hook = await hooks((n) => (n === 1 ? 503 : 200))
    server = await startServer({
      ALLOW_PRIVATE_TARGETS: "true",
      WEBHOOK_RETRY_SCALE: "0.001",
      LOG_LEVEL: "debug",
      // Protobuf here (the other test takes the default, JSON), exported often so that the test need not wait.
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
      OTEL_SERVICE_NAME: "trawl-under-test",
      OTEL_BSP_SCHEDULE_DELAY: "200",
      OTEL_BLRP_SCHEDULE_DELAY: "200",
      OTEL_METRIC_EXPORT_INTERVAL: "500"
    })
  })
  afterAll(async () => {
    await server?.stop()
    await Promise.all([otlp?.close(), pages?.close(), hook?.close()])
  })

  it("follows a job from its HTTP request through its entity, crawl attempt and storage to each webhook attempt, in one trace", async () => {
    const api = client(server.baseUrl)
    const t = await api.createTenant()
    const created = await api.post("/v1/scraper/jobs", { url: `${pages.base}/a`, webhookUrl: hook.url }, t.apiKey)
    expect(created.status).toBe(201)
    const requestId = created.headers.get("x-request-id")!

    // The request's own span: the server span of the route, which the trace starts from.
    const root = await until("the request's span", () =>
      otlp.spans.find((s) => s.kind === 2 && s.attributes["http.route"] === "/v1/scraper/jobs" && s.attributes["http.request.method"] === "POST"))
    expect(root.parentSpanId).toBe("")
    expect(root.resource["service.name"]).toBe("trawl-under-test")
    expect(root.attributes["http.response.status_code"]).toBe(201)
    expect(root.attributes["url.path"]).toBe("/v1/scraper/jobs")
    expect(root.attributes["url.scheme"]).toBe("http")
    // One server span per request: the library's own (turned off) would be a second, above it.
    expect(otlp.spans.filter((s) => s.traceId === root.traceId && s.kind === 2 && s.name === "POST")).toHaveLength(1)

    // Both webhook attempts (503, then 200) arrive in the request's trace.
    const attempts = await until("both webhook attempts in the trace", () => {
      const found = traceOf(otlp.spans, root.traceId).filter((s) => s.name === "webhook.attempt")
      return found.length >= 2 && found
    })
    expect(attempts.map((s) => s.attributes["trawl.webhook.attempt"]).sort()).toEqual([1, 2])
    expect(attempts.map((s) => s.attributes["http.response.status_code"]).sort()).toEqual([200, 503])
    expect(hook.count()).toBe(2)

    // One tree: every span but the root has its parent in the trace (a parent ends after its
    // children, so it may come in a later export).
    const orphans = () => {
      const spans = traceOf(otlp.spans, root.traceId)
      const ids = new Set(spans.map((s) => s.spanId))
      return spans.filter((s) => s.spanId !== root.spanId && !ids.has(s.parentSpanId)).map((s) => s.name)
    }
    await until("a whole trace, every span under the request's", () => orphans().length === 0, 10_000)
    const trace = traceOf(otlp.spans, root.traceId)
    const names = new Set(trace.map((s) => s.name))
    // The entity message (its server span on the runner), the crawl and its attempt by engine, the storage.
    for (const name of ["Job.Run", "crawl", "crawl.attempt http", "JobRepo.claim", "JobRepo.finish"]) {
      expect(names, `span ${name} in ${[...names].join(", ")}`).toContain(name)
    }
    const attempt = trace.find((s) => s.name === "crawl.attempt http")!
    expect(attempt.attributes).toMatchObject({ "trawl.engine": "http", "trawl.classification": "ok", "http.response.status_code": 200 })

    // The job's log line carries the request id and the trace id, on stdout as JSON and over OTLP.
    const line = await until("the job's JSON log line", () =>
      server.output().split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l)).find((l) => l.message === "job ended"))
    expect(line).toMatchObject({ level: "DEBUG", requestId, traceId: root.traceId, annotations: { jobId: created.json.data.id, status: "done" } })
    await until("the log record over OTLP", () => otlp.logs.find((l) => l.body === "job ended" && l.traceId === root.traceId))
    await until("metrics over OTLP", () => otlp.metricNames.has("trawl_http_requests_total") && otlp.metricNames.has("trawl_jobs_finished_total"))
    expect([...(otlp.contentTypes.get("/v1/traces") ?? [])]).toEqual(["application/x-protobuf"])
  })

  it("continues a trace the caller started (W3C traceparent)", async () => {
    const api = client(server.baseUrl)
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736"
    const res = await api.call("GET", "/healthz", { headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } })
    expect(res.status).toBe(200)
    const span = await until("the continued span", () => otlp.spans.find((s) => s.traceId === traceId))
    expect(span.parentSpanId).toBe("00f067aa0ba902b7")
  })
})

describe.skipIf(!process.env.DATABASE_URL)("traces across nodes (PostgreSQL)", () => {
  let otlp: OtlpReceiver
  const servers: Array<RunningServer> = []
  let pages: Awaited<ReturnType<typeof site>>

  beforeAll(async () => {
    otlp = await startOtlpReceiver()
    pages = await site(0)
    const databaseUrl = await createTestDatabase(process.env.DATABASE_URL!)
    const common = {
      DATABASE_URL: databaseUrl,
      ALLOW_PRIVATE_TARGETS: "true",
      SECRET_KEY: "ab".repeat(32),
      // The default protocol, http/json.
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_BSP_SCHEDULE_DELAY: "200"
    }
    servers.push(await startServer({ ...common, OTEL_RESOURCE_ATTRIBUTES: "service.instance.id=node-a" }))
    servers.push(await startServer({ ...common, OTEL_RESOURCE_ATTRIBUTES: "service.instance.id=node-b" }))
  })
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()))
    await Promise.all([otlp?.close(), pages?.close()])
  })

  it("a job created on one node and run on the other is one trace with spans of both", async () => {
    // Node B takes its share of the 16 shards some seconds after it joins: its own metric says when.
    await until("node B to hold shards", async () => {
      const res = await fetch(`${servers[1]!.baseUrl}/metrics`, { headers: { "x-internal-token": INTERNAL_TOKEN } })
      return (samples(await res.text()).get("effect_cluster_shards") ?? 0) > 0
    }, 60_000)
    const api = client(servers[0]!.baseUrl)
    const t = await api.createTenant()
    // Shards split over two runners: among 12 jobs created on node A, some run on node B.
    const ids: Array<string> = []
    for (let i = 0; i < 12; i++) {
      const created = await api.post("/v1/scraper/jobs", { url: `${pages.base}/n${i}` }, t.apiKey)
      expect(created.status).toBe(201)
      ids.push(created.json.data.id)
    }
    const crossed = await until("a trace that crosses nodes", () => {
      const roots = otlp.spans.filter((s) => s.kind === 2 && s.attributes["http.route"] === "/v1/scraper/jobs" && s.resource["service.instance.id"] === "node-a")
      return roots.find((r) => traceOf(otlp.spans, r.traceId).some((s) => s.name === "JobRepo.finish" && s.resource["service.instance.id"] === "node-b"))
    }, 60_000)
    // The entity's Run span ends after the finish inside it, so it may come in a later export.
    const trace = await until("the Run span of that trace on node B", () => {
      const spans = traceOf(otlp.spans, crossed.traceId)
      return spans.some((s) => s.name === "Job.Run" && s.resource["service.instance.id"] === "node-b") ? spans : undefined
    }, 30_000)
    expect(trace.some((s) => s.name === "JobRepo.finish" && s.resource["service.instance.id"] === "node-b")).toBe(true)
    expect([...(otlp.contentTypes.get("/v1/traces") ?? [])]).toEqual(["application/json"])
    // Each node's pool, as PostgreSQL sees its sessions (application_name names the node).
    const res = await fetch(`${servers[0]!.baseUrl}/metrics`, { headers: { "x-internal-token": INTERNAL_TOKEN } })
    const m = samples(await res.text())
    expect(m.get("trawl_db_pool_max_connections")).toBe(20)
    const open = [...m].filter(([k]) => k.startsWith("trawl_db_pool_connections{")).reduce((sum, [, v]) => sum + v, 0)
    expect(open).toBeGreaterThan(0)
    expect(open).toBeLessThanOrEqual(20)
  }, 180_000)
})

/** The samples of a Prometheus text, keyed by series (`name{labels}`). */
const samples = (text: string) =>
  new Map(text.split("\n").filter((l) => l !== "" && !l.startsWith("#")).map((l) => {
    const at = l.lastIndexOf(" ")
    return [l.slice(0, at), Number(l.slice(at + 1))] as const
  }))

describe("GET /metrics", () => {
  let server: RunningServer
  let pages: Awaited<ReturnType<typeof site>>
  let slow: Awaited<ReturnType<typeof site>>
  let hook: Awaited<ReturnType<typeof hooks>>
  let metricsPort: number

  beforeAll(async () => {
    pages = await site(0)
    slow = await site(2_500)
    hook = await hooks(() => 200)
    metricsPort = await freePort()
    server = await startServer({ ALLOW_PRIVATE_TARGETS: "true", METRICS_PORT: String(metricsPort) })
  })
  afterAll(async () => {
    await server?.stop()
    await Promise.all([pages?.close(), slow?.close(), hook?.close()])
  })

  const scrape = async () => {
    const res = await fetch(`${server.baseUrl}/metrics`, { headers: { "x-internal-token": INTERNAL_TOKEN } })
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8")
    return samples(await res.text())
  }

  it("asks for the internal token on the public port, and for none on METRICS_PORT", async () => {
    const none = await fetch(`${server.baseUrl}/metrics`)
    expect(none.status).toBe(401)
    expect(await none.json()).toMatchObject({ status: "error", code: "unauthorized" })
    const wrong = await fetch(`${server.baseUrl}/metrics`, { headers: { "x-internal-token": INTERNAL_TOKEN + "x" } })
    expect(wrong.status).toBe(401)
    const bearer = await fetch(`${server.baseUrl}/metrics`, { headers: { authorization: `Bearer ${INTERNAL_TOKEN}` } })
    expect(bearer.status).toBe(200)
    expect(server.output()).toContain(`metrics listening on http://127.0.0.1:${metricsPort}/metrics`)
    const own = await fetch(`http://127.0.0.1:${metricsPort}/metrics`, { headers: { "x-request-id": "scrape-0001" } })
    expect(own.status).toBe(200)
    expect(own.headers.get("x-request-id")).toBe("scrape-0001")
    const text = await own.text()
    expect(text).toContain("# TYPE trawl_http_requests_total counter")
    // every family says what it counts, the cluster library's too
    const typed = [...text.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1])
    const helped = new Set([...text.matchAll(/^# HELP (\S+) \S/gm)].map((m) => m[1]))
    expect(typed.length).toBeGreaterThan(10)
    expect(typed.filter((name) => !helped.has(name))).toEqual([])
    expect(text).toMatch(/^# HELP effect_cluster_shards Shards this node's runner holds$/m)
    const other = await fetch(`http://127.0.0.1:${metricsPort}/v1/openapi.json`)
    expect(other.status).toBe(404)
    expect(other.headers.get("x-request-id")).toMatch(/^req_/)
  })

  it("reports the event loop's delay since the previous scrape, by quantile", async () => {
    await scrape()
    await new Promise((r) => setTimeout(r, 300))
    const m = await scrape()
    const [p50, p99, max] = ["p50", "p99", "max"].map((q) => m.get(`trawl_event_loop_delay_seconds{quantile="${q}"}`))
    // Sampled every 10 ms: a loop that ran at all reads at least that much; an idle server far less than 5 s, even on a loaded box.
    for (const v of [p50, p99, max]) {
      expect(v).toBeGreaterThan(0)
      expect(v).toBeLessThan(5)
    }
    expect(p50!).toBeLessThanOrEqual(p99!)
    expect(p99!).toBeLessThanOrEqual(max!)
  })

  it("moves the named series as jobs, deliveries and extractions run", async () => {
    const api = client(server.baseUrl)
    const t = await api.createTenant()
    const before = await scrape()
    const at = (m: Map<string, number>, series: string) => m.get(series) ?? 0

    const created = await api.post("/v1/scraper/jobs", { url: `${pages.base}/m`, webhookUrl: hook.url }, t.apiKey)
    expect(created.status).toBe(201)
    await until("the job's delivery", () => hook.count() >= 1)
    // Jobs to a slow site of one domain queue behind its politeness slots.
    const slowJobs = await api.post("/v1/scraper/jobs/bulk", { jobs: Array.from({ length: 6 }, (_, i) => ({ url: `${slow.base}/s${i}` })) }, t.apiKey)
    expect(slowJobs.status, slowJobs.text).toBe(201)
    const queued = await until("a queue", async () => {
      const m = await scrape()
      return at(m, 'trawl_queue_depth{kind="jobs"}') > 0 && m
    })
    expect(at(queued, 'trawl_queue_oldest_age_seconds{kind="jobs"}')).toBeGreaterThan(0)
    const extraction = await api.post("/v1/extractor/extractions", { type: "article", inputFormat: "html", input: "<html><body><article><h1>Title</h1><p>Some text of an article that is long enough.</p></article></body></html>" }, t.apiKey)
    expect(extraction.status, extraction.text).toBe(201)

    const done = 'trawl_jobs_finished_total{outcome="done",engine="http",classification="ok"}'
    const after = await until("every job and the extraction to end", async () => {
      const m = await scrape()
      return at(m, done) - at(before, done) >= 7 && at(m, 'trawl_extraction_duration_seconds_count{type="article",outcome="done"}') > 0 && m
    }, 60_000)
    const moved = (series: string) => at(after, series) - at(before, series)
    expect(at(after, 'trawl_queue_depth{kind="jobs"}')).toBe(0)
    expect(moved('trawl_http_requests_total{method="POST",route="/v1/scraper/jobs",status="201"}')).toBe(1)
    expect(moved('trawl_http_request_duration_seconds_count{method="POST",route="/v1/scraper/jobs"}')).toBe(1)
    expect(moved('trawl_http_requests_total{method="POST",route="/v1/scraper/jobs/bulk",status="201"}')).toBe(1)
    expect(moved('trawl_jobs_finished_total{outcome="done",engine="http",classification="ok"}')).toBe(7)
    expect(moved('trawl_crawl_attempts_total{engine="http",classification="ok"}')).toBe(7)
    expect(moved("trawl_job_attempts_count")).toBe(7)
    expect(moved('trawl_webhook_attempts_total{resource="job",outcome="delivered"}')).toBe(1)
    expect(moved('trawl_webhook_attempt_duration_seconds_count{outcome="delivered"}')).toBe(1)
    expect(moved('trawl_extractions_finished_total{type="article",outcome="done"}')).toBe(1)
    expect(at(after, 'trawl_queue_oldest_age_seconds{kind="jobs"}')).toBe(0)
    // Requests no route matched are one series, whatever their path.
    await fetch(`${server.baseUrl}/no/such/${Math.random()}`)
    const last = await scrape()
    expect(at(last, 'trawl_http_requests_total{method="GET",route="unmatched",status="404"}')).toBeGreaterThan(0)
    expect([...last.keys()].some((k) => k.includes("/no/such"))).toBe(false)
    // The node's entities, database pool and browsers are there too.
    expect(last.has('effect_cluster_entities{type="Job"}')).toBe(true)
    expect(at(last, "trawl_db_pool_max_connections")).toBe(8)
    expect(at(last, "trawl_browser_processes")).toBe(0)
  })

  it("counts the browsers a browser crawl started, with their memory", async () => {
    const api = client(server.baseUrl)
    const t = await api.createTenant()
    const created = await api.post("/v1/scraper/jobs", { url: `${pages.base}/b`, escalation: [{ engine: "brave", attempts: 1, timeoutMs: 30_000 }] }, t.apiKey)
    expect(created.status, created.text).toBe(201)
    await until("the browser job", async () => (await api.get(`/v1/scraper/jobs/${created.json.data.id}`, t.apiKey)).json.data.status === "done", 60_000)
    // The browser stays up for the next job.
    const m = await scrape()
    expect(m.get("trawl_browser_processes")).toBe(1)
    expect(m.get("trawl_browser_rss_bytes")).toBeGreaterThan(10 * 1024 * 1024)
    expect(m.get('trawl_crawl_attempts_total{engine="brave",classification="ok"}')).toBe(1)
  })
})
