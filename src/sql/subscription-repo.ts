import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { AddOnQuantity } from "../billing/plans.ts"
import type { SubscriptionState, SubscriptionStatus } from "../billing/subscriptions.ts"

interface SubscriptionRow {
  readonly tenant_id: string
  readonly plan: string
  readonly add_ons: ReadonlyArray<AddOnQuantity> | string
  readonly status: SubscriptionStatus
  readonly anchor_at: Date
  readonly period_index: number
  readonly current_period_start: Date
  readonly current_period_end: Date
  readonly renewal_scheduled_for: Date | null
  readonly period_paid_units: string | number
}

const toState = (r: SubscriptionRow): SubscriptionState => ({
  tenantId: r.tenant_id,
  plan: r.plan,
  addOns: typeof r.add_ons === "string" ? JSON.parse(r.add_ons) : r.add_ons,
  status: r.status,
  anchorAt: new Date(r.anchor_at).getTime(),
  periodIndex: Number(r.period_index),
  currentPeriodStart: new Date(r.current_period_start).getTime(),
  currentPeriodEnd: new Date(r.current_period_end).getTime(),
  renewalScheduledFor: r.renewal_scheduled_for === null ? null : new Date(r.renewal_scheduled_for).getTime(),
  periodPaidUnits: Number(r.period_paid_units)
})

/** A new period: where it is counted from, its number, its bounds (epoch ms). */
export interface Period {
  readonly anchorAt: number
  readonly index: number
  readonly start: number
  readonly end: number
}

export interface SubscriptionRepoShape {
  readonly find: (tenantId: string) => Effect.Effect<SubscriptionState | undefined>
  /** Opens the tenant's subscription unless it has one (a re-run bootstrap); returns the one it has. */
  readonly open: (tenantId: string, plan: string, period: Period) => Effect.Effect<SubscriptionState>
  /** Moves on to `period`, paid `paidUnits`, if the current one still ends at `expectedEnd`; false when another run did already. */
  readonly renew: (tenantId: string, expectedEnd: number, period: Period, paidUnits: number) => Effect.Effect<boolean>
  /** `active` → `past_due` if the current period still ends at `expectedEnd`; false when it was not (already done). */
  readonly markPastDue: (tenantId: string, expectedEnd: number) => Effect.Effect<boolean>
  /** Sets plan and add-ons, the status, what the period is paid (and a new period, when given); the tenant's row follows. */
  readonly change: (
    tenantId: string,
    change: {
      readonly plan: string
      readonly addOns: ReadonlyArray<AddOnQuantity>
      readonly status: SubscriptionStatus
      readonly periodPaidUnits: number
      readonly period?: Period
    }
  ) => Effect.Effect<SubscriptionState>
  /** Notes that the renewal message of the period ending at `periodEnd` is stored. */
  readonly scheduled: (tenantId: string, periodEnd: number) => Effect.Effect<void>
  /** Active subscriptions whose renewal message is not known to be stored (a node died between the two writes). */
  readonly unscheduled: (limit: number) => Effect.Effect<ReadonlyArray<SubscriptionState>>
  /** Gives a subscription (of its plan, active, from now) to every tenant without one, such as the internal one. */
  readonly openMissing: (periodEnd: (start: number) => number) => Effect.Effect<number>
  /** The primary e-mail of the tenant's owner, to tell them about their subscription. */
  readonly ownerEmail: (tenantId: string) => Effect.Effect<string | undefined>
}

export class SubscriptionRepo extends Context.Service<SubscriptionRepo, SubscriptionRepoShape>()("trawl/SubscriptionRepo") {}

