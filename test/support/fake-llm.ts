/**
 * A fake OpenAI-compatible chat-completions server on loopback (`POST /v1/chat/completions`) for the
 * end-to-end extraction tests. What it answers is scripted per request:
 *
 *   - `llm.when(marker, answer)`: a request whose body contains `marker` (put a unique token into the
 *     page text of the extraction) gets `answer`; later registrations of the same marker replace it.
 *   - `llm.fallback(answer)`: what every other request gets (default: an empty JSON object `{}`).
 *
 * Answers:
 *   - `{ json: {...} }`          a good completion whose message content is that object, serialized
 *   - `{ content: "..." }`       a completion whose message content is that raw string (invalid JSON, …)
 *   - `{ status: 500 }`          an HTTP error with a small JSON error body
 *   - `{ delayMs, then }`        waits `delayMs` (or until the client hangs up) and then answers `then`
 *
 * Every request is recorded (parsed JSON body, headers, the marker it matched) in `llm.requests`.
 * The server only listens on 127.0.0.1.
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import type { Socket } from "node:net"

export type LlmAnswer =
  | { readonly json: Record<string, unknown>; readonly usage?: { prompt: number; completion: number } }
  | { readonly content: string }
  | { readonly status: number; readonly body?: string }
  | { readonly delayMs: number; readonly then: LlmAnswer }

export interface LlmRequest {
  readonly at: number
  readonly path: string
  readonly headers: IncomingHttpHeaders
  readonly body: any
  readonly raw: string
  readonly marker: string | undefined
  /** True when the client went away before the answer was sent (a timeout or an abort). */
  abandoned: boolean
}

export interface FakeLlm {
  /** For `LLM_BASE_URL`: `http://127.0.0.1:<port>/v1`. */
  readonly baseUrl: string
  readonly requests: Array<LlmRequest>
  readonly when: (marker: string, answer: LlmAnswer) => void
  readonly fallback: (answer: LlmAnswer) => void
  /** The recorded requests that matched `marker`. */
  readonly requestsFor: (marker: string) => Array<LlmRequest>
  readonly close: () => Promise<void>
}

const completion = (model: string, content: string, usage = { prompt: 123, completion: 45 }) => ({
  id: `chatcmpl-${Math.random().toString(36).slice(2)}`,
  object: "chat.completion",
  created: Math.floor(Date.now() / 1000),
  model,
  choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
  usage: { prompt_tokens: usage.prompt, completion_tokens: usage.completion, total_tokens: usage.prompt + usage.completion }
})

export const startFakeLlm = async (): Promise<FakeLlm> => {
  const scripts = new Map<string, LlmAnswer>()
  let otherwise: LlmAnswer = { json: {} }
  const requests: Array<LlmRequest> = []
  const sockets = new Set<Socket>()
  const timers = new Set<NodeJS.Timeout>()

  const server: Server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const raw = Buffer.concat(chunks).toString("utf8")
      let body: any
      try {
        body = JSON.parse(raw)
      } catch {
        body = undefined
      }
      const marker = [...scripts.keys()].find((m) => raw.includes(m))
      const record: LlmRequest = { at: Date.now(), path: req.url ?? "", headers: req.headers, body, raw, marker, abandoned: false }
      requests.push(record)
      res.on("close", () => {
        if (!res.writableEnded) record.abandoned = true
      })
      if (req.method !== "POST" || !(req.url ?? "").startsWith("/v1/chat/completions")) {
        res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "not found" } }))
        return
      }
      const respond = (answer: LlmAnswer): void => {
        if (res.destroyed || res.writableEnded) return
        if ("delayMs" in answer) {
          const t = setTimeout(() => {
            timers.delete(t)
            respond(answer.then)
          }, answer.delayMs)
          timers.add(t)
          return
        }
        if ("status" in answer) {
          res.writeHead(answer.status, { "content-type": "application/json" })
          res.end(answer.body ?? JSON.stringify({ error: { message: "scripted failure", type: "server_error" } }))
          return
        }
        const model = typeof body?.model === "string" ? body.model : "unknown"
        const content = "json" in answer ? JSON.stringify(answer.json) : answer.content
        const usage = "json" in answer ? answer.usage : undefined
        res.writeHead(200, { "content-type": "application/json" })
        res.end(JSON.stringify(completion(model, content, usage)))
      }
      respond(marker !== undefined ? scripts.get(marker)! : otherwise)
    })
  })
  server.on("connection", (s: Socket) => {
    sockets.add(s)
    s.on("close", () => sockets.delete(s))
  })
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()))
  const port = (server.address() as { port: number }).port
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    when: (marker, answer) => void scripts.set(marker, answer),
    fallback: (answer) => void (otherwise = answer),
    requestsFor: (marker) => requests.filter((r) => r.marker === marker),
    close: () =>
      new Promise<void>((r) => {
        for (const t of timers) clearTimeout(t)
        timers.clear()
        for (const s of sockets) s.destroy()
        server.close(() => r())
      })
  }
}
