import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import type { Socket } from "node:net"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { refineWithLlm, llmJsonSchema, pageTextForLlm, TEXT_BUDGET, type RefineInput } from "../../src/extract/llm.ts"

/** What the fake server answers next. */
type Answer =
  | { json: unknown; usage?: { prompt_tokens: number; completion_tokens: number } }
  | { content: unknown }
  | { status: number }
  | { raw: string }
  | { delayMs: number }

interface Seen { path: string; headers: IncomingHttpHeaders; body: any }

/** A fake OpenAI-compatible chat-completions server on 127.0.0.1. */
async function fakeLlm() {
  let answer: Answer = { json: {} }
  const seen: Seen[] = []
  const sockets = new Set<Socket>()
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      seen.push({ path: req.url ?? "", headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString("utf8")) })
      const a = answer
      const send = (content: unknown, usage = { prompt_tokens: 100, completion_tokens: 20 }) =>
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({
          id: "chatcmpl-1", object: "chat.completion", model: "m",
          choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }], usage,
        }))
      if ("status" in a) res.writeHead(a.status, { "content-type": "application/json" }).end(`{"error":{"message":"boom"}}`)
      else if ("raw" in a) res.writeHead(200, { "content-type": "application/json" }).end(a.raw)
      else if ("delayMs" in a) setTimeout(() => { if (!res.destroyed) send("{}") }, a.delayMs)
      else if ("json" in a) send(JSON.stringify(a.json), a.usage)
      else send(a.content)
    })
  })
  server.on("connection", (s) => { sockets.add(s); s.on("close", () => sockets.delete(s)) })
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()))
  const port = (server.address() as { port: number }).port
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    seen,
    answer: (a: Answer) => { answer = a },
    close: () => new Promise<void>((r) => { for (const s of sockets) s.destroy(); server.close(() => r()) }),
  }
}

let llm: Awaited<ReturnType<typeof fakeLlm>>
beforeAll(async () => { llm = await fakeLlm() })
afterAll(async () => { await llm.close() })
beforeEach(() => { llm.seen.length = 0 })

const product = { name: "Trail Shoe X", sku: "TS-42", description: "A light trail shoe." }
const input = (over: Partial<RefineInput> = {}): RefineInput => ({
  type: "product",
  data: product,
  text: "Trail Shoe X. Price: 129,90 €. In stock. Brand: Acme.",
  mode: "fill-missing",
  llm: { baseUrl: llm.baseUrl, model: "test-model", apiKey: "sk-test" },
  ...over,
})

describe("refineWithLlm: request", () => {
  it("posts model, messages, temperature and a strict json_schema response_format", async () => {
    llm.answer({ json: {} })
    const r = await refineWithLlm(input({ llm: { baseUrl: llm.baseUrl + "/", model: "test-model", apiKey: "sk-test", temperature: 0.3 } }))
    expect(r.llm.status).toBe("ok")
    const [req] = llm.seen
    expect(req!.path).toBe("/v1/chat/completions")
    expect(req!.headers["content-type"]).toMatch(/application\/json/)
    expect(req!.headers.authorization).toBe("Bearer sk-test")
    expect(req!.body.model).toBe("test-model")
    expect(req!.body.temperature).toBe(0.3)
    expect(req!.body.messages.length).toBeGreaterThanOrEqual(2)
    for (const m of req!.body.messages) expect(typeof m.role === "string" && typeof m.content === "string").toBe(true)
    expect(req!.body.messages.map((m: any) => m.content).join("\n")).toContain("Price: 129,90 €")
    expect(req!.body.response_format).toMatchObject({ type: "json_schema", json_schema: { name: "product", strict: true } })
    const schema = req!.body.response_format.json_schema.schema
    expect(schema).toEqual(llmJsonSchema("product"))
    expect(schema.additionalProperties).toBe(false)
    expect(Object.keys(schema.properties).sort()).toEqual(["attributes", "availability", "brand", "currency", "description", "images", "name", "price", "sku"])
    expect(schema.required.sort()).toEqual(Object.keys(schema.properties).sort())
  })

  it("sends a prompt override, and no authorization header without a key", async () => {
    llm.answer({ json: {} })
    await refineWithLlm(input({ llm: { baseUrl: llm.baseUrl, model: "m2", promptOverride: "CUSTOM PROMPT: fix the product." } }))
    const [req] = llm.seen
    expect(req!.headers.authorization).toBeUndefined()
    expect(req!.body.temperature).toBe(0)
    expect(req!.body.messages[0].content).toContain("CUSTOM PROMPT: fix the product.")
  })

  it("reduces HTML to its visible text and keeps to the text budget", async () => {
    llm.answer({ json: {} })
    const html = `<html><head><title>T</title><script>var secret = 1</script><style>.x{}</style></head><body>
      <h1>Lamp MARKER-1</h1><p onclick="x()">Nice <b>lamp</b>.</p><div hidden>invisible</div><p>${"word ".repeat(10_000)}</p></body></html>`
    await refineWithLlm(input({ text: html }))
    const user = llm.seen[0]!.body.messages.at(-1).content as string
    expect(user).toContain("Lamp MARKER-1")
    expect(user).toContain("Nice lamp.")
    expect(user).not.toMatch(/<script|secret|onclick|invisible|<p/)
    const page = pageTextForLlm(html)
    expect(page.length).toBeLessThanOrEqual(TEXT_BUDGET + 4)
    expect(page.endsWith("[…]")).toBe(true)
  })
})

