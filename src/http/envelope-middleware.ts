import { randomUUID } from "node:crypto"
import { IncomingMessage } from "node:http"
import { ByteSize, Cause, Context, Effect, Option, References, type SchemaAST, SchemaIssue, type Types } from "effect"
import { HttpIncomingMessage, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiError } from "effect/http-api"
import { MAX_BODY_BYTES, MAX_JSON_DEPTH, WHOLE_BODY_ERROR, type WholeBodyError } from "../schema/envelope.ts"
import { Config } from "../config.ts"
import { isOneOfTokens } from "../iam/secrets.ts"
import { type ApiError, type ErrorDetail, errorEnvelope, InvalidRequest, isApiError, NotFound, PayloadTooLarge, RequestId, ResponseHeaders, TooManyRequests, Unauthenticated, UnsupportedMediaType } from "../schema/errors.ts"
import { idempotencyKeyProblem } from "./idempotency.ts"
import { withRequestMetrics } from "./request-metrics.ts"
import { withServerSpan } from "../observability/server-span.ts"
import { CrossFieldRules } from "./security.ts"
import { markDeprecatedTake } from "./deprecation.ts"


const requestIdPattern = /^[A-Za-z0-9._:-]{8,128}$/
/** A request's id: the client's own `x-request-id` when it is 8 to 128 plain characters, else a new one. */
export const requestIdOf = (header: string | undefined): string =>
  header !== undefined && requestIdPattern.test(header) ? header : `req_${randomUUID()}`

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()
/** The formatter's message; the input it quotes ("got ...", decoding reports it) only when short. */
const messageOf = (issue: SchemaIssue.Issue) => {
  const message = withoutRepeats(formatter(issue).issues[0]?.message ?? "is not valid")
  const got = message.indexOf(", got ")
  return visible(got >= 0 && message.length - got > 70 ? message.slice(0, got) : message)
}

/**
 * Invisible characters of a quoted input (controls, a right-to-left override, a zero-width space)
 * spelled out as `\u{202E}`: a message shown to a person must not reorder or hide its own text.
 */
const visible = (message: string) =>
  message.replace(/[\p{Cc}\p{Cf}\p{Co}\p{Zl}\p{Zp}]/gu, (c) => `\\u{${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}}`)

/** "Expected string | null | null" (an optional nullable field: JSON has no undefined) → "Expected string | null". */
const withoutRepeats = (message: string) =>
  message.replace(/^Expected ([^,]+?)(?=, got |$)/, (_, alternatives: string) => `Expected ${[...new Set(alternatives.split(" | "))].join(" | ")}`)

/** One detail per offending path of a schema issue tree. */
export const issueDetails = (issue: SchemaIssue.Issue, path: ReadonlyArray<PropertyKey> = []): Array<ErrorDetail> => {
  const at = path.map(String).join(".")
  switch (issue._tag) {
    case "Pointer":
      return issueDetails(issue.issue, [...path, ...issue.path])
    case "Composite":
      return onePerPath(issue.issues.flatMap((i) => issueDetails(i, path)))
    case "Encoding":
      return issueDetails(issue.issue, path)
    case "AnyOf":
      // A union that failed through exactly one member reports that member's issues. Otherwise the
      // input is a wrong type when no member takes its JSON type at all ("gif" for a format of
      // "png" | "jpeg" is a wrong value, 3 a wrong type).
      return issue.issues.length === 1
        ? issueDetails(issue.issues[0]!, path)
        : [{
          path: at,
          code: "input" in issue && !takesJsonType(issue.ast, jsonTypeOf(issue.input)) ? "invalid_type" : "invalid_value",
          message: messageOf(issue)
        }]
    case "MissingKey":
      return [{ path: at, code: "required", message: "is required" }]
    case "UnexpectedKey":
      return [{ path: at, code: "unknown_field", message: "is not an accepted field" }]
    case "InvalidType":
      return [{ path: at, code: "invalid_type", message: messageOf(issue) }]
    default:
      return [{ path: at, code: "invalid_value", message: messageOf(issue) }]
  }
}

/**
 * Details of one path merged into one (its first code, the messages joined): a value that breaks
 * two checks at once (11.5 for an integer of at most 10) is one offending input.
 */
const onePerPath = (details: ReadonlyArray<ErrorDetail>): Array<ErrorDetail> => {
  const byPath = new Map<string, ErrorDetail>()
  for (const d of details) {
    const seen = byPath.get(d.path)
    byPath.set(d.path, seen ? { ...seen, message: seen.message === d.message ? seen.message : `${seen.message}; ${d.message}` } : d)
  }
  return [...byPath.values()]
}

type JsonType = "string" | "number" | "boolean" | "null" | "array" | "object" | "other"

const jsonTypeOf = (v: unknown): JsonType =>
  v === null ? "null" : Array.isArray(v) ? "array"
  : typeof v === "string" ? "string" : typeof v === "number" ? "number" : typeof v === "boolean" ? "boolean"
  : typeof v === "object" ? "object" : "other"

/** Whether a schema takes some input of JSON type `t` (true when its type cannot be told). */
const takesJsonType = (ast: SchemaAST.AST, t: JsonType): boolean => {
  switch (ast._tag) {
    case "Literal":
      return jsonTypeOf(ast.literal) === t
    case "String":
    case "TemplateLiteral":
      return t === "string"
    case "Number":
      return t === "number"
    case "Boolean":
      return t === "boolean"
    case "Null":
      return t === "null"
    case "Arrays":
      return t === "array"
    case "Objects":
      return t === "object"
    case "Union":
      return ast.types.some((m) => takesJsonType(m, t))
    case "Undefined":
    case "Void":
    case "Never":
      return false
    default:
      return true
  }
}

