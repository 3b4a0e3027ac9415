/**
 * A tenant's subscription (src/actors/tenant-subscription.ts, run by its entity) on test layers:
 * in-memory subscriptions and tenant ledger, the plan gate over them and a capturing mailer. The
 * entity's scheduling of renewal messages is `schedule`, captured here. End to end:
 * test/subscriptions.e2e.test.ts.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { PlanGate, PlanGateLive } from "../../src/billing/plan-gate.ts"
import { KvTest } from "../../src/kv/kv.ts"
import { monthlyUnits } from "../../src/billing/plans.ts"
import { fromUnits, toUnits } from "../../src/billing/pricing.ts"
import { renewalEntryId, SUBSCRIPTION_SERVICE_KEY } from "../../src/billing/subscriptions.ts"
import { makeTenantSubscription } from "../../src/actors/tenant-subscription.ts"
import { Config, configForTests } from "../../src/config.ts"
import type { Principal } from "../../src/iam/principal.ts"
import { testPrincipal } from "../support/principal.ts"
import { MailerTest, SentMails } from "../../src/mail/mailer.ts"
import { makeSubscriptionRepoTest, SubscriptionRepo } from "../../src/sql/subscription-repo.ts"
import { makeTenantRepoTest, TenantRepo } from "../../src/sql/tenant-repo.ts"

const fee = monthlyUnits("starter", [])
const Billing = PlanGateLive.pipe(
  Layer.provideMerge(Layer.mergeAll(
    makeSubscriptionRepoTest([{ tenantId: "ten_a", plan: "starter", ownerEmail: "owner@a.test" }, { tenantId: "ten_b", plan: "pro" }]),
    // Enough for one renewal and a half; the other tenant has nothing.
    makeTenantRepoTest({ tenants: [{ id: "ten_a", plan: "starter", balance: fromUnits(fee + fee / 2) }, { id: "ten_b", plan: "pro", balance: "0.00" }] }),
    MailerTest,
    KvTest,
    Layer.succeed(Config, configForTests())
  ))
)

const scheduled: Array<number> = []
const subscription = makeTenantSubscription("ten_a", (periodEnd) => Effect.sync(() => void scheduled.push(periodEnd)))

const caller: Principal = testPrincipal({
  kind: "api-key",
  credentialId: "key_a",
  tenantId: "ten_a",
  identityId: "idt_a",
  actorId: "idt_a",
  roleId: "role_a",
  permissions: ["*:*:*"],
  isInternalTenant: false,
  rateLimitPerMinute: 600,
  expiresAt: null
})

layer(Billing)("a tenant's subscription", (it) => {
  it.effect("renews from the balance once per period, goes past due when the balance cannot pay, and a re-activation pays in full", () =>
    Effect.gen(function*() {
      const sub = yield* subscription
      const subscriptions = yield* SubscriptionRepo
      const tenants = yield* TenantRepo
      const gate = yield* PlanGate

      yield* sub.open("starter")
      const opened = (yield* subscriptions.find("ten_a"))!
      expect(scheduled).toEqual([opened.currentPeriodEnd])

      // The period's end: one debit of the month's fee, and the next renewal scheduled.
      const balance = yield* sub.renew(opened.currentPeriodEnd)
      expect(balance).toBe(fromUnits(fee / 2))
      const renewed = (yield* subscriptions.find("ten_a"))!
      expect(renewed.periodIndex).toBe(1)
      expect(scheduled).toEqual([opened.currentPeriodEnd, renewed.currentPeriodEnd])
      // A second delivery of the same renewal finds the period moved on: nothing more is debited.
      expect(yield* sub.renew(opened.currentPeriodEnd)).toBeUndefined()
      const ledger = yield* tenants.transactions("ten_a", { serviceKey: SUBSCRIPTION_SERVICE_KEY }, [], 0, 10)
      expect(ledger.items.map((t) => [t.id, t.amount, t.balanceAfter])).toEqual([
        [renewalEntryId("ten_a", opened.currentPeriodEnd), fromUnits(-fee), fromUnits(fee / 2)]
      ])

      // The next one cannot be paid: past due, the owner is mailed, paid work is refused.
      expect(yield* sub.renew(renewed.currentPeriodEnd)).toBeUndefined()
      expect((yield* subscriptions.find("ten_a"))!.status).toBe("past_due")
      expect(yield* tenants.balance("ten_a")).toBe(fromUnits(fee / 2))
      yield* Effect.yieldNow.pipe(Effect.repeat({ times: 10 }))
      const mails = yield* (yield* SentMails).to("owner@a.test")
      expect(mails.map((m) => m.subject)).toEqual(["Your Trawl subscription is past due"])
      expect(mails[0]!.text).toContain(`costs ${fromUnits(fee)} EUR`)
      const refused = yield* Effect.flip(gate.check(caller, "scraper:jobs:write"))
      expect([refused.status, refused.code]).toEqual([403, "no_active_plan"])

      // A re-activation is refused while the balance cannot pay the month, and goes through after a top-up.
      const short = yield* sub.change({ changeId: "txn_reactivate_1", plan: "starter", addOns: [], status: "active" })
      expect(short).toEqual({ ok: false, reason: "below_zero", balance: fromUnits(fee / 2), required: fromUnits(fee) })
      yield* tenants.adjust({ id: "txn_topup", tenantId: "ten_a", type: "topup", amount: fromUnits(fee), note: null })
      const back = yield* sub.change({ changeId: "txn_reactivate_2", plan: "starter", addOns: [], status: "active" })
      expect(back).toMatchObject({ ok: true, entry: { id: "txn_reactivate_2", amount: fromUnits(-fee), balanceAfter: fromUnits(fee / 2) } })
      expect((yield* subscriptions.find("ten_a"))!).toMatchObject({ status: "active", periodIndex: 0, periodPaidUnits: fee })
      yield* gate.check(caller, "scraper:jobs:write")

      // A downgrade right after credits the rest of what the period was paid, and no more.
      const down = yield* sub.change({ changeId: "txn_down_1", plan: "free", addOns: [], status: "active" })
      expect(down.ok).toBe(true)
      const credit = down.ok ? toUnits(down.entry!.amount) : 0
      expect(credit).toBeGreaterThan(0)
      expect(credit).toBeLessThanOrEqual(fee)
      expect((yield* subscriptions.find("ten_a"))!.periodPaidUnits).toBe(fee - credit)
    }))

  it.effect("refunds nothing of a period that was never paid: a new tenant's first is included", () =>
    Effect.gen(function*() {
      const sub = yield* makeTenantSubscription("ten_b", () => Effect.void)
      const subscriptions = yield* SubscriptionRepo
      const tenants = yield* TenantRepo
      yield* sub.open("pro")
      expect((yield* subscriptions.find("ten_b"))!.periodPaidUnits).toBe(0)
      expect(yield* sub.change({ changeId: "txn_b_down", plan: "free", addOns: [], status: "active" })).toEqual({ ok: true, entry: null })
      expect(yield* tenants.balance("ten_b")).toBe("0.00")
      // Back up again costs the rest of the period, which a balance of 0 cannot pay.
      const up = yield* sub.change({ changeId: "txn_b_up", plan: "pro", addOns: [], status: "active" })
      expect(up).toMatchObject({ ok: false, reason: "below_zero" })
    }))
})
