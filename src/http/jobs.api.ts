import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { CheckedByHandler, commaListPattern, IdempotencyKeyHeader, LAST_EVENT_ID_PATTERN } from "../schema/common.ts"
import { Page, PageQuery, SortQuery, Success } from "../schema/envelope.ts"
import { Operations } from "./openapi.ts"
import { Conflict, errors, InvalidRequest, NotFound, PaymentRequired, TooManyRequests, Unavailable, Unprocessable } from "../schema/errors.ts"
import { BulkJobsBody, BulkResult, CancelledJob, CreateJobBody, CreatedJob, JobPage, JobStatus, jobSortFields, JobWithResult, ReplayedJob, SearchJobsBody } from "../schema/job.ts"
import { WebhookDelivery, webhookSecretFaults } from "../schema/webhook.ts"
import { ApiKeyAuth, CrossFieldRules, requires, requiresToStop } from "./security.ts"

const IdempotencyHeader = { "idempotency-key": Schema.optional(IdempotencyKeyHeader) }
const id = { id: Schema.String }

export const ListJobsQuery = {
  ...PageQuery,
  sort: SortQuery(jobSortFields),
  status: Schema.optional(CheckedByHandler({ pattern: commaListPattern(JobStatus.literals), description: "one status or a comma-separated list" }))
}

export class JobsGroup extends HttpApiGroup.make("jobs")
  .add(
    HttpApiEndpoint.post("create", "/jobs", {
      headers: IdempotencyHeader,
      payload: CreateJobBody,
      success: Success(CreatedJob, 201),
      error: errors(InvalidRequest, PaymentRequired, Conflict, Unprocessable, TooManyRequests, Unavailable)
    }).annotate(CrossFieldRules, webhookSecretFaults).pipe(requires("scraper:jobs:write")),
    HttpApiEndpoint.post("bulk", "/jobs/bulk", {
      headers: IdempotencyHeader,
      payload: BulkJobsBody,
      success: [Success(BulkResult, 201), Success(BulkResult, 207)],
      error: errors(InvalidRequest, PaymentRequired, Conflict, Unprocessable, TooManyRequests, Unavailable)
    }).pipe(requires("scraper:jobs:write")),
    HttpApiEndpoint.post("search", "/jobs/search", {
      payload: SearchJobsBody,
      success: Success(JobPage),
      error: errors(InvalidRequest)
    }).pipe(requires("scraper:jobs:read")),
    HttpApiEndpoint.get("list", "/jobs", {
      query: ListJobsQuery,
      success: Success(JobPage),
      error: errors(InvalidRequest)
    }).pipe(requires("scraper:jobs:read")),
    HttpApiEndpoint.get("get", "/jobs/:id", {
      params: id,
      success: Success(JobWithResult),
      error: errors(NotFound)
    }).pipe(requires("scraper:jobs:read")),
    HttpApiEndpoint.get("html", "/jobs/:id/html", {
      params: id,
      success: Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/html" })),
      error: errors(NotFound)
    }).pipe(requires("scraper:jobs:read")),
    HttpApiEndpoint.get("screenshot", "/jobs/:id/screenshot", {
      params: id,
      success: Schema.Uint8Array.pipe(HttpApiSchema.asUint8Array({ contentType: "image/png" })),
      error: errors(NotFound)
    }).pipe(requires("scraper:jobs:read")),
    HttpApiEndpoint.post("replay", "/jobs/:id/replay", {
      params: id,
      success: Success(ReplayedJob, 201),
      error: errors(PaymentRequired, NotFound, Conflict, Unprocessable, TooManyRequests, Unavailable)
    }).pipe(requires("scraper:jobs:write")),
    HttpApiEndpoint.post("cancel", "/jobs/:id/cancel", {
      params: id,
      success: Success(CancelledJob),
      error: errors(NotFound, Conflict)
    }).pipe(requiresToStop("scraper:jobs:write")),
    HttpApiEndpoint.get("webhookDeliveries", "/jobs/:id/webhook-deliveries", {
      params: id,
      query: PageQuery,
      success: Success(Page(WebhookDelivery)),
      error: errors(InvalidRequest, NotFound)
    }).pipe(requires("scraper:webhooks:read")),
    HttpApiEndpoint.get("events", "/events", {
      // Read by the stream (jobs.sse.ts), which answers any other value with 400 at Last-Event-ID.
      headers: { "last-event-id": Schema.optional(CheckedByHandler({ pattern: LAST_EVENT_ID_PATTERN.source })) },
      success: Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/event-stream" })),
      error: errors(InvalidRequest)
    }).pipe(requires("scraper:events:read"))
  )
  .middleware(ApiKeyAuth)
  .prefix("/v1/scraper")
  .annotate(OpenApi.Description, "Crawl jobs: create one or many, follow them, read their results and replay or cancel them.")
  .annotate(Operations, {
    create: ["Create a crawl job", "Queues one URL to fetch with the chosen engine and options; webhookSecret goes with webhookUrl (400 otherwise). An Idempotency-Key makes a retry answer the first response."],
    list: ["List crawl jobs", "The tenant's jobs, newest first by default; filter by status, sort by fields."],
    bulk: ["Create crawl jobs in bulk", "Queues 1 to 100 jobs in one request: 201 when all are created, 207 when some are refused (each with its error)."],
    search: ["Search crawl jobs", "Jobs matching a filter body (status, URL prefix, creation time), sorted and paged."],
    get: ["Get a crawl job", "One job with its result once it has one."],
    html: ["Get a job's HTML", "The fetched HTML of a finished job, served inert (sandboxed, not sniffed)."],
    screenshot: ["Get a job's screenshot", "The screenshot of a browser job that asked for one, PNG or JPEG as it asked."],
    replay: ["Replay a crawl job", "Creates a new job with the original's URL and options."],
    cancel: ["Cancel a crawl job", "Cancels a job that has not finished."],
    webhookDeliveries: ["List a job's webhook deliveries", "The webhook delivery attempts of one job, newest first."],
    events: [
      "Follow the tenant's events",
      "A server-sent event stream (text/event-stream) of the tenant's changes; Last-Event-ID resumes after a given event. " +
        "Each event has an id (the tenant's gap-free sequence number), an event type and JSON data {id, status, tenantId, at, ...}. " +
        "Types: job.created, job.claimed, job.done, job.failed, job.dead (data adds url, and classification once ended); " +
        "extraction.created, extraction.claimed, extraction.done, extraction.failed, extraction.dead, extraction.cancelled (data adds type); " +
        "crawl.started {id, url, status}, crawl.page {id (the crawl's), crawlId, jobId, url, depth, status (done, failed or cancelled)}, " +
        "crawl.done and crawl.failed {id, url, status, counts}, crawl.cancelled {id, url, status}. A ': keep-alive' comment comes every 15 s."
    ]
  })
{}
