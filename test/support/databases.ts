import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Layer } from "effect"
import { Config, loadConfig } from "../../src/config.ts"
import { DatabaseLive } from "../../src/sql/database.ts"
import { createTestDatabase } from "./server-process.ts"

/** The databases an integration test runs on: embedded always, PostgreSQL too when DATABASE_URL is set. */
export const testDatabases = [
  { name: "embedded", url: async () => undefined as string | undefined },
  ...(process.env.DATABASE_URL ? [{ name: "postgres", url: () => createTestDatabase(process.env.DATABASE_URL!) }] : [])
]

/** The configuration of a fresh database: a new PostgreSQL database's URL, or a new embedded data dir. */
export const freshDatabaseConfig = (url: string | undefined) =>
  loadConfig({ DATA_DIR: mkdtempSync(join(tmpdir(), "trawl-db-")), ...(url ? { DATABASE_URL: url } : {}) })

/** The database layer (and its Config) of a configuration; a config used again is the same database. */
export const databaseLayer = (config: ReturnType<typeof loadConfig>) =>
  DatabaseLive.pipe(Layer.provideMerge(Layer.succeed(Config, config)))
