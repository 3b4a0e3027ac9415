import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * A resource can notify the same status more than once: an extraction's transient `failed` comes
 * once per failed attempt. `event_seq` (that attempt; 0 for the once-only states) keeps each of
 * them, while a repeated write of the same one still makes one delivery.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE webhook_deliveries ADD COLUMN event_seq integer NOT NULL DEFAULT 0`
  yield* sql`ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_resource_type_resource_id_event_status_key`
  yield* sql`ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_event_key UNIQUE (resource_type, resource_id, event_status, event_seq)`
})
