import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Whether an extraction made its job itself, to fetch its `url` (true), or was given the job as
 * `jobId` (false); null for rows written before it was recorded. A cancel ends the job only when
 * the extraction made it, and a replay fetches anew only then.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE extractions ADD COLUMN made_own_job boolean`
})
