/**
 * API benchmark: the full Trawl stack against a bare `node:http` handler doing the same read.
 *
 *   npm run bench:api
 *   npm run bench:api -- --connections 64 --duration 10 --warmup 2 --rounds 2 --tenants 8 --keys 19
 *
 * Full stack: the real server process (embedded PGlite, or DATABASE_URL [+ REDIS_URL] on a fresh
 * test database), `GET /v1/iam/identities/{owner}/api-keys/{kid}` with `x-api-key`: routing,
 * envelope middleware, key authentication (cached), per-key rate limit, permission check, one SQL
 * read, response schema encoding. Requests are spread over tenants × keys API keys (each
 * 5000/min, so at most 84/s per key) so that none is rate-limited at the measured rate (8 tenants: up to ~12 700 req/s).
 *
 * Bare: bench/support/bare-server.ts, `node:http` + one primary-key SELECT of the same row through
 * @effect/sql-pg's PgClient, answered with JSON.stringify(row); on its own PGlite behind Trawl's
 * EmbeddedPgServer (with a mirror of api_keys holding the same rows), or on the same DATABASE_URL
 * database. Same URLs, same headers, same load settings.
 *
 * Load: autocannon in this process (separate from both servers), fixed concurrency, keep-alive.
 * Both servers run side by side but only one is loaded at a time: a warm-up of each, then the
 * measured `--duration` seconds of each split into `--rounds` slices taken in the order
 * full, bare, bare, full, ... so that drifting load from other processes on a shared machine hits
 * both alike. Each target's figures are over all its slices (p50/p99 over every response).
 * Last line: `api ratio=<full rps / bare rps> p99_ratio=<full p99 / bare p99>`.
 *
 *   npm run bench:api -- --tracing              # defaults: --warmup 5 --duration 20 --rounds 4
 *
 * Tracing cost instead (docs/observability.md): two Trawl servers, the same in all but that one
 * exports traces, metrics and logs over OTLP (OTEL_EXPORTER_OTLP_ENDPOINT, to a receiver in this
 * process that reads and drops them, at the default export intervals) and the other has tracing off. Each
 * gets its own tenants and keys; the same load and rounds. In its figures "full" is the server with
 * tracing on and "bare" the one with it off. Last line: `api tracing_ratio=<on rps / off rps>
 * p99_ratio=<on p99 / off p99>` (goal >= 0.9).
 */
import { createServer } from "node:http"
import { bootstrap } from "./support/bootstrap.ts"
import { f, log, logSettings, measure, options, probe, runComparison, startTrawl, summarize } from "./support/compare.ts"
import { flag } from "./support/options.ts"
import { cleanupAll, installExitHandlers, onCleanup, startBare } from "./support/processes.ts"

/** An OTLP/HTTP sink on loopback: counts what it is sent and answers 200, nothing more. */
const startOtlpSink = async () => {
  const got = { requests: 0, bytes: 0, byPath: new Map<string, number>() }
  const server = createServer((req, res) => {
    req.on("data", (c: Buffer) => (got.bytes += c.length))
    req.on("end", () => {
      got.requests++
      got.byPath.set(req.url ?? "", (got.byPath.get(req.url ?? "") ?? 0) + 1)
      res.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  onCleanup("OTLP sink", () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve())
      server.closeAllConnections()
    }))
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, got }
}

/** Trawl with tracing on against Trawl with tracing off (see the header). */
const tracingMain = async () => {
  installExitHandlers()
  logSettings("api --tracing")
  const sink = await startOtlpSink()
  // The export intervals are the defaults (spans every 5 s or per 1000, metrics every 60 s): the
  // cost measured is that of a node as it runs, not of an exporter pushed to send more often.
  const on = await startTrawl("api-traced", {
    OTEL_EXPORTER_OTLP_ENDPOINT: sink.url,
    // The node's default (http/json) unless this bench is run with OTEL_EXPORTER_OTLP_PROTOCOL set.
    ...(process.env.OTEL_EXPORTER_OTLP_PROTOCOL ? { OTEL_EXPORTER_OTLP_PROTOCOL: process.env.OTEL_EXPORTER_OTLP_PROTOCOL } : {})
  })
  const off = await startTrawl("api")
  const settings = { tenants: options.tenants, keysPerTenant: options.keysPerTenant, rateLimitPerMinute: options.keyRpm }
  const onTargets = (await bootstrap(on.baseUrl, settings)).targets
  const offTargets = (await bootstrap(off.baseUrl, settings)).targets
  await probe(on.baseUrl, onTargets, "tracing on")
  await probe(off.baseUrl, offTargets, "tracing off")
  log(`tracing on: OTLP/HTTP (${process.env.OTEL_EXPORTER_OTLP_PROTOCOL || "http/json"}) to ${sink.url} (default export intervals); in the figures below "full" = tracing on, "bare" = tracing off`)
  const measured = await measure({ full: on, bare: off }, { full: onTargets, bare: offTargets })
  const traces = sink.got.byPath.get("/v1/traces") ?? 0
  log(`OTLP sink received ${sink.got.requests} exports (${traces} of traces), ${f(sink.got.bytes / 1e6, 1)} MB`)
  if (traces === 0) throw new Error("the traced server exported no traces: the comparison would mean nothing")
  const { ratio, p99Ratio } = summarize(
    measured,
    (ratio, p99Ratio) => `throughput tracing on/off ${f(ratio, 3)} (goal >= 0.90: ${ratio >= 0.9 ? "met" : "NOT met"}), p99 on/off ${f(p99Ratio, 3)}`
  )
  await cleanupAll()
  log(`api tracing_ratio=${f(ratio, 3)} p99_ratio=${f(p99Ratio, 3)}`)
}

const main = async () => {
  installExitHandlers()
  logSettings("api")

  // 1. The real Trawl server.
  const trawl = await startTrawl("api")
  const { targets, rows } = await bootstrap(trawl.baseUrl, { tenants: options.tenants, keysPerTenant: options.keysPerTenant, rateLimitPerMinute: options.keyRpm })
  const path = "GET /v1/iam/identities/{ownerIdentityId}/api-keys/{apiKeyId}"
  const fullSample = await probe(trawl.baseUrl, targets, "full")
  log(`full stack: ${path} over ${targets.length} keys; a response is ${Buffer.byteLength(fullSample)} bytes`)

  // 2. The bare handler, started now but loaded only in its own phases.
  const bare = await startBare({ databaseUrl: trawl.databaseUrl, rows })
  const bareSample = await probe(bare.baseUrl, targets, "bare")
  log(`bare node:http: same URLs and headers; a response is ${Buffer.byteLength(bareSample)} bytes`)

  // 3. Warm-up, measured rounds, summary.
  const measured = await measure({ full: trawl, bare }, targets)
  const { ratio, p99Ratio } = summarize(
    measured,
    (ratio, p99Ratio) =>
      `throughput full/bare ${f(ratio, 3)} (goal >= 0.40: ${ratio >= 0.4 ? "met" : "NOT met"}), ` +
      `p99 full/bare ${f(p99Ratio, 3)} (goal <= 2.00: ${p99Ratio <= 2 ? "met" : "NOT met"})`
  )
  await cleanupAll()
  log(`api ratio=${f(ratio, 3)} p99_ratio=${f(p99Ratio, 3)}`)
}

runComparison(flag("tracing") ? tracingMain : main)
