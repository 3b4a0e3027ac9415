/**
 * Worker-thread entry of the embedded database: PGlite and its wire-protocol front run
 * here, so SQL work uses the machine's other core instead of the service's event loop.
 */
import { parentPort, workerData } from "node:worker_threads"
import { PGlite } from "@electric-sql/pglite"
import { EmbeddedPgServer } from "./embedded-pg-server.ts"

const port = parentPort!
const db = await PGlite.create((workerData as { dir: string }).dir)
const server = new EmbeddedPgServer(db)
port.postMessage({ port: await server.listen() })
port.on("message", async (message: unknown) => {
  if (message !== "close") return
  await server.close().catch(() => {})
  await db.close().catch(() => {})
  port.postMessage({ closed: true })
})
