import { mkdtempSync, rmSync } from "node:fs"
import { connect, type Socket } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { PGlite } from "@electric-sql/pglite"
import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startEmbeddedWorker, stopEmbeddedWorker } from "../../src/sql/database.ts"
import { EmbeddedPgServer, privateSocketPath } from "../../src/sql/embedded-pg-server.ts"

// The database runs in its worker thread, as in the service: a wedged PGlite spins there, not in the test.
describe("embedded database after a stall of its clients", () => {
  let dir: string
  let started: Awaited<ReturnType<typeof startEmbeddedWorker>>
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "trawl-stall-"))
    started = await startEmbeddedWorker(join(dir, "pg"), () => {})
  }, 240_000)
  afterAll(async () => {
    await stopEmbeddedWorker(started)
    rmSync(dir, { recursive: true, force: true })
  }, 30_000)

  const client = () =>
    PgClient.layer({ path: started.socketPath, database: "postgres", username: "postgres", maxConnections: 1, prepare: true })

  // One connection: the statement that turns the timeout off must leave no answer behind on it either.
  it("keeps answering after no statement ran for longer than a session timeout a client set", async () => {
    const answer = await Effect.runPromise(
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        // What the cluster's runner storage does on its lock connection (with shardLockExpiration).
        yield* sql.unsafe("SELECT (SELECT set_config(name, '500', false) FROM pg_settings WHERE name = 'idle_session_timeout')")
        // The service's event loop stalls: nothing reaches the database for longer than that.
        yield* Effect.sleep("1500 millis")
        return yield* sql<{ n: number }>`SELECT 1::int AS n`.pipe(Effect.timeout("10 seconds"))
      }).pipe(Effect.provide(client()), Effect.scoped)
    )
    expect(answer).toEqual([{ n: 1 }])
  }, 30_000)
})

describe("embedded database with a connection that went silent in a transaction", () => {
  let db: PGlite
  let server: EmbeddedPgServer
  const front = privateSocketPath()
  beforeAll(async () => {
    db = await PGlite.create()
    server = new EmbeddedPgServer(db, { idleInTransactionMs: 500 })
    await server.listen(front.path)
    await db.exec("CREATE TABLE held (id int)")
  }, 120_000)
  afterAll(async () => {
    await server.close()
    await db.close()
    front.remove()
  })

  /** A bare wire-protocol client: logs in, runs `query`, and resolves once the server says it is ready again. */
  const bareClient = (query: string) =>
    new Promise<Socket>((resolve, reject) => {
      const socket = connect(front.path)
      const text = (s: string) => Buffer.from(`${s}\0`)
      const sized = (head: Buffer, body: Buffer) => {
        const length = Buffer.alloc(4)
        length.writeInt32BE(4 + body.length)
        return Buffer.concat([head, length, body])
      }
      const version = Buffer.alloc(4)
      version.writeInt32BE(196608)
      socket.write(sized(Buffer.alloc(0), Buffer.concat([version, text("user"), text("postgres"), text("database"), text("postgres"), Buffer.from([0])])))
      socket.write(sized(Buffer.from("Q"), text(query)))
      let received = Buffer.alloc(0)
      let ready = 0
      socket.on("data", (chunk) => {
        received = Buffer.concat([received, chunk])
        while (received.length >= 5 && received.length >= 1 + received.readInt32BE(1)) {
          if (received[0] === 0x5a && ++ready === 2) resolve(socket) // ReadyForQuery after the login, then after the query
          received = received.subarray(1 + received.readInt32BE(1))
        }
      })
      socket.on("error", reject)
    })

  it("rolls that transaction back and closes its connection, so the others proceed", async () => {
    // It opens a transaction, writes, and says nothing more, holding the database's one session.
    const silent = await bareClient("BEGIN; INSERT INTO held VALUES (1)")
    const closed = new Promise<void>((resolve) => silent.once("close", () => resolve()))
    const layer = PgClient.layer({ path: front.path, database: "postgres", username: "postgres", maxConnections: 1 })
    const rows = await Effect.runPromise(
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        // The next statement waits for the bound, then runs; the silent one's insert was rolled back.
        return yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM held`.pipe(Effect.timeout("10 seconds"))
      }).pipe(Effect.provide(layer), Effect.scoped)
    )
    expect(rows).toEqual([{ n: 0 }])
    await closed
  }, 30_000)
})
