import { Context } from "effect"
import type { OpenApi } from "effect/http-api"
import { auditActions } from "../schema/audit.ts"
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT, MAX_QUERY_OFFSET, TAKE_DEPRECATION } from "../schema/envelope.ts"
import { MAX_CONFIG_FIELDS, MAX_FIELD_NAME, MAX_FIELD_OPERATIONS, MAX_PAYLOAD_JSON, RESERVED_NAMES } from "../schema/extraction.ts"
import { codesOf } from "./error-codes.ts"
import { ApiKeyAuth, credentialsOf, MAX_ON_BEHALF_LENGTH, notOnBehalf, ON_BEHALF_HEADER, Requires, type SecurityScheme, securitySchemes, StopsWork } from "./security.ts"

/**
 * The words of a group's operations in the OpenAPI document: endpoint name → [summary, description].
 * A group annotation (one table per group, beside its endpoints) rather than one annotation per
 * endpoint, so the endpoint declarations stay as they are (docs/api.md "The OpenAPI document").
 */
export const Operations = Context.Reference<Readonly<Record<string, readonly [summary: string, description: string]>>>(
  "trawl/OpenApiOperations",
  { defaultValue: () => ({}) }
)

/**
 * A query string's whole numbers (`offset`, `limit`, `take`) are read from text (decimal digits,
 * see `PageQuery`), which the schema compiler describes as a string with a pattern; the document
 * says what a client sends: an integer within the bounds the decoder checks.
 */
const queryIntegers: Record<string, object> = {
  offset: { type: "integer", minimum: 0, maximum: MAX_QUERY_OFFSET, default: 0 },
  limit: { type: "integer", minimum: 1, maximum: MAX_PAGE_LIMIT, default: DEFAULT_PAGE_LIMIT },
  take: { type: "integer", minimum: 1, maximum: MAX_PAGE_LIMIT, description: `legacy name of limit, until ${TAKE_DEPRECATION.sunset} (a success that used it carries a deprecation object)` }
}

/**
 * The audit log's `action` filter (audit.http.ts): one of the actions the log records, or a prefix
 * of them ending in `.*`. The schema says a string; the document lists the values.
 */
const auditActionFilter = {
  anyOf: [
    { type: "string", enum: [...auditActions], description: "an action the audit log records" },
    { type: "string", pattern: "^[a-z0-9_-]+(\\.[a-z0-9_-]+)*\\.\\*$", maxLength: 200, description: "every action starting with this prefix, such as session.*" }
  ]
}

/**
 * Stored pages are served with the content type they were fetched with (`servedContentType`):
 * HTML mostly, but whatever the site sent, or application/octet-stream for bytes that are not text.
 */
const storedContent = new Set(["jobs.html", "page-history.content"])

const isRecord = (u: unknown): u is Record<string, any> => typeof u === "object" && u !== null && !Array.isArray(u)

/** `Schema.optional(Schema.NullOr(x))` compiles to `anyOf: [x, null, null]`: every `anyOf` keeps one of each alternative. */
const dedupeAnyOf = (node: unknown): void => {
  if (Array.isArray(node)) {
    for (const item of node) dedupeAnyOf(item)
    return
  }
  if (!isRecord(node)) return
  for (const value of Object.values(node)) dedupeAnyOf(value)
  if (Array.isArray(node.anyOf)) {
    const seen = new Set<string>()
    node.anyOf = node.anyOf.filter((alternative: unknown) => {
      const key = JSON.stringify(alternative)
      if (seen.has(key)) return false
      seen.add(key)
      return true
    })
  }
}

type Spec = OpenApi.OpenAPISpec

/** What the document needs of a group: its name, annotations and endpoints. */
export interface DocumentedGroup {
  readonly identifier: string
  readonly annotations: Context.Context<never>
  readonly endpoints: Readonly<Record<string, {
    readonly annotations: Context.Context<never>
    readonly middlewares: ReadonlySet<Context.Key<any, any>>
  }>>
}