type Route = { readonly method: string; readonly pattern: RegExp; readonly literal: string | undefined }

const toPattern = (path: string) =>
  new RegExp("^" + path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/\/:[^/]+/g, "/[^/]+") + "/?$")

export const routeTable = (routes: ReadonlyArray<{ method: string; path: string }>): ReadonlyArray<Route> =>
  routes.map((r) => ({ method: r.method.toUpperCase(), pattern: toPattern(r.path), literal: r.path.includes(":") ? undefined : r.path }))

/**
 * What the security middlewares learn of a request on its way to an endpoint, for the envelope
 * middleware that answers for it: that an endpoint was reached (its security ran), and whether
 * that endpoint reads an Idempotency-Key. Undefined outside a request.
 */
export interface RequestFacts {
  endpointReached: boolean
  readsIdempotencyKey: boolean
  /** The endpoint declares no body: one sent anyway is checked as JSON here, as no decoder will read it. */
  takesNoBody?: boolean | undefined
  /** The endpoint's rules across its body's fields (`CrossFieldRules`), when it has some. */
  crossFieldRules?: CrossFieldRules | undefined
}
export const RequestFacts = Context.Reference<RequestFacts | undefined>("trawl/RequestFacts", { defaultValue: () => undefined })

type DeclaresHeaders = {
  readonly headers: { readonly ast: SchemaAST.AST } | undefined
  readonly payload: ReadonlyMap<string, unknown>
  readonly annotations: Context.Context<never>
}

/** Whether an endpoint declares the Idempotency-Key header. */
const readsIdempotencyKey = (endpoint: DeclaresHeaders): boolean =>
  endpoint.headers?.ast._tag === "Objects" && endpoint.headers.ast.propertySignatures.some((p) => p.name === "idempotency-key")

/** Notes, for the envelope middleware, that the request reached `endpoint` (see `RequestFacts`). */
export const noteEndpointReached = (endpoint: DeclaresHeaders): Effect.Effect<void> =>
  Effect.gen(function*() {
    const facts = yield* RequestFacts
    if (!facts) return
    facts.endpointReached = true
    facts.readsIdempotencyKey = readsIdempotencyKey(endpoint)
    facts.takesNoBody = endpoint.payload.size === 0
    facts.crossFieldRules = Context.get(endpoint.annotations, CrossFieldRules)
  })

/** Per route table, the methods of each literal path: built once, not walked on every request. */
const literalTables = new WeakMap<ReadonlyArray<Route>, ReadonlyMap<string, ReadonlyArray<string>>>()
const literalMethods = (routes: ReadonlyArray<Route>): ReadonlyMap<string, ReadonlyArray<string>> => {
  let table = literalTables.get(routes)
  if (!table) {
    const built = new Map<string, Array<string>>()
    for (const r of routes) if (r.literal !== undefined) built.set(r.literal, [...(built.get(r.literal) ?? []), r.method])
    literalTables.set(routes, (table = built))
  }
  return table
}

/**
 * The methods of the routes whose whole path is `path` itself, when `method` is not one of them:
 * `GET /v1/scraper/jobs/bulk` names the bulk route, not a job called "bulk" (a 405, not a 404).
 */
const otherMethodsOfLiteral = (routes: ReadonlyArray<Route>, method: string, path: string): ReadonlyArray<string> => {
  const byLiteral = literalMethods(routes)
  const trimmed = path.endsWith("/") ? path.slice(0, -1) : path
  const methods = [...(byLiteral.get(path) ?? []), ...(trimmed !== path ? byLiteral.get(trimmed) ?? [] : [])]
  // HEAD is GET without the body: it names a literal route that has a GET, and no other.
  const asMethod = method === "HEAD" ? "GET" : method
  return methods.length > 0 && !methods.includes(asMethod) && method !== "OPTIONS" ? [...new Set(methods)] : []
}

const json = (status: number, body: unknown) => HttpServerResponse.jsonUnsafe(body, { status })

/** A 401 names how to authenticate (RFC 9110 §11.6.1): a bearer token here, the `x-api-key` header as well (docs/api.md). */
const AUTHENTICATE_CHALLENGE = 'Bearer realm="trawl"'

/** The envelope of an `ApiError`, answered outside an endpoint's own error encoding. */
const errorResponse = (error: ApiError, requestId: string) =>
  json(error.status, errorEnvelope(error.code, error.message, requestId, error.details, error.extra))

/**
 * The query parameters that filter a list (`status`, `type`, `serviceKey`, `domainId`) or select a
 * timeline (`url`): a bad value only there is a bad filter, as in a search's `where` (a missing
 * `url` is a missing parameter).
 */
const FILTER_QUERY_PARAMETERS = new Set(["status", "type", "serviceKey", "domainId", "url"])

/** Whether a detail's path lies in a search body's `where`: an error only there is a bad filter. */
const inSearchFilter = (path: string) => path === "where" || path.startsWith("where.")

