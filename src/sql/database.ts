import { mkdirSync } from "node:fs"
import { join } from "node:path"
import { Worker } from "node:worker_threads"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { Config } from "../config.ts"

/** Starts the embedded database in a worker thread; resolves with the port it listens on. */
const startEmbeddedWorker = (dir: string) =>
  new Promise<{ worker: Worker; port: number }>((resolve, reject) => {
    const worker = new Worker(new URL("./embedded-pg-worker.ts", import.meta.url), { workerData: { dir } })
    worker.once("error", reject)
    worker.once("message", (m: { port: number }) => resolve({ worker, port: m.port }))
  })

const stopEmbeddedWorker = (worker: Worker) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(() => void worker.terminate().then(() => resolve()), 5_000)
    worker.once("message", () => {
      clearTimeout(timer)
      void worker.terminate().then(() => resolve())
    })
    worker.postMessage("close")
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
      const { port } = yield* Effect.acquireRelease(
        Effect.promise(() => startEmbeddedWorker(dir)),
        ({ worker }) => Effect.promise(() => stopEmbeddedWorker(worker))
      )
      return PgClient.layer({
        host: "127.0.0.1",
        port,
        database: "postgres",
        username: "postgres",
        maxConnections: 8,
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
    return PgClient.layer({ url: Redacted.make(config.databaseUrl), maxConnections: 20 })
  })
)
