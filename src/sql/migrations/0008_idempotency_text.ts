import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Stored first responses keep their exact bytes (jsonb reordered their keys on a replay). */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE idempotency_keys ALTER COLUMN response TYPE text USING response::text`
})
