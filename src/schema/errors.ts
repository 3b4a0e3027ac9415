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
 * What every error carries: `code` is the machine-readable code of the envelope, `details` the
 * offending inputs, `retryAfter` seconds sent as `Retry-After`, `extra` more fields of `error`.
 */
const errorFields = {
  code: Schema.String,
  message: Schema.String,
  details: Schema.optional(Schema.Array(ErrorDetail)),
  /** Seconds, sent as `Retry-After`. */
  retryAfter: Schema.optional(Schema.Int),
  extra: Schema.optional(Schema.Record(Schema.String, Schema.Unknown))
}

// The failures of handlers and services, one class per HTTP status (the catalogue is in
// docs/api.md, "Errors"). The status is the class's `httpApiStatus` annotation; `code` tells
// apart the failures of one status.

/** 400: a malformed request (validation_error, invalid_idempotency_key, invalid_sort_field, invalid_filter, invalid_token, ...). */
export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", errorFields, { httpApiStatus: 400 }) {
  get status() { return 400 as const }
}
/** 401: missing or invalid authentication (unauthorized, totp_required). */
export class Unauthenticated extends Schema.TaggedError<Unauthenticated>()("Unauthenticated", errorFields, { httpApiStatus: 401 }) {
  get status() { return 401 as const }
}
/** 402: insufficient credit (insufficient_credit). */
export class PaymentRequired extends Schema.TaggedError<PaymentRequired>()("PaymentRequired", errorFields, { httpApiStatus: 402 }) {
  get status() { return 402 as const }
}
/** 403: not permitted (forbidden, no_active_plan, csrf_failed, delegation_required, ...). */
export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", errorFields, { httpApiStatus: 403 }) {
  get status() { return 403 as const }
}
/** 404: absent, or another tenant's. */
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", errorFields, { httpApiStatus: 404 }) {
  get status() { return 404 as const }
}
/** 409: the resource's state does not allow it; the code names the conflict. */
export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", errorFields, { httpApiStatus: 409 }) {
  get status() { return 409 as const }
}
/** 413: a body larger than allowed. */
export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", errorFields, { httpApiStatus: 413 }) {
  get status() { return 413 as const }
}
/** 415: a body that is not JSON by its Content-Type. */
export class UnsupportedMediaType extends Schema.TaggedError<UnsupportedMediaType>()("UnsupportedMediaType", errorFields, { httpApiStatus: 415 }) {
  get status() { return 415 as const }
}
/** 422: a well-formed request that business rules refuse (invalid_job, unsafe_url, invalid_config, ...). */
export class Unprocessable extends Schema.TaggedError<Unprocessable>()("Unprocessable", errorFields, { httpApiStatus: 422 }) {
  get status() { return 422 as const }
}
/** 429: a rate limit or quota (rate_limited, quota_exceeded, concurrent_limit_exceeded, too_many_attempts). */
export class TooManyRequests extends Schema.TaggedError<TooManyRequests>()("TooManyRequests", errorFields, { httpApiStatus: 429 }) {
  get status() { return 429 as const }
}
/** 503: a critical dependency is unavailable. */
export class Unavailable extends Schema.TaggedError<Unavailable>()("Unavailable", errorFields, { httpApiStatus: 503 }) {
  get status() { return 503 as const }
}

/** The error class of each status. */
const errorClasses = {
  400: InvalidRequest,
  401: Unauthenticated,
  402: PaymentRequired,
  403: Forbidden,
  404: NotFound,
  409: Conflict,
  413: PayloadTooLarge,
  415: UnsupportedMediaType,
  422: Unprocessable,
  429: TooManyRequests,
  503: Unavailable
} as const

export type ErrorStatus = keyof typeof errorClasses
export type ErrorClass = (typeof errorClasses)[ErrorStatus]
/** The error class of `S`, by its status: `ErrorOf<404>` is `NotFound`. */
export type ErrorOf<S extends ErrorStatus> = InstanceType<(typeof errorClasses)[S]>
/** Any failure a handler may answer with. */
export type ApiError = ErrorOf<ErrorStatus>

const classList: ReadonlyArray<ErrorClass> = Object.values(errorClasses)
export const isApiError = (u: unknown): u is ApiError => classList.some((c) => u instanceof c)

type More = {
  details?: ReadonlyArray<ErrorDetail>
  retryAfter?: number
  extra?: Record<string, unknown>
}

