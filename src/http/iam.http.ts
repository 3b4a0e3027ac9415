import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { quotaKeys } from "../billing/plans.ts"
import { utcDayStart } from "../billing/windows.ts"
import { ApiKeyService } from "../iam/api-key-service.ts"
import { CurrentPrincipal } from "../iam/principal.ts"
import { TenantRepo } from "../sql/tenant-repo.ts"
import { Api } from "./api.ts"
import { clientContext } from "./client-context.ts"
import { ApiKeyId, IdentityId } from "../schema/ids.ts"
import { pageOf } from "../schema/envelope.ts"
import { queryLimit } from "./list-query.ts"

export const IamHandlers = HttpApiBuilder.group(
  Api,
  "iam",
  Effect.fn(function*(handlers) {
    const apiKeys = yield* ApiKeyService
    const tenants = yield* TenantRepo

    return handlers
      .handle("createApiKey", ({ params, payload }) =>
        Effect.gen(function*() {
          return yield* apiKeys.create(yield* CurrentPrincipal, IdentityId.make(params.id), payload, yield* clientContext)
        }))
      .handle("listApiKeys", ({ params, query }) =>
        Effect.gen(function*() {
          const limit = yield* queryLimit(query)
          const offset = query.offset ?? 0
          const page = yield* apiKeys.list(yield* CurrentPrincipal, IdentityId.make(params.id), offset, limit)
          return pageOf(page.items, offset, limit, page.total)
        }))
      .handle("getApiKey", ({ params }) => Effect.flatMap(CurrentPrincipal, (me) => apiKeys.get(me, IdentityId.make(params.id), ApiKeyId.make(params.kid))))
      .handle("updateApiKey", ({ params, payload }) =>
        Effect.gen(function*() {
          return yield* apiKeys.update(yield* CurrentPrincipal, IdentityId.make(params.id), ApiKeyId.make(params.kid), payload, yield* clientContext)
        }))
      .handle("revokeApiKey", ({ params }) =>
        Effect.gen(function*() {
          return yield* apiKeys.revoke(yield* CurrentPrincipal, IdentityId.make(params.id), ApiKeyId.make(params.kid), yield* clientContext)
        }))
      .handle("myQuotas", () =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const now = Date.now()
          const day = utcDayStart(now)
          const [limits, used] = yield* Effect.all([tenants.quotaLimits(me.tenantId, quotaKeys), tenants.quotaUsage(me.tenantId, new Date(day))])
          const resetAt = new Date(day + 86_400_000).toISOString()
          return {
            items: quotaKeys.map((key) => ({
              key,
              limit: limits[key],
              used: used[key],
              ...(key.endsWith(".daily") ? { window: "day" as const, resetAt } : {})
            }))
          }
        }))
  })
)

