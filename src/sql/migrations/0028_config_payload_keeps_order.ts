import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * An extractor config's payload is kept as the JSON text it was given (`json`), not as `jsonb`,
 * which sorts an object's keys (shorter first): a field's postProcess operations run in the order
 * written (docs/extraction.md), and that order is the order of their keys. Payloads stored before
 * this keep the order jsonb gave them; saving one again restores the order the client sends.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE extractor_configs ALTER COLUMN payload DROP DEFAULT`
  yield* sql`ALTER TABLE extractor_configs ALTER COLUMN payload TYPE json USING payload::json`
  yield* sql`ALTER TABLE extractor_configs ALTER COLUMN payload SET DEFAULT '{}'::json`
})