export const SubscriptionRepoLive = Layer.effect(
  SubscriptionRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const find = (tenantId: string) =>
      sql<SubscriptionRow>`SELECT * FROM subscriptions WHERE tenant_id = ${tenantId}`.pipe(
        Effect.orDie,
        Effect.map((rows) => rows[0] && toState(rows[0]))
      )
    return SubscriptionRepo.of({
      find,
      open: (tenantId, plan, period) =>
        sql`
          INSERT INTO subscriptions (tenant_id, plan, status, anchor_at, period_index, current_period_start, current_period_end)
          VALUES (${tenantId}, ${plan}, 'active', ${new Date(period.anchorAt)}, ${period.index}, ${new Date(period.start)}, ${new Date(period.end)})
          ON CONFLICT (tenant_id) DO NOTHING`.pipe(Effect.orDie, Effect.andThen(find(tenantId)), Effect.map((s) => s!)),
      renew: (tenantId, expectedEnd, period, paidUnits) =>
        sql`
          UPDATE subscriptions SET anchor_at = ${new Date(period.anchorAt)}, period_index = ${period.index},
                 current_period_start = ${new Date(period.start)}, current_period_end = ${new Date(period.end)},
                 period_paid_units = ${paidUnits}, renewal_scheduled_for = NULL, updated_at = now()
          WHERE tenant_id = ${tenantId} AND status = 'active' AND current_period_end = ${new Date(expectedEnd)}
          RETURNING tenant_id`.pipe(Effect.orDie, Effect.map((rows) => rows.length > 0)),
      markPastDue: (tenantId, expectedEnd) =>
        sql`
          UPDATE subscriptions SET status = 'past_due', renewal_scheduled_for = NULL, updated_at = now()
          WHERE tenant_id = ${tenantId} AND status = 'active' AND current_period_end = ${new Date(expectedEnd)}
          RETURNING tenant_id`.pipe(Effect.orDie, Effect.map((rows) => rows.length > 0)),
      change: (tenantId, change) =>
        sql.withTransaction(Effect.gen(function*() {
          const addOns = JSON.stringify(change.addOns)
          const p = change.period
          yield* p
            ? sql`
              UPDATE subscriptions SET plan = ${change.plan}, add_ons = ${addOns}::jsonb, status = ${change.status},
                     anchor_at = ${new Date(p.anchorAt)}, period_index = ${p.index}, current_period_start = ${new Date(p.start)},
                     current_period_end = ${new Date(p.end)}, period_paid_units = ${change.periodPaidUnits},
                     renewal_scheduled_for = NULL, updated_at = now()
              WHERE tenant_id = ${tenantId}`
            : sql`
              UPDATE subscriptions SET plan = ${change.plan}, add_ons = ${addOns}::jsonb, status = ${change.status},
                     period_paid_units = ${change.periodPaidUnits}, updated_at = now()
              WHERE tenant_id = ${tenantId}`
          // The tenant's own row keeps naming its plan (the super-admin's tenant view shows it).
          yield* sql`UPDATE tenants SET plan = ${change.plan}, add_ons = ${addOns}::jsonb, updated_at = now() WHERE id = ${tenantId}`
        })).pipe(Effect.orDie, Effect.andThen(find(tenantId)), Effect.map((s) => s!)),
      scheduled: (tenantId, periodEnd) =>
        sql`
          UPDATE subscriptions SET renewal_scheduled_for = ${new Date(periodEnd)}
          WHERE tenant_id = ${tenantId} AND current_period_end = ${new Date(periodEnd)}`.pipe(Effect.orDie, Effect.asVoid),
      unscheduled: (limit) =>
        sql<SubscriptionRow>`
          SELECT * FROM subscriptions
          WHERE status = 'active' AND (renewal_scheduled_for IS NULL OR renewal_scheduled_for <> current_period_end)
          ORDER BY current_period_end LIMIT ${limit}`.pipe(Effect.orDie, Effect.map((rows) => rows.map(toState))),
      openMissing: (periodEnd) =>
        Effect.gen(function*() {
          const now = Date.now()
          const rows = yield* sql`
            INSERT INTO subscriptions (tenant_id, plan, add_ons, status, anchor_at, current_period_start, current_period_end)
            SELECT id, plan, add_ons, 'active', ${new Date(now)}, ${new Date(now)}, ${new Date(periodEnd(now))} FROM tenants t
            WHERE NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.tenant_id = t.id)
            ON CONFLICT (tenant_id) DO NOTHING
            RETURNING tenant_id`
          return rows.length
        }).pipe(Effect.orDie),
      ownerEmail: (tenantId) =>
        sql<{ email: string }>`
          SELECT e.email FROM identity_emails e
          JOIN identities i ON i.id = e.identity_id
          JOIN roles r ON r.id = i.default_role_id
          WHERE e.tenant_id = ${tenantId} AND e.is_primary AND r.is_system AND r.name IN ('owner', 'internal_admin')
          ORDER BY i.created_at, i.id LIMIT 1`.pipe(Effect.orDie, Effect.map((rows) => rows[0]?.email))
    })
  })
)

