/**
 * Baseline of the job-creation figure (d) of `npm run bench:crawl`: a bare `node:http` handler that
 * answers every `POST /v1/scraper/jobs` with one INSERT of a job row (the columns Trawl writes) through
 * @effect/sql-pg's PgClient, and a 201 with the row as JSON. No framework, auth, rate limit, quota,
 * SSRF check, events or entity hand-off.
 *
 * Env:
 *   BARE_DATABASE_URL  insert into table bench_bare_jobs of this database (the one Trawl used), or
 *   BARE_DATA_DIR      an own PGlite in this directory behind Trawl's EmbeddedPgServer (as Trawl does).
 *   BARE_PORT          listening port on 127.0.0.1 (0: any).
 * The table has the columns and indexes of Trawl's `jobs` (no foreign key: there are no tenants here).
 * Prints `bare listening on <port>`; exits when its stdin closes.
 */
import { randomUUID } from "node:crypto"
import { createServer } from "node:http"
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import { openBareDb, serveBare } from "../support/bare-db.ts"

const table = "bench_bare_jobs"

const createTable = (sql: SqlClient.SqlClient) =>
  Effect.gen(function*() {
    yield* sql.unsafe(`
      CREATE TABLE IF NOT EXISTS ${table} (
        id text PRIMARY KEY,
        tenant_id text NOT NULL,
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
      )`)
    yield* sql.unsafe(`CREATE INDEX IF NOT EXISTS ${table}_tenant_created ON ${table} (tenant_id, created_at DESC, id DESC)`)
    yield* sql.unsafe(`CREATE INDEX IF NOT EXISTS ${table}_tenant_active ON ${table} (tenant_id) WHERE status IN ('queued', 'claimed')`)
    yield* sql.unsafe(`CREATE INDEX IF NOT EXISTS ${table}_stale ON ${table} (lease_until) WHERE status IN ('queued', 'claimed')`)
  })

const main = async () => {
  const db = await openBareDb()
  const { runtime, sql } = db
  await runtime.runPromise(createTable(sql))

  const insert = (tenantId: string, url: string, requestId: string) => {
    const u = new URL(url)
    return sql<Record<string, unknown>>`
      INSERT INTO ${sql(table)} (id, tenant_id, url, normalized_url, domain_id, status, priority, timeout_ms, request_id, lease_until)
      VALUES (${"job_" + randomUUID()}, ${tenantId}, ${u.href}, ${u.href}, ${u.hostname}, 'queued', 0, 120000, ${requestId},
              ${new Date(Date.now() + 600_000)})
      RETURNING id, url, status, priority, attempts, created_at, finished_at, domain_id, tenant_id`
  }

  const server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      let url: unknown
      try {
        url = JSON.parse(Buffer.concat(chunks).toString("utf8"))?.url
      } catch {
        url = undefined
      }
      if (req.method !== "POST" || typeof url !== "string") {
        res.writeHead(400, { "content-type": "application/json" }).end('{"status":"error"}')
        return
      }
      const tenantId = String(req.headers["x-api-key"] ?? "anonymous").slice(0, 32)
      runtime.runPromise(insert(tenantId, url, randomUUID())).then(
        (rows) => {
          const body = JSON.stringify({ status: "success", code: "201-created", data: rows[0] })
          res.writeHead(201, { "content-type": "application/json", "content-length": Buffer.byteLength(body) }).end(body)
        },
        (error) => {
          const body = JSON.stringify({ status: "error", message: String(error) })
          res.writeHead(500, { "content-type": "application/json" }).end(body)
        }
      )
    })
  })
  await serveBare(server, db)
}

main().catch((error) => {
  console.error("bare insert server failed:", error)
  process.exit(1)
})
