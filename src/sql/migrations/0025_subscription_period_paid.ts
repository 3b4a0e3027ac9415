import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * What the tenant paid for its current period (in 0.0001 EUR): a downgrade credits the rest of the
 * period at most up to it, so a period that was never paid (a new tenant's first, one from the
 * migration of subscriptions) refunds nothing (docs/api.md, "Plans and subscriptions").
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE subscriptions ADD COLUMN period_paid_units bigint NOT NULL DEFAULT 0 CHECK (period_paid_units >= 0)`
})
