import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Extractions are charged once they have ended, as jobs are (see 0014_job_charges). */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE extractions ADD COLUMN settled_at timestamptz, ADD COLUMN charged numeric(18,4)`
  yield* sql`UPDATE extractions SET settled_at = now(), charged = 0 WHERE status IN ('done', 'dead', 'cancelled')`
  yield* sql`CREATE INDEX extractions_unsettled ON extractions (tenant_id, finished_at) WHERE settled_at IS NULL`
})