/** The error of `status`: `apiError(409, "role_in_use", "...")` is a `Conflict`. */
export const apiError = <S extends ErrorStatus>(status: S, code: string, message: string, more?: More): ErrorOf<S> =>
  new errorClasses[status]({ code, message, ...more }) as ErrorOf<S>

export const fail = <S extends ErrorStatus>(status: S, code: string, message: string, more?: More) =>
  Effect.fail(apiError(status, code, message, more))

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

const errorBase = {
  message: Schema.String,
  requestId: Schema.String,
  // optionalKey: absent when there are none, never null (the spec's envelope has an array)
  details: Schema.optionalKey(Schema.Array(ErrorDetail))
}

/** An envelope whose `error` has `more` fields besides the base ones, and any others. */
const envelopeWith = (more: Schema.Struct.Fields) =>
  Schema.Struct({
    status: Schema.Literal("error"),
    code: Schema.String,
    error: Schema.StructWithRest(Schema.Struct({ ...errorBase, ...more }), [Schema.Record(Schema.String, Schema.Unknown)])
  })

export const ErrorEnvelope = envelopeWith({})
export type ErrorEnvelope = typeof ErrorEnvelope.Type

const said = (description: string) => Schema.optionalKey(Schema.String.annotate({ description }))
const counted = (description: string) => Schema.optionalKey(Schema.Int.annotate({ description }))

/**
 * The fields some codes add to `error` (docs/api.md, "Errors"), stated in the document so that
 * generated clients type them; each is present only with the codes its description names.
 */
const extraFields: Partial<Record<ErrorStatus, Schema.Struct.Fields>> = {
  402: {
    balance: said("insufficient_credit: the tenant's balance then, in EUR"),
    required: said("insufficient_credit: the free credit the call needed, in EUR")
  },
  403: {
    plan: said("service_disabled_on_plan, no_active_plan: the tenant's plan"),
    service: said("service_disabled_on_plan: the service the plan does not include"),
    subscriptionStatus: said("no_active_plan: the subscription's status"),
    notHeld: Schema.optionalKey(Schema.Array(Schema.String).annotate({ description: "forbidden: the permissions the caller would hand out without holding them" }))
  },
  409: {
    uses: Schema.optionalKey(Schema.Struct({
      identityAccesses: Schema.Int,
      apiKeys: Schema.Int,
      defaultRoles: Schema.Int,
      invitations: Schema.Int
    }).annotate({ description: "role_in_use: what still gives the role" })),
    currentStatus: said("quota_request_not_pending: the request's status"),
    delegationStatus: said("invalid_delegation_state: the delegation's status"),
    pendingRequestId: said("quota_request_pending: the pending request of that quota key")
  },
  422: {
    currentLimit: counted("requested_limit_not_higher: the quota's limit now")
  },
  503: {
    checks: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown).annotate({ description: "readiness: each dependency's state" }))
  }
}

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

const descriptions: Record<ErrorStatus, string> = {
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

/**
 * The wire schema of an error class: the error envelope (in the OpenAPI document under the
 * status), and the one encoder that turns an error of that class into it.
 */
const makeWire = <E extends ApiError>(errorClass: new(fields: { readonly code: string; readonly message: string } & More) => E) => {
  const status = new errorClass({ code: "", message: "" }).status
  return envelopeWith(extraFields[status] ?? {}).annotate({ identifier: `Error${status}`, description: descriptions[status] }).pipe(
    Schema.decodeTo(
      Schema.declare((u): u is E => u instanceof errorClass),
      SchemaTransformation.transformEffect({
        decode: (e) => Effect.succeed(new errorClass({ code: e.code, message: e.error.message, details: e.error.details })),
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
}
type Wire<E extends ApiError> = ReturnType<typeof makeWire<E>>

const wires = new Map<ErrorClass, Schema.Top>()
const wireOf = (errorClass: ErrorClass) => {
  const cached = wires.get(errorClass)
  if (cached) return cached
  const made = makeWire<ApiError>(errorClass)
  wires.set(errorClass, made)
  return made
}

/** The error schemas an endpoint or middleware declares, by class: `errors(NotFound, Conflict)`. */
export const errors = <const C extends ReadonlyArray<ErrorClass>>(...classes: C) =>
  classes.map(wireOf) as unknown as { readonly [K in keyof C]: Wire<InstanceType<C[K]>> }
