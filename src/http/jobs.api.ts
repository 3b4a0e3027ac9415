import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { Page, PageQuery, Success } from "../schema/envelope.ts"
import { Conflict, errors, InvalidRequest, NotFound, PaymentRequired, TooManyRequests, Unavailable, Unprocessable } from "../schema/errors.ts"
import { BulkJobsBody, BulkResult, CancelledJob, CreateJobBody, CreatedJob, JobPage, JobWithResult, ReplayedJob, SearchJobsBody } from "../schema/job.ts"
import { WebhookDelivery } from "../schema/webhook.ts"
import { ApiKeyAuth, requires } from "./security.ts"
import { JobId } from "../schema/ids.ts"

const IdempotencyHeader = { "idempotency-key": Schema.optional(Schema.String) }
const id = { id: JobId }

export const ListJobsQuery = {
  ...PageQuery,
  sort: Schema.optional(Schema.String.annotate({ description: "comma-separated field:dir pairs, e.g. createdAt:desc,id:desc" })),
  status: Schema.optional(Schema.String.annotate({ description: "one status or a comma-separated list" }))
}

export class JobsGroup extends HttpApiGroup.make("jobs")
  .add(
    HttpApiEndpoint.post("create", "/jobs", {
      headers: IdempotencyHeader,
      payload: CreateJobBody,
      success: Success(CreatedJob, 201),
      error: errors(InvalidRequest, PaymentRequired, Conflict, Unprocessable, TooManyRequests, Unavailable)
    }).pipe(requires("scraper:jobs:write")),
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
    }).pipe(requires("scraper:jobs:write")),
    HttpApiEndpoint.get("webhookDeliveries", "/jobs/:id/webhook-deliveries", {
      params: id,
      query: PageQuery,
      success: Success(Page(WebhookDelivery)),
      error: errors(InvalidRequest, NotFound)
    }).pipe(requires("scraper:webhooks:read")),
    HttpApiEndpoint.get("events", "/events", {
      headers: { "last-event-id": Schema.optional(Schema.String) },
      success: Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/event-stream" })),
      error: errors(InvalidRequest)
    }).pipe(requires("scraper:events:read"))
  )
  .middleware(ApiKeyAuth)
  .prefix("/v1/scraper")
{}
