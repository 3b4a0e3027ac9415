import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * A key's seed: the ids (and generated secrets) its request creates are derived from it, so a retry
 * that takes over the claim of a request whose node died mid-way creates the same jobs, not more.
 * Keys claimed before this migration have none and behave as before.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE idempotency_keys ADD COLUMN id_seed text`
})