/**
 * The `WHOLE_BODY_ERROR` of a body whose every fault is a failed check carrying one (a bulk body's
 * count of jobs); a body with any other fault is malformed, a `400 validation_error` (docs/api.md).
 */
const wholeBodyErrorOf = (issue: SchemaIssue.Issue): WholeBodyError | undefined => {
  switch (issue._tag) {
    case "Filter":
      return issue.filter.annotations?.[WHOLE_BODY_ERROR] as WholeBodyError | undefined
    case "Pointer":
    case "Encoding":
      return wholeBodyErrorOf(issue.issue)
    case "AnyOf":
      // The payload is a union of the endpoint's body schemas: the one that failed.
      return issue.issues.length === 1 ? wholeBodyErrorOf(issue.issues[0]!) : undefined
    case "Composite": {
      const found = issue.issues.map(wholeBodyErrorOf)
      return found.every((e) => e !== undefined) ? found[0] : undefined
    }
    default:
      return undefined
  }
}

/** A search body's sort term naming a field that cannot be sorted by. */
const isUnsortableField = (d: ErrorDetail) => /^sort\.\d+\.field$/.test(d.path) && d.code === "invalid_value"

const failureResponse = (
  cause: Cause.Cause<unknown>,
  requestId: string,
  request: HttpServerRequest.HttpServerRequest,
  routes: ReadonlyArray<Route>,
  facts: RequestFacts
): Effect.Effect<HttpServerResponse.HttpServerResponse> => {
  // Interrupted, not failed: the cluster moved or stopped the work (a node left, shards moved).
  // The request may simply be sent again.
  if (Cause.hasInterruptsOnly(cause)) {
    return Effect.succeed(HttpServerResponse.setHeader(
      json(503, errorEnvelope("dependency_unavailable", "the work was interrupted by a cluster change; try again", requestId)),
      "retry-after",
      "1"
    ))
  }
  const error = Cause.squash(cause)
  if (isApiError(error)) return Effect.succeed(errorResponse(error, requestId))
  if (HttpApiError.HttpApiSchemaError.is(error)) {
    const details = issueDetails(error.cause.issue)
    // A body that does not parse fails as a whole, with the decoder's own issue (no path); a value
    // inside a body that parsed can only fail at its path, whatever text it holds.
    const root = error.cause.issue
    // An empty body is not JSON either (the decoder got no value at all, and says its type is wrong).
    const emptyBody = error.kind === "Payload" && !hasBody(request.headers)
    const isJson = emptyBody || (error.kind === "Payload" && root._tag === "InvalidValue" && messageOf(root) === "Expected a valid JSON body")
    const wholeBody = error.kind === "Payload" && !isJson ? wholeBodyErrorOf(root) : undefined
    // An invalid Idempotency-Key is named with the body's own faults, first, so that one answer lists everything to mend.
    const keyFault = error.kind === "Payload" && facts?.readsIdempotencyKey ? idempotencyKeyProblem(request.headers["idempotency-key"]) : undefined
    const withKeyFault = (d: ReadonlyArray<ErrorDetail>) => (keyFault ? [keyFault, ...d] : d)
    if (wholeBody) return Effect.succeed(json(wholeBody.status, errorEnvelope(wholeBody.code, wholeBody.message, requestId, withKeyFault(details))))
    const rules = error.kind === "Payload" && !isJson ? facts?.crossFieldRules : undefined
    if (rules) {
      // The body parsed (the decoder named paths in it): its rules across fields are named too.
      return request.json.pipe(
        Effect.timeout("1 second"),
        Effect.map((body) => {
          if (typeof body !== "object" || body === null || Array.isArray(body)) return []
          const named = new Set(details.map((d) => d.path))
          return rules(body as Record<string, unknown>).filter((d) => !named.has(d.path))
        }),
        Effect.orElseSucceed(() => []),
        Effect.map((more) => json(400, errorEnvelope("validation_error", "the request body is not valid", requestId, withKeyFault([...details, ...more]))))
      )
    }
    const where = error.kind === "Payload" ? "body is" : error.kind === "Params" ? "path parameters are" : error.kind === "Headers" ? "headers are" : `${error.kind.toLowerCase()} is`
    // A search body's bad `where` is a bad filter, as a list's bad query filter is, and its unknown
    // sort fields an invalid sort field; a body with other faults too is a validation error that
    // names them all.
    const only = (p: (d: ErrorDetail) => boolean) => !keyFault && details.length > 0 && details.every(p)
    const badFilter = error.kind === "Payload" ? only((d) => inSearchFilter(d.path)) : error.kind === "Query" && only((d) => FILTER_QUERY_PARAMETERS.has(d.path) && d.code !== "required")
    const badSort = error.kind === "Payload" && only(isUnsortableField)
    return Effect.succeed(json(
      400,
      errorEnvelope(
        badFilter ? "invalid_filter" : badSort ? "invalid_sort_field" : "validation_error",
        isJson ? "the body is not valid JSON"
        : badFilter ? (error.kind === "Query" ? "a filter parameter is not valid" : "the search filter is not valid")
        : badSort ? "a sort field is not one that can be sorted by"
        : `the request ${where} not valid`,
        requestId,
        withKeyFault(isJson ? [{ path: "", code: "invalid_json", message: emptyBody ? "body is empty; it must be valid JSON" : "body must be valid JSON" }] : details)
      )
    ))
  }
  if (HttpApiError.HttpApiPayloadTooLarge.is(error) || isTag(error, "BodyTooLarge")) {
    return Effect.succeed(errorResponse(payloadTooLarge(), requestId))
  }
  if (isTag(error, "RouteNotFound")) {
    const path = request.url.split("?")[0]!
    const allowed = routes.filter((r) => r.pattern.test(path)).map((r) => r.method)
    // A route of this method matches but the router passed it by (a path parameter longer than
    // any id, 100 characters): nothing has that name.
    const method = request.method === "HEAD" ? "GET" : request.method
    if (allowed.length > 0 && !allowed.includes(method)) return Effect.succeed(methodNotAllowed(request.method, allowed, requestId))
    // The path is echoed only in part: an answer does not grow with its request.
    const shown = path.length > 200 ? `${path.slice(0, 200)}… (${path.length} characters)` : path
    return Effect.succeed(json(404, errorEnvelope("not_found", `no route for ${request.method} ${shown}`, requestId)))
  }
  if (NUL_SQLSTATES.has(sqlStateOf(error) ?? "")) {
    // The body was read by the handler (and is kept by the request): it names where the NUL is.
    return request.json.pipe(
      Effect.timeout("1 second"),
      Effect.map((body) => nulPaths(body)),
      Effect.orElseSucceed(() => []),
      Effect.map((paths) => {
        const details = (paths.length > 0 ? paths : [""]).map((path) => ({ path, code: "invalid_value", message: "contains U+0000" }))
        const badFilter = paths.length > 0 && paths.every(inSearchFilter)
        return json(400, errorEnvelope(
          badFilter ? "invalid_filter" : "validation_error",
          "text cannot contain the NUL character (U+0000)",
          requestId,
          details
        ))
      })
    )
  }
  // The database or Redis could not be reached: the request may well succeed in a moment.
  if (isTag(error, "ConnectionError") || isTag(error, "KvUnavailable")) {
    return Effect.logWarning("a dependency is unavailable", cause).pipe(
      Effect.annotateLogs({ requestId }),
      Effect.as(HttpServerResponse.setHeader(
        json(503, errorEnvelope("dependency_unavailable", "the database or Redis cannot be reached; try again", requestId)),
        "retry-after",
        "5"
      ))
    )
  }
  if (isTag(error, "RequestParseError")) {
    return Effect.succeed(json(400, errorEnvelope("validation_error", "the request could not be read", requestId)))
  }
  return Effect.logError("unhandled failure", cause).pipe(
    Effect.annotateLogs({ requestId }),
    Effect.as(json(500, errorEnvelope("internal_error", "an unexpected error occurred", requestId)))
  )
}

