import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * A key's seed: the ids (and generated secrets) its request creates are derived from it, so a retry
 * that takes over the claim of a request whose node died mid-way creates the same jobs, not more.
 * `claim_token` names the request that holds the claim now: only it renews, stores or frees it, so
 * a request taken for dead that was only slow cannot overwrite or free its successor's claim. A
 * freed claim (its request failed) keeps its seed, with no holder.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE idempotency_keys ADD COLUMN id_seed text, ADD COLUMN claim_token text`
})
