import { createHash, randomBytes } from "node:crypto"
import { mkdirSync, realpathSync } from "node:fs"
import { createServer, type Server } from "node:net"
import { join } from "node:path"
import { Worker } from "node:worker_threads"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { Config } from "../config.ts"
import { privateSocketPath } from "./embedded-pg-server.ts"

/**
 * The name this node's database sessions carry (`application_name`), so that its own can be told
 * from other nodes' in pg_stat_activity (the pool use in `GET /metrics`).
 */
export const NODE_APPLICATION_NAME = `trawl-${process.pid}-${randomBytes(4).toString("hex")}`

/** The most connections a node's pool opens: on PostgreSQL, and on the embedded database. */
export const POOL_MAX_CONNECTIONS = { postgres: 20, embedded: 8 } as const

/** Workers being stopped on purpose: their exit is not a loss. */
const stopping = new WeakSet<Worker>()

/** The embedded database's worker thread and the unix socket its front listens on. */
export interface EmbeddedWorker {
  readonly worker: Worker
  readonly socketPath: string
}

/**
 * Starts the embedded database in a worker thread; resolves once its front listens on a private
 * unix socket (privateSocketPath), whose directory is removed when the worker ends, however it
 * ends. If the worker stops later without being asked to (a crash, an out-of-memory end), `onLost`
 * is called: the node has lost its database and cannot serve any more.
 */
export const startEmbeddedWorker = (dir: string, onLost: (reason: string) => void) =>
  new Promise<EmbeddedWorker>((resolve, reject) => {
    const socket = privateSocketPath()
    const worker = new Worker(new URL("./embedded-pg-worker.ts", import.meta.url), { workerData: { dir, socketPath: socket.path } })
    worker.once("exit", socket.remove)
    worker.once("error", reject)
    worker.once("message", () => {
      worker.off("error", reject)
      worker.on("error", (e) => {
        if (!stopping.has(worker)) onLost(`the embedded database failed: ${e instanceof Error ? e.stack ?? e.message : String(e)}`)
      })
      worker.once("exit", (code) => {
        if (!stopping.has(worker)) onLost(`the embedded database stopped (worker exit code ${code})`)
      })
      resolve({ worker, socketPath: socket.path })
    })
  })

/** A lost embedded database ends the process, so that its supervisor starts a healthy one. */
const exitOnLostDatabase = (reason: string) => {
  console.error(`fatal: ${reason}; the node stops`)
  process.exit(70)
}

/** Asks the worker to close the database, and ends it after at most 5 s; resolves once it has exited. */
export const stopEmbeddedWorker = ({ worker }: EmbeddedWorker) =>
  new Promise<void>((resolve) => {
    stopping.add(worker)
    worker.once("exit", () => resolve())
    const timer = setTimeout(() => void worker.terminate(), 5_000)
    worker.once("message", () => {
      clearTimeout(timer)
      void worker.terminate()
    })
    worker.postMessage("close")
  })

/**
 * One process per embedded database. Two PGlite instances writing one directory corrupt it (a
 * second start on a node's DATA_DIR, which then failed on its taken port, left a database that no
 * longer opened), so a start holds a lock on DATA_DIR and a second one stops with one line. The
 * lock is a unix socket in Linux's abstract namespace named after the directory: binding it is
 * atomic, and the kernel frees it when its process ends, however it ends (no stale lock files, no
 * race between starts that find one). Elsewhere than on Linux there is no such lock.
 */
export const lockDataDir = (dataDir: string): Promise<Server | undefined> =>
  new Promise((resolve, reject) => {
    if (process.platform !== "linux") return resolve(undefined)
    const name = createHash("sha256").update(realpathSync(dataDir)).digest("hex").slice(0, 40)
    const server = createServer()
    server.once("error", (e: NodeJS.ErrnoException) => {
      if (e.code !== "EADDRINUSE") return reject(e)
      console.error(`fatal: DATA_DIR ${dataDir} is in use by another process: one process per embedded database (several nodes share DATABASE_URL instead)`)
      process.exit(2)
    })
    server.listen({ path: `\0trawl-embedded-${name}` }, () => {
      server.unref()
      resolve(server)
    })
  })

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
      yield* Effect.acquireRelease(Effect.promise(() => lockDataDir(dataDir)), (lock) => Effect.sync(() => lock?.close()))
      const { socketPath } = yield* Effect.acquireRelease(
        Effect.promise(() => startEmbeddedWorker(dir, exitOnLostDatabase)),
        (started) => Effect.promise(() => stopEmbeddedWorker(started))
      )
      return PgClient.layer({
        path: socketPath,
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
