import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { entityCall } from "../actors/entity-call.ts"
import { TenantEntity } from "../actors/tenant-entity.ts"
import { planCatalogue } from "../billing/plans.ts"
import { priceList } from "../billing/pricing.ts"
import { CurrentPrincipal } from "../iam/principal.ts"
import { DEFAULT_PAGE_LIMIT, pageOf } from "../schema/envelope.ts"
import { withTieBreak } from "../sql/order-by.ts"
import { NEWEST_FIRST, queryLimit, sortOrDefault } from "./list-query.ts"
import { TenantRepo } from "../sql/tenant-repo.ts"
import { Api } from "./api.ts"

export const BillingHandlers = HttpApiBuilder.group(
  Api,
  "billing",
  Effect.fn(function*(handlers) {
    const tenants = yield* TenantRepo
    const tenantClient = yield* TenantEntity.client
    return handlers
      .handle("balance", () =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          // The tenant's entity owns its credits, so the balance is asked of it.
          const balance = yield* entityCall(tenantClient(me.tenantId).GetBalance()).pipe(
            Effect.catchTag("TenantMissing", () => Effect.die(new Error("tenant of a live key is missing")))
          )
          return { tenantId: me.tenantId, balance, currency: "EUR" as const }
        }))
      .handle("transactions", ({ query }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const offset = query.offset ?? 0
          const limit = yield* queryLimit(query)
          const filter = { ...(query.type ? { type: [query.type] } : {}), ...(query.serviceKey ? { serviceKey: query.serviceKey } : {}) }
          const page = yield* tenants.transactions(me.tenantId, filter, NEWEST_FIRST, offset, limit)
          return pageOf(page.items, offset, limit, page.total)
        }))
      .handle("searchTransactions", ({ payload }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const sort = sortOrDefault(payload.sort, NEWEST_FIRST)
          const offset = payload.pagination?.offset ?? 0
          const limit = payload.pagination?.limit ?? DEFAULT_PAGE_LIMIT
          const page = yield* tenants.transactions(me.tenantId, payload.where ?? {}, sort, offset, limit)
          return { ...pageOf(page.items, offset, limit, page.total), sort: [...withTieBreak(sort)] }
        }))
      .handle("pricing", () => Effect.succeed({ ...priceList(), ...planCatalogue(), currency: "EUR" as const }))
  })
)
