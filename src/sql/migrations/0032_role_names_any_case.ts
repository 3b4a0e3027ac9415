import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * A role name is one name in any letter case (docs/api.md, "Roles"): `OWNER` next to the system
 * `owner` would read as it. Live roles whose names already meet in lower case keep the oldest (a
 * system role before any other); the others get their id appended (within the 60 characters a
 * name has), so the index can be made.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    UPDATE roles r SET name = left(r.name, 60 - length(r.id) - 3) || ' (' || r.id || ')', updated_at = now()
    WHERE r.deleted_at IS NULL AND EXISTS (
      SELECT 1 FROM roles o
      WHERE o.tenant_id = r.tenant_id AND o.deleted_at IS NULL AND o.id <> r.id AND lower(o.name) = lower(r.name)
        AND ((o.is_system AND NOT r.is_system) OR (o.is_system = r.is_system AND (o.created_at, o.id) < (r.created_at, r.id))))`
  yield* sql`DROP INDEX roles_tenant_name`
  yield* sql`CREATE UNIQUE INDEX roles_tenant_name ON roles (tenant_id, lower(name)) WHERE deleted_at IS NULL`
})
