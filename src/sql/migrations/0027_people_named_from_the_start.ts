import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { newId } from "../../ids.ts"

/**
 * An invitation's invitee (`invitations.user_id`, docs/invitations.md) and a delegation's delegate
 * (`delegations.delegate_id`, docs/delegations.md) are named from the start: a person not yet
 * registered by the id their registration with the mailed token will give. So both may name an
 * identity that does not exist yet: no foreign key. Rows made before are given one now.
 */
const namedFromTheStart = [
  { table: "invitations", column: "user_id" },
  { table: "delegations", column: "delegate_id" }
] as const

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  for (const { table, column } of namedFromTheStart) {
    yield* sql`ALTER TABLE ${sql(table)} DROP CONSTRAINT IF EXISTS ${sql(`${table}_${column}_fkey`)}`
    const unnamed = yield* sql<{ id: string }>`SELECT id FROM ${sql(table)} WHERE ${sql(column)} IS NULL`
    for (const row of unnamed) yield* sql`UPDATE ${sql(table)} SET ${sql(column)} = ${newId("idt")} WHERE id = ${row.id}`
    yield* sql`ALTER TABLE ${sql(table)} ALTER COLUMN ${sql(column)} SET NOT NULL`
  }
})
