import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Extractions, their stashed inline input, the result cache and extractor configs. */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE extractor_configs (
      id text PRIMARY KEY,
      tenant_id text REFERENCES tenants(id),
      scope text NOT NULL,
      type text,
      domain_id text,
      url_pattern text,
      priority integer NOT NULL DEFAULT 0,
      enabled boolean NOT NULL DEFAULT true,
      payload jsonb NOT NULL DEFAULT '{}',
      notes text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX extractor_configs_tenant ON extractor_configs (tenant_id, created_at DESC)`
  yield* sql`
    CREATE TABLE extraction_inputs (
      id text PRIMARY KEY,
      tenant_id text NOT NULL,
      compressed bytea NOT NULL,
      size integer NOT NULL,
      hash text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`
    CREATE TABLE extractions (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES tenants(id),
      type text NOT NULL,
      status text NOT NULL,
      url text,
      domain_id text,
      input_format text NOT NULL,
      input_id text REFERENCES extraction_inputs(id),
      job_id text,
      config_id text,
      llm jsonb,
      webhook_url text,
      webhook_secret_enc text,
      webhook_event_types jsonb NOT NULL DEFAULT '["done","dead"]',
      data jsonb NOT NULL DEFAULT '{}',
      metadata jsonb NOT NULL,
      error_class text,
      error_message text,
      attempts integer NOT NULL DEFAULT 0,
      cache_hits integer NOT NULL DEFAULT 0,
      recycle_count integer NOT NULL DEFAULT 0,
      replay_of text,
      request_id text,
      next_retry_at timestamptz,
      lease_until timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      claimed_at timestamptz,
      finished_at timestamptz,
      cancelled_at timestamptz
    )`
  yield* sql`CREATE INDEX extractions_tenant_created ON extractions (tenant_id, created_at DESC, id DESC)`
  yield* sql`CREATE INDEX extractions_stale ON extractions (lease_until) WHERE status IN ('queued', 'claimed', 'failed')`
  yield* sql`
    CREATE TABLE extraction_cache (
      cache_key text PRIMARY KEY,
      data jsonb NOT NULL,
      metadata jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
})
