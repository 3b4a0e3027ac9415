import { mkdirSync } from "node:fs"
import { join } from "node:path"
import { PgClient } from "@effect/sql-pg"
import { PGlite } from "@electric-sql/pglite"
import { Effect, Layer, Redacted } from "effect"
import { Config } from "../config.ts"
import { EmbeddedPgServer } from "./embedded-pg-server.ts"

/**
 * The embedded default: PGlite in DATA_DIR behind an in-process wire-protocol server,
 * so the very same PgClient, SQL and cluster storage run on it. One runner only:
 * PGlite is a single session, so it must never be shared by two processes.
 */
const embedded = (dataDir: string) =>
  Layer.unwrap(
    Effect.gen(function*() {
      const dir = join(dataDir, "pg")
      mkdirSync(dir, { recursive: true })
      const db = yield* Effect.acquireRelease(
        Effect.promise(() => PGlite.create(dir)),
        (db) => Effect.promise(() => db.close()).pipe(Effect.ignore)
      )
      const server = new EmbeddedPgServer(db)
      const port = yield* Effect.acquireRelease(
        Effect.promise(() => server.listen()),
        () => Effect.promise(() => server.close()).pipe(Effect.ignore)
      )
      return PgClient.layer({
        host: "127.0.0.1",
        port,
        database: "postgres",
        username: "postgres",
        maxConnections: 8,
        prepare: false
      })
    })
  )

/** Either `DATABASE_URL` (TCP or `?host=/socket/dir`) or the embedded PGlite. */
export const DatabaseLive = Layer.unwrap(
  Effect.gen(function*() {
    const config = yield* Config
    if (config.databaseUrl === undefined) return embedded(config.dataDir)
    return PgClient.layer({ url: Redacted.make(config.databaseUrl), maxConnections: 20 })
  })
)
