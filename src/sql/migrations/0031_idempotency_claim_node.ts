import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The node holding an idempotency claim (its `application_name`, src/sql/database.ts), so that a
 * claim whose node has no database session left (the node died) is free at once rather than after
 * `ABANDONED_CLAIM_SECONDS` (docs/api.md, "Idempotency-Key"). Null for claims made before.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE idempotency_keys ADD COLUMN claim_node text`
})
