import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { entityCall } from "../actors/entity-call.ts"
import { TenantEntity, creditShortfall } from "../actors/tenant-entity.ts"
import { PlanGate } from "../billing/plan-gate.ts"
import { monthlyUnits, subscriptionFaults } from "../billing/plans.ts"
import { fromUnits } from "../billing/pricing.ts"
import { periodBoundary, SUBSCRIPTION_SERVICE_KEY, type SubscriptionState } from "../billing/subscriptions.ts"
import { Config } from "../config.ts"
import { CurrentPrincipal } from "../iam/principal.ts"
import { newId } from "../ids.ts"
import { iso } from "../schema/common.ts"
import { pageOf } from "../schema/envelope.ts"
import { fail, notFound } from "../schema/errors.ts"
import type { Subscription } from "../schema/subscription.ts"
import { AuditLog, entryForTenant } from "../sql/audit-log.ts"
import { SubscriptionRepo } from "../sql/subscription-repo.ts"
import { MAX_BALANCE } from "../schema/tenant.ts"
import { TenantRepo } from "../sql/tenant-repo.ts"
import { Api } from "./api.ts"
import { NEWEST_FIRST, queryLimit } from "./list-query.ts"

const toView = (s: SubscriptionState): Subscription => ({
  tenantId: s.tenantId,
  plan: s.plan,
  status: s.status,
  addOns: s.addOns.map((a) => ({ key: a.key, quantity: a.quantity })),
  monthlyPrice: fromUnits(monthlyUnits(s.plan, s.addOns)),
  currentPeriodStart: iso(new Date(s.currentPeriodStart))!,
  currentPeriodEnd: iso(new Date(s.currentPeriodEnd))!,
  renewsAt: s.status === "active" ? iso(new Date(s.currentPeriodEnd))! : null
})

export const SubscriptionHandlers = HttpApiBuilder.group(
  Api,
  "subscription",
  Effect.fn(function*(handlers) {
    const subscriptions = yield* SubscriptionRepo
    const tenants = yield* TenantRepo
    const { subscriptionPeriodSeconds } = yield* Config
    return handlers
      .handle("subscription", () =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const found = yield* subscriptions.find(me.tenantId)
          if (found) return toView(found)
          // Only a tenant made after this node's start can lack one (the internal tenant): it gets its plan's.
          yield* subscriptions.openMissing((start) => periodBoundary(start, 1, subscriptionPeriodSeconds))
          return toView((yield* subscriptions.find(me.tenantId))!)
        }))
      .handle("subscriptionDebits", ({ query }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const offset = query.offset ?? 0
          const limit = yield* queryLimit(query)
          const page = yield* tenants.transactions(me.tenantId, { serviceKey: SUBSCRIPTION_SERVICE_KEY }, NEWEST_FIRST, offset, limit)
          return pageOf(page.items, offset, limit, page.total)
        }))
  })
)

export const AdminSubscriptionHandlers = HttpApiBuilder.group(
  Api,
  "adminSubscription",
  Effect.fn(function*(handlers) {
    const subscriptions = yield* SubscriptionRepo
    const tenants = yield* TenantRepo
    const tenantClient = yield* TenantEntity.client
    const audit = yield* AuditLog
    const gate = yield* PlanGate
    return handlers.handle("changeSubscription", ({ params, payload }) =>
      Effect.gen(function*() {
        const me = yield* CurrentPrincipal
        const addOns = payload.addOns ?? []
        const faults = subscriptionFaults(payload.plan, addOns)
        if (faults.length > 0) return yield* fail(422, "invalid_subscription", "the plan or its add-ons cannot be subscribed", { details: faults })
        const tenant = yield* tenants.find(params.tenantId)
        if (!tenant) return yield* notFound("tenant")
        // The internal tenant has no subscription to change (it is on no plan that is sold).
        if (tenant.isInternal) {
          return yield* fail(422, "invalid_subscription", "the internal tenant keeps its internal plan", {
            details: [{ path: "plan", code: "internal_tenant", message: "the internal tenant keeps its internal plan; no subscription of it can be changed" }]
          })
        }
        const before = yield* subscriptions.find(params.tenantId)
        if (!before) return yield* notFound("tenant")
        const status = payload.status ?? "active"
        const { entry } = yield* entityCall(tenantClient(params.tenantId).ChangeSubscription({
          changeId: newId("txn"),
          plan: payload.plan,
          addOns: addOns.map((a) => ({ key: a.key, quantity: a.quantity })),
          status
        })).pipe(
          Effect.catchTags({
            TenantMissing: () => notFound("tenant"),
            InsufficientCredit: (e) =>
              fail(402, "insufficient_credit", `the balance of ${e.balance} EUR cannot cover the ${e.required ?? "?"} EUR this change costs now`, { extra: creditShortfall(e) }),
            BalanceCeiling: (e) =>
              fail(409, "balance_ceiling", `the prorated credit would take the balance (${e.balance}) above its ceiling of ${MAX_BALANCE} EUR`, {
                details: [{ path: "plan", code: "invalid_value", message: "its prorated credit would take the balance above its ceiling" }]
              })
          })
        )
        yield* gate.invalidate(params.tenantId)
        const after = (yield* subscriptions.find(params.tenantId))!
        const data = {
          from: { plan: before.plan, addOns: before.addOns, status: before.status },
          to: { plan: after.plan, addOns: after.addOns, status: after.status },
          ledgerEntryId: entry?.id ?? null,
          amount: entry?.amount ?? null
        }
        // In the admin's log and in the tenant's own, where its owner reads who changed its plan.
        yield* audit.record(me, "subscription.change", params.tenantId, data)
        yield* audit.write(entryForTenant(me, params.tenantId, "subscription.change", params.tenantId, data))
        return { subscription: toView(after), ledgerEntry: entry }
      }))
  })
)