/** What each endpoint runs under, by operation id: its authentication and its permission. */
const endpointFacts = (groups: ReadonlyArray<DocumentedGroup>) => {
  const facts = new Map<string, { apiKey: boolean; onBehalf: boolean; requires: string | undefined; planGated: boolean; security: ReadonlyArray<SecurityScheme> }>()
  for (const group of groups) {
    for (const [name, endpoint] of Object.entries(group.endpoints)) {
      facts.set(`${group.identifier}.${name}`, {
        apiKey: endpoint.middlewares.has(ApiKeyAuth),
        onBehalf: !notOnBehalf(group.identifier, name),
        requires: Context.get(endpoint.annotations, Requires) ?? Context.get(group.annotations, Requires),
        planGated: !Context.get(endpoint.annotations, StopsWork),
        security: credentialsOf(endpoint)
      })
    }
  }
  return facts
}

/**
 * Lists on each error response exactly the codes the operation may answer with under that status
 * (error-codes.ts): an `enum` on the envelope's `code`, so a client's generated types and a
 * validator know them, and the same list as `x-error-codes`.
 */
const listErrorCodes = (operation: Record<string, any>, method: string, facts: ReturnType<typeof endpointFacts>) => {
  const known = facts.get(operation.operationId)
  const codes = codesOf({
    operationId: operation.operationId,
    method,
    apiKey: known?.apiKey ?? false,
    onBehalf: known?.onBehalf ?? false,
    requires: known?.requires,
    planGated: known?.planGated ?? true,
    idempotent: (operation.parameters ?? []).some((p: any) => p.in === "header" && p.name === "idempotency-key")
  })
  for (const [status, response] of Object.entries<any>(operation.responses ?? {})) {
    if (Number(status) < 400 || !isRecord(response)) continue
    const list = codes.get(Number(status)) ?? []
    response["x-error-codes"] = list
    // The generated description is the bare word "Error": say which.
    if (response.description === "Error" && list.length > 0) response.description = `Error: ${list.join(", ")}`
    const media = response.content?.["application/json"]
    if (!isRecord(media) || !isRecord(media.schema) || list.length === 0) continue
    media.schema = { allOf: [media.schema, { type: "object", properties: { code: { type: "string", enum: list } } }] }
  }
}

/**
 * The functional areas of the interface (its tags), in the order the description lists them, each
 * operation under one: a group goes to its area unless the operation itself is named below.
 */
const areas: ReadonlyArray<readonly [tag: string, description: string]> = [
  ["auth", "Sessions of people: sign-in by password or magic link, CSRF, refresh and logout, password flows, TOTP, e-mail verification, registration by invitation."],
  ["iam", "Tenant administration: the caller's profile and sessions, API keys, roles, delegations, invitations, the audit log."],
  ["billing", "Prepaid credit, the ledger, the plan subscription and its debits, the price list."],
  ["jobs", "Crawl jobs (create one or many, follow, read results, replay, cancel), the event stream, site maps and site crawls."],
  ["page-history", "Versions of a page over time, as crawls saw them."],
  ["network", "IP geolocation at country level."],
  ["webhooks", "The completion notifications of a job or an extraction: their delivery attempts."],
  ["extractions", "Structured extraction (articles, products) from a URL, inline input or a finished job."],
  ["extractor-configs", "Stored extraction settings: selectors, LLM refinement, post-processing."],
  ["quotas", "The tenant's limits and usage, and requests to raise them."],
  ["system", "Liveness and readiness of this node; no authentication."]
]
const areaOfGroup: Readonly<Record<string, string>> = {
  registration: "auth", users: "iam", delegations: "iam", roles: "iam", invitations: "iam", audit: "iam",
  quotaRequests: "quotas", subscription: "billing", map: "jobs", crawls: "jobs"
}
const areaOfOperation: Readonly<Record<string, string>> = {
  "iam.myQuotas": "quotas", "jobs.webhookDeliveries": "webhooks", "extractions.webhookDeliveries": "webhooks"
}
/** Puts every operation under its functional area, and lists the areas used. */
const tagByArea = (spec: Spec) => {
  const used = new Set<string>()
  for (const pathItem of Object.values(spec.paths)) {
    for (const operation of Object.values(pathItem as Record<string, any>)) {
      if (!isRecord(operation) || typeof operation.operationId !== "string") continue
      const group = operation.operationId.split(".")[0]!
      const area = areaOfOperation[operation.operationId] ?? areaOfGroup[group] ?? group
      operation.tags = [area]
      used.add(area)
    }
  }
  const described = new Map(areas)
  spec.tags = [...areas.map(([name]) => name).filter((name) => used.has(name)), ...[...used].filter((name) => !described.has(name))]
    .map((name) => ({ name, ...(described.has(name) ? { description: described.get(name)! } : {}) }))
}

