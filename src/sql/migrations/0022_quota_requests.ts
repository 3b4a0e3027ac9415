import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Quota increase requests (docs/api.md, "Quota increase requests"). A withdrawn request is stored as
 * `cancelled`. The partial unique index is what keeps one `pending` request per tenant and quota
 * key when two are created at once.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE quota_requests (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES tenants(id),
      quota_key text NOT NULL,
      requested_by text NOT NULL REFERENCES identities(id),
      requested_limit integer NOT NULL CHECK (requested_limit > 0),
      reason text NOT NULL,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'rejected', 'cancelled')),
      decided_by text,
      decided_at timestamptz,
      decision_note text,
      withdrawn_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE UNIQUE INDEX quota_requests_one_pending ON quota_requests (tenant_id, quota_key) WHERE status = 'pending'`
  yield* sql`CREATE INDEX quota_requests_tenant ON quota_requests (tenant_id, created_at DESC, id DESC)`
  yield* sql`CREATE INDEX quota_requests_created ON quota_requests (created_at DESC, id DESC)`
})