/**
 * Subscriptions in memory, for unit tests of the services above. `tenants` are the tenants that
 * exist (for `openMissing`), each with its plan and its owner's e-mail; times come from Effect's Clock.
 */
export const makeSubscriptionRepoTest = (
  tenants: ReadonlyArray<{ readonly tenantId: string; readonly plan: string; readonly ownerEmail?: string }> = []
): Layer.Layer<SubscriptionRepo> =>
  Layer.sync(SubscriptionRepo, () => {
    const rows = new Map<string, SubscriptionState>()
    const update = (tenantId: string, when: (s: SubscriptionState) => boolean, patch: Partial<SubscriptionState>) =>
      Effect.sync(() => {
        const s = rows.get(tenantId)
        if (!s || !when(s)) return false
        rows.set(tenantId, { ...s, ...patch })
        return true
      })
    const period = (p: Period, periodPaidUnits = 0) => ({ anchorAt: p.anchorAt, periodIndex: p.index, currentPeriodStart: p.start, currentPeriodEnd: p.end, renewalScheduledFor: null, periodPaidUnits })
    return SubscriptionRepo.of({
      find: (tenantId) => Effect.sync(() => rows.get(tenantId)),
      open: (tenantId, plan, p) =>
        Effect.sync(() => {
          if (!rows.has(tenantId)) rows.set(tenantId, { tenantId, plan, addOns: [], status: "active", ...period(p) })
          return rows.get(tenantId)!
        }),
      renew: (tenantId, expectedEnd, p, paidUnits) => update(tenantId, (s) => s.status === "active" && s.currentPeriodEnd === expectedEnd, period(p, paidUnits)),
      markPastDue: (tenantId, expectedEnd) =>
        update(tenantId, (s) => s.status === "active" && s.currentPeriodEnd === expectedEnd, { status: "past_due", renewalScheduledFor: null }),
      change: (tenantId, change) =>
        update(tenantId, () => true, {
          plan: change.plan,
          addOns: change.addOns,
          status: change.status,
          ...(change.period ? period(change.period) : {}),
          periodPaidUnits: change.periodPaidUnits
        }).pipe(
          Effect.map(() => rows.get(tenantId)!)
        ),
      scheduled: (tenantId, periodEnd) => Effect.asVoid(update(tenantId, (s) => s.currentPeriodEnd === periodEnd, { renewalScheduledFor: periodEnd })),
      unscheduled: (limit) =>
        Effect.sync(() =>
          [...rows.values()]
            .filter((s) => s.status === "active" && s.renewalScheduledFor !== s.currentPeriodEnd)
            .sort((a, b) => a.currentPeriodEnd - b.currentPeriodEnd)
            .slice(0, limit)
        ),
      openMissing: (periodEnd) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          const missing = tenants.filter((t) => !rows.has(t.tenantId))
          for (const t of missing) {
            rows.set(t.tenantId, { tenantId: t.tenantId, plan: t.plan, addOns: [], status: "active", ...period({ anchorAt: now, index: 0, start: now, end: periodEnd(now) }) })
          }
          return missing.length
        }),
      ownerEmail: (tenantId) => Effect.sync(() => tenants.find((t) => t.tenantId === tenantId)?.ownerEmail)
    })
  })
