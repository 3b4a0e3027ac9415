import { randomBytes } from "node:crypto"
import { mkdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from "node:fs"
import { hostname } from "node:os"
import { join } from "node:path"
import { Worker } from "node:worker_threads"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { Config } from "../config.ts"

/**
 * The name this node's database sessions carry (`application_name`), so that its own can be told
 * from other nodes' in pg_stat_activity (the pool use in `GET /metrics`).
 */
export const NODE_APPLICATION_NAME = `trawl-${process.pid}-${randomBytes(4).toString("hex")}`

/** The most connections a node's pool opens: on PostgreSQL, and on the embedded database. */
export const POOL_MAX_CONNECTIONS = { postgres: 20, embedded: 8 } as const

/** Workers being stopped on purpose: their exit is not a loss. */
const stopping = new WeakSet<Worker>()

/**
 * Starts the embedded database in a worker thread; resolves with the port it listens on. If the
 * worker stops later without being asked to (a crash, an out-of-memory end), `onLost` is called:
 * the node has lost its database and cannot serve any more.
 */
export const startEmbeddedWorker = (dir: string, onLost: (reason: string) => void) =>
  new Promise<{ worker: Worker; port: number }>((resolve, reject) => {
    const worker = new Worker(new URL("./embedded-pg-worker.ts", import.meta.url), { workerData: { dir } })
    worker.once("error", reject)
    worker.once("message", (m: { port: number }) => {
      worker.off("error", reject)
      worker.on("error", (e) => {
        if (!stopping.has(worker)) onLost(`the embedded database failed: ${e instanceof Error ? e.stack ?? e.message : String(e)}`)
      })
      worker.once("exit", (code) => {
        if (!stopping.has(worker)) onLost(`the embedded database stopped (worker exit code ${code})`)
      })
      resolve({ worker, port: m.port })
    })
  })

/** A lost embedded database ends the process, so that its supervisor starts a healthy one. */
const exitOnLostDatabase = (reason: string) => {
  console.error(`fatal: ${reason}; the node stops`)
  process.exit(70)
}

export const stopEmbeddedWorker = (worker: Worker) =>
  new Promise<void>((resolve) => {
    stopping.add(worker)
    const timer = setTimeout(() => void worker.terminate().then(() => resolve()), 5_000)
    worker.once("message", () => {
      clearTimeout(timer)
      void worker.terminate().then(() => resolve())
    })
    worker.postMessage("close")
  })

/**
 * One process per embedded database. Two PGlite instances writing one directory corrupt it (a
 * second start on a node's DATA_DIR, which then failed on its taken port, left a database that no
 * longer opened), so a start finds DATA_DIR/embedded.lock naming a live process of this host and
 * stops with one line. A lock left by a process that is gone (killed), by this very process id (a
 * container's restarted pid 1), or by another host (a volume moved with its container) is taken over.
 * Answers the release, which removes the lock if it is still this process's.
 */
export const lockDataDir = (dataDir: string): (() => void) => {
  const path = join(dataDir, "embedded.lock")
  const mine = JSON.stringify({ pid: process.pid, host: hostname() })
  for (let tries = 0; ; tries++) {
    try {
      writeFileSync(path, mine, { flag: "wx" })
      return () => {
        try {
          if (readFileSync(path, "utf8") === mine) unlinkSync(path)
        } catch {
          // gone already
        }
      }
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST" || tries > 0) throw e
    }
    const holder = heldBy(path)
    if (holder !== undefined && holder.host === hostname() && holder.pid !== process.pid && isAlive(holder.pid)) {
      console.error(`fatal: DATA_DIR ${dataDir} is in use by process ${holder.pid}: one process per embedded database (several nodes share DATABASE_URL instead)`)
      process.exit(2)
    }
    rmSync(path, { force: true })
  }
}

const heldBy = (path: string): { pid: number; host: string } | undefined => {
  try {
    const held = JSON.parse(readFileSync(path, "utf8")) as { pid?: unknown; host?: unknown }
    return typeof held.pid === "number" && typeof held.host === "string" ? { pid: held.pid, host: held.host } : undefined
  } catch {
    return undefined
  }
}

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM"
  }
}

/**
 * The embedded default: PGlite in DATA_DIR behind a wire-protocol front, in a worker
 * thread, so the very same PgClient, SQL and cluster storage run on it. One runner only:
 * PGlite is a single session, so it must never be shared by two processes.
 */
const embedded = (dataDir: string) =>
  Layer.unwrap(
    Effect.gen(function*() {
      const dir = join(dataDir, "pg")
      mkdirSync(dir, { recursive: true })
      yield* Effect.acquireRelease(Effect.sync(() => lockDataDir(dataDir)), (unlock) => Effect.sync(unlock))
      const { port } = yield* Effect.acquireRelease(
        Effect.promise(() => startEmbeddedWorker(dir, exitOnLostDatabase)),
        ({ worker }) => Effect.promise(() => stopEmbeddedWorker(worker))
      )
      return PgClient.layer({
        host: "127.0.0.1",
        port,
        database: "postgres",
        username: "postgres",
        maxConnections: POOL_MAX_CONNECTIONS.embedded,
        applicationName: NODE_APPLICATION_NAME,
        // Statements are planned once per connection: in PGlite planning costs more than running them.
        prepare: true
      })
    })
  )

/** Either `DATABASE_URL` (TCP or `?host=/socket/dir`) or the embedded PGlite. */
export const DatabaseLive = Layer.unwrap(
  Effect.gen(function*() {
    const config = yield* Config
    if (config.databaseUrl === undefined) return embedded(config.dataDir)
    return PgClient.layer({ url: Redacted.make(config.databaseUrl), maxConnections: POOL_MAX_CONNECTIONS.postgres, applicationName: NODE_APPLICATION_NAME })
  })
)
