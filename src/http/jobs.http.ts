import { Effect, Schema } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { JobCreation, type PreparedJob } from "../actors/job-creation.ts"
import { servedContentType } from "../crawl/content-type.ts"
import { CurrentPrincipal } from "../iam/principal.ts"
import { DEFAULT_PAGE_LIMIT, pageOf, storedContentHeaders } from "../schema/envelope.ts"
import { apiError, type ErrorDetail, fail, notFound, RequestId } from "../schema/errors.ts"
import { CreateJobBody, type JobStatus, jobSortFields, terminalStatuses } from "../schema/job.ts"
import { JobRepo, type JobRow, toJob } from "../sql/job-repo.ts"
import { withTieBreak } from "../sql/order-by.ts"
import { WebhookRepo } from "../sql/webhook-repo.ts"
import { Api } from "./api.ts"
import { issueDetails } from "./envelope-middleware.ts"
import { Idempotency } from "./idempotency.ts"
import { makeEventStreams } from "./jobs.sse.ts"
import { failListQuery, filterFault, NEWEST_FIRST, queryLimit, readSort, sortOrDefault } from "./list-query.ts"
import { JobId } from "../schema/ids.ts"

const statuses: ReadonlyArray<JobStatus> = ["queued", "claimed", "done", "failed", "dead"]
/** An item's `url` as a bulk answer echoes it: the most a valid one can be, so a huge invalid one is not sent back whole. */
const MAX_ECHOED_URL = 2048
const echoedUrl = (url: string) => {
  if (url.length <= MAX_ECHOED_URL) return url
  // Not between the halves of a surrogate pair: a lone half would make the answer's JSON invalid to strict parsers.
  const end = /[\uD800-\uDBFF]/.test(url[MAX_ECHOED_URL - 1]!) ? MAX_ECHOED_URL - 1 : MAX_ECHOED_URL
  return `${url.slice(0, end)}…`
}

const envelope = (status: number, label: string, data: unknown) => ({ status, body: { status: "success", code: `${status}-${label}`, data } })

// The JSON codec the single-job endpoint decodes its body with, so that one body gets one verdict
// either way (a null optional field, for one, is taken as absent by both).
const decodeJob = Schema.decodeUnknownExit(Schema.toCodecJson(CreateJobBody), { errors: "all", onExcessProperty: "error", reportInput: true })