/**
 * The paths (as in `details`) of a JSON value's strings and keys that `isFault`, at most `limit`
 * of them, found without recursion (a body may nest deeply).
 */
const textFaultPaths = (value: unknown, isFault: (text: string) => boolean, limit = 20): Array<string> => {
  const found: Array<string> = []
  const stack: Array<{ readonly value: unknown; readonly path: string }> = [{ value, path: "" }]
  const join = (path: string, key: string | number) => (path === "" ? String(key) : `${path}.${key}`)
  while (stack.length > 0 && found.length < limit) {
    const { value: v, path } = stack.pop()!
    if (typeof v === "string") {
      if (isFault(v)) found.push(path)
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], path: join(path, i) })
    } else if (v !== null && typeof v === "object") {
      const keys = Object.keys(v)
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i]!
        if (isFault(key)) found.push(join(path, key))
        else stack.push({ value: (v as Record<string, unknown>)[key], path: join(path, key) })
      }
    }
  }
  return found.slice(0, limit)
}

/** Where a JSON value's text holds a NUL character (see `textFaultPaths`). */
export const nulPaths = (value: unknown, limit = 20): Array<string> => textFaultPaths(value, (t) => t.includes("\u0000"), limit)

/** Where a JSON value's text holds half of a surrogate pair, which is no character (see `textFaultPaths`). */
export const loneSurrogatePaths = (value: unknown, limit = 20): Array<string> => textFaultPaths(value, (t) => !t.isWellFormed(), limit)

/**
 * PostgreSQL's answers to a NUL character in text or JSON (invalid byte sequence, untranslatable
 * character): input that slipped past validation, so the client's fault and not a 500.
 */
const NUL_SQLSTATES = new Set(["22021", "22P05"])

/** The SQLSTATE of a database error, looked for through its wrappers. */
const sqlStateOf = (u: unknown, depth = 0): string | undefined => {
  if (typeof u !== "object" || u === null || depth > 4) return undefined
  const e = u as { code?: unknown; reason?: unknown; cause?: unknown }
  if (typeof e.code === "string" && /^[0-9A-Z]{5}$/.test(e.code)) return e.code
  return sqlStateOf(e.reason, depth + 1) ?? sqlStateOf(e.cause, depth + 1)
}

const isTag = (u: unknown, tag: string): boolean => {
  if (typeof u !== "object" || u === null) return false
  const e = u as { _tag?: unknown; reason?: unknown }
  if (e._tag === tag) return true
  if (e.reason && typeof e.reason === "object") return isTag(e.reason, tag)
  return e.reason === tag
}

/**
 * Whether the request carries a body that is not JSON by its content type. A chunked body without
 * a content type may well be empty, so it is left to the decoder.
 */
