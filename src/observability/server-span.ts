import { Clock, Effect, Exit, Option } from "effect"
import { HttpMiddleware, type HttpServerRequest, type HttpServerResponse, HttpTraceContext } from "effect/http"

/**
 * The server span of an HTTP request (docs/observability.md, "Traces"): the span every other span of
 * the request hangs below, continuing a caller's `traceparent`. The server makes it here instead of
 * with the library's `HttpMiddleware.tracer` (turned off by `libraryServerSpansOff`), because that one
 * parses each request's URL again, walks its headers and writes attributes a server span does not
 * need, which made up much of what tracing cost a request (docs/performance.md). The attributes are
 * the OpenTelemetry HTTP server ones: method, route (the router adds it), path, scheme, status,
 * client address and user agent; a 5xx answer marks the span failed.
 */
export const withServerSpan = <E, R>(
  request: HttpServerRequest.HttpServerRequest,
  handle: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> =>
  Effect.flatMap(
    Effect.makeSpan(request.method, { kind: "server", parent: Option.getOrUndefined(HttpTraceContext.fromHeaders(request.headers)) }),
    (span) => {
      if (span.sampled) {
        const query = request.url.indexOf("?")
        span.attribute("http.request.method", request.method)
        span.attribute("url.path", query < 0 ? request.url : request.url.slice(0, query))
        span.attribute("url.scheme", "http")
        const agent = request.headers["user-agent"]
        if (agent !== undefined) span.attribute("user_agent.original", agent)
        if (Option.isSome(request.remoteAddress)) span.attribute("client.address", request.remoteAddress.value)
      }
      return Effect.withParentSpan(handle, span, { captureStackTrace: false }).pipe(
        Effect.onExit((exit) =>
          Effect.flatMap(Clock.currentTimeNanos, (now) =>
            Effect.sync(() => {
              if (Exit.isSuccess(exit)) {
                const status = exit.value.status
                span.attribute("http.response.status_code", status)
                span.end(now, status >= 500 ? Exit.fail(new Error(`answered ${status}`)) : exit)
              } else {
                span.end(now, exit)
              }
            })
          )
        )
      )
    }
  )

/** With this, the library's HTTP server makes no span of its own (the server makes `withServerSpan`). */
export const libraryServerSpansOff = HttpMiddleware.TracerDisabledWhen
