/**
 * The baseline of `npm run bench:api`: a bare `node:http` handler that answers every GET
 * with one primary-key SELECT of an api_keys row through @effect/sql-pg's PgClient, the row
 * serialised with JSON.stringify. No routing framework, no middleware, no auth, no rate limit.
 *
 * The row id is the last path segment, so the very same URLs as the full-stack run can be used
 * (`/v1/iam/identities/{id}/api-keys/{kid}` reads row `{kid}`).
 *
 * Env:
 *   BARE_DATABASE_URL  read the real `api_keys` table of this database (the one Trawl used), or
 *   BARE_DATA_DIR      start an own PGlite in this directory behind Trawl's EmbeddedPgServer and
 *   BARE_ROWS_FILE     fill a minimal mirror of `api_keys` with the rows of this JSON file.
 *   BARE_PORT          listening port (127.0.0.1).
 * Prints `bare listening on <port>` once ready; exits when its stdin closes (parent gone).
 */
import { readFileSync } from "node:fs"
import { createServer } from "node:http"
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import { openBareDb, serveBare } from "./bare-db.ts"

export interface MirrorRow {
  readonly id: string
  readonly tenant_id: string
  readonly identity_id: string
  readonly role_id: string
  readonly name: string
  readonly description: string | null
  readonly key_prefix: string
  readonly key_hash: string
  readonly rate_limit_per_minute: number
  readonly last_used_at: string | null
  readonly expires_at: string | null
  readonly revoked_at: string | null
  readonly created_at: string
}

/** A minimal table mirroring api_keys' columns, with the given rows (embedded case only). */
const createMirror = (sql: SqlClient.SqlClient, rows: ReadonlyArray<MirrorRow>) =>
  Effect.gen(function*() {
    yield* sql`
      CREATE TABLE IF NOT EXISTS api_keys (
        id text PRIMARY KEY,
        tenant_id text NOT NULL,
        identity_id text NOT NULL,
        role_id text NOT NULL,
        name text NOT NULL,
        description text,
        key_prefix text NOT NULL,
        key_hash text NOT NULL UNIQUE,
        rate_limit_per_minute integer NOT NULL,
        last_used_at timestamptz,
        expires_at timestamptz,
        revoked_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`
    for (const r of rows) {
      yield* sql`
        INSERT INTO api_keys (id, tenant_id, identity_id, role_id, name, description, key_prefix, key_hash,
                              rate_limit_per_minute, last_used_at, expires_at, revoked_at, created_at)
        VALUES (${r.id}, ${r.tenant_id}, ${r.identity_id}, ${r.role_id}, ${r.name}, ${r.description}, ${r.key_prefix},
                ${r.key_hash}, ${r.rate_limit_per_minute}, ${r.last_used_at}, ${r.expires_at}, ${r.revoked_at},
                ${r.created_at})
        ON CONFLICT (id) DO NOTHING`
    }
  })

const main = async () => {
  const db = await openBareDb()
  const { runtime, sql } = db
  if (db.embedded) {
    const file = process.env.BARE_ROWS_FILE
    if (!file) throw new Error("BARE_ROWS_FILE is required with BARE_DATA_DIR")
    const rows = JSON.parse(readFileSync(file, "utf8")) as ReadonlyArray<MirrorRow>
    await runtime.runPromise(createMirror(sql, rows))
  }

  const read = (id: string) =>
    sql`SELECT id, tenant_id, identity_id, role_id, name, description, key_prefix, rate_limit_per_minute,
               last_used_at, expires_at, revoked_at, created_at
        FROM api_keys WHERE id = ${id}`

  const server = createServer((req, res) => {
    if (req.method !== "GET" || req.url === undefined) {
      res.writeHead(405).end()
      return
    }
    const path = req.url.split("?", 1)[0]!
    const id = decodeURIComponent(path.slice(path.lastIndexOf("/") + 1))
    runtime.runPromise(read(id)).then(
      (rows) => {
        const row = rows[0]
        if (row === undefined) {
          res.writeHead(404, { "content-type": "application/json" }).end("{}")
          return
        }
        const body = JSON.stringify(row)
        res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) }).end(body)
      },
      (error) => {
        const body = JSON.stringify({ error: String(error) })
        res.writeHead(500, { "content-type": "application/json" }).end(body)
      }
    )
  })
  await serveBare(server, db)
}

main().catch((error) => {
  console.error("bare server failed:", error)
  process.exit(1)
})
