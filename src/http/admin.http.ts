import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { entityCall } from "../actors/entity-call.ts"
import { TenantEntity } from "../actors/tenant-entity.ts"
import { CurrentPrincipal } from "../iam/principal.ts"
import { newId } from "../ids.ts"
import { pageOf } from "../schema/envelope.ts"
import { fail, notFound } from "../schema/errors.ts"
import { AuditLog } from "../sql/audit-log.ts"
import { MAX_BALANCE } from "../schema/tenant.ts"
import { TenantRepo } from "../sql/tenant-repo.ts"
import { Api } from "./api.ts"
import { queryLimit } from "./list-query.ts"

export const AdminHandlers = HttpApiBuilder.group(
  Api,
  "admin",
  Effect.fn(function*(handlers) {
    const tenants = yield* TenantRepo
    const tenantClient = yield* TenantEntity.client
    const audit = yield* AuditLog
    return handlers
      .handle("listTenants", ({ query }) =>
        Effect.gen(function*() {
          const offset = query.offset ?? 0
          const limit = yield* queryLimit(query)
          const page = yield* tenants.list(offset, limit)
          return pageOf(page.items, offset, limit, page.total)
        }))
      .handle("getTenant", ({ params }) =>
        tenants.find(params.tenantId).pipe(Effect.flatMap((t) => t ? Effect.succeed(t) : notFound("tenant"))))
      .handle("setQuota", ({ params, payload }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          if (!(yield* tenants.find(params.tenantId))) return yield* notFound("tenant")
          yield* tenants.setQuota(params.tenantId, params.quotaKey, payload.limit)
          yield* audit.record(me, "quota.override", params.tenantId, { quotaKey: params.quotaKey, limit: payload.limit })
          const effectiveLimit = yield* tenants.quotaLimit(params.tenantId, params.quotaKey)
          return { tenantId: params.tenantId, quotaKey: params.quotaKey, limit: payload.limit, effectiveLimit }
        }))
      .handle("adjustCredits", ({ params, payload }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const positive = Number(payload.amount) > 0
          const type = positive ? "topup" as const : "correction" as const
          return yield* entityCall(tenantClient(params.tenantId).AdjustCredits({
            entryId: newId("txn"),
            type,
            amount: payload.amount,
            // The tenant reads the note in its ledger; who wrote it is the audit log's (the platform's people stay unnamed there).
            note: payload.note,
            serviceKey: null,
            resourceId: null,
            resourceType: null
          })).pipe(
            // Who moved a tenant's money, as for its quotas.
            Effect.tap((txn) => audit.record(me, "credits.adjust", params.tenantId, { transactionId: txn.id, type, amount: payload.amount, note: payload.note })),
            Effect.catchTags({
              TenantMissing: () => notFound("tenant"),
              InsufficientCredit: (e) =>
                fail(409, "insufficient_balance", `a correction cannot take the balance (${e.balance}) below zero`, {
                  details: [{ path: "amount", code: "invalid_value", message: "would take the balance below zero" }]
                }),
              BalanceCeiling: (e) =>
                fail(409, "balance_ceiling", `a balance holds at most ${MAX_BALANCE} EUR; this one holds ${e.balance}`, {
                  details: [{ path: "amount", code: "invalid_value", message: "would take the balance above its ceiling" }]
                })
            })
          )
        }))
  })
)
