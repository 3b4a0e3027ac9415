import { cpSync, mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { Config, loadConfig } from "../../src/config.ts"
import { DatabaseLive } from "../../src/sql/database.ts"
import { runMigrations } from "../../src/sql/migrate.ts"
import { blankDatabaseTemplate, createTestDatabase } from "./server-process.ts"

const dataDir = () => mkdtempSync(join(tmpdir(), "trawl-db-"))

/**
 * The databases an integration test runs on: embedded always, PostgreSQL too when DATABASE_URL is
 * set. `config()` is the configuration of a fresh one: a new embedded data dir (a copy of a blank
 * database, which is quicker than creating one), or a new PostgreSQL database.
 */
export const testDatabases: ReadonlyArray<{ readonly name: string; readonly config: () => Promise<ReturnType<typeof loadConfig>> }> = [
  {
    name: "embedded",
    config: async () => {
      const dir = dataDir()
      cpSync(await blankDatabaseTemplate(), join(dir, "pg"), { recursive: true })
      return loadConfig({ DATA_DIR: dir })
    }
  },
  ...(process.env.DATABASE_URL
    ? [{ name: "postgres", config: async () => loadConfig({ DATA_DIR: dataDir(), DATABASE_URL: await createTestDatabase(process.env.DATABASE_URL!) }) }]
    : [])
]

/** The database layer (and its Config) of a configuration; a config used again is the same database. */
export const databaseLayer = (config: ReturnType<typeof loadConfig>) =>
  DatabaseLive.pipe(Layer.provideMerge(Layer.succeed(Config, config)))

/** Runs one statement on the PostgreSQL database at `url` (a test's look at what a server wrote). */
export const query = <A>(url: string, text: string) =>
  Effect.runPromise(
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      return (yield* sql.unsafe(text)) as unknown as ReadonlyArray<A>
    }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })), Effect.scoped)
  )

/**
 * Migrates the database, adds bare tenant rows (what the tables' foreign keys need), then runs
 * `body`: the live side of a parity test, whose test-layer side needs no tenants.
 */
export const onMigratedTenants = <A, E, R>(tenantIds: ReadonlyArray<string>, body: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    yield* runMigrations
    const sql = yield* SqlClient.SqlClient
    for (const t of tenantIds) yield* sql`INSERT INTO tenants (id, name, is_internal, plan, balance) VALUES (${t}, ${t}, false, 'starter', 0)`
    return yield* body
  })