const isNonJsonBody = (headers: Readonly<Record<string, string | undefined>>): boolean => {
  if (!hasBody(headers)) return false
  const type = headers["content-type"]
  return type === undefined ? headers["transfer-encoding"] === undefined : !isJsonMediaType(type)
}

/** Whether the request says it carries a body (chunked, or a length above 0). */
const hasBody = (headers: Readonly<Record<string, string | undefined>>) =>
  headers["transfer-encoding"] !== undefined || Number(headers["content-length"] ?? 0) > 0

/** `application/json`, with or without parameters such as `charset` (the one type the decoder reads). */
const isJsonMediaType = (contentType: string): boolean => contentType.split(";")[0]!.trim().toLowerCase() === "application/json"

const methodNotAllowed = (method: string, allowed: ReadonlyArray<string>, requestId: string) =>
  HttpServerResponse.setHeader(
    json(405, errorEnvelope("method_not_allowed", `${method} is not allowed here`, requestId)),
    "allow",
    // HEAD is served wherever GET is.
    [...new Set(allowed.flatMap((m) => (m === "GET" ? ["GET", "HEAD"] : [m])))].join(", ")
  )

/** A body that is not JSON by its content type (415). */
const unsupportedMediaType = (headers: Readonly<Record<string, string | undefined>>) =>
  new UnsupportedMediaType({ code: "unsupported_media_type", message: "send the body as application/json", details: [nonJsonBodyDetail(headers)] })

/** A body over the cap (413). */
const payloadTooLarge = () => new PayloadTooLarge({ code: "payload_too_large", message: `the body is larger than ${MAX_BODY_BYTES} bytes` })

/**
 * Answers decided from the request line alone, before any route runs: a route's own name taken
 * for a resource id.
 */
const refusalBeforeRouting = (
  request: HttpServerRequest.HttpServerRequest,
  routes: ReadonlyArray<Route>,
  requestId: string
): HttpServerResponse.HttpServerResponse | undefined => {
  const allowed = otherMethodsOfLiteral(routes, request.method, request.url.split("?")[0]!)
  if (allowed.length > 0) return methodNotAllowed(request.method, allowed, requestId)
  return undefined
}

/** The detail of a body that is not JSON by its content type. */
const nonJsonBodyDetail = (headers: Readonly<Record<string, string | undefined>>): ErrorDetail => {
  const given = headers["content-type"]
  return { path: "content-type", code: "invalid_value", message: given ? `${given} is not JSON` : "is missing" }
}

/** Node's own request under the platform's, where there is one (not in unit tests of the router). */
const incomingOf = (request: HttpServerRequest.HttpServerRequest): IncomingMessage | undefined => {
  const source = request.source
  return source instanceof IncomingMessage ? source : undefined
}

/** The most of an unread body read off the wire before an answer (the largest body taken, and a little). */
const MAX_DRAIN_BYTES = MAX_BODY_BYTES + 64 * 1024
/** How long an answer waits for an unread body to arrive. */
const DRAIN_TIMEOUT_MS = 10_000

/**
 * Whether the client sent `Expect: 100-continue` and still waits for it: nothing has read the body,
 * so no 100 went out (the body reader sends it), and the answer is final without the body (RFC 9110
 * §10.1.1). Waiting for the body there held an early 401, 405 or 415 until the drain's timeout.
 */
const awaitsContinue = (request: HttpServerRequest.HttpServerRequest): boolean => {
  const incoming = incomingOf(request)
  return incoming !== undefined && incoming.readableFlowing === null && !incoming.complete && /^\s*100-continue\s*$/i.test(incoming.headers.expect ?? "")
}

/**
 * Reads and discards what is left of a request's body before its answer goes out: an answer given
 * before the body was read (a 401, 405, 413 or 415, a route that takes none) would otherwise end
 * the connection while the client still writes, and clients that write the whole body before
 * reading (Python's http.client and requests) see a broken pipe instead of the answer. Bounded:
 * a declared length over the largest body taken is refused at once (413, nothing waited for), and
 * past MAX_DRAIN_BYTES or DRAIN_TIMEOUT_MS the answer goes and Node closes the connection.
 */
const drainUnreadBody = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<void> => {
  const incoming = incomingOf(request)
  if (!incoming || incoming.complete || incoming.readableEnded || incoming.destroyed) return Effect.void
  // A request without a body (most GETs) has nothing to wait for.
  const declared = Number(incoming.headers["content-length"] ?? Number.NaN)
  const chunked = incoming.headers["transfer-encoding"] !== undefined
  if (!chunked && !(declared > 0)) return Effect.void
  if (declared > MAX_BODY_BYTES) return Effect.void
  return Effect.callback<void>((resume) => {
    let read = 0
    const done = () => {
      clearTimeout(timer)
      incoming.off("data", onData)
      incoming.off("end", done)
      incoming.off("close", done)
      incoming.off("error", done)
      resume(Effect.void)
    }
    const onData = (chunk: Buffer) => {
      read += chunk.length
      if (read > MAX_DRAIN_BYTES) done()
    }
    const timer = setTimeout(done, DRAIN_TIMEOUT_MS)
    incoming.on("data", onData)
    incoming.once("end", done)
    incoming.once("close", done)
    incoming.once("error", done)
    incoming.resume()
    return Effect.sync(done)
  })
}

/**
 * What is wrong with a request by its line and headers alone: a path or query with a NUL
 * character, a repeated Idempotency-Key, a declared body length over the cap, a body that is not
 * JSON by its content type.
 */
