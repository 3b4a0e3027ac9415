import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Columns that hold bytes we compressed ourselves (gzip pages and inputs, PNG/JPEG screenshots)
 * are stored out of line without a second compression attempt: PostgreSQL's own would only
 * spend CPU on every write to find nothing to gain.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE page_contents ALTER COLUMN compressed SET STORAGE EXTERNAL`
  yield* sql`ALTER TABLE extraction_inputs ALTER COLUMN compressed SET STORAGE EXTERNAL`
  yield* sql`ALTER TABLE job_artifacts ALTER COLUMN screenshot SET STORAGE EXTERNAL`
})
