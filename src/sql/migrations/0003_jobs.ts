import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Crawl jobs, their stored content, page history, idempotency records and the event log. */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE jobs (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES tenants(id),
      url text NOT NULL,
      normalized_url text NOT NULL,
      domain_id text NOT NULL,
      status text NOT NULL,
      priority integer NOT NULL,
      attempts integer NOT NULL DEFAULT 0,
      timeout_ms integer NOT NULL,
      escalation jsonb,
      screenshot jsonb,
      webhook_url text,
      webhook_secret_enc text,
      result jsonb,
      replay_of text,
      request_id text,
      runs integer NOT NULL DEFAULT 0,
      lease_until timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      claimed_at timestamptz,
      finished_at timestamptz
    )`
  yield* sql`CREATE INDEX jobs_tenant_created ON jobs (tenant_id, created_at DESC, id DESC)`
  yield* sql`CREATE INDEX jobs_tenant_active ON jobs (tenant_id) WHERE status IN ('queued', 'claimed')`
  yield* sql`CREATE INDEX jobs_stale ON jobs (lease_until) WHERE status IN ('queued', 'claimed')`
  yield* sql`
    CREATE TABLE page_contents (
      tenant_id text NOT NULL,
      hash text NOT NULL,
      compressed bytea NOT NULL,
      size integer NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, hash)
    )`
  yield* sql`
    CREATE TABLE job_artifacts (
      job_id text PRIMARY KEY REFERENCES jobs(id),
      tenant_id text NOT NULL,
      content_hash text,
      content_type text,
      screenshot bytea,
      screenshot_type text
    )`
  yield* sql`
    CREATE TABLE page_versions (
      id text PRIMARY KEY,
      tenant_id text NOT NULL,
      normalized_url text NOT NULL,
      url text NOT NULL,
      job_id text NOT NULL UNIQUE,
      fetched_at timestamptz NOT NULL,
      http_status integer,
      content_type text,
      size integer NOT NULL,
      content_hash text NOT NULL,
      changed boolean NOT NULL
    )`
  yield* sql`CREATE INDEX page_versions_timeline ON page_versions (tenant_id, normalized_url, fetched_at DESC, id DESC)`
  yield* sql`
    CREATE TABLE idempotency_keys (
      tenant_id text NOT NULL,
      key text NOT NULL,
      request_hash text NOT NULL,
      status_code integer,
      response jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, key)
    )`
  yield* sql`
    CREATE TABLE events (
      id bigserial PRIMARY KEY,
      tenant_id text NOT NULL,
      seq bigint NOT NULL,
      type text NOT NULL,
      data jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE UNIQUE INDEX events_tenant_seq ON events (tenant_id, seq)`
  yield* sql`
    CREATE TABLE event_sequences (
      tenant_id text PRIMARY KEY,
      seq bigint NOT NULL
    )`
  yield* sql`
    CREATE TABLE domain_engine_history (
      domain_id text NOT NULL,
      engine text NOT NULL,
      ok boolean NOT NULL,
      at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (domain_id, engine)
    )`
})
