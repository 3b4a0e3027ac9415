import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { SiteCrawlService } from "../actors/site-crawls.ts"
import { CurrentPrincipal } from "../iam/principal.ts"
import { CRAWL_MAX_DEPTH, CrawlPageStatus, crawlSortFields, CrawlStatus } from "../schema/crawl.ts"
import { pageOf } from "../schema/envelope.ts"
import { fail, notFound, RequestId } from "../schema/errors.ts"
import { withTieBreak } from "../sql/order-by.ts"
import { Api } from "./api.ts"
import { Idempotency } from "./idempotency.ts"
import { failListQuery, filterFault, type ListFault, queryLimit, readSort } from "./list-query.ts"

/** A comma-separated status filter: the statuses named, with a fault for each unknown one. */
const readStatuses = <S extends string>(raw: string | undefined, statuses: ReadonlyArray<S>, faults: Array<ListFault>): ReadonlyArray<S> | undefined => {
  if (raw === undefined) return undefined
  const wanted = raw.split(",").map((s) => s.trim())
  const unknown = wanted.filter((s) => !(statuses as ReadonlyArray<string>).includes(s))
  if (unknown.length > 0) faults.push(filterFault("status", `unknown status ${unknown.join(", ").slice(0, 200)}; statuses are ${statuses.join(", ")}`))
  return wanted as Array<S>
}

export const CrawlsHandlers = HttpApiBuilder.group(
  Api,
  "crawls",
  Effect.fn(function*(handlers) {
    const crawls = yield* SiteCrawlService
    const idempotency = yield* Idempotency

    return handlers
      .handle("create", ({ payload, headers }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          return yield* idempotency.run(me.tenantId, headers["idempotency-key"], { op: "crawl", payload }, (keyed) =>
            Effect.gen(function*() {
              const created = yield* crawls.create(me.tenantId, payload, { requestId: yield* RequestId, keyed })
              return { status: 201, body: { status: "success", code: "201-created", data: created } }
            }))
        }))
      .handle("list", ({ query }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const limit = yield* queryLimit(query)
          const { sort, faults } = readSort(query.sort, crawlSortFields, "createdAt:desc,id:desc")
          const statuses = readStatuses(query.status, CrawlStatus.literals, faults)
          if (faults.length > 0) return yield* failListQuery(faults)
          const offset = query.offset ?? 0
          const page = yield* crawls.list({ tenantId: me.tenantId, statuses, sort, offset, limit })
          return { ...pageOf(page.items, offset, limit, page.total), sort: [...withTieBreak(sort)] }
        }))
      .handle("get", ({ params }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          return (yield* crawls.get(me.tenantId, params.id)) ?? (yield* notFound("crawl"))
        }))
      .handle("pages", ({ params, query }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const limit = yield* queryLimit(query)
          const faults: Array<ListFault> = []
          const statuses = readStatuses(query.status, CrawlPageStatus.literals, faults)
          let depth: number | undefined
          if (query.depth !== undefined) {
            depth = /^\d{1,2}$/.test(query.depth) ? Number(query.depth) : NaN
            if (!(depth >= 0 && depth <= CRAWL_MAX_DEPTH.max)) faults.push(filterFault("depth", `a depth is a whole number from 0 to ${CRAWL_MAX_DEPTH.max}`))
          }
          if (query.parentJobId !== undefined && (query.parentJobId.length === 0 || query.parentJobId.length > 64)) {
            faults.push(filterFault("parentJobId", "a job id of 1 to 64 characters"))
          }
          if (faults.length > 0) return yield* failListQuery(faults)
          const offset = query.offset ?? 0
          const page = yield* crawls.pages(me.tenantId, params.id, { statuses, depth, parentJobId: query.parentJobId, offset, limit })
          if (!page) return yield* notFound("crawl")
          return pageOf(page.items, offset, limit, page.total)
        }))
      .handle("cancel", ({ params }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const result = yield* crawls.cancel(me.tenantId, params.id)
          if (!result) return yield* notFound("crawl")
          if (!result.changed) return yield* fail(409, `cannot_cancel_${result.crawl.status}`, `the crawl is already ${result.crawl.status}`)
          return result.crawl
        }))
  })
)