/** Completes the generated document: operation words, query integers, error codes, one `null` per union. */
export const completeDocument = (groups: ReadonlyArray<DocumentedGroup>) => (spec: Spec): Spec => {
  const words = new Map<string, readonly [string, string]>()
  for (const group of groups) {
    const table = Context.get(group.annotations, Operations)
    for (const [name, entry] of Object.entries(table)) words.set(`${group.identifier}.${name}`, entry)
  }
  const facts = endpointFacts(groups)
  const used = new Set<SecurityScheme>()
  addCommonErrors(spec)
  for (const pathItem of Object.values(spec.paths)) {
    for (const [method, operation] of Object.entries(pathItem as Record<string, any>)) {
      if (!isRecord(operation) || typeof operation.operationId !== "string") continue
      const entry = words.get(operation.operationId)
      if (entry) {
        operation.summary ??= entry[0]
        operation.description ??= entry[1]
      }
      for (const parameter of operation.parameters ?? []) {
        if (parameter.in === "query" && queryIntegers[parameter.name]) parameter.schema = { ...queryIntegers[parameter.name] }
        if (parameter.in === "query" && parameter.name === "take") parameter.deprecated = true
        if (operation.operationId === "audit.list" && parameter.name === "action") parameter.schema = auditActionFilter
      }
      if (storedContent.has(operation.operationId) && isRecord(operation.responses?.["200"]?.content)) {
        operation.responses["200"].content["*/*"] = {
          schema: { type: "string", format: "binary", description: "fetched bytes of another type, served with the type they were fetched with" }
        }
      }
      // A screenshot is served in the format the job asked for: PNG (the default) or JPEG.
      if (operation.operationId === "jobs.screenshot" && isRecord(operation.responses?.["200"]?.content?.["image/png"])) {
        operation.responses["200"].content["image/jpeg"] = operation.responses["200"].content["image/png"]
      }
      listErrorCodes(operation, method, facts)
      const known = facts.get(operation.operationId)
      // Any one of the credentials the endpoint's middleware takes; [] for the open routes.
      if (known) operation.security = known.security.map((scheme) => ({ [scheme]: [] }))
      for (const scheme of known?.security ?? []) used.add(scheme)
    }
  }
  spec.components.securitySchemes = Object.fromEntries(
    Object.entries(securitySchemes).filter(([name]) => used.has(name as SecurityScheme))
  ) as Spec["components"]["securitySchemes"]
  // A bulk body's jobs are decoded one by one (an invalid one is a `failed` entry), so its schema
  // takes any item; each is the single-job body, which the document shows.
  const jobBody = bodySchema(spec, "/v1/scraper/jobs", "post")
  const bulkBody = bodySchema(spec, "/v1/scraper/jobs/bulk", "post")
  if (jobBody && bulkBody?.properties?.jobs) {
    bulkBody.properties.jobs.items = jobBody
    bulkBody.properties.jobs.description = "1 to 100 job bodies. Each is checked on its own: one that is not a valid job body does not refuse the request, it is answered in the 207's `failed` list with its index and the reason."
  }
  declareHeaders(spec, facts)
  tagByArea(spec)
  stateConfigPayloadBounds(spec)
  stateDateBounds(spec)
  dedupeAnyOf(spec)
  return spec
}

/** The alternative of `type` of a nullable or optional schema (`anyOf: [x, null]`), or the schema itself. */
const alternativeOf = (schema: any, type: string): Record<string, any> | undefined =>
  isRecord(schema) && Array.isArray(schema.anyOf) ? schema.anyOf.find((s: any) => s?.type === type) : isRecord(schema) ? schema : undefined

