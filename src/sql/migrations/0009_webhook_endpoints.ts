import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The webhook URLs a tenant has registered, which `webhooks.endpoints.total` counts: jobs' and
 * extractions' alike, written by the tenant's entity one at a time.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE webhook_endpoints (
      tenant_id text NOT NULL,
      url text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, url)
    )`
  yield* sql`
    INSERT INTO webhook_endpoints (tenant_id, url)
    SELECT tenant_id, webhook_url FROM jobs WHERE webhook_url IS NOT NULL
    UNION
    SELECT tenant_id, webhook_url FROM extractions WHERE webhook_url IS NOT NULL`
})
