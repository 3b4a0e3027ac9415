import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Site crawls (docs/site-crawls.md): a crawl and its frontier. Every URL a crawl has judged is one
 * row of `crawl_urls`, keyed by the crawl and the URL's key, so no URL is queued (or fetched) twice
 * whatever node does the work; a page accepted into the crawl has its job's id from the start.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE crawls (
      id text PRIMARY KEY,
      tenant_id text NOT NULL,
      url text NOT NULL,
      status text NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed', 'cancelled')),
      status_reason text,
      options jsonb NOT NULL,
      page_limit integer NOT NULL,
      max_depth integer NOT NULL,
      webhook_url text,
      webhook_secret_enc text,
      request_id text,
      duplicates integer NOT NULL DEFAULT 0,
      sitemaps_read boolean NOT NULL DEFAULT false,
      paused_until timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      started_at timestamptz,
      finished_at timestamptz
    )`
  yield* sql`CREATE INDEX crawls_tenant ON crawls (tenant_id, created_at DESC, id DESC)`
  yield* sql`CREATE INDEX crawls_active ON crawls (created_at) WHERE status IN ('queued', 'running')`
  yield* sql`
    CREATE TABLE crawl_urls (
      crawl_id text NOT NULL REFERENCES crawls(id) ON DELETE CASCADE,
      url text NOT NULL,
      seq bigint GENERATED ALWAYS AS IDENTITY,
      depth integer NOT NULL,
      pattern text NOT NULL,
      status text NOT NULL CHECK (status IN ('queued', 'fetching', 'done', 'failed', 'cancelled', 'skipped', 'over_limit')),
      skip_reason text CHECK (skip_reason IN ('robots', 'filtered', 'depth', 'pattern', 'offsite', 'unsafe')),
      job_id text,
      parent_url text,
      parent_job_id text,
      created_at timestamptz NOT NULL DEFAULT now(),
      finished_at timestamptz,
      PRIMARY KEY (crawl_id, url)
    )`
  yield* sql`CREATE INDEX crawl_urls_frontier ON crawl_urls (crawl_id, status, depth, seq)`
  yield* sql`CREATE UNIQUE INDEX crawl_urls_job ON crawl_urls (job_id) WHERE job_id IS NOT NULL`
})
