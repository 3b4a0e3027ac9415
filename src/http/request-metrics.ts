import { Context, Effect, Stream } from "effect"
import { HttpBody, HttpRouter, HttpServerResponse } from "effect/http"
import { recordHttpRequest } from "../observability/metrics.ts"

/** The route template the router matched for the request under way, filled in by `routeName`. */
const MatchedRoute = Context.Reference<{ route: string } | undefined>("trawl/MatchedRoute", { defaultValue: () => undefined })

/**
 * Counts every answered request and its latency, by method, route template and status
 * (`trawl_http_requests_total`, `trawl_http_request_duration_seconds`; docs/observability.md).
 * `answer` is the envelope middleware's whole answer (it wraps every route, matched or not, and
 * never fails), so the status is the one sent. The latency runs until the response is handed to
 * the server to write; for a streamed body (an event stream), until the stream ends.
 *
 * It runs inside the router's global middleware rather than as HttpRouter.serve's `middleware`:
 * a serve middleware takes every request off Effect's one-frame request path, which cost more
 * than the metrics themselves. Requests no route matched count under `unmatched`: a path is
 * never a label.
 */
export const withRequestMetrics = <E, R>(
  method: string,
  answer: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> => {
  const started = performance.now()
  const matched = { route: "unmatched" }
  const record = (status: number) => recordHttpRequest(method, matched.route, status, (performance.now() - started) / 1000)
  return Effect.provideService(answer, MatchedRoute, matched).pipe(
    Effect.map((response) => {
      const body = response.body
      if (body._tag !== "Stream") {
        record(response.status)
        return response
      }
      return HttpServerResponse.setBody(
        response,
        HttpBody.stream(
          Stream.onExit(body.stream, () => Effect.sync(() => record(response.status))),
          body.contentType,
          body.contentLength
        )
      )
    }),
    Effect.onError(() => Effect.sync(() => record(500)))
  )
}

/**
 * Notes the matched route's template for `withRequestMetrics`: a route middleware, so it runs
 * inside the router's match, where the route is known. Provide its layer to the routes it names.
 */
export const routeName = HttpRouter.middleware((app) =>
  Effect.withFiber((fiber) => {
    const matched = fiber.getRef(MatchedRoute)
    const route = Context.getOrUndefined(fiber.context, HttpRouter.RouteContext)
    if (matched && route) matched.route = route.route.path
    return app
  })
).layer
