import { DateTime, Effect, Schema } from "effect"
import { DeliverAt } from "effect/cluster"
import { PlanGate } from "../billing/plan-gate.ts"
import { type AddOnQuantity, monthlyUnits } from "../billing/plans.ts"
import { fromUnits } from "../billing/pricing.ts"
import { bookedProrationUnits, periodBoundary, prorationUnits, renewalEntryId, SUBSCRIPTION_SERVICE_KEY, type SubscriptionState } from "../billing/subscriptions.ts"
import { Config } from "../config.ts"
import { Mailer } from "../mail/mailer.ts"
import type { Transaction } from "../schema/tenant.ts"
import { type Period, SubscriptionRepo } from "../sql/subscription-repo.ts"
import { TenantRepo } from "../sql/tenant-repo.ts"

/**
 * The renewal of the period that ends at `periodEnd`, delivered by the cluster then: a persisted
 * message, so the schedule survives the restart of every node (docs/api.md, "Plans and subscriptions").
 */
export class DueRenewal extends Schema.Class<DueRenewal>("trawl/DueRenewal")({
  periodEnd: Schema.Number
}) {
  [DeliverAt.symbol]() {
    return DateTime.makeUnsafe(this.periodEnd)
  }
}

/** A super-admin's change; `changeId` is its ledger entry's id, so a re-delivered change pays once. */
export const SubscriptionChange = Schema.Struct({
  changeId: Schema.String,
  plan: Schema.String,
  addOns: Schema.Array(Schema.Struct({ key: Schema.String, quantity: Schema.Int })),
  status: Schema.Literals(["active", "cancelled"])
})

export type ChangeOutcome =
  | { readonly ok: true; readonly entry: Transaction | null }
  | { readonly ok: false; readonly reason: "missing" | "below_zero" | "above_ceiling"; readonly balance?: string; readonly required?: string }

const outcome = (o: ChangeOutcome): ChangeOutcome => o

const describe = (plan: string, addOns: ReadonlyArray<AddOnQuantity>) =>
  addOns.length === 0 ? `plan ${plan}` : `plan ${plan} with ${addOns.map((a) => `${a.quantity} × ${a.key}`).join(", ")}`

const day = (ms: number) => new Date(ms).toISOString().slice(0, 10)

/**
 * What the tenant's entity does with its subscription: opens it, renews it at each period's end
 * (one ledger entry per period, whatever the deliveries), and applies a super-admin's change.
 * `schedule` stores the renewal message of a period end (a persisted message to the entity itself).
 */
