import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { entityCall } from "../actors/entity-call.ts"
import { QuotaOverrides } from "../actors/quota-overrides.ts"
import { TenantEntity } from "../actors/tenant-entity.ts"
import { CurrentPrincipal, type Principal } from "../iam/principal.ts"
import { itemId } from "../ids.ts"
import { pageOf } from "../schema/envelope.ts"
import { fail, notFound } from "../schema/errors.ts"
import { AuditLog, entryForTenant } from "../sql/audit-log.ts"
import { MAX_BALANCE } from "../schema/tenant.ts"
import { TenantRepo } from "../sql/tenant-repo.ts"
import { Api } from "./api.ts"
import { Idempotency } from "./idempotency.ts"
import { queryLimit } from "./list-query.ts"

export const AdminHandlers = HttpApiBuilder.group(
  Api,
  "admin",
  Effect.fn(function*(handlers) {
    const tenants = yield* TenantRepo
    const tenantClient = yield* TenantEntity.client
    const audit = yield* AuditLog
    const idempotency = yield* Idempotency
    const overrides = yield* QuotaOverrides

    /**
     * One credit adjustment, its ledger entry named `entryId` (written once, however often it is
     * sent). Who moved a tenant's money goes in the admin's audit log and in the tenant's own, where
     * its owner reads it (as quota decisions do); the tenant reads the note in its ledger.
     */
    const adjust = (me: Principal, tenantId: string, type: "topup" | "correction", payload: { readonly amount: string; readonly note: string }, entryId: string) =>
      entityCall(tenantClient(tenantId).AdjustCredits({
        entryId,
        type,
        amount: payload.amount,
        note: payload.note,
        serviceKey: null,
        resourceId: null,
        resourceType: null
      })).pipe(
        Effect.tap((txn) => {
          // The amount as the ledger wrote it ("1" is "1.00").
          const data = { transactionId: txn.id, type, amount: txn.amount, note: payload.note }
          return Effect.andThen(
            audit.record(me, "credits.adjust", tenantId, data),
            audit.write(entryForTenant(me, tenantId, "credits.adjust", txn.id, data))
          )
        }),
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
          const effectiveLimit = yield* overrides.set(yield* CurrentPrincipal, params.tenantId, params.quotaKey, payload.limit)
          return { tenantId: params.tenantId, quotaKey: params.quotaKey, limit: payload.limit, effectiveLimit }
        }))
      .handle("adjustCredits", ({ params, payload, headers }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const positive = Number(payload.amount) > 0
          const type = positive ? "topup" as const : "correction" as const
          // Keys are the admin's tenant's; the target tenant is part of what the key must match.
          return yield* idempotency.run(me.tenantId, headers["idempotency-key"], { op: "credits", tenantId: params.tenantId, payload }, (keyed) =>
            adjust(me, params.tenantId, type, payload, itemId("txn", keyed && { seed: keyed.seed, index: 0 })).pipe(
              Effect.map((txn) => ({ status: 201, body: { status: "success", code: "201-created", data: txn } }))
            ))
        }))
  })
)
