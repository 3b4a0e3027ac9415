import { createHash } from "node:crypto"
import type { AddOnQuantity } from "./plans.ts"

/** The ledger's service key of every subscription entry: renewals, prorations, re-activations. */
export const SUBSCRIPTION_SERVICE_KEY = "billing.subscription"

export type SubscriptionStatus = "active" | "past_due" | "cancelled"

export interface SubscriptionState {
  readonly tenantId: string
  readonly plan: string
  readonly addOns: ReadonlyArray<AddOnQuantity>
  readonly status: SubscriptionStatus
  /** Periods are counted from the anchor: period `n` runs from anchor + n periods to anchor + n + 1. */
  readonly anchorAt: number
  readonly periodIndex: number
  readonly currentPeriodStart: number
  readonly currentPeriodEnd: number
  /** The period end whose renewal message is known to be stored, null when none is yet. */
  readonly renewalScheduledFor: number | null
  /** What the current period was paid (0.0001 EUR): its fee, prorated changes since; 0 when it was included. */
  readonly periodPaidUnits: number
}

/**
 * `anchor` moved on by `n` periods: calendar months (a day past the month's end is its last day,
 * so a subscription of 31 January renews on 28 February, then 31 March), or `periodSeconds`
 * when a test shortens the period.
 */
export const periodBoundary = (anchor: number, n: number, periodSeconds: number | undefined): number => {
  if (periodSeconds !== undefined) return anchor + n * periodSeconds * 1000
  const d = new Date(anchor)
  const month = d.getUTCMonth() + n
  const lastDay = new Date(Date.UTC(d.getUTCFullYear(), month + 1, 0)).getUTCDate()
  return Date.UTC(d.getUTCFullYear(), month, Math.min(d.getUTCDate(), lastDay), d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds(), d.getUTCMilliseconds())
}

/**
 * The prorated amount of a change of a running period (docs/api.md "Plans and subscriptions"):
 * (new monthly fee − old monthly fee) × (time left in the period ÷ the period's length), rounded to
 * the ledger's precision. Positive: the tenant pays that much now; negative: it is credited.
 */
export const prorationUnits = (oldUnits: number, newUnits: number, periodStart: number, periodEnd: number, now: number): number => {
  const length = periodEnd - periodStart
  const left = Math.min(Math.max(periodEnd - now, 0), length)
  return length <= 0 ? 0 : Math.round(((newUnits - oldUnits) * left) / length)
}

/**
 * The proration of a change as it is booked: a debit in full, a credit never above what the period
 * was paid (a period included with the tenant refunds nothing; docs/api.md "Plans and subscriptions").
 */
export const bookedProrationUnits = (prorated: number, periodPaidUnits: number): number =>
  prorated >= 0 ? prorated : Math.max(prorated, -periodPaidUnits)

const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"

/**
 * The ledger entry id of the renewal that ends the period at `periodEnd`: derived from the tenant
 * and the period, so a renewal delivered twice (or re-run after a crash) finds its entry made and
 * never debits a second time. Same shape as other ids (`txn_` and 26 characters).
 */
export const renewalEntryId = (tenantId: string, periodEnd: number): string => {
  const digest = createHash("sha256").update(`subscription-renewal ${tenantId} ${periodEnd}`).digest()
  let out = ""
  for (let i = 0; i < 26; i++) out += alphabet[digest[i]! % 32]
  return `txn_${out}`
}
