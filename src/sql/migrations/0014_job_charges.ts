import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * A job is charged once it has ended (see src/billing/job-charges.ts): `settled_at` says when,
 * `charged` how much. Jobs that ended before charging existed count as settled, at nothing.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE jobs ADD COLUMN settled_at timestamptz, ADD COLUMN charged numeric(18,4)`
  yield* sql`UPDATE jobs SET settled_at = now(), charged = 0 WHERE status NOT IN ('queued', 'claimed')`
  yield* sql`CREATE INDEX jobs_unsettled ON jobs (tenant_id, finished_at) WHERE settled_at IS NULL`
})
