import { Context, Effect, Schema, SchemaTransformation } from "effect"
import { HttpApiSchema } from "effect/http-api"

/** One offending input path of a malformed request. */
export const ErrorDetail = Schema.Struct({
  path: Schema.String,
  code: Schema.String,
  message: Schema.String
})
export type ErrorDetail = typeof ErrorDetail.Type

/**
 * The single failure type of every handler. `status` picks the HTTP status,
 * `code` is the machine-readable error code of the envelope.
 */
export class ApiError extends Schema.TaggedError<ApiError>()("ApiError", {
  status: Schema.Int,
  code: Schema.String,
  message: Schema.String,
  details: Schema.optional(Schema.Array(ErrorDetail)),
  /** Seconds, sent as `Retry-After`. */
  retryAfter: Schema.optional(Schema.Int),
  extra: Schema.optional(Schema.Record(Schema.String, Schema.Unknown))
}) {}

export const fail = (status: number, code: string, message: string, more?: {
  details?: ReadonlyArray<ErrorDetail>
  retryAfter?: number
  extra?: Record<string, unknown>
}) => Effect.fail(new ApiError({ status, code, message, ...more }))

export const notFound = (what = "resource") => fail(404, "not_found", `${what} not found`)
export const forbidden = (message = "insufficient permission") => fail(403, "forbidden", message)
export const conflict = (code: string, message: string) => fail(409, code, message)
export const validationError = (details: ReadonlyArray<ErrorDetail>, message = "request is not valid") =>
  fail(400, "validation_error", message, { details })

/** The request id of the current request, set by the global middleware. */
export const RequestId = Context.Reference<string>("trawl/RequestId", { defaultValue: () => "none" })

/**
 * Headers a handler or an error wants on the response (Retry-After, RateLimit-*).
 * The global middleware provides a fresh bag per request and copies it onto the response.
 */
export const ResponseHeaders = Context.Reference<Record<string, string> | undefined>("trawl/ResponseHeaders", {
  defaultValue: () => undefined
})

export const ErrorEnvelope = Schema.Struct({
  status: Schema.Literal("error"),
  code: Schema.String,
  error: Schema.StructWithRest(
    Schema.Struct({
      message: Schema.String,
      requestId: Schema.String,
      details: Schema.optional(Schema.Array(ErrorDetail))
    }),
    [Schema.Record(Schema.String, Schema.Unknown)]
  )
})
export type ErrorEnvelope = typeof ErrorEnvelope.Type

/** Most details an error lists: a body with 50 000 unknown fields is told about the first ones, not answered with megabytes. */
export const MAX_ERROR_DETAILS = 100

export const errorEnvelope = (
  code: string,
  message: string,
  requestId: string,
  details?: ReadonlyArray<ErrorDetail>,
  extra?: Record<string, unknown>
): ErrorEnvelope => {
  const listed = details && details.length > MAX_ERROR_DETAILS ? details.slice(0, MAX_ERROR_DETAILS) : details
  const told = listed !== details ? `${message} (the first ${MAX_ERROR_DETAILS} of ${details!.length} faults are listed)` : message
  return {
    status: "error",
    code,
    error: { ...extra, message: told, requestId, ...(listed && listed.length > 0 ? { details: listed } : {}) }
  }
}

const descriptions: Record<number, string> = {
  400: "Malformed request (validation_error, invalid_idempotency_key, invalid_sort_field, invalid_filter)",
  401: "Missing or invalid authentication (unauthorized)",
  402: "Insufficient credit (insufficient_credit)",
  403: "Insufficient permission (forbidden, no_active_plan, service_disabled_on_plan)",
  404: "Absent, or another tenant's (not_found)",
  409: "State conflict",
  413: "Body larger than allowed (payload_too_large)",
  415: "A body that is not JSON by its Content-Type (unsupported_media_type)",
  422: "Business validation failure",
  429: "Rate limit or quota exceeded (rate_limited, quota_exceeded, concurrent_limit_exceeded)",
  503: "A critical dependency is unavailable (dependency_unavailable)"
}

const cache = new Map<number, Schema.Top>()

/**
 * The wire schema of `ApiError` for one HTTP status: the error envelope in the
 * OpenAPI document, and the encoder that turns an `ApiError` of that status into it.
 */
export const ErrorStatus = (status: number) => {
  const cached = cache.get(status)
  if (cached) return cached as ReturnType<typeof makeErrorStatus>
  const made = makeErrorStatus(status)
  cache.set(status, made)
  return made
}

const makeErrorStatus = (status: number) =>
  ErrorEnvelope.annotate({ identifier: `Error${status}`, description: descriptions[status] ?? "Error" }).pipe(
    Schema.decodeTo(
      Schema.declare((u): u is ApiError => u instanceof ApiError && u.status === status),
      SchemaTransformation.transformEffect({
        decode: (e) =>
          Effect.succeed(
            new ApiError({ status, code: e.code, message: e.error.message, details: e.error.details })
          ),
        encode: (err) =>
          Effect.gen(function*() {
            const requestId = yield* RequestId
            if (err.retryAfter !== undefined) {
              const bag = yield* ResponseHeaders
              if (bag) bag["retry-after"] = String(err.retryAfter)
            }
            return errorEnvelope(err.code, err.message, requestId, err.details, err.extra)
          })
      })
    ),
    HttpApiSchema.status(status)
  )

/** Error schemas an endpoint declares, by status. */
export const errors = (...statuses: ReadonlyArray<number>) => statuses.map(ErrorStatus)
