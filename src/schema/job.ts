import { Schema } from "effect"
import { AbsoluteUrl, CreatedRange, DateTime, NonNegativeInt, NullableDateTime, NullableWebhookSecret, Text, UrlPrefixFilter, WrittenWithin } from "./common.ts"
import { Page, SearchPagination, SortTerms, WHOLE_BODY_ERROR } from "./envelope.ts"

export const JobStatus = Schema.Literals(["queued", "claimed", "done", "failed", "dead"])
export type JobStatus = typeof JobStatus.Type
export const terminalStatuses: ReadonlyArray<JobStatus> = ["done", "failed", "dead"]

export const EngineName = Schema.Literals(["http", "camoufox", "brave", "alternate"])

export const EscalationEntry = Schema.Struct({
  engine: EngineName,
  attempts: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 5 })),
  timeoutMs: Schema.Int.check(Schema.isBetween({ minimum: 1000, maximum: 180_000 }))
})

export const ScreenshotOptions = Schema.Struct({
  format: Schema.optional(Schema.Literals(["png", "jpeg"])),
  quality: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 100 }))),
  fullPage: Schema.optional(Schema.Boolean),
  loadResources: Schema.optional(Schema.Boolean)
})

export const CreateJobBody = Schema.Struct({
  url: AbsoluteUrl,
  // The spec bounds it only above; the floor keeps it an ordinary number, as an extractor config's is.
  priority: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: -1000, maximum: 10 }))),
  webhookUrl: Schema.optional(AbsoluteUrl),
  // optionalKey of a union with a message of its own: null counts as absent, and no message quotes the secret.
  webhookSecret: Schema.optionalKey(NullableWebhookSecret),
  timeoutMs: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 15_000, maximum: 300_000 }))),
  escalation: Schema.optional(Schema.Array(EscalationEntry).check(Schema.isBetweenLength(1, 8))),
  screenshot: Schema.optional(Schema.Union([Schema.Boolean, ScreenshotOptions]))
})
export type CreateJobBody = typeof CreateJobBody.Type

/**
 * A bulk body: 1 to 100 items, each checked one by one by the handler (an invalid item is one
 * `failed` entry of a 207; the document shows the single-job body as the items' schema). A body
 * that is malformed (not JSON, no `jobs`, not an array, other fields) is a `400 validation_error`
 * as everywhere; one whose only fault is the count of its jobs (none, or over 100) is
 * `422 invalid_bulk_body` (the annotation of the count check tells the error envelope so).
 */
export const BulkJobsBody = Schema.Struct({
  jobs: Schema.Array(Schema.Unknown).check(
    Schema.isBetweenLength(1, 100, {
      [WHOLE_BODY_ERROR]: { status: 422, code: "invalid_bulk_body", message: "the body must be {\"jobs\": [1 to 100 job bodies]}" }
    })
  )
})

/** How a fetch attempt ends (docs/crawling.md, "Classification"); the engines' `Classification`. */
export const fetchClassifications = [
  "ok", "not_found", "blocked", "server_error", "empty", "too_large", "timeout", "dns_error", "tls_error", "connection_error", "unsafe_url",
  "engine_unavailable", "cancelled"
] as const
/**
 * How a fetch ended, or `internal_error` for a job a fault of the service ended. Stated in the
 * document, not checked again on the way out (as the engine names below).
 */
const Classification = WrittenWithin(Schema.String, { enum: [...fetchClassifications, "internal_error"] })
const UsedEngine = WrittenWithin(Schema.String, { enum: [...EngineName.literals] })

export const Attempt = Schema.Struct({
  engine: UsedEngine,
  classification: Classification,
  httpStatus: Schema.NullOr(Schema.Int),
  finalUrl: Schema.NullOr(Schema.String),
  durationMs: Schema.Int,
  error: Schema.NullOr(Schema.String)
})

export const JobResult = Schema.Struct({
  httpStatus: Schema.NullOr(Schema.Int),
  finalUrl: Schema.NullOr(Schema.String),
  classification: Classification,
  engine: Schema.NullOr(UsedEngine),
  durationMs: Schema.Int,
  contentType: Schema.NullOr(Schema.String),
  bytes: Schema.Int,
  // `none` for a job that ended before any engine started (cancelled first, or given up on).
  startedWith: Schema.Struct({ engine: WrittenWithin(Schema.String, { enum: [...EngineName.literals, "none"] }), reason: Schema.String }),
  screenshot: Schema.Struct({ taken: Schema.Boolean, reason: Schema.NullOr(Schema.String) }),
  attempts: Schema.Array(Attempt)
}).annotate({ identifier: "JobResult" })
export type JobResult = typeof JobResult.Type

