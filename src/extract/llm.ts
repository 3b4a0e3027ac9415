/**
 * LLM refinement: asks an OpenAI-compatible chat-completions endpoint to fill in (or correct) the
 * fields of an extracted Article or Product, with the answer constrained to a JSON schema of the
 * type's fields. Every proposed field is validated before it is applied; the heuristic data is
 * returned unchanged on any failure. See docs/extraction.md, "LLM refinement".
 *
 * The only I/O of the extraction engine; `refineWithLlm` never throws (its promise always resolves).
 */
import { fetch } from "undici"
import { normalizeSpace } from "./html/dom.ts"
import { htmlToText } from "./html/text.ts"
import { absoluteUrl } from "./url.ts"
import { toIsoDateTime } from "./dates.ts"
import { normalizeLang } from "./language.ts"

export type LlmStatus = "ok" | "failed_validation" | "failed_request" | "failed_timeout"
export type LlmMode = "fill-missing" | "correct"

export interface LlmOptions {
  /** Base URL of the OpenAI-compatible API (`…/v1` when the provider needs it); `/chat/completions` is appended. */
  readonly baseUrl: string
  readonly apiKey?: string | undefined
  readonly model: string
  /** Default 0. */
  readonly temperature?: number | undefined
  /** Replaces the default instructions (the system message). */
  readonly promptOverride?: string | undefined
  /** Whole-call budget (connect, answer, body). Default 20,000 ms. */
  readonly timeoutMs?: number | undefined
}

export interface RefineInput {
  readonly type: "article" | "product"
  /** The heuristic extraction result (never modified). */
  readonly data: Record<string, unknown>
  /** The page text (HTML is reduced to its visible text here); truncated to `TEXT_BUDGET` before it is sent. */
  readonly text: string
  readonly mode: LlmMode
  readonly llm: LlmOptions
  /** Cancels the call (reported as `failed_request`). */
  readonly signal?: AbortSignal | undefined
}

export interface LlmReport {
  model: string
  status: LlmStatus
  /** Fields that were empty and got a value. */
  refinedFields: string[]
  /** Fields whose value was replaced (mode `correct`). */
  correctedFields: string[]
  /** Proposed fields that were invalid, or not allowed in the mode (a present field in `fill-missing`). */
  rejectedRefines: string[]
  promptTokens?: number
  completionTokens?: number
  durationMs: number
}

/** A refinement's report: its field lists empty unless `extra` gives them (a failed one changed nothing). */
export const llmReport = (model: string, status: LlmStatus, durationMs: number, extra: Partial<LlmReport> = {}): LlmReport => ({
  model,
  status,
  refinedFields: [],
  correctedFields: [],
  rejectedRefines: [],
  ...extra,
  durationMs: Math.max(0, Math.round(durationMs))
})

/** The extraction's `errorClass` for a refinement that did not succeed (docs/api.md, "Extractions"). */
export const llmErrorClass = (status: Exclude<LlmStatus, "ok">) =>
  status === "failed_timeout" ? "llm_timeout" : status === "failed_validation" ? "llm_validation" : "llm_request"

export interface RefineResult {
  data: Record<string, unknown>
  /** For `metadata.llm`. */
  llm: LlmReport
  /** Why the call failed, when it did (for logs and error messages; not part of the metadata). */
  error?: string
}

/** Characters of page text sent to the model. */
export const TEXT_BUDGET = 24_000
export const DEFAULT_LLM_TIMEOUT_MS = 20_000
/** Largest answer body read. */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024
/** Longest current string value quoted in the prompt (the page text carries the rest). */
const QUOTE_CHARS = 1_500

// ---------- fields: JSON schema and validation ----------

/** Validated, normalized value, or `undefined` when the proposal is invalid. */
type Check = (v: unknown) => unknown

const AVAILABILITY = ["InStock", "OutOfStock", "PreOrder", "PreSale", "BackOrder", "Discontinued", "InStoreOnly", "OnlineOnly", "LimitedAvailability", "MadeToOrder", "Reserved"]
const UNSAFE_TEXT = /javascript:|vbscript:|data:text\/html|\bon[a-z]+\s*=/i

