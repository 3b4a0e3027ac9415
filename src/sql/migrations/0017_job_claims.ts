import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * A job's claims, counted apart from its runs: `runs` now counts only fetches that began (a node
 * that dies while the job waits for a slot costs it nothing), while each claim still needs a
 * number of its own that grows, to name the run that holds the domain's politeness slot. Until
 * now `runs` counted claims, so it is where the count starts.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE jobs ADD COLUMN claims integer NOT NULL DEFAULT 0`
  yield* sql`UPDATE jobs SET claims = runs`
})