/**
 * A config payload's bounds that config-check.ts enforces when a config is written (not by the
 * schema, which also reads configs stored before a bound existed): stated on the request bodies.
 */
const stateConfigPayloadBounds = (spec: Spec) => {
  const names = { minLength: 1, maxLength: MAX_FIELD_NAME, not: { enum: [...RESERVED_NAMES] } }
  for (const [path, method] of [["/v1/extractor/configs", "post"], ["/v1/extractor/configs/{id}", "patch"]] as const) {
    const payload = alternativeOf(bodySchema(spec, path, method)?.properties?.payload, "object")
    if (!payload) continue
    payload.description = `At most ${MAX_PAYLOAD_JSON / 1024} KiB as JSON; selectors, postProcess and fields name at most ${MAX_CONFIG_FIELDS} fields each (names of 1 to ${MAX_FIELD_NAME} characters, fields' not only white space), at most ${MAX_FIELD_OPERATIONS} operations per field.`
    const selectors = alternativeOf(payload.properties?.selectors, "object")
    if (selectors) Object.assign(selectors, { maxProperties: MAX_CONFIG_FIELDS, propertyNames: names })
    const fields = alternativeOf(payload.properties?.fields, "array")
    if (fields && isRecord(fields.items)) Object.assign(fields.items, { minLength: 1, maxLength: MAX_FIELD_NAME, pattern: "\\S" })
    const postProcess = alternativeOf(payload.properties?.postProcess, "object")
    if (postProcess) {
      Object.assign(postProcess, { maxProperties: MAX_CONFIG_FIELDS, propertyNames: names })
      if (isRecord(postProcess.additionalProperties)) postProcess.additionalProperties.maxProperties = MAX_FIELD_OPERATIONS
    }
  }
}

/** Dates the services bound beyond their format (delegation-service.ts, api-key-service.ts), in words. */
const stateDateBounds = (spec: Spec) => {
  const delegation = alternativeOf(bodySchema(spec, "/v1/iam/users/me/delegations", "post")?.properties?.expiresAt, "string")
  if (delegation) delegation.description = "in the future, and at most one year ahead"
  const key = alternativeOf(bodySchema(spec, "/v1/iam/identities/{id}/api-keys", "post")?.properties?.expiresAt, "string")
  if (key) key.description = "in the future"
}

/** Headers that the middlewares send or read for every endpoint alike (docs/api.md, "Headers"). */
const commonHeaders = {
  RequestId: { description: "The request's id (the client's own when it sent a valid one), also in every error envelope and the server's log", schema: { type: "string" } },
  RateLimitLimit: { description: "Requests the credential may make per minute", schema: { type: "integer", minimum: 0 } },
  RateLimitRemaining: { description: "Requests left in the current minute (0 once a window refused the request)", schema: { type: "integer", minimum: 0 } },
  RateLimitReset: { description: "Seconds until the window that counts (or refused) the request turns", schema: { type: "integer", minimum: 0 } },
  RetryAfter: { description: "Seconds to wait before trying again", schema: { type: "integer", minimum: 0 } },
  WwwAuthenticate: { description: "The scheme to authenticate with: Bearer realm=\"trawl\"", schema: { type: "string" } },
  SetCookie: { description: "The session cookie trawl_session (HttpOnly, SameSite=Lax, Path=/; Secure behind an https PUBLIC_BASE_URL); cleared on logout", schema: { type: "string" } },
  Deprecation: { description: "Present when the request used a deprecated parameter (take): when it was deprecated", schema: { type: "string" } },
  Sunset: { description: "Present with Deprecation: when the deprecated parameter stops being accepted", schema: { type: "string" } }
} as const

const ON_BEHALF_PARAMETER = {
  name: ON_BEHALF_HEADER,
  in: "header",
  required: false,
  description: "Act for the delegator of an active delegation to the caller (docs/delegations.md): the request is made with the delegator's permissions, never more, and audited with both identities.",
  // (empty names no delegation: 403 delegation_required, as an unknown identity does)
  schema: { type: "string", maxLength: MAX_ON_BEHALF_LENGTH }
}

