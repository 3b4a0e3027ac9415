import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { CurrentPrincipal } from "../iam/principal.ts"
import { QuotaRequestService, storedStatus, toQuotaRequest } from "../iam/quota-request-service.ts"
import { iso } from "../schema/common.ts"
import { pageOf } from "../schema/envelope.ts"
import { MAX_TENANT_ID_FILTER_LENGTH, quotaRequestStatuses, type QuotaRequestStatus } from "../schema/quota-request.ts"
import { QuotaRequestRepo, type QuotaRequestFilter } from "../sql/quota-request-repo.ts"
import { Api } from "./api.ts"
import { failListQuery, filterFault, type ListFault, queryLimit } from "./list-query.ts"

const MAX_TENANT_ID_LENGTH = MAX_TENANT_ID_FILTER_LENGTH

interface ListQuery {
  readonly offset?: number | undefined
  readonly limit?: number | undefined
  readonly take?: number | undefined
  readonly status?: string | undefined
  readonly tenantId?: string | undefined
}

/** The filter of a list query, or a 400 naming every bad parameter (`invalid_filter`). */
const readFilter = (query: ListQuery) => {
  const faults: Array<ListFault> = []
  const filter: { -readonly [K in keyof QuotaRequestFilter]: QuotaRequestFilter[K] } = {}
  if (query.status !== undefined) {
    if ((quotaRequestStatuses as ReadonlyArray<string>).includes(query.status)) filter.status = storedStatus(query.status as QuotaRequestStatus)
    else faults.push(filterFault("status", `must be one of ${quotaRequestStatuses.join(", ")}`))
  }
  if (query.tenantId !== undefined) {
    if (query.tenantId.length < 1 || query.tenantId.length > MAX_TENANT_ID_LENGTH) {
      faults.push(filterFault("tenantId", `must be 1 to ${MAX_TENANT_ID_LENGTH} characters`))
    } else filter.tenantId = query.tenantId
  }
  return faults.length > 0 ? failListQuery(faults) : Effect.succeed(filter as QuotaRequestFilter)
}

const listWith = (repo: typeof QuotaRequestRepo.Service, query: ListQuery, tenantId?: string) =>
  Effect.gen(function*() {
    const limit = yield* queryLimit(query)
    const filter = yield* readFilter(query)
    const offset = query.offset ?? 0
    const page = yield* repo.list(tenantId === undefined ? filter : { ...filter, tenantId }, offset, limit)
    return pageOf(page.items.map(toQuotaRequest), offset, limit, page.total)
  })

export const QuotaRequestsHandlers = HttpApiBuilder.group(
  Api,
  "quotaRequests",
  Effect.fn(function*(handlers) {
    const repo = yield* QuotaRequestRepo
    const service = yield* QuotaRequestService
    return handlers
      .handle("list", ({ query }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          return yield* listWith(repo, query, me.tenantId)
        }))
      .handle("create", ({ payload }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          return toQuotaRequest(yield* service.create(me, payload))
        }))
      .handle("withdraw", ({ params }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const row = yield* service.withdraw(me, params.id)
          return { ...toQuotaRequest(row), withdrawn: true as const, withdrawnAt: iso(row.withdrawn_at)! }
        }))
  })
)

export const AdminQuotaRequestsHandlers = HttpApiBuilder.group(
  Api,
  "adminQuotaRequests",
  Effect.fn(function*(handlers) {
    const repo = yield* QuotaRequestRepo
    const service = yield* QuotaRequestService
    const decide = (id: string, approve: boolean, note: string | null | undefined) =>
      Effect.gen(function*() {
        const me = yield* CurrentPrincipal
        return toQuotaRequest(yield* service.decide(me, id, approve, note ?? null))
      })
    return handlers
      .handle("list", ({ query }) => listWith(repo, query))
      .handle("approve", ({ params, payload }) => decide(params.id, true, payload?.note))
      .handle("reject", ({ params, payload }) => decide(params.id, false, payload?.note))
  })
)
