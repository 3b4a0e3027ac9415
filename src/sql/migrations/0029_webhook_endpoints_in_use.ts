import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * `webhooks.endpoints.total` counts the endpoints a tenant uses, not every one it ever used: an
 * endpoint not given by any request for 30 days stops counting (docs/api.md, "Webhooks"), so a
 * tenant that moved its receivers is not refused new ones for ever.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE webhook_endpoints ADD COLUMN last_used_at timestamptz NOT NULL DEFAULT now()`
})
