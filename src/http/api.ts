import { HttpApi, type HttpApiEndpoint, type HttpApiGroup, OpenApi } from "effect/http-api"
import { AdminGroup } from "./admin.api.ts"
import { AuthGroup } from "./auth.api.ts"
import { BillingGroup } from "./billing.api.ts"
import { ControlGroup } from "./control.api.ts"
import { ExtractionsGroup } from "./extractions.api.ts"
import { ExtractorConfigsGroup } from "./extractor-configs.api.ts"
import { AdminAuditGroup, AuditGroup } from "./audit.api.ts"
import { DelegationsGroup } from "./delegations.api.ts"
import { IamGroup } from "./iam.api.ts"
import { InvitationsGroup, RegistrationGroup } from "./invitations.api.ts"
import { RolesGroup } from "./roles.api.ts"
import type { Anonymous, Authorize, InternalAuth } from "./security.ts"
import { AdminQuotaRequestsGroup, QuotaRequestsGroup } from "./quota-requests.api.ts"
import { JobsGroup } from "./jobs.api.ts"
import { MapGroup } from "./map.api.ts"
import { CrawlsGroup } from "./crawls.api.ts"
import { NetworkGroup } from "./network.api.ts"
import { PageHistoryGroup } from "./page-history.api.ts"
import { AdminSubscriptionGroup, SubscriptionGroup } from "./subscriptions.api.ts"
import { SystemGroup } from "./system.api.ts"
import { UsersGroup } from "./users.api.ts"
import { WebhooksAdminGroup } from "./webhooks-admin.api.ts"
import { completeDocument, type DocumentedGroup } from "./openapi.ts"
import { MAX_BODY_BYTES, MAX_JSON_DEPTH } from "../schema/envelope.ts"
import { defaultRetrySchedule } from "../webhooks/schedule.ts"
import { DEFAULT_TOLERANCE_SECONDS } from "../webhooks/signing.ts"

/** Hours, to one decimal, for the document's prose. */
const hours = (ms: number) => Math.round(ms / 360_000) / 10

/**
 * The one definition of Trawl's HTTP interface: routing, validation, the
 * OpenAPI document and the permission table all come from it.
 */
export const Api = HttpApi.make("trawl")
  .add(SystemGroup)
  .add(AuthGroup)
  .add(RegistrationGroup)
  .add(UsersGroup)
  .add(DelegationsGroup)
  .add(IamGroup)
  .add(RolesGroup)
  .add(QuotaRequestsGroup)
  .add(InvitationsGroup)
  .add(AuditGroup)
  .add(JobsGroup)
  .add(MapGroup)
  .add(CrawlsGroup)
  .add(WebhooksAdminGroup)
  .add(PageHistoryGroup)
  .add(ExtractionsGroup)
  .add(ExtractorConfigsGroup)
  .add(NetworkGroup)
  .add(BillingGroup)
  .add(SubscriptionGroup)
  .add(AdminGroup)
  .add(AdminSubscriptionGroup)
  .add(AdminAuditGroup)
  .add(AdminQuotaRequestsGroup)
  .add(ControlGroup)
  // Every offending path is reported at once; unknown body fields are refused
  // so a misspelt option never goes unnoticed.
  .annotate(HttpApi.PayloadParseOptions, { errors: "all", onExcessProperty: "error", reportInput: true })
  .annotate(HttpApi.QueryParseOptions, { errors: "all", reportInput: true })
  .annotate(HttpApi.ParamsParseOptions, { errors: "all" })
  .annotate(HttpApi.HeadersParseOptions, {})
  .annotateMerge(OpenApi.annotations({
    title: "Trawl",
    version: "1.0.0",
    description: `Web crawl, extraction and account service. Every response is a JSON envelope. A request body is JSON in UTF-8, at most ${MAX_BODY_BYTES} bytes (413 payload_too_large) and at most ${MAX_JSON_DEPTH} levels of nested arrays and objects (400 validation_error, detail code too_deep); an object names each member once (400 validation_error, detail code duplicate_key). Its strings are well-formed Unicode: half of a surrogate pair (an escape such as \\ud800 alone) is 400 validation_error at its field; text that is stored refuses NUL (U+0000) too. Rules between fields that a schema cannot state are in the operations' descriptions and docs/api.md (for example webhookSecret only with webhookUrl, and exactly one of url, input and jobId for an extraction). Webhook deliveries (a job's or an extraction's webhookUrl) are POSTs signed with X-Service-Signature: sha256=<hex HMAC-SHA256 of "<X-Service-Timestamp>.<raw body>" keyed by the webhook secret>; a receiver refuses a timestamp more than ${DEFAULT_TOLERANCE_SECONDS} seconds from its clock and compares in constant time. A delivery answered with anything but 2xx is retried with exponential backoff ${defaultRetrySchedule.maxAttempts - 1} times, the last about ${hours(defaultRetrySchedule.table.at(-1)!.atMs)} hours after the first try and none later than ${hours(defaultRetrySchedule.windowMs)} hours, then marked failed; one may arrive more than once (deduplicate on the id and status).`
  }))
  // The package is private and names no licence (package.json): all rights reserved.
  .annotate(OpenApi.License, { name: "Proprietary", identifier: "LicenseRef-Proprietary" })
  // Relative: the document is served by the node it describes. server.ts names PUBLIC_BASE_URL.
  .annotate(OpenApi.Servers, [{ url: "/", description: "the node serving this document" }])
  .annotate(OpenApi.Transform, (spec: Record<string, any>): Record<string, any> => completeDocument(apiGroups())(spec as OpenApi.OpenAPISpec))

/** The groups of `Api`, read when the document is made (after `Api` exists). */
function apiGroups(): ReadonlyArray<DocumentedGroup> {
  return Object.values(Api.groups)
}

/**
 * Every route has a policy: under `ApiKeyAuth` a permission given by `requires(...)` (checked by
 * `Authorize`), else it is one of the open (`Anonymous`) or control-plane (`InternalAuth`) routes;
 * the health probes (`SystemGroup`) alone run no middleware. A route without one makes this line
 * fail to compile, naming it.
 */
type Routes = typeof Api extends HttpApi.HttpApi<infer _Id, infer Groups> ? HttpApiGroup.Endpoints<Exclude<Groups, typeof SystemGroup>> : never
type WithoutPolicy<E> = E extends unknown
  ? [Extract<HttpApiEndpoint.Middleware<E>, Authorize | Anonymous | InternalAuth>] extends [never] ? HttpApiEndpoint.Identifier<E> : never
  : never
export const everyRouteHasAPolicy: [WithoutPolicy<Routes>] extends [never] ? true : { readonly routesWithoutPolicy: WithoutPolicy<Routes> } = true
