import { Effect } from "effect"
import { Singleton } from "effect/cluster"
import { periodBoundary } from "../billing/subscriptions.ts"
import { Config } from "../config.ts"
import { SubscriptionRepo } from "../sql/subscription-repo.ts"
import { TenantEntity } from "./tenant-entity.ts"
import { DueRenewal } from "./tenant-subscription.ts"

const BATCH = 200
/** Passes over the unscheduled ones at most: a row whose period moves on meanwhile is its entity's to schedule. */
const MAX_PASSES = 50

/**
 * Each active subscription's renewal is a persisted message its tenant's entity stores after each
 * renewal. One that was never stored (a node died between the renewal and the message, or the
 * subscription came from the migration) is stored here, once, when this singleton starts on a
 * node: not a scan that repeats, only a catch-up. Tenants without a subscription get one first.
 */
export const SubscriptionRenewalsLive = Singleton.make(
  "SubscriptionRenewals",
  Effect.gen(function*() {
    const subscriptions = yield* SubscriptionRepo
    const tenants = yield* TenantEntity.client
    const { subscriptionPeriodSeconds } = yield* Config
    yield* subscriptions.openMissing((start) => periodBoundary(start, 1, subscriptionPeriodSeconds))
    for (let pass = 0; pass < MAX_PASSES; pass++) {
      const batch = yield* subscriptions.unscheduled(BATCH)
      yield* Effect.forEach(batch, (s) =>
        tenants(s.tenantId).RenewSubscription(new DueRenewal({ periodEnd: s.currentPeriodEnd }), { discard: true }).pipe(
          Effect.andThen(subscriptions.scheduled(s.tenantId, s.currentPeriodEnd))
        ), { concurrency: 8, discard: true })
      if (batch.length < BATCH) break
    }
    yield* Effect.never
  }).pipe(Effect.catchCause((cause) => Effect.logWarning("could not schedule the subscriptions' renewals", cause)))
)
