import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Webhook deliveries (one per notified terminal state) and every attempt made for them. */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE webhook_deliveries (
      id text PRIMARY KEY,
      tenant_id text NOT NULL,
      resource_type text NOT NULL,
      resource_id text NOT NULL,
      event_status text NOT NULL,
      url text NOT NULL,
      secret_enc text NOT NULL,
      body text NOT NULL,
      status text NOT NULL DEFAULT 'pending',
      attempts integer NOT NULL DEFAULT 0,
      next_attempt_at timestamptz,
      first_attempt_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      delivered_at timestamptz,
      UNIQUE (resource_type, resource_id, event_status)
    )`
  yield* sql`CREATE INDEX webhook_deliveries_resource ON webhook_deliveries (tenant_id, resource_type, resource_id)`
  yield* sql`CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending'`
  yield* sql`
    CREATE TABLE webhook_attempts (
      id bigserial PRIMARY KEY,
      delivery_id text NOT NULL REFERENCES webhook_deliveries(id),
      attempt integer NOT NULL,
      manual boolean NOT NULL DEFAULT false,
      at timestamptz NOT NULL DEFAULT now(),
      http_status integer,
      error text,
      duration_ms integer NOT NULL,
      response_body text,
      UNIQUE (delivery_id, attempt, manual)
    )`
})