export const JobsHandlers = HttpApiBuilder.group(
  Api,
  "jobs",
  Effect.fn(function*(handlers) {
    const repo = yield* JobRepo
    const idempotency = yield* Idempotency
    const { prepare, create: createJobs, createWhatFits, cancel: cancelJob } = yield* JobCreation
    const webhooks = yield* WebhookRepo
    const eventStreams = yield* makeEventStreams

    const withResult = (row: JobRow) => ({ ...toJob(row), result: row.result ?? null, replayOf: row.replay_of })

    /** A page of jobs; `sort` echoes the order applied, with the id that breaks ties. */
    const listQuery = (tenantId: string, where: Parameters<typeof repo.query>[0]["where"], sort: ReadonlyArray<{ readonly field: string; readonly dir: "asc" | "desc" }>, offset: number, limit: number) =>
      repo.query({ tenantId, where, sort, offset, limit }).pipe(
        Effect.map((page) => ({ ...pageOf(page.items.map(toJob), offset, limit, page.total), sort: [...withTieBreak(sort)] }))
      )

    return handlers
      .handle("create", ({ payload, headers }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          return yield* idempotency.run(me.tenantId, headers["idempotency-key"], { op: "create", payload }, (attempt) => Effect.gen(function*() {
            const prepared = yield* prepare(me.tenantId, payload, { requestId: yield* RequestId, keyed: attempt && { attempt, index: 0 } })
            const [created] = yield* createJobs(me.tenantId, [prepared])
            return envelope(201, "created", created)
          }))
        }))
      .handle("bulk", ({ payload, headers }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          // Each item decoded once. An item is told apart by what it decodes to, as a single job's
          // body is; one that does not decode, by its JSON.
          const decodedItems = payload.jobs.map((item) => decodeJob(item))
          const items = decodedItems.map((decoded, index) => (decoded._tag === "Success" ? { job: decoded.value } : { invalid: payload.jobs[index] }))
          return yield* idempotency.run(me.tenantId, headers["idempotency-key"], { op: "bulk", items }, (attempt) => Effect.gen(function*() {
            const requestId = yield* RequestId
            const failed: Array<{ index: number; url: string | null; reason: string; retryAfter?: number }> = []
            const ok: Array<{ index: number; url: string | null; prepared: PreparedJob }> = []
            yield* Effect.forEach(payload.jobs, (item, index) =>
              Effect.gen(function*() {
                const url = typeof (item as { url?: unknown })?.url === "string" ? echoedUrl((item as { url: string }).url) : null
                const decoded = decodedItems[index]!
                if (decoded._tag === "Failure") {
                  const issue = (decoded.cause as any).reasons?.[0]?.error?.issue
                  const details: Array<ErrorDetail> = issue ? issueDetails(issue) : []
                  failed.push({ index, url, reason: `validation_error: ${details.map((d) => `${d.path || "item"} ${d.message}`).join("; ")}` })
                  return
                }
                const result = yield* Effect.result(prepare(me.tenantId, decoded.value, { requestId, keyed: attempt && { attempt, index } }))
                if (result._tag === "Failure") {
                  failed.push({ index, url, reason: `${result.failure.code}: ${result.failure.message}` })
                } else ok.push({ index, url, prepared: result.success })
              }), { concurrency: 8, discard: true })
            // Quota slots and webhook URL places go to the items in request order; the items left
            // without are reported as failed.
            ok.sort((a, b) => a.index - b.index)
            // When no item fits the quota the request is refused whole (429); the items that failed on
            // their own are named in its details, so the retry does not find them out one by one.
            const { created, refused } = ok.length > 0
              ? yield* createWhatFits(me.tenantId, ok.map((o) => o.prepared)).pipe(
                Effect.mapError((e) =>
                  failed.length === 0 ? e : apiError(e.status, e.code, `${e.message}; besides, ${failed.length} item(s) failed on their own`, {
                    retryAfter: e.retryAfter,
                    extra: e.extra,
                    details: [
                      ...(e.details ?? []),
                      ...[...failed].sort((a, b) => a.index - b.index).map((f) => ({ path: `jobs.${f.index}`, code: "item_failed", message: f.reason }))
                    ]
                  })
                )
              )
              : { created: [], refused: [] }
            for (const { position, error } of refused) {
              failed.push({
                index: ok[position]!.index,
                url: ok[position]!.url,
                reason: `${error.code}: ${error.message}`,
                ...(error.retryAfter !== undefined ? { retryAfter: error.retryAfter } : {})
              })
            }
            failed.sort((a, b) => a.index - b.index)
            const data = {
              processed: true,
              summary: { total: payload.jobs.length, created: created.length, failed: failed.length },
              created,
              failed
            }
            return failed.length === 0 ? envelope(201, "created", data) : envelope(207, "partial_success", data)
          }))
        }))
      .handle("search", ({ payload }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const sort = sortOrDefault(payload.sort, NEWEST_FIRST)
          const offset = payload.pagination?.offset ?? 0
          const limit = payload.pagination?.limit ?? DEFAULT_PAGE_LIMIT
          return yield* listQuery(me.tenantId, payload.where ?? {}, sort, offset, limit)
        }))
      .handle("list", ({ query }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          // A malformed page size is answered on its own, before the sort and filters are read.
          const limit = yield* queryLimit(query)
          const { sort, faults } = readSort(query.sort, jobSortFields, "createdAt:desc,id:desc")
          let status: Array<JobStatus> | undefined
          if (query.status !== undefined) {
            const wanted = query.status.split(",").map((s) => s.trim())
            const unknown = wanted.filter((s) => !(statuses as ReadonlyArray<string>).includes(s))
            if (unknown.length > 0) faults.push(filterFault("status", `unknown status ${unknown.join(", ")}; statuses are ${statuses.join(", ")}`))
            status = wanted as Array<JobStatus>
          }
          if (faults.length > 0) return yield* failListQuery(faults)
          return yield* listQuery(me.tenantId, status ? { status } : {}, sort, query.offset ?? 0, limit)
        }))
      .handle("get", ({ params }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const row = yield* repo.find(me.tenantId, params.id)
          return row ? withResult(row) : yield* notFound("job")
        }))
      .handle("html", ({ params }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const content = yield* repo.html(me.tenantId, params.id)
          // An empty answer kept nothing to serve: the result says 0 bytes and no type.
          if (!content || content.body.byteLength === 0) return yield* notFound("HTML of this job")
          return HttpServerResponse.uint8Array(content.body, { contentType: servedContentType(content.contentType, content.body), headers: storedContentHeaders })
        }))
      .handle("screenshot", ({ params }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const shot = yield* repo.screenshot(me.tenantId, params.id)
          if (!shot) {
            // The job's own words on why there is none, when it has them.
            const row = yield* repo.find(me.tenantId, params.id)
            if (!row) return yield* notFound("job")
            const why = !row.screenshot ? "no screenshot was asked for"
              : !row.result ? `the job is ${row.status}`
              : row.result.screenshot?.reason ?? "none was taken"
            return yield* fail(404, "not_found", `this job has no screenshot: ${why}`)
          }
          return HttpServerResponse.uint8Array(shot.bytes, { contentType: shot.type, headers: storedContentHeaders })
        }))
      .handle("replay", ({ params }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const row = yield* repo.find(me.tenantId, params.id)
          if (!row) return yield* notFound("job")
          if (!(terminalStatuses as ReadonlyArray<string>).includes(row.status)) {
            return yield* fail(409, `cannot_replay_${row.status}`, `a ${row.status} job cannot be replayed; wait until it ends`)
          }
          const body: CreateJobBody = {
            url: row.url,
            priority: row.priority,
            timeoutMs: row.timeout_ms,
            ...(row.escalation ? { escalation: row.escalation as CreateJobBody["escalation"] } : {}),
            ...(row.screenshot ? { screenshot: row.screenshot as CreateJobBody["screenshot"] } : {})
          }
          const prepared = yield* prepare(me.tenantId, body, { requestId: yield* RequestId, replayOf: row.id })
          // The replay keeps the original's webhook and its secret.
          const job = { ...prepared.job, webhookUrl: row.webhook_url, webhookSecretEnc: row.webhook_secret_enc }
          const [created] = yield* createJobs(me.tenantId, [{ ...prepared, job, generatedSecret: undefined }])
          return HttpServerResponse.jsonUnsafe(envelope(201, "created", { ...created, replayOf: row.id }).body, { status: 201 })
        }))
      .handle("cancel", ({ params }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const cancelled = yield* cancelJob(me.tenantId, JobId.make(params.id))
          if (!cancelled) return yield* notFound("job")
          if (!cancelled.changed) {
            return yield* fail(409, `cannot_cancel_${cancelled.row.status}`, `the job is already ${cancelled.row.status}`)
          }
          const row = cancelled.row
          return { id: row.id, status: row.status, cancelled: true, finishedAt: toJob(row).finishedAt }
        }))
      .handle("webhookDeliveries", ({ params, query }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          if (!(yield* repo.find(me.tenantId, params.id))) return yield* notFound("job")
          const offset = query.offset ?? 0
          const limit = yield* queryLimit(query)
          const page = yield* webhooks.forResource(me.tenantId, "job", params.id, { offset, limit })
          return pageOf(page.items, offset, limit, page.total)
        }))
      .handle("events", ({ headers }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const request = yield* HttpServerRequest.HttpServerRequest
          return yield* eventStreams.open(me, request, headers["last-event-id"])
        }))
  })
)

