/**
 * The chaos campaign's webhook receiver on 127.0.0.1: logs every arrival (delivery id, resource id,
 * status from the body) and answers 500 to the first arrival of about a fifth of the delivery ids,
 * so retries are part of every run.
 */
import { createHash } from "node:crypto"
import { createServer } from "node:http"

export interface Arrival {
  readonly deliveryId: string
  readonly resourceId: string
  readonly status: string
  readonly answered: number
}

export const startReceiver = async (failShare = 0.2) => {
  const log: Array<Arrival> = []
  const seen = new Set<string>()
  const server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const deliveryId = String(req.headers["x-service-delivery-id"] ?? "")
      const resourceId = String(req.headers["x-service-jobid"] ?? req.headers["x-service-extractionid"] ?? "")
      let status = ""
      try {
        status = String(JSON.parse(Buffer.concat(chunks).toString("utf8")).status ?? "")
      } catch {
        status = "unparsable"
      }
      const first = !seen.has(deliveryId)
      seen.add(deliveryId)
      const unlucky = createHash("sha256").update(deliveryId).digest()[0]! < 256 * failShare
      const answered = first && unlucky ? 500 : 200
      log.push({ deliveryId, resourceId, status, answered })
      res.writeHead(answered, { "content-type": "text/plain" })
      res.end(answered === 200 ? "ok" : "try later")
    })
  })
  const port = await new Promise<number>((res) => server.listen(0, "127.0.0.1", () => res((server.address() as { port: number }).port)))
  return {
    url: `http://127.0.0.1:${port}/hook`,
    log,
    reset: () => {
      log.length = 0
      seen.clear()
    },
    close: () => new Promise<void>((res) => (server.closeAllConnections(), server.close(() => res())))
  }
}
