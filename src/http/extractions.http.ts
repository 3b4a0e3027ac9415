import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { sendOneWay } from "../actors/entity-call.ts"
import { bodyRefusal, ExtractionCreation } from "../actors/extraction-creation.ts"
import { ExtractionEntity } from "../actors/extraction-entity.ts"
import { JobCreation } from "../actors/job-creation.ts"
import { TenantEntity } from "../actors/tenant-entity.ts"
import { EventLog } from "../events/event-log.ts"
import { CurrentPrincipal } from "../iam/principal.ts"
import { DEFAULT_PAGE_LIMIT, pageOf } from "../schema/envelope.ts"
import { notFound } from "../schema/errors.ts"
import { type ExtractionStatus, extractionSortFields } from "../schema/extraction.ts"
import { ExtractionRepo, type ExtractionRow, toExtraction } from "../sql/extraction-repo.ts"
import { withTieBreak } from "../sql/order-by.ts"
import { WebhookRepo } from "../sql/webhook-repo.ts"
import { Api } from "./api.ts"
import { Idempotency } from "./idempotency.ts"
import { failListQuery, filterFault, NEWEST_FIRST, queryLimit, readSort, sortOrDefault } from "./list-query.ts"
import { ExtractionId } from "../schema/ids.ts"

const statuses: ReadonlyArray<ExtractionStatus> = ["queued", "claimed", "done", "failed", "dead", "cancelled"]

export const ExtractionsHandlers = HttpApiBuilder.group(
  Api,
  "extractions",
  Effect.fn(function*(handlers) {
    const repo = yield* ExtractionRepo
    const webhooks = yield* WebhookRepo
    const events = yield* EventLog
    const idempotency = yield* Idempotency
    const creation = yield* ExtractionCreation
    const jobCreation = yield* JobCreation
    const client = yield* ExtractionEntity.client
    const tenantClient = yield* TenantEntity.client

    const page = (tenantId: string, where: Parameters<typeof repo.query>[0]["where"], sort: ReadonlyArray<{ readonly field: string; readonly dir: "asc" | "desc" }>, offset: number, limit: number) =>
      repo.query({ tenantId, where, sort, offset, limit }).pipe(
        // `sort` echoes the order applied, with the id that breaks ties (as the jobs list does).
        Effect.map((p) => ({ ...pageOf(p.items.map(toExtraction), offset, limit, p.total), sort: [...withTieBreak(sort)] }))
      )

    return handlers
      .handle("create", ({ payload, headers }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          // A body that breaks a rule across its fields is answered as the schema's errors are: before
          // the Idempotency-Key is looked at, naming the key too when it is invalid as well.
          const refused = bodyRefusal(payload, false, headers["idempotency-key"])
          if (refused) return yield* refused
          return yield* idempotency.run(me.tenantId, headers["idempotency-key"], { op: "extraction", payload }, (keyed) => Effect.gen(function*() {
            const created = yield* creation.create(me.tenantId, payload, { replayOf: null, recycleCount: 0, keyed })
            return { status: 201, body: { status: "success", code: "201-created", data: created } }
          }))
        }))
      .handle("list", ({ query }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const limit = yield* queryLimit(query)
          const { sort, faults } = readSort(query.sort, extractionSortFields, "createdAt:desc,id:desc")
          const where: Parameters<typeof repo.query>[0]["where"] = {}
          if (query.status !== undefined) {
            const wanted = query.status.split(",").map((s) => s.trim())
            if (wanted.some((s) => !(statuses as ReadonlyArray<string>).includes(s))) faults.push(filterFault("status", `status must be among ${statuses.join(", ")}`))
            Object.assign(where, { status: wanted })
          }
          if (query.type !== undefined) {
            if (query.type !== "article" && query.type !== "product") faults.push(filterFault("type", "type must be article or product"))
            Object.assign(where, { type: query.type })
          }
          if (query.domainId !== undefined) {
            if (query.domainId.trim().length === 0 || query.domainId.length > 253) faults.push(filterFault("domainId", "domainId must be a domain"))
            Object.assign(where, { domainId: query.domainId })
          }
          if (faults.length > 0) return yield* failListQuery(faults)
          return yield* page(me.tenantId, where, sort, query.offset ?? 0, limit)
        }))
      .handle("search", ({ payload }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const sort = sortOrDefault(payload.sort, NEWEST_FIRST)
          return yield* page(me.tenantId, payload.where ?? {}, sort, payload.pagination?.offset ?? 0, payload.pagination?.limit ?? DEFAULT_PAGE_LIMIT)
        }))
      .handle("get", ({ params }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const row = yield* repo.find(me.tenantId, params.id)
          return row ? toExtraction(row) : yield* notFound("extraction")
        }))
      .handle("cancel", ({ params }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const result = yield* repo.cancel(me.tenantId, params.id)
          if (!result) return yield* notFound("extraction")
          const row: ExtractionRow = result.row
          // Always a date-time (docs/api.md, "Extractions"): when it was cancelled, by this request or
          // before; for one that ended otherwise, when this refused cancel was answered.
          const cancelledAt = toExtraction(row).cancelledAt ?? new Date().toISOString()
          if (result.changed) {
            // Cancelled in SQL: its abort and event must follow even if the client hangs up. The job
            // it made to fetch its URL has nobody else waiting for it: it is cancelled too.
            yield* Effect.uninterruptible(Effect.all([
              sendOneWay(client(row.id).Abort(undefined, { discard: true })),
              // Cancelled, it costs nothing: the credit it held is free again once it is settled.
              sendOneWay(tenantClient(row.tenant_id).Settle(undefined, { discard: true })),
              events.notify(row.tenant_id),
              row.job_id && row.made_own_job === true ? jobCreation.cancel(me.tenantId, row.job_id) : Effect.void
            ], { discard: true }))
            return { id: row.id, status: row.status, cancelled: true, cancelledAt }
          }
          return { id: row.id, status: row.status, cancelled: false, cancelledAt, reason: `already ${row.status}` }
        }))
      .handle("replay", ({ params }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          return yield* creation.replay(me.tenantId, ExtractionId.make(params.id))
        }))
      .handle("webhookDeliveries", ({ params, query }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          if (!(yield* repo.find(me.tenantId, params.id))) return yield* notFound("extraction")
          const offset = query.offset ?? 0
          const limit = yield* queryLimit(query)
          const page = yield* webhooks.forResource(me.tenantId, "extraction", params.id, { offset, limit })
          return pageOf(page.items, offset, limit, page.total)
        }))
  })
)
