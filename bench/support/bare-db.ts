/**
 * What the bare baseline servers (bench/support/bare-server.ts of `bench:api`,
 * bench/crawl-support/bare-insert-server.ts of `bench:crawl`) share: their database, set up as
 * Trawl does (src/sql/database.ts), and how they listen and stop.
 *
 * Env:
 *   BARE_DATABASE_URL  this database (the one Trawl used), or
 *   BARE_DATA_DIR      an own PGlite in this directory behind Trawl's EmbeddedPgServer.
 *   BARE_PORT          listening port on 127.0.0.1 (0: any).
 */
import { mkdirSync } from "node:fs"
import type { Server } from "node:http"
import { join } from "node:path"
import { PgClient } from "@effect/sql-pg"
import { PGlite } from "@electric-sql/pglite"
import { type Layer, ManagedRuntime, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { EmbeddedPgServer, privateSocketPath } from "../../src/sql/embedded-pg-server.ts"
import { exitWithParent } from "./processes.ts"

export interface BareDb {
  /** True for the own PGlite (BARE_DATA_DIR), false for BARE_DATABASE_URL. */
  readonly embedded: boolean
  readonly runtime: ManagedRuntime.ManagedRuntime<SqlClient.SqlClient, unknown>
  readonly sql: SqlClient.SqlClient
  readonly close: () => Promise<void>
}

export const openBareDb = async (): Promise<BareDb> => {
  const databaseUrl = process.env.BARE_DATABASE_URL
  let pglite: PGlite | undefined
  let front: EmbeddedPgServer | undefined
  let socket: ReturnType<typeof privateSocketPath> | undefined
  let layer: Layer.Layer<SqlClient.SqlClient, unknown>
  if (databaseUrl) {
    // The same client settings as Trawl for DATABASE_URL.
    layer = PgClient.layer({ url: Redacted.make(databaseUrl), maxConnections: 20 })
  } else {
    const dataDir = process.env.BARE_DATA_DIR
    if (!dataDir) throw new Error("BARE_DATA_DIR or BARE_DATABASE_URL is required")
    // As Trawl does for the embedded default.
    mkdirSync(join(dataDir, "pg"), { recursive: true })
    pglite = await PGlite.create(join(dataDir, "pg"))
    front = new EmbeddedPgServer(pglite)
    socket = privateSocketPath()
    await front.listen(socket.path)
    layer = PgClient.layer({ path: socket.path, database: "postgres", username: "postgres", maxConnections: 8, prepare: false })
  }
  const runtime = ManagedRuntime.make(layer)
  const sql = await runtime.runPromise(SqlClient.SqlClient)
  const close = async () => {
    await runtime.dispose().catch(() => {})
    await front?.close().catch(() => {})
    await pglite?.close().catch(() => {})
    socket?.remove()
  }
  return { embedded: !databaseUrl, runtime, sql, close }
}

/**
 * Listens on 127.0.0.1:BARE_PORT and prints `bare listening on <port>`. The parent keeps our stdin
 * open; when it goes away (even by SIGKILL), the server and `db` are closed and we exit.
 */
export const serveBare = async (server: Server, db: BareDb): Promise<void> => {
  server.keepAliveTimeout = 60_000
  exitWithParent(async () => {
    server.closeAllConnections()
    await new Promise<void>((res) => server.close(() => res()))
    await db.close()
  })
  await new Promise<void>((res, rej) => {
    server.once("error", rej)
    server.listen(Number(process.env.BARE_PORT ?? "0"), "127.0.0.1", () => res())
  })
  console.log(`bare listening on ${(server.address() as { port: number }).port}`)
}
