import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * A version's `changed` is read from its predecessor in the timeline instead of being stored: two
 * nodes finishing the same page at once both compared with the same latest version when they
 * wrote it, so a stored flag could be wrong, and read this way it always agrees with the timeline
 * and with the diff.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE page_versions DROP COLUMN changed`
})