/** Plain text of a proposed string: markup removed (scripts and their content included), spaces collapsed. */
function plain(v: string, keepParagraphs: boolean): string {
  let t = v
  if (/<[a-zA-Z!/?]/.test(t)) t = htmlToText(t)
  if (keepParagraphs) {
    return t.split(/\n\s*\n/).map((p) => p.split("\n").map((l) => normalizeSpace(l)).filter((l) => l !== "").join("\n")).filter((p) => p !== "").join("\n\n")
  }
  return normalizeSpace(t)
}

const text = (max: number, keepParagraphs = false): Check => (v) => {
  if (typeof v !== "string") return undefined
  const t = plain(v, keepParagraphs)
  return t !== "" && t.length <= max && !UNSAFE_TEXT.test(t) ? t : undefined
}
const list = (maxItems: number, maxLen: number): Check => (v) => {
  if (!Array.isArray(v) || v.length > maxItems) return undefined
  const out: string[] = []
  for (const x of v) {
    const t = text(maxLen)(x)
    if (t === undefined) return undefined
    if (!out.includes(t as string)) out.push(t as string)
  }
  return out.length > 0 ? out : undefined
}
const dateTime: Check = (v) => (typeof v === "string" ? toIsoDateTime(v) : undefined)
const httpUrl = (v: unknown): string | undefined => {
  if (typeof v !== "string" || !/^https?:\/\//i.test(v.trim())) return undefined
  return absoluteUrl(v, null)
}
const images: Check = (v) => {
  if (!Array.isArray(v) || v.length > 30) return undefined
  const out: Array<{ url: string; alt?: string }> = []
  for (const x of v) {
    if (x === null || typeof x !== "object" || Array.isArray(x)) return undefined
    const o = x as Record<string, unknown>
    const url = httpUrl(o.url)
    if (url === undefined) return undefined
    const img: { url: string; alt?: string } = { url }
    if (o.alt !== undefined && o.alt !== null) {
      const alt = text(500)(o.alt)
      if (alt === undefined) return undefined
      img.alt = alt as string
    }
    if (!out.some((i) => i.url === url)) out.push(img)
  }
  return out.length > 0 ? out : undefined
}
const price: Check = (v) => (typeof v === "number" && Number.isFinite(v) && v >= 0 && v < 1e12 ? v : undefined)
const currency: Check = (v) => (typeof v === "string" && /^[A-Za-z]{3}$/.test(v.trim()) ? v.trim().toUpperCase() : undefined)
const availability: Check = (v) => {
  if (typeof v !== "string") return undefined
  const t = v.trim().replace(/^https?:\/\/schema\.org\//i, "")
  const hit = AVAILABILITY.find((a) => a.toLowerCase() === t.toLowerCase())
  return hit ?? (t.toLowerCase() === "soldout" ? "OutOfStock" : undefined)
}
const lang: Check = (v) => (typeof v === "string" ? normalizeLang(v) : undefined)
/** Product attributes: sent as `[{name, value}]` (strict schemas cannot describe free keys), applied as an object. */
const attributes: Check = (v) => {
  const pairs: Array<[unknown, unknown]> = Array.isArray(v)
    ? v.map((p) => (p !== null && typeof p === "object" ? [(p as Record<string, unknown>).name, (p as Record<string, unknown>).value] : [undefined, undefined]))
    : v !== null && typeof v === "object" ? Object.entries(v as Record<string, unknown>) : []
  if (pairs.length === 0 || pairs.length > 100) return undefined
  const out: Record<string, string | number | boolean | null> = {}
  for (const [k, val] of pairs) {
    const key = text(100)(k)
    if (key === undefined) return undefined
    if (val === null || typeof val === "boolean" || (typeof val === "number" && Number.isFinite(val))) out[key as string] = val
    else {
      const s = text(1000)(val)
      if (s === undefined) return undefined
      out[key as string] = s as string
    }
  }
  return out
}

const STR = { type: ["string", "null"] }
const STR_LIST = { type: ["array", "null"], items: { type: "string" } }
const IMAGES = {
  type: ["array", "null"],
  items: { type: "object", additionalProperties: false, properties: { url: { type: "string" }, alt: { type: ["string", "null"] } }, required: ["url", "alt"] },
}

interface Field {
  check: Check
  schema: object
  description: string
}

const FIELDS: Record<"article" | "product", Record<string, Field>> = {
  article: {
    title: { check: text(1000), schema: STR, description: "headline" },
    content: { check: text(500_000, true), schema: STR, description: "plain-text body, paragraphs separated by a blank line" },
    description: { check: text(5000), schema: STR, description: "short description" },
    summary: { check: text(5000), schema: STR, description: "one-paragraph summary" },
    author: { check: text(300), schema: STR, description: "author names joined with ', '" },
    authors: { check: list(50, 300), schema: STR_LIST, description: "author names" },
    publishedAt: { check: dateTime, schema: STR, description: "ISO 8601 date-time" },
    modifiedAt: { check: dateTime, schema: STR, description: "ISO 8601 date-time" },
    lang: { check: lang, schema: STR, description: "ISO 639-1 code" },
    images: { check: images, schema: IMAGES, description: "absolute http(s) URLs" },
    tags: { check: list(50, 100), schema: STR_LIST, description: "keywords" },
  },
  product: {
    name: { check: text(1000), schema: STR, description: "product name" },
    description: { check: text(20_000), schema: STR, description: "plain-text description" },
    price: { check: price, schema: { type: ["number", "null"] }, description: "current selling price as a number" },
    currency: { check: currency, schema: STR, description: "ISO 4217 code" },
    availability: { check: availability, schema: { type: ["string", "null"], enum: [...AVAILABILITY, null] }, description: "schema.org availability" },
    sku: { check: text(100), schema: STR, description: "the shop's article number" },
    brand: { check: text(300), schema: STR, description: "brand name" },
    images: { check: images, schema: IMAGES, description: "absolute http(s) URLs" },
    attributes: {
      check: attributes,
      schema: { type: ["array", "null"], items: { type: "object", additionalProperties: false, properties: { name: { type: "string" }, value: { type: "string" } }, required: ["name", "value"] } },
      description: "other properties (color, size, material, gtin …) as name/value pairs",
    },
  },
}

/** The JSON schema sent in `response_format` (strict: every field listed, `null` for "no proposal"). */
export function llmJsonSchema(type: "article" | "product"): Record<string, unknown> {
  const fields = FIELDS[type]
  return {
    type: "object",
    additionalProperties: false,
    properties: Object.fromEntries(Object.entries(fields).map(([k, f]) => [k, { ...f.schema, description: f.description }])),
    required: Object.keys(fields),
  }
}

// ---------- prompt ----------

function defaultInstructions(type: "article" | "product", mode: LlmMode): string {
  const what = type === "article" ? "a news or blog article" : "a product offered in a shop"
  const task = mode === "fill-missing"
    ? "Fill in the fields that are missing (null or empty) in the current data. Give null for every field that is already present."
    : "Check every field of the current data against the page text. Give a field only when its current value is wrong or missing (then the right value); give null for a field that is already right."
  return [
    `You extract structured data about ${what} from the text of a web page.`,
    task,
    "Use only information stated in the page text; never guess. Give null for anything the page does not say.",
    "Values are plain text without HTML. Prices are numbers without currency symbols; currencies are ISO 4217 codes; dates are ISO 8601; URLs are absolute.",
  ].join("\n")
}

function quoted(data: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(data)) {
    if (typeof v === "string" && v.length > QUOTE_CHARS) out[k] = v.slice(0, QUOTE_CHARS) + " …"
    else if (Array.isArray(v) && v.length > 10) out[k] = v.slice(0, 10)
    else out[k] = v
  }
  return out
}

/** The page text sent to the model: HTML reduced to visible text, cut at `budget` characters (at a line or word end). */
export function pageTextForLlm(textOrHtml: string, budget = TEXT_BUDGET): string {
  const looksHtml = /<(html|body|head|div|p|h1|span|section|article|main|!doctype)[\s>]/i.test(textOrHtml.slice(0, 20_000))
  let t = looksHtml ? htmlToText(textOrHtml.length > 2_000_000 ? textOrHtml.slice(0, 2_000_000) : textOrHtml, budget * 2) : textOrHtml.trim()
  if (t.length > budget) {
    const cut = t.slice(0, budget)
    const at = Math.max(cut.lastIndexOf("\n"), cut.lastIndexOf(" "))
    t = (at > budget * 0.8 ? cut.slice(0, at) : cut) + " […]"
  }
  return t
}

function messagesFor(input: RefineInput): Array<{ role: "system" | "user"; content: string }> {
  const instructions = input.llm.promptOverride !== undefined && input.llm.promptOverride.trim() !== ""
    ? input.llm.promptOverride
    : defaultInstructions(input.type, input.mode)
  return [
    { role: "system", content: `${instructions}\n\nAnswer with one JSON object with exactly the ${input.type} fields of the schema.` },
    {
      role: "user",
      content: `Mode: ${input.mode}\n\nCurrent ${input.type} data (JSON):\n${JSON.stringify(quoted(input.data))}\n\nPage text:\n${pageTextForLlm(input.text)}`,
    },
  ]
}

// ---------- the call ----------

const isEmpty = (v: unknown) =>
  v === undefined || v === null || (typeof v === "string" && v.trim() === "") || (Array.isArray(v) && v.length === 0) ||
  (typeof v === "object" && !Array.isArray(v) && Object.keys(v as object).length === 0)

/** Stable JSON for comparing values (object keys sorted). */
function same(a: unknown, b: unknown): boolean {
  const norm = (v: unknown): unknown =>
    Array.isArray(v) ? v.map(norm) : v !== null && typeof v === "object" ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, norm((v as Record<string, unknown>)[k])])) : v
  return JSON.stringify(norm(a)) === JSON.stringify(norm(b))
}

