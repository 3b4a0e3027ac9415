import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * A crawl with `ignoreQueryParameters` knows a URL by its key without the query, but fetches the
 * URL as first found, query and all (docs/site-crawls.md, "URL keys and scope"): `/item?id=5` is
 * the page the site linked, `/item` may be another or none. `fetch_url` is that URL when it differs
 * from the key; null otherwise, as for every row written before.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE crawl_urls ADD COLUMN fetch_url text`
})
