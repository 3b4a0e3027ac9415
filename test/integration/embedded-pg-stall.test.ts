import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startEmbeddedWorker, stopEmbeddedWorker } from "../../src/sql/database.ts"

// The database runs in its worker thread, as in the service: a wedged PGlite spins there, not in the test.
describe("embedded database after a stall of its clients", () => {
  let dir: string
  let started: Awaited<ReturnType<typeof startEmbeddedWorker>>
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "trawl-stall-"))
    started = await startEmbeddedWorker(join(dir, "pg"), () => {})
  }, 240_000)
  afterAll(async () => {
    await stopEmbeddedWorker(started.worker)
    rmSync(dir, { recursive: true, force: true })
  }, 30_000)

  const client = () =>
    PgClient.layer({ host: "127.0.0.1", port: started.port, database: "postgres", username: "postgres", maxConnections: 1, prepare: true })

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
