import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * One subscription per tenant (docs/api.md, "Plans and subscriptions"): its plan and add-ons, its
 * status and current period. Existing tenants get one of their plan, active, with a period that
 * starts now; the renewal of each is scheduled when a node starts (src/actors/subscription-renewals.ts).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE subscriptions (
      tenant_id text PRIMARY KEY REFERENCES tenants(id),
      plan text NOT NULL,
      add_ons jsonb NOT NULL DEFAULT '[]',
      status text NOT NULL CHECK (status IN ('active', 'past_due', 'cancelled')),
      anchor_at timestamptz NOT NULL,
      period_index integer NOT NULL DEFAULT 0,
      current_period_start timestamptz NOT NULL,
      current_period_end timestamptz NOT NULL,
      renewal_scheduled_for timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX subscriptions_unscheduled ON subscriptions (tenant_id)
             WHERE renewal_scheduled_for IS NULL AND status = 'active'`
  yield* sql`
    INSERT INTO subscriptions (tenant_id, plan, add_ons, status, anchor_at, current_period_start, current_period_end)
    SELECT id, plan, add_ons, 'active', now(), now(), now() + interval '1 month' FROM tenants`
})
