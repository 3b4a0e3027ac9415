import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Page contents say how they are compressed: gzip (rows written before) or brotli. */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE page_contents ADD COLUMN encoding text NOT NULL DEFAULT 'gzip'`
})