const malformedRequest = (request: HttpServerRequest.HttpServerRequest, readsIdempotencyKey: boolean): NotFound | InvalidRequest | PayloadTooLarge | UnsupportedMediaType | undefined => {
  // No resource's name holds a NUL character (the database cannot store one), so a path with
  // one names nothing; in the query string it is a bad parameter.
  const nulAt = request.url.search(/%00/i)
  if (nulAt >= 0) {
    const queryAt = request.url.indexOf("?")
    return queryAt < 0 || nulAt < queryAt
      ? new NotFound({ code: "not_found", message: "no resource has a NUL character (%00) in its name" })
      : new InvalidRequest({
        code: "validation_error",
        message: "query parameters cannot contain the NUL character (%00)",
        details: nulQueryParameters(request.url.slice(queryAt + 1)).map((name) => ({ path: name, code: "invalid_value", message: "contains %00" }))
      })
  }
  // Node joins a repeated header into one value ("a, b"), which would pass for one key (of an
  // endpoint that reads one; others ignore the header).
  if (readsIdempotencyKey && (incomingOf(request)?.headersDistinct["idempotency-key"]?.length ?? 0) > 1) {
    return new InvalidRequest({
      code: "invalid_idempotency_key",
      message: "send one Idempotency-Key header",
      details: [{ path: "Idempotency-Key", code: "invalid_value", message: "sent more than once" }]
    })
  }
  // A declared length over the cap is refused at once, not after the whole body has been waited for.
  if (Number(request.headers["content-length"]) > MAX_BODY_BYTES) return payloadTooLarge()
  if (isNonJsonBody(request.headers)) return unsupportedMediaType(request.headers)
  // JSON is read as UTF-8 (RFC 8259 §8.1): a body declared in another charset would be misread.
  const charset = /;\s*charset\s*=\s*"?([^";\s]*)/i.exec(request.headers["content-type"] ?? "")?.[1]?.toLowerCase()
  if (charset !== undefined && charset !== "utf-8" && charset !== "utf8") {
    return new UnsupportedMediaType({
      code: "unsupported_media_type",
      message: "send the body as application/json in UTF-8",
      details: [{ path: "content-type", code: "invalid_value", message: `charset ${charset.slice(0, 40)} is not accepted; only utf-8` }]
    })
  }
  // A compressed body would be read as text and refused as bad UTF-8: name the coding instead (RFC 9110 §15.5.16).
  const coding = request.headers["content-encoding"]?.trim().toLowerCase()
  if (coding && coding !== "identity") {
    return new UnsupportedMediaType({
      code: "unsupported_media_type",
      message: "send the body uncompressed",
      details: [{ path: "content-encoding", code: "invalid_value", message: `${coding} is not accepted; only identity` }]
    })
  }
  return undefined
}

/**
 * Runs `effect` unless the request is malformed by its line and headers (see `malformedRequest`).
 * The security middlewares call it once the caller is authenticated, counted by the rate limit
 * and authorized, so that a request without a valid key is a 401 whatever else is wrong with it,
 * and every answer to a key carries its rate-limit headers.
 */
export const refuseMalformedRequest = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | NotFound | InvalidRequest | PayloadTooLarge | UnsupportedMediaType, R | HttpServerRequest.HttpServerRequest> =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const facts = yield* RequestFacts
    const refusal = malformedRequest(request, facts?.readsIdempotencyKey ?? false)
    if (refusal) return yield* Effect.fail(refusal)
    if (hasBody(request.headers)) yield* refuseUnreadableBody(request, facts?.takesNoBody ?? false)
    return yield* effect
  })

const strictUtf8 = new TextDecoder("utf-8", { fatal: true })

/**
 * A JSON body is UTF-8: one with byte sequences that are not is refused, instead of decoded with
 * U+FFFD in their place (a webhook secret quietly changed that way would never verify). One that
 * nests deeper than MAX_JSON_DEPTH is refused before it is parsed. The body is read once; the
 * endpoint's decoder reads the same bytes again from the request's cache. An endpoint that takes no
 * body has no decoder: with `mustParse`, a body that is not JSON is refused here (docs/api.md).
 */
