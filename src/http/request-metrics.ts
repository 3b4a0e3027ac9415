import { Context, Effect } from "effect"
import { HttpRouter, HttpServerRequest, type HttpServerResponse } from "effect/http"
import { recordHttpRequest } from "../observability/metrics.ts"

/** The route template the router matched for the request under way, filled in by `routeName`. */
const MatchedRoute = Context.Reference<{ route: string } | undefined>("trawl/MatchedRoute", { defaultValue: () => undefined })

/**
 * Counts every answered request and its latency, by method, route template and status
 * (`trawl_http_requests_total`, `trawl_http_request_duration_seconds`; docs/observability.md). It
 * wraps the whole server chain (HttpRouter.serve's `middleware`), so the status is the one sent,
 * after the envelope middleware made its answer, and the latency runs until the response is written.
 * Requests no route matched count under the route `unmatched`: a path is never a label.
 */
export const requestMetrics = <E, R>(
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> =>
  Effect.withFiber((fiber) => {
    const started = performance.now()
    const request = Context.getUnsafe(fiber.context as Context.Context<HttpServerRequest.HttpServerRequest>, HttpServerRequest.HttpServerRequest)
    const matched = { route: "unmatched" }
    return app.pipe(
      Effect.provideService(MatchedRoute, matched),
      Effect.onExit((exit) =>
        Effect.sync(() => recordHttpRequest(request.method, matched.route, exit._tag === "Success" ? exit.value.status : 500, (performance.now() - started) / 1000))
      )
    )
  })

/**
 * Notes the matched route's template for `requestMetrics`: a route middleware, so it runs inside
 * the router's match, where the route is known. Provide its layer to the routes it names.
 */
export const routeName = HttpRouter.middleware((app) =>
  Effect.withFiber((fiber) => {
    const matched = fiber.getRef(MatchedRoute)
    const route = Context.getOrUndefined(fiber.context, HttpRouter.RouteContext)
    if (matched && route) matched.route = route.route.path
    return app
  })
).layer
