import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Roles are deleted by marking them (docs/api.md, "Roles"): revoked keys and answered invitations
 * keep pointing at the role they had. A deleted role's name is free again in its tenant.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE roles ADD COLUMN deleted_at timestamptz`
  yield* sql`ALTER TABLE roles DROP CONSTRAINT roles_tenant_id_name_key`
  yield* sql`CREATE UNIQUE INDEX roles_tenant_name ON roles (tenant_id, name) WHERE deleted_at IS NULL`
  yield* sql`CREATE INDEX api_keys_role ON api_keys (role_id) WHERE revoked_at IS NULL`
})