/**
 * States the headers the middlewares add or read, which no endpoint's schema names: the request id
 * on every answer, the rate limit's on every answer to a credential, `Retry-After` on 429 and 503,
 * `WWW-Authenticate` on 401, the session cookie where a session is opened or ended, the
 * deprecation headers on lists that take `take`, and `x-on-behalf-of` where a delegate may use it.
 */
const declareHeaders = (spec: Spec, facts: ReturnType<typeof endpointFacts>) => {
  ;(spec.components as Record<string, any>).headers = commonHeaders
  const ref = (name: keyof typeof commonHeaders) => ({ $ref: `#/components/headers/${name}` })
  for (const pathItem of Object.values(spec.paths)) {
    for (const operation of Object.values(pathItem as Record<string, any>)) {
      if (!isRecord(operation) || !isRecord(operation.responses)) continue
      const known = facts.get(operation.operationId)
      const credentialed = (known?.security.length ?? 0) > 0
      const takesTake = (operation.parameters ?? []).some((p: any) => p.in === "query" && p.name === "take")
      // The answers that open a session (a login's 200, a registration's 201) or end one set the cookie.
      const opened = (status: string) => isRecord(operation.responses[status]) && /OpenedSession/.test(JSON.stringify(operation.responses[status]))
      const cookieStatus = opened("200") || operation.operationId === "auth.logout" ? "200" : opened("201") ? "201" : undefined
      for (const [status, response] of Object.entries<any>(operation.responses)) {
        if (!isRecord(response)) continue
        const headers: Record<string, unknown> = { "x-request-id": ref("RequestId") }
        if (credentialed && status !== "401" && status !== "408" && status !== "431") {
          Object.assign(headers, { "RateLimit-Limit": ref("RateLimitLimit"), "RateLimit-Remaining": ref("RateLimitRemaining"), "RateLimit-Reset": ref("RateLimitReset") })
        }
        if (status === "429" || status === "503") headers["Retry-After"] = ref("RetryAfter")
        if (status === "401") headers["WWW-Authenticate"] = ref("WwwAuthenticate")
        if (status === cookieStatus) headers["Set-Cookie"] = ref("SetCookie")
        if (takesTake && status === "200") Object.assign(headers, { Deprecation: ref("Deprecation"), Sunset: ref("Sunset") })
        response.headers = { ...response.headers, ...headers }
      }
      if (known?.onBehalf && credentialed && !(operation.parameters ?? []).some((p: any) => p.name === ON_BEHALF_HEADER)) {
        operation.parameters = [...(operation.parameters ?? []), ON_BEHALF_PARAMETER]
      }
    }
  }
}

const bodySchema = (spec: Spec, path: string, method: string): Record<string, any> | undefined =>
  (spec.paths as Record<string, any>)[path]?.[method]?.requestBody?.content?.["application/json"]?.schema

/**
 * Statuses any operation may answer whatever it declares (docs/api.md "Statuses and codes"):
 * a request not received within REQUEST_TIMEOUT_SECONDS, request headers over 16 KiB, an
 * unexpected failure, an unreachable database or Redis.
 */
const commonErrors: Record<string, string> = {
  "408": "The request's headers and body were not received within REQUEST_TIMEOUT_SECONDS (request_timeout)",
  "431": "Request line and headers over 16 KiB (headers_too_large)",
  "500": "Unexpected failure, logged with the request id (internal_error)",
  "503": "A critical dependency is unavailable, or the work was interrupted by a cluster change (dependency_unavailable)"
}

const addCommonErrors = (spec: Spec) => {
  const schemas = spec.components.schemas as Record<string, any>
  // Every error has the one envelope; the generated ErrorNNN components are it with a description.
  const template = Object.entries(schemas).find(([name]) => /^Error\d{3}$/.test(name))?.[1]
  if (!template) return
  schemas.Error ??= { ...template, description: "The error envelope" }
  for (const pathItem of Object.values(spec.paths)) {
    for (const operation of Object.values(pathItem as Record<string, any>)) {
      if (!isRecord(operation) || !isRecord(operation.responses)) continue
      for (const [status, description] of Object.entries(commonErrors)) {
        operation.responses[status] ??= {
          description,
          content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } }
        }
      }
    }
  }
}