import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { PGlite } from "@electric-sql/pglite"
import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { EmbeddedPgServer, privateSocketPath } from "../../src/sql/embedded-pg-server.ts"
import { startEmbeddedWorker, stopEmbeddedWorker } from "../../src/sql/database.ts"

describe("embedded PostgreSQL front", () => {
  let db: PGlite
  let server: EmbeddedPgServer
  const socket = privateSocketPath()
  beforeAll(async () => {
    db = await PGlite.create()
    server = new EmbeddedPgServer(db)
    await server.listen(socket.path)
    await db.exec("CREATE TABLE t (id int PRIMARY KEY, v text)")
  })
  afterAll(async () => {
    await server.close()
    await db.close()
    socket.remove()
  })

  const client = (maxConnections: number) =>
    PgClient.layer({ path: socket.path, database: "postgres", username: "postgres", maxConnections, prepare: true })
  const prepared = async () => (await db.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_prepared_statements")).rows[0]!.n

  it("runs prepared statements of several connections side by side, and deallocates them when the connections close", async () => {
    const before = await prepared()
    await Effect.runPromise(
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        // Two connections prepare different statements at once; each must run its own.
        const results = yield* Effect.all(
          Array.from({ length: 40 }, (_, i) =>
            i % 2 === 0
              ? sql`INSERT INTO t (id, v) VALUES (${i}, ${"even"}) RETURNING v`
              : sql`SELECT ${i}::int + 1000 AS v`
          ),
          { concurrency: 8 }
        )
        results.forEach((rows, i) => expect((rows[0] as { v: unknown }).v).toBe(i % 2 === 0 ? "even" : i + 1000))
        expect(yield* Effect.promise(prepared)).toBeGreaterThan(before)
      }).pipe(Effect.provide(client(4)), Effect.scoped)
    )
    // The pool's connections are closed with its scope; the front deallocates after the close.
    await expect.poll(prepared, { timeout: 5_000 }).toBe(before)
  })
})

describe("embedded database worker", () => {
  it("reports a worker that stops unasked as a lost database, and a stop it asked for as nothing", async () => {
    const dir = mkdtempSync(join(tmpdir(), "trawl-worker-"))
    try {
      const lost: Array<string> = []
      const crashed = await startEmbeddedWorker(join(dir, "a"), (reason) => lost.push(reason))
      await crashed.worker.terminate() // as if the thread died
      await new Promise((r) => setTimeout(r, 100))
      expect(lost).toHaveLength(1)
      expect(lost[0]).toMatch(/stopped/)
      expect(existsSync(dirname(crashed.socketPath))).toBe(false)

      const calm: Array<string> = []
      const stopped = await startEmbeddedWorker(join(dir, "b"), (reason) => calm.push(reason))
      // PGlite asks no password: its socket's directory is this user's alone, and goes with the stop.
      expect(statSync(stopped.socketPath).isSocket()).toBe(true)
      expect(statSync(dirname(stopped.socketPath)).mode & 0o777).toBe(0o700)
      await stopEmbeddedWorker(stopped)
      expect(existsSync(dirname(stopped.socketPath))).toBe(false)
      await new Promise((r) => setTimeout(r, 100))
      expect(calm).toEqual([])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 60_000)
})

describe("embedded database socket directories", () => {
  it("a new one removes those of processes that are gone (killed outright) and keeps the living ones'", async () => {
    const { spawnSync } = await import("node:child_process")
    // A pid that existed and is gone: a child that has exited.
    const gone = spawnSync(process.execPath, ["-e", "0"]).pid!
    const dead = mkdtempSync(join(tmpdir(), `trawl-db-${gone}-`))
    const living = mkdtempSync(join(tmpdir(), `trawl-db-${process.ppid}-`))
    const fresh = privateSocketPath()
    try {
      expect(existsSync(dead)).toBe(false)
      expect(existsSync(living)).toBe(true)
      expect(dirname(fresh.path)).toMatch(new RegExp(`trawl-db-${process.pid}-`))
    } finally {
      fresh.remove()
      rmSync(living, { recursive: true, force: true })
      rmSync(dead, { recursive: true, force: true })
    }
  })
})