async function readCapped(body: AsyncIterable<Uint8Array> | null): Promise<string | undefined> {
  if (body === null) return ""
  const chunks: Buffer[] = []
  let size = 0
  for await (const c of body) {
    size += c.byteLength
    if (size > MAX_ANSWER_BYTES) return undefined
    chunks.push(Buffer.from(c))
  }
  return Buffer.concat(chunks).toString("utf8")
}

/**
 * The most tokens one answer may report: far beyond any model's context window. A larger count is
 * not believed (taken as none reported): it would overflow the charge, and stall the tenant's
 * settlement of every later extraction behind it.
 */
const MAX_REPORTED_TOKENS = 10_000_000

const tokenCount = (v: unknown): number | undefined =>
  typeof v === "number" && Number.isInteger(v) && v >= 0 && v <= MAX_REPORTED_TOKENS ? v : undefined

/**
 * Refines `data` with the model. Resolves with the (possibly) refined data and the report; on any
 * failure (HTTP error, connection error, timeout, an answer that is not one JSON object of the type's
 * fields) the data is `input.data` unchanged.
 */
export async function refineWithLlm(input: RefineInput): Promise<RefineResult> {
  const started = performance.now()
  const model = input.llm?.model ?? ""
  const report = (status: LlmStatus, extra: Partial<LlmReport> = {}): LlmReport =>
    llmReport(model, status, Math.max(0, Math.round(performance.now() - started)), extra)
  const fail = (status: LlmStatus, error: string, extra: Partial<LlmReport> = {}): RefineResult => ({ data: input.data, llm: report(status, extra), error })

  const timeoutMs = input.llm?.timeoutMs !== undefined && Number.isFinite(input.llm.timeoutMs) && input.llm.timeoutMs > 0 ? input.llm.timeoutMs : DEFAULT_LLM_TIMEOUT_MS
  const timeout = new AbortController()
  const timer = setTimeout(() => timeout.abort(new DOMException("LLM call timed out", "TimeoutError")), timeoutMs)
  const signal = input.signal !== undefined ? AbortSignal.any([input.signal, timeout.signal]) : timeout.signal
  const aborted = (): RefineResult | undefined =>
    timeout.signal.aborted ? fail("failed_timeout", `no answer within ${timeoutMs} ms`)
      : input.signal?.aborted === true ? fail("failed_request", "cancelled")
        : undefined

  try {
    if (input.type !== "article" && input.type !== "product") return fail("failed_request", `unknown type ${String(input.type)}`)
    if (input.signal?.aborted === true) return fail("failed_request", "cancelled")
    let url: string
    try {
      url = new URL(input.llm.baseUrl.replace(/\/+$/, "") + "/chat/completions").href
      if (!/^https?:$/.test(new URL(url).protocol)) throw new Error("not http(s)")
    } catch {
      return fail("failed_request", "invalid LLM base URL")
    }
    const body = JSON.stringify({
      model: input.llm.model,
      messages: messagesFor(input),
      temperature: input.llm.temperature ?? 0,
      response_format: { type: "json_schema", json_schema: { name: input.type, strict: true, schema: llmJsonSchema(input.type) } },
    })

    let status: number
    let raw: string | undefined
    try {
      const res = await fetch(url, {
        method: "POST",
        signal,
        headers: {
          "content-type": "application/json",
          accept: "application/json",
          ...(input.llm.apiKey ? { authorization: `Bearer ${input.llm.apiKey}` } : {}),
        },
        body,
      })
      status = res.status
      if (status < 200 || status > 299) {
        await res.body?.cancel().catch(() => undefined)
        return fail("failed_request", `HTTP ${status} from the model`)
      }
      raw = await readCapped(res.body as AsyncIterable<Uint8Array> | null)
    } catch (e) {
      return aborted() ?? fail("failed_request", `request failed: ${(e as Error)?.message ?? String(e)}`)
    }
    if (raw === undefined) return fail("failed_validation", "answer too large")

    let answer: unknown
    try {
      answer = JSON.parse(raw)
    } catch {
      return fail("failed_validation", "answer body is not JSON")
    }
    const a = answer as { usage?: { prompt_tokens?: unknown; completion_tokens?: unknown }; choices?: Array<{ message?: { content?: unknown; refusal?: unknown } }> }
    const usage: Partial<LlmReport> = {}
    const pt = tokenCount(a?.usage?.prompt_tokens), ct = tokenCount(a?.usage?.completion_tokens)
    if (pt !== undefined) usage.promptTokens = pt
    if (ct !== undefined) usage.completionTokens = ct

    const content = Array.isArray(a?.choices) ? a.choices[0]?.message?.content : undefined
    if (typeof content !== "string") return fail("failed_validation", "no message content in the answer", usage)
    let proposed: unknown
    try {
      proposed = JSON.parse(content)
    } catch {
      return fail("failed_validation", "message content is not JSON", usage)
    }
    if (proposed === null || typeof proposed !== "object" || Array.isArray(proposed)) return fail("failed_validation", "message content is not a JSON object", usage)
    const fields = FIELDS[input.type]
    const unknown = Object.keys(proposed).filter((k) => !Object.hasOwn(fields, k))
    if (unknown.length > 0) return fail("failed_validation", `not ${input.type} fields: ${unknown.slice(0, 5).join(", ")}`, usage)

    // apply
    const data: Record<string, unknown> = { ...input.data }
    const refinedFields: string[] = []
    const correctedFields: string[] = []
    const rejectedRefines: string[] = []
    for (const [field, value] of Object.entries(proposed as Record<string, unknown>)) {
      if (value === null || value === undefined) continue // no proposal
      const v = fields[field]!.check(value)
      if (v === undefined) { rejectedRefines.push(field); continue }
      const current = data[field]
      if (isEmpty(current)) {
        data[field] = v
        refinedFields.push(field)
      } else if (same(current, v)) {
        continue
      } else if (input.mode === "correct") {
        data[field] = v
        correctedFields.push(field)
      } else {
        rejectedRefines.push(field)
      }
    }
    // keep author/authors consistent (as the extractor does)
    if (input.type === "article") {
      const changed = (f: string) => refinedFields.includes(f) || correctedFields.includes(f)
      if (changed("authors")) data.author = (data.authors as string[]).join(", ")
      else if (changed("author")) data.authors = [data.author as string]
    }
    return { data, llm: report("ok", { ...usage, refinedFields, correctedFields, rejectedRefines }) }
  } catch (e) {
    // never reject: anything unexpected is reported, the heuristic data kept
    return aborted() ?? fail("failed_request", `unexpected: ${(e as Error)?.message ?? String(e)}`)
  } finally {
    clearTimeout(timer)
  }
}