describe("refineWithLlm: applying the answer", () => {
  it("fill-missing fills empty fields only", async () => {
    llm.answer({ json: { price: 129.9, currency: "EUR", availability: "InStock", name: "Another name", sku: "TS-42", brand: null, description: null }, usage: { prompt_tokens: 321, completion_tokens: 12 } })
    const r = await refineWithLlm(input())
    expect(r.llm).toMatchObject({ model: "test-model", status: "ok", promptTokens: 321, completionTokens: 12 })
    expect(r.llm.refinedFields.sort()).toEqual(["availability", "currency", "price"])
    expect(r.llm.correctedFields).toEqual([])
    expect(r.llm.rejectedRefines).toEqual(["name"]) // present: not allowed in fill-missing; the same sku is no change
    expect(r.data).toEqual({ ...product, price: 129.9, currency: "EUR", availability: "InStock" })
    expect(r.llm.durationMs).toBeGreaterThanOrEqual(0)
    expect(Number.isInteger(r.llm.durationMs)).toBe(true)
  })

  it("correct replaces wrong values and fills missing ones", async () => {
    llm.answer({ json: { name: "Trail Shoe X2", price: 99, sku: "TS-42" } })
    const r = await refineWithLlm(input({ mode: "correct" }))
    expect(r.llm.status).toBe("ok")
    expect(r.llm.correctedFields).toEqual(["name"])
    expect(r.llm.refinedFields).toEqual(["price"])
    expect(r.llm.rejectedRefines).toEqual([])
    expect(r.data).toMatchObject({ name: "Trail Shoe X2", price: 99, sku: "TS-42" })
    expect(product.name).toBe("Trail Shoe X") // the input is not modified
  })

  it("rejects fields of the wrong type or format and keeps the valid ones", async () => {
    llm.answer({ json: {
      price: "very cheap", currency: "usd", availability: "maybe", brand: "   ",
      images: [{ url: "javascript:alert(1)", alt: null }], sku: "x".repeat(500),
    } })
    const r = await refineWithLlm(input())
    expect(r.llm.status).toBe("ok")
    expect(r.llm.refinedFields).toEqual(["currency"])
    expect(r.llm.rejectedRefines.sort()).toEqual(["availability", "brand", "images", "price", "sku"])
    expect(r.data).toEqual({ ...product, currency: "USD" })
  })

  it("validates numbers, URLs, dates and lists", async () => {
    llm.answer({ json: { price: -1 } })
    expect((await refineWithLlm(input())).llm.rejectedRefines).toEqual(["price"])
    llm.answer({ json: { price: 12, images: [{ url: "/relative.jpg", alt: null }] } })
    expect((await refineWithLlm(input())).llm).toMatchObject({ refinedFields: ["price"], rejectedRefines: ["images"] })
    llm.answer({ json: { images: [{ url: "https://cdn.example.com/a.jpg", alt: "Front" }], attributes: [{ name: "color", value: "red" }] } })
    const ok = await refineWithLlm(input())
    expect(ok.data.images).toEqual([{ url: "https://cdn.example.com/a.jpg", alt: "Front" }])
    expect(ok.data.attributes).toEqual({ color: "red" })

    const article = { title: "Harbour works", content: "Para one.\n\nPara two." }
    llm.answer({ json: { publishedAt: "2024-03-05T10:00:00+01:00", modifiedAt: "not a date", authors: ["Ada Lovelace", "Grace Hopper"], lang: "en-GB", tags: [1, 2] } })
    const a = await refineWithLlm(input({ type: "article", data: article }))
    expect(a.llm.refinedFields.sort()).toEqual(["authors", "lang", "publishedAt"])
    expect(a.llm.rejectedRefines.sort()).toEqual(["modifiedAt", "tags"])
    expect(a.data).toMatchObject({ publishedAt: "2024-03-05T10:00:00.000+01:00", lang: "en", authors: ["Ada Lovelace", "Grace Hopper"], author: "Ada Lovelace, Grace Hopper" })
    expect(llm.seen.at(-1)!.body.response_format.json_schema.name).toBe("article")
  })

  it("never lets markup or script URLs into the data", async () => {
    llm.answer({ json: { brand: "Acme <script>alert('x')</script><img src=x onerror=alert(1)>", availability: "https://schema.org/OutOfStock" } })
    const r = await refineWithLlm(input())
    expect(r.data.brand).toBe("Acme")
    expect(r.data.availability).toBe("OutOfStock")
    expect(JSON.stringify(r.data)).not.toMatch(/<script|onerror|javascript:/i)
  })
})