const refuseUnreadableBody = (request: HttpServerRequest.HttpServerRequest, mustParse: boolean): Effect.Effect<void, InvalidRequest | PayloadTooLarge> =>
  request.arrayBuffer.pipe(
    Effect.catch((e) =>
      Effect.fail(
        isTag(e, "BodyTooLarge")
          ? payloadTooLarge()
          : new InvalidRequest({ code: "validation_error", message: "the request body could not be read" })
      )
    ),
    Effect.flatMap((bytes) => {
      let text: string
      try {
        text = strictUtf8.decode(bytes)
      } catch {
        return Effect.fail(new InvalidRequest({
          code: "validation_error",
          message: "the body is not valid JSON",
          details: [{ path: "", code: "invalid_json", message: "body must be UTF-8" }]
        }))
      }
      const view = new Uint8Array(bytes)
      if (nestsDeeperThan(view, MAX_JSON_DEPTH)) {
        return Effect.fail(new InvalidRequest({
          code: "validation_error",
          message: `the body nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep`,
          details: [{ path: "", code: "too_deep", message: `at most ${MAX_JSON_DEPTH} levels of nested arrays and objects` }]
        }))
      }
      const repeated = repeatedMemberPath(text)
      if (repeated !== undefined) {
        return Effect.fail(new InvalidRequest({
          code: "validation_error",
          message: "an object of the body names a member twice",
          details: [{ path: repeated, code: "duplicate_key", message: "named twice in one object; send each member once" }]
        }))
      }
      const halves = escapesSurrogate(view) ? loneSurrogatePaths(parsedOrUndefined(text)) : []
      if (halves.length > 0) {
        const badFilter = halves.every(inSearchFilter)
        return Effect.fail(new InvalidRequest({
          code: badFilter ? "invalid_filter" : "validation_error",
          message: "text cannot contain half of a surrogate pair (a \\u escape from D800 to DFFF without its other half): it is not a character",
          details: halves.map((path) => ({ path, code: "invalid_value", message: "contains half of a surrogate pair" }))
        }))
      }
      if (mustParse && text.trim() !== "" && parsedOrUndefined(text) === undefined) {
        return Effect.fail(new InvalidRequest({
          code: "validation_error",
          message: "the body is not valid JSON",
          details: [{ path: "", code: "invalid_json", message: "body must be valid JSON" }]
        }))
      }
      return Effect.void
    })
  )

/** The body as JSON, or undefined when it is not JSON (the endpoint's decoder says so then). */
const parsedOrUndefined = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/**
 * Whether the JSON text in `bytes` has a `\u` escape of a UTF-16 surrogate (`\uD800` to `\uDFFF`):
 * a cheap test before the body is parsed for halves of a pair, which UTF-8 itself cannot carry.
 */
const escapesSurrogate = (bytes: Uint8Array): boolean => {
  for (let i = bytes.indexOf(BACKSLASH); i >= 0 && i + 3 < bytes.length; i = bytes.indexOf(BACKSLASH, i + 2)) {
    if (bytes[i + 1] === LOWER_U && (bytes[i + 2]! | 0x20) === LOWER_D && SURROGATE_SECOND_DIGIT.has(bytes[i + 3]! | 0x20)) return true
  }
  return false
}
const LOWER_U = 0x75
const LOWER_D = 0x64
/** `8` to `f` (lower-cased): the second hex digit of a surrogate's escape. */
const SURROGATE_SECOND_DIGIT = new Set([0x38, 0x39, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66])

const OPEN_BRACKET = 0x5b
const CLOSE_BRACKET = 0x5d
const OPEN_BRACE = 0x7b
const CLOSE_BRACE = 0x7d
const QUOTE = 0x22
const BACKSLASH = 0x5c

/**
 * Whether the JSON text in `bytes` opens more than `max` arrays and objects inside each other.
 * Brackets inside strings do not count. Bytes are enough: in UTF-8 every byte of a multi-byte
 * character is 0x80 or above, so none of them can be a quote, a backslash or a bracket.
 */
export const nestsDeeperThan = (bytes: Uint8Array, max: number): boolean => {
  let depth = 0
  let inString = false
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!
    if (inString) {
      if (b === BACKSLASH) i++
      else if (b === QUOTE) inString = false
    } else if (b === QUOTE) {
      inString = true
    } else if (b === OPEN_BRACKET || b === OPEN_BRACE) {
      if (++depth > max) return true
    } else if (b === CLOSE_BRACKET || b === CLOSE_BRACE) {
      depth--
    }
  }
  return false
}

/**
 * The path (`a.b`, `jobs.2.url`) of the first member that an object of the JSON text names twice,
 * or undefined. JSON.parse keeps the last of them, while a proxy or firewall that reads the first
 * would judge another request than the one served, so such a body is refused (docs/api.md, "Errors").
 * Names are compared as decoded (`"a"` and `"\u0061"` are one name). Text that is not JSON gives
 * undefined: its decoder says what is wrong with it.
 */
export const repeatedMemberPath = (text: string): string | undefined => {
  interface Frame {
    /** The names seen so far in an object; null for an array. */
    readonly names: Set<string> | null
    readonly path: string
    /** The member being read: its name in an object, its index in an array. */
    at: string | number
  }
  const stack: Array<Frame> = []
  const childPath = (frame: Frame | undefined) => frame === undefined ? "" : frame.path === "" ? String(frame.at) : `${frame.path}.${frame.at}`
  let expectName = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      // the closing quote: one not escaped by an odd number of backslashes
      let end = text.indexOf('"', i + 1)
      for (;;) {
        if (end < 0) return undefined
        let slashes = 0
        while (text.charCodeAt(end - 1 - slashes) === BACKSLASH) slashes++
        if (slashes % 2 === 0) break
        end = text.indexOf('"', end + 1)
      }
      if (expectName) {
        const top = stack[stack.length - 1]!
        let name = text.slice(i + 1, end)
        if (name.includes("\\")) {
          try {
            name = JSON.parse(text.slice(i, end + 1)) as string
          } catch {
            return undefined
          }
        }
        if (top.names!.has(name)) return childPath({ ...top, at: name })
        top.names!.add(name)
        top.at = name
        expectName = false
      }
      i = end
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      const path = childPath(stack[stack.length - 1])
      stack.push(c === OPEN_BRACE ? { names: new Set(), path, at: "" } : { names: null, path, at: 0 })
      expectName = c === OPEN_BRACE
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      stack.pop()
      expectName = false
    } else if (c === COMMA) {
      const top = stack[stack.length - 1]
      if (top === undefined) return undefined
      if (top.names === null) top.at = (top.at as number) + 1
      expectName = top.names !== null
    }
  }
  return undefined
}
const COMMA = 0x2c

