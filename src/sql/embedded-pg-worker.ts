/**
 * Worker-thread entry of the embedded database: PGlite and its wire-protocol front run
 * here, so SQL work uses the machine's other core instead of the service's event loop.
 */
import { parentPort, workerData } from "node:worker_threads"
import { PGlite } from "@electric-sql/pglite"
import { EmbeddedPgServer } from "./embedded-pg-server.ts"

const port = parentPort!
const { dir, socketPath } = workerData as { dir: string; socketPath: string }
const db = await PGlite.create(dir)
const server = new EmbeddedPgServer(db)
await server.listen(socketPath)
port.postMessage({ listening: true })
port.on("message", async (message: unknown) => {
  if (message !== "close") return
  await server.close().catch(() => {})
  await db.close().catch(() => {})
  port.postMessage({ closed: true })
})
