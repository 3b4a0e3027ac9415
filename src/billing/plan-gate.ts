import { Context, Effect, Layer } from "effect"
import type { Principal } from "../iam/principal.ts"
import { Forbidden } from "../schema/errors.ts"
import { Kv } from "../kv/kv.ts"
import { SubscriptionRepo } from "../sql/subscription-repo.ts"
import { isPaid, planServices } from "./plan-rules.ts"
import { planIncludes } from "./plans.ts"
import type { SubscriptionStatus } from "./subscriptions.ts"

/**
 * How long a node trusts a subscription it read. A change is published to every node, which
 * forgets it at once; this bounds how long a lost notice (Redis down) can leave a node behind.
 */
const CACHE_MS = 2_000
const INVALIDATE_CHANNEL = "trawl:plan-gate:invalidate"

/**
 * The plan's answer to a request that passed its permission check (docs/api.md, "Plans and
 * subscriptions"): 403 `service_disabled_on_plan` when the plan lacks the endpoint's service, 403
 * `no_active_plan` when the subscription is not active and the endpoint is paid work; else none.
 */
export const planRefusal = (
  subscription: { readonly plan: string; readonly status: SubscriptionStatus } | undefined,
  required: string
): Forbidden | undefined => {
  const [service = "", , action = ""] = required.split(":")
  if (subscription === undefined || !(planServices as ReadonlyArray<string>).includes(service)) return undefined
  if (!planIncludes(subscription.plan, service)) {
    return new Forbidden({
      code: "service_disabled_on_plan",
      message: `the ${subscription.plan} plan does not include the ${service} service`,
      extra: { plan: subscription.plan, service }
    })
  }
  if (subscription.status !== "active" && isPaid(service, action)) {
    return new Forbidden({
      code: "no_active_plan",
      message: subscription.status === "past_due"
        ? "the subscription is past due: its last renewal could not be paid from the balance"
        : "the subscription is cancelled",
      extra: { plan: subscription.plan, subscriptionStatus: subscription.status }
    })
  }
  return undefined
}

export interface PlanGateShape {
  /** Refuses `principal`'s request for `required` when its tenant's plan says no; the internal tenant never is. */
  readonly check: (principal: Principal, required: string) => Effect.Effect<void, Forbidden>
  /** Forgets what every node read of a tenant's subscription, after it changed (written already). */
  readonly invalidate: (tenantId: string) => Effect.Effect<void>
}

export class PlanGate extends Context.Service<PlanGate, PlanGateShape>()("trawl/PlanGate") {}

export const PlanGateLive = Layer.effect(
  PlanGate,
  Effect.gen(function*() {
    const subscriptions = yield* SubscriptionRepo
    const kv = yield* Kv
    const cache = new Map<string, { readonly at: number; readonly value: { plan: string; status: SubscriptionStatus } | undefined }>()
    // Counts the tenants forgotten: a read under way meanwhile may hold the row from before the
    // change, so what it found is used once but not kept.
    let forgets = 0
    const forget = (tenantId: string) => {
      forgets++
      cache.delete(tenantId)
    }
    yield* kv.subscribe(INVALIDATE_CHANNEL, forget)
    const read = (tenantId: string) =>
      Effect.suspend(() => {
        const now = Date.now()
        const hit = cache.get(tenantId)
        if (hit && now - hit.at < CACHE_MS) return Effect.succeed(hit.value)
        const forgetsBefore = forgets
        return subscriptions.find(tenantId).pipe(Effect.map((s) => {
          const value = s && { plan: s.plan, status: s.status }
          if (forgets !== forgetsBefore) return value
          // Bounded: a node that served many tenants starts over rather than growing without end.
          if (cache.size >= 10_000) cache.clear()
          cache.set(tenantId, { at: now, value })
          return value
        }))
      })
    return PlanGate.of({
      check: (principal, required) =>
        principal.isInternalTenant
          ? Effect.void
          : read(principal.tenantId).pipe(Effect.flatMap((s) => {
            const refusal = planRefusal(s, required)
            return refusal ? Effect.fail(refusal) : Effect.void
          })),
      invalidate: (tenantId) =>
        Effect.sync(() => forget(tenantId)).pipe(
          Effect.andThen(kv.publish(INVALIDATE_CHANNEL, tenantId).pipe(Effect.ignoreCause({ log: "Warn", message: "plan gate invalidation not published" })))
        )
    })
  })
)
