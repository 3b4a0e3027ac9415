import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * An override an approved quota increase request made only raises a limit: the plan and its add-ons
 * win when they give more (a tenant that later buys an add-on or a bigger plan gets what it paid
 * for), while a super-admin's own override replaces the limit either way (docs/api.md, "Quota
 * increase requests"). Overrides written by approvals before this column existed are marked from
 * their request.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE quota_overrides ADD COLUMN raise_only boolean NOT NULL DEFAULT false`
  yield* sql`
    UPDATE quota_overrides o SET raise_only = true
    WHERE EXISTS (
      SELECT 1 FROM quota_requests r
      WHERE r.tenant_id = o.tenant_id AND r.quota_key = o.quota_key AND r.status = 'approved' AND r.requested_limit = o.quota_limit
    )`
})