export const Job = Schema.Struct({
  id: Schema.String,
  url: Schema.String,
  status: JobStatus,
  priority: Schema.Int,
  attempts: Schema.Int,
  createdAt: DateTime,
  finishedAt: NullableDateTime,
  domainId: Schema.String,
  tenantId: Schema.String
}).annotate({ identifier: "Job" })
export type Job = typeof Job.Type

export const CreatedJob = Schema.Struct({
  ...Job.fields,
  webhookSecret: Schema.optional(Schema.String.annotate({ description: "The generated webhook secret; shown once" }))
}).annotate({ identifier: "CreatedJob" })

/** A replay's answer: the new job, and the job it replays. */
export const ReplayedJob = Schema.Struct({
  ...Job.fields,
  replayOf: Schema.String
}).annotate({ identifier: "ReplayedJob" })

export const JobWithResult = Schema.Struct({
  ...Job.fields,
  result: Schema.NullOr(JobResult),
  replayOf: Schema.NullOr(Schema.String)
}).annotate({ identifier: "JobWithResult" })

export const BulkResult = Schema.Struct({
  processed: Schema.Boolean,
  summary: Schema.Struct({ total: NonNegativeInt, created: NonNegativeInt, failed: NonNegativeInt }),
  created: Schema.Array(CreatedJob),
  // `retryAfter`: seconds until the refusal may no longer hold, for an item refused for a quota
  // (what `Retry-After` says for a request refused whole).
  failed: Schema.Array(Schema.Struct({ index: NonNegativeInt, url: Schema.NullOr(Schema.String), reason: Schema.String, retryAfter: Schema.optional(NonNegativeInt) }))
})

export const jobSortFields = ["createdAt", "id", "priority", "attempts", "status"] as const

/** A bound of a priority filter: any value the column (a 4-byte integer) can be compared with. */
const PriorityBound = Schema.Int.check(Schema.isBetween({ minimum: -(2 ** 31), maximum: 2 ** 31 - 1 }))

export const SearchJobsBody = Schema.Struct({
  where: Schema.optional(Schema.Struct({
    status: Schema.optional(Schema.Array(JobStatus).check(Schema.isBetweenLength(1, 5))),
    url: Schema.optional(UrlPrefixFilter),
    domainId: Schema.optional(Text(1, 253)),
    createdAt: Schema.optional(CreatedRange),
    priority: Schema.optional(Schema.Struct({
      gte: Schema.optional(PriorityBound),
      lte: Schema.optional(PriorityBound)
    }))
  })),
  sort: Schema.optional(SortTerms(jobSortFields)),
  pagination: Schema.optional(SearchPagination)
})
export type SearchJobsBody = typeof SearchJobsBody.Type

export const JobPage = Page(Job)

export const CancelledJob = Schema.Struct({
  id: Schema.String,
  status: JobStatus,
  cancelled: Schema.Boolean,
  finishedAt: NullableDateTime
})

export const PageVersion = Schema.Struct({
  id: Schema.String,
  url: Schema.String,
  normalizedUrl: Schema.String,
  jobId: Schema.String,
  fetchedAt: DateTime,
  httpStatus: Schema.NullOr(Schema.Int),
  contentType: Schema.NullOr(Schema.String),
  size: Schema.Int,
  contentHash: Schema.String,
  changed: Schema.Boolean
}).annotate({ identifier: "PageVersion" })
export type PageVersion = typeof PageVersion.Type

export const PageDiff = Schema.Struct({
  versionId: Schema.String,
  previousVersionId: Schema.NullOr(Schema.String),
  changed: Schema.Boolean,
  diff: Schema.String,
  binary: Schema.Boolean.annotate({ description: "A version is not text: no line diff; `changed` says whether the bytes differ" }),
  truncated: Schema.Boolean.annotate({ description: "A version is longer than a diff reads (20 000 lines of its first 2 MiB): the diff covers its start" })
})
