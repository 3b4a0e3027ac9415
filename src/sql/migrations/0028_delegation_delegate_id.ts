import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { newId } from "../../ids.ts"

/**
 * A delegation names its delegate from the start (docs/delegations.md): one invited by e-mail gets
 * the id the identity registering with the delegation's token will have. So `delegate_id` may name
 * an identity that does not exist yet: no foreign key. Delegations made before have one given now.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE delegations DROP CONSTRAINT IF EXISTS delegations_delegate_id_fkey`
  const open = yield* sql<{ id: string }>`SELECT id FROM delegations WHERE delegate_id IS NULL`
  for (const row of open) yield* sql`UPDATE delegations SET delegate_id = ${newId("idt")} WHERE id = ${row.id}`
  yield* sql`ALTER TABLE delegations ALTER COLUMN delegate_id SET NOT NULL`
})
