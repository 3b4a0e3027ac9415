import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { entityCall } from "../actors/entity-call.ts"
import { TenantEntity } from "../actors/tenant-entity.ts"
import { planCatalogue } from "../billing/plans.ts"
import { EXTRACTION_SERVICE_KEY, IP_LOOKUP_SERVICE_KEY, JOB_SERVICE_KEY, MAP_SERVICE_KEY, priceList } from "../billing/pricing.ts"
import { SUBSCRIPTION_SERVICE_KEY } from "../billing/subscriptions.ts"
import { CurrentPrincipal } from "../iam/principal.ts"
import { DEFAULT_PAGE_LIMIT, pageOf } from "../schema/envelope.ts"
import { withTieBreak } from "../sql/order-by.ts"
import { failListQuery, filterFault, NEWEST_FIRST, queryLimit, sortOrDefault } from "./list-query.ts"
import { TenantRepo } from "../sql/tenant-repo.ts"
import { Api } from "./api.ts"

/** The services the ledger's entries name (those of the price list, and the subscription's). */
const SERVICE_KEYS: ReadonlyArray<string> = [JOB_SERVICE_KEY, MAP_SERVICE_KEY, EXTRACTION_SERVICE_KEY, IP_LOOKUP_SERVICE_KEY, SUBSCRIPTION_SERVICE_KEY]

/**
 * A service filter the price list does not name has no entries: a misspelling, said so (at `path`)
 * rather than answered with an empty page.
 */
const unknownService = (serviceKey: string | undefined, path: string) =>
  serviceKey !== undefined && !SERVICE_KEYS.includes(serviceKey)
    ? failListQuery([filterFault(path, `unknown service ${serviceKey}; services are ${SERVICE_KEYS.join(", ")}`)])
    : undefined

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
          const badService = unknownService(query.serviceKey, "serviceKey")
          if (badService) return yield* badService
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
          const badService = unknownService(payload.where?.serviceKey, "where.serviceKey")
          if (badService) return yield* badService
          const page = yield* tenants.transactions(me.tenantId, payload.where ?? {}, sort, offset, limit)
          return { ...pageOf(page.items, offset, limit, page.total), sort: [...withTieBreak(sort)] }
        }))
      .handle("pricing", () => Effect.succeed({ ...priceList(), ...planCatalogue(), currency: "EUR" as const }))
  })
)