export const makeTenantSubscription = (tenantId: string, schedule: (periodEnd: number) => Effect.Effect<void>) =>
  Effect.gen(function*() {
    const subscriptions = yield* SubscriptionRepo
    const tenants = yield* TenantRepo
    const mailer = yield* Mailer
    const gate = yield* PlanGate
    const { subscriptionPeriodSeconds } = yield* Config

    const periodFrom = (anchorAt: number, index: number): Period => ({
      anchorAt,
      index,
      start: periodBoundary(anchorAt, index, subscriptionPeriodSeconds),
      end: periodBoundary(anchorAt, index + 1, subscriptionPeriodSeconds)
    })

    /** Stores the renewal message of the current period, unless it is known to be stored. */
    const scheduleRenewal = (sub: SubscriptionState) =>
      sub.status !== "active" || sub.renewalScheduledFor === sub.currentPeriodEnd
        ? Effect.void
        : schedule(sub.currentPeriodEnd).pipe(Effect.andThen(subscriptions.scheduled(tenantId, sub.currentPeriodEnd)))

    const mailPastDue = (sub: SubscriptionState, fee: number, balance: string) =>
      Effect.gen(function*() {
        const to = yield* subscriptions.ownerEmail(tenantId)
        if (to === undefined) return
        yield* mailer.send({
          to,
          subject: "Your Trawl subscription is past due",
          text: [
            `The renewal of your subscription (${describe(sub.plan, sub.addOns)}) on ${day(sub.currentPeriodEnd)} costs ${fromUnits(fee)} EUR,`,
            `and your balance (${balance} EUR) could not cover it.`,
            "",
            "Until it is renewed, new jobs, extractions and IP lookups are refused (403 no_active_plan);",
            "what you already have stays readable. Top up your credits and ask us to re-activate the subscription."
          ].join("\n")
        })
      }).pipe(Effect.catchCause((cause) => Effect.logWarning("could not mail the owner about a past-due subscription", cause)))

    return {
      /** Opens the subscription of a new tenant (its first period is included with the tenant) and schedules its renewal. */
      open: (plan: string) =>
        Effect.gen(function*() {
          const now = Date.now()
          const sub = yield* subscriptions.open(tenantId, plan, periodFrom(now, 0))
          yield* scheduleRenewal(sub)
        }),

      /**
       * The period ending at `periodEnd` is over: the next month is debited as one ledger entry
       * (its id derived from the period, so a second delivery finds it made) and the next period
       * starts; a balance that cannot cover it leaves the subscription `past_due` and the owner is
       * mailed. A stale message (the period already moved on, or was changed) does nothing.
       * Returns the balance after the debit, when there was one.
       */
      renew: (periodEnd: number) =>
        Effect.gen(function*() {
          const sub = yield* subscriptions.find(tenantId)
          if (!sub || sub.status !== "active" || sub.currentPeriodEnd !== periodEnd) return undefined
          const fee = monthlyUnits(sub.plan, sub.addOns)
          const next = periodFrom(sub.anchorAt, sub.periodIndex + 1)
          let balance: string | undefined
          if (fee > 0) {
            const paid = yield* tenants.adjust({
              id: renewalEntryId(tenantId, periodEnd),
              tenantId,
              type: "debit",
              amount: fromUnits(-fee),
              note: `renewal of ${describe(sub.plan, sub.addOns)}, ${day(next.start)} to ${day(next.end)}`,
              serviceKey: SUBSCRIPTION_SERVICE_KEY,
              resourceId: tenantId,
              resourceType: "subscription"
            })
            if (!paid.ok) {
              if (yield* subscriptions.markPastDue(tenantId, periodEnd)) {
                yield* gate.invalidate(tenantId)
                yield* Effect.forkDetach(mailPastDue(sub, fee, paid.balance))
              }
              return undefined
            }
            balance = paid.transaction.balanceAfter
          }
          yield* subscriptions.renew(tenantId, periodEnd, next, fee)
          yield* gate.invalidate(tenantId)
          const renewed = yield* subscriptions.find(tenantId)
          if (renewed) yield* scheduleRenewal(renewed)
          return balance
        }),

      /**
       * A super-admin's change. Of an active subscription: the new plan and add-ons from now, the
       * difference of the monthly fees prorated over the rest of the period (a debit, or a credit).
       * Of one past due or cancelled: re-activated with a new period from now, paid in full.
       * Cancelling stops the renewals at once (nothing is refunded).
       */
      change: (payload: typeof SubscriptionChange.Type) =>
        Effect.gen(function*() {
          const sub = yield* subscriptions.find(tenantId)
          if (!sub) return outcome({ ok: false, reason: "missing" })
          const now = Date.now()
          const target = { plan: payload.plan, addOns: payload.addOns }
          if (payload.status === "cancelled") {
            yield* subscriptions.change(tenantId, { ...target, status: "cancelled", periodPaidUnits: sub.periodPaidUnits })
            yield* gate.invalidate(tenantId)
            return outcome({ ok: true, entry: null })
          }
          const newFee = monthlyUnits(payload.plan, payload.addOns)
          const reactivation = sub.status !== "active"
          const units = reactivation
            ? newFee
            : bookedProrationUnits(prorationUnits(monthlyUnits(sub.plan, sub.addOns), newFee, sub.currentPeriodStart, sub.currentPeriodEnd, now), sub.periodPaidUnits)
          let entry: Transaction | null = null
          if (units !== 0) {
            const result = yield* tenants.adjust({
              id: payload.changeId,
              tenantId,
              type: units > 0 ? "debit" : "credit",
              amount: fromUnits(-units),
              note: reactivation
                ? `re-activation with ${describe(payload.plan, payload.addOns)}, a new period from ${day(now)}`
                : `${units > 0 ? "prorated upgrade" : "prorated downgrade"} from ${describe(sub.plan, sub.addOns)} to ${describe(payload.plan, payload.addOns)} until ${day(sub.currentPeriodEnd)}`,
              serviceKey: SUBSCRIPTION_SERVICE_KEY,
              resourceId: tenantId,
              resourceType: "subscription"
            })
            if (!result.ok) return outcome({ ok: false, reason: result.reason, balance: result.balance, required: fromUnits(Math.max(units, 0)) })
            entry = result.transaction
          }
          const changed = yield* subscriptions.change(tenantId, {
            ...target,
            status: "active",
            periodPaidUnits: reactivation ? units : sub.periodPaidUnits + units,
            ...(reactivation ? { period: periodFrom(now, 0) } : {})
          })
          yield* gate.invalidate(tenantId)
          yield* scheduleRenewal(changed)
          return outcome({ ok: true, entry })
        })
    }
  })
