import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { newId } from "../../ids.ts"

/**
 * An invitation's `user_id` names its invitee from the start (docs/invitations.md, "The
 * invitation"): the identity of the tenant with that address, or the id the identity registering
 * with the invitation will get. So it may name an identity that does not exist yet: no foreign key.
 * Invitations made before have one given now.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE invitations DROP CONSTRAINT IF EXISTS invitations_user_id_fkey`
  const open = yield* sql<{ id: string }>`SELECT id FROM invitations WHERE user_id IS NULL`
  for (const row of open) yield* sql`UPDATE invitations SET user_id = ${newId("idt")} WHERE id = ${row.id}`
  yield* sql`ALTER TABLE invitations ALTER COLUMN user_id SET NOT NULL`
})