/** The names of the query parameters whose name or value holds %00 (each once, in order). */
const nulQueryParameters = (query: string): Array<string> => {
  const names = query.split("&").filter((pair) => /%00/i.test(pair)).map((pair) => {
    const name = pair.split("=")[0]!
    try {
      return decodeURIComponent(name.replaceAll("+", " ")).replaceAll("\u0000", "%00")
    } catch {
      return name
    }
  })
  return names.length > 0 ? [...new Set(names)] : ["query"]
}

/**
 * Counts a request of the raw API key against its rate limit, writing the rate-limit headers into
 * the response header bag; fails with 429 over the limit, and does nothing for a key that is not valid.
 */
export class KeyMeter extends Context.Service<KeyMeter, (rawKey: string) => Effect.Effect<void, TooManyRequests>>()("trawl/KeyMeter") {}

/**
 * Wraps every route, matched or not: request id, response header bag, body size
 * limit, one error envelope for everything that is not a handler's success, and the request
 * metrics of the answer.
 */
export const envelopeMiddleware = (routes: ReadonlyArray<Route>) =>
  HttpRouter.middleware(Effect.gen(function*() {
    const meter = yield* Effect.serviceOption(KeyMeter)
    const config = yield* Effect.serviceOption(Config)
    const answer = (httpApp: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, unknown>, request: HttpServerRequest.HttpServerRequest) =>
      Effect.gen(function*() {
        const requestId = requestIdOf(request.headers["x-request-id"])
        const bag: Record<string, string> = {}
        const facts: RequestFacts = { endpointReached: false, readsIdempotencyKey: false }
        const beforeRouting = refusalBeforeRouting(request, routes, requestId)
        // Whether the router found no endpoint for the request (no such route, or a method the route lacks).
        let unrouted = beforeRouting !== undefined
        let response = beforeRouting ?? (yield* httpApp.pipe(
          Effect.provideService(RequestId, requestId),
          Effect.provideService(ResponseHeaders, bag),
          Effect.provideService(RequestFacts, facts),
          Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(MAX_BODY_BYTES)),
          Effect.catchCause((cause) => {
            unrouted = !facts.endpointReached && isTag(Cause.squash(cause), "RouteNotFound")
            return failureResponse(cause, requestId, request, routes, facts).pipe(Effect.provideService(ResponseHeaders, bag))
          })
        ))
        // A request the router found no endpoint for never met an endpoint's security, yet it counts
        // against the caller's key and carries its rate-limit headers. A meter that cannot count (its
        // store away) leaves the answer as it is.
        const rawKey = request.headers["x-api-key"]
        if (unrouted && rawKey && Option.isSome(meter)) {
          const metered = yield* Effect.exit(meter.value(rawKey).pipe(Effect.provideService(ResponseHeaders, bag)))
          if (metered._tag === "Failure") {
            const refusal = Cause.squash(metered.cause)
            if (isApiError(refusal)) {
              response = errorResponse(refusal, requestId)
              if (refusal.retryAfter !== undefined) bag["retry-after"] = String(refusal.retryAfter)
            } else {
              yield* Effect.logWarning("the rate limit could not count an unrouted request", metered.cause).pipe(Effect.annotateLogs({ requestId }))
            }
          }
        }
        // The control plane is not mapped by strangers: a path under /internal/ that names no route,
        // or a route with another method, is 401 without a valid internal token, as its routes are
        // (a 404 or a 405 would tell them apart).
        if ((response.status === 404 || response.status === 405) && Option.isSome(config) && request.url.startsWith("/internal/") &&
          !isOneOfTokens(request.headers["x-internal-token"], config.value.internalTokens)) {
          response = errorResponse(new Unauthenticated({ code: "unauthorized", message: "missing or invalid x-internal-token" }), requestId)
        }
        // Built-in plain-text answers (413 from the body reader, 415) get the envelope too.
        if (response.status === 413 || response.status === 415) {
          const isEnvelope = response.headers["content-type"]?.startsWith("application/json")
          if (!isEnvelope) {
            response = errorResponse(response.status === 413 ? payloadTooLarge() : unsupportedMediaType(request.headers), requestId)
          }
        }
        if (response.status === 401) bag["www-authenticate"] = AUTHENTICATE_CHALLENGE
        // A client waiting for 100 Continue sends no body: answer at once, and end the connection,
        // since the body it may send anyway after its own wait would be read as the next request.
        if (awaitsContinue(request)) bag["connection"] = "close"
        else yield* drainUnreadBody(request)
        return HttpServerResponse.setHeaders(markDeprecatedTake(request, response), { ...bag, "x-request-id": requestId })
      })
    return (httpApp: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, unknown>) =>
      Effect.withFiber((fiber) => {
        const request = Context.getUnsafe(fiber.context as Context.Context<HttpServerRequest.HttpServerRequest>, HttpServerRequest.HttpServerRequest)
        const answered = answer(httpApp, request)
        return withRequestMetrics(request.method, fiber.getRef(References.TracerEnabled) ? withServerSpan(request, answered) : answered)
      }) as unknown as Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled, HttpServerRequest.HttpServerRequest>
  }), { global: true })