describe("refineWithLlm: failures keep the heuristic data", () => {
  const unchanged = (r: Awaited<ReturnType<typeof refineWithLlm>>) => {
    expect(r.data).toBe(product)
    expect(r.llm).toMatchObject({ model: "test-model", refinedFields: [], correctedFields: [], rejectedRefines: [] })
  }

  it("message content that is not JSON → failed_validation", async () => {
    llm.answer({ content: "Sure! Here is the product: {name: oops" })
    const r = await refineWithLlm(input())
    unchanged(r)
    expect(r.llm).toMatchObject({ status: "failed_validation", promptTokens: 100, completionTokens: 20 })
  })

  it("JSON that is not one object of the type's fields → failed_validation", async () => {
    for (const a of [{ json: [{ price: 1 }] }, { json: "text" }, { json: { price: 1, colour: "red" } }, { content: null }, { raw: "not json" }, { raw: `{"choices":[]}` }] as Answer[]) {
      llm.answer(a)
      const r = await refineWithLlm(input())
      unchanged(r)
      expect(r.llm.status, JSON.stringify(a)).toBe("failed_validation")
    }
  })

  it("HTTP 500 → failed_request", async () => {
    llm.answer({ status: 500 })
    const r = await refineWithLlm(input())
    unchanged(r)
    expect(r.llm.status).toBe("failed_request")
    expect(r.error).toMatch(/500/)
  })

  it("connection refused → failed_request", async () => {
    const closed = await fakeLlm()
    await closed.close()
    const r = await refineWithLlm(input({ llm: { baseUrl: closed.baseUrl, model: "test-model" } }))
    unchanged(r)
    expect(r.llm.status).toBe("failed_request")
  })

  it("a slow server → failed_timeout", async () => {
    llm.answer({ delayMs: 3000 })
    const t0 = Date.now()
    const r = await refineWithLlm(input({ llm: { baseUrl: llm.baseUrl, model: "test-model", timeoutMs: 200 } }))
    unchanged(r)
    expect(r.llm.status).toBe("failed_timeout")
    expect(Date.now() - t0).toBeLessThan(2000)
    expect(r.llm.durationMs).toBeGreaterThanOrEqual(150)
  })

  it("a cancelled call → failed_request", async () => {
    llm.answer({ delayMs: 3000 })
    const ac = new AbortController()
    setTimeout(() => ac.abort(), 100)
    const r = await refineWithLlm(input({ signal: ac.signal }))
    unchanged(r)
    expect(r.llm.status).toBe("failed_request")
    const pre = new AbortController()
    pre.abort()
    expect((await refineWithLlm(input({ signal: pre.signal }))).llm.status).toBe("failed_request")
  })

  it("an unusable base URL → failed_request without throwing", async () => {
    const r = await refineWithLlm(input({ llm: { baseUrl: "not a url", model: "test-model" } }))
    unchanged(r)
    expect(r.llm.status).toBe("failed_request")
  })
})
