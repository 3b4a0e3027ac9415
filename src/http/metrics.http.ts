import { createServer } from "node:http"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { Config } from "../config.ts"
import { requestIdOf } from "./envelope-middleware.ts"
import { constantTimeEqual } from "../iam/secrets.ts"
import { Scrape } from "../observability/scrape.ts"
import { apiError } from "../schema/errors.ts"

/**
 * `GET /metrics` in Prometheus text (docs/observability.md): on the public listener behind the
 * internal token (`x-internal-token`, or `Authorization: Bearer <token>`, which Prometheus sends
 * from its `authorization` setting), and, with METRICS_PORT, on a listener of its own that serves
 * nothing else and asks for no token (keep that port on a private network).
 */
const PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"

export const MetricsRoute = Layer.unwrap(
  Effect.gen(function*() {
    const scrape = yield* Scrape
    const { internalTokens } = yield* Config
    return HttpRouter.add("GET", "/metrics", (request) => {
      const bearer = /^Bearer (.+)$/i.exec(request.headers["authorization"] ?? "")?.[1]
      const given = request.headers["x-internal-token"] ?? bearer ?? ""
      // Every configured token is compared, always, so timing tells nothing about which matched.
      let ok = false
      for (const token of internalTokens) ok = constantTimeEqual(given, token) || ok
      if (!ok || given === "") return Effect.fail(apiError(401, "unauthorized", "missing or invalid x-internal-token"))
      return Effect.map(scrape.prometheusText, (text) => HttpServerResponse.text(text, { contentType: PROMETHEUS_TEXT }))
    })
  })
)

/** The METRICS_PORT listener, on HOST; it prints its address once it listens. */
export const MetricsPortLive = Layer.effectDiscard(
  Effect.gen(function*() {
    const config = yield* Config
    if (config.metricsPort === undefined) return
    const scrape = yield* Scrape
    const run = Effect.runPromiseWith(yield* Effect.context<never>())
    const server = createServer((req, res) => {
      // every response carries its request id, as on the public port (contract §4)
      const header = req.headers["x-request-id"]
      res.setHeader("x-request-id", requestIdOf(Array.isArray(header) ? undefined : header))
      if ((req.method !== "GET" && req.method !== "HEAD") || req.url?.split("?")[0] !== "/metrics") {
        res.writeHead(404, { "content-type": "text/plain; charset=utf-8" }).end("only GET /metrics is served here\n")
        return
      }
      run(scrape.prometheusText).then(
        (text) => res.writeHead(200, { "content-type": PROMETHEUS_TEXT }).end(req.method === "HEAD" ? undefined : text),
        () => res.writeHead(500, { "content-type": "text/plain; charset=utf-8" }).end("metrics could not be read\n")
      )
    })
    const port = yield* Effect.acquireRelease(
      Effect.callback<number, Error>((resume) => {
        server.once("error", (e) => resume(Effect.fail(e)))
        server.listen(config.metricsPort, config.host, () => resume(Effect.succeed((server.address() as { port: number }).port)))
      }),
      () =>
        Effect.callback<void>((resume) => {
          server.close(() => resume(Effect.void))
          server.closeAllConnections()
        })
    ).pipe(Effect.orDie)
    const host = config.host.includes(":") ? `[${config.host}]` : config.host
    console.log(`metrics listening on http://${host}:${port}/metrics`)
  })
)
