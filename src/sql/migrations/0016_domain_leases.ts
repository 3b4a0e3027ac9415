import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Until when a domain's entity may have politeness slots out (renewed while it has): an entity
 * that starts again on another node after its own node died grants nothing new until the holders'
 * nodes have renewed their slots with it (see src/actors/domain-entity.ts).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE domain_leases (domain_id text PRIMARY KEY, held_until timestamptz NOT NULL)`
})
