/**
 * LLM refinement through an OpenAI-compatible chat-completions endpoint. The answer is
 * constrained to a JSON schema of the type's fields and every proposed field is
 * validated; the heuristic data is returned unchanged on any failure.
 */

export type LlmStatus = "ok" | "failed_validation" | "failed_request" | "failed_timeout"

export interface LlmOptions {
  readonly baseUrl: string
  readonly apiKey?: string | undefined
  readonly model: string
  readonly temperature?: number
  readonly promptOverride?: string
  readonly timeoutMs?: number
}

export interface RefineInput {
  readonly type: "article" | "product"
  readonly data: Record<string, unknown>
  /** The page text; truncated to a budget before it is sent. */
  readonly text: string
  readonly mode: "fill-missing" | "correct"
  readonly llm: LlmOptions
  readonly signal?: AbortSignal
}

export interface LlmReport {
  model: string
  status: LlmStatus
  refinedFields: string[]
  correctedFields: string[]
  rejectedRefines: string[]
  promptTokens?: number
  completionTokens?: number
  durationMs: number
}

const TEXT_BUDGET = 24_000

type Check = (v: unknown) => boolean
const nonEmpty = (max: number): Check => (v) => typeof v === "string" && v.trim().length > 0 && v.length <= max
const dateTime: Check = (v) => typeof v === "string" && !Number.isNaN(Date.parse(v))
const absoluteUrl: Check = (v) => {
  try {
    return typeof v === "string" && ["http:", "https:"].includes(new URL(v).protocol)
  } catch {
    return false
  }
}
const stringList: Check = (v) => Array.isArray(v) && v.length <= 50 && v.every(nonEmpty(300))
const images: Check = (v) => Array.isArray(v) && v.length <= 50 && v.every((i) => typeof i === "object" && i !== null && absoluteUrl((i as { url?: unknown }).url))

const fieldChecks: Record<"article" | "product", Record<string, { check: Check; schema: object }>> = {
  article: {
    title: { check: nonEmpty(1000), schema: { type: "string" } },
    content: { check: nonEmpty(500_000), schema: { type: "string" } },
    description: { check: nonEmpty(5000), schema: { type: "string" } },
    summary: { check: nonEmpty(5000), schema: { type: "string" } },
    author: { check: nonEmpty(300), schema: { type: "string" } },
    authors: { check: stringList, schema: { type: "array", items: { type: "string" } } },
    publishedAt: { check: dateTime, schema: { type: "string", format: "date-time" } },
    modifiedAt: { check: dateTime, schema: { type: "string", format: "date-time" } },
    lang: { check: (v) => typeof v === "string" && /^[a-z]{2}(-[A-Za-z]{2})?$/.test(v), schema: { type: "string" } },
    tags: { check: stringList, schema: { type: "array", items: { type: "string" } } },
    images: { check: images, schema: { type: "array", items: { type: "object", properties: { url: { type: "string" } }, required: ["url"] } } }
  },
  product: {
    name: { check: nonEmpty(1000), schema: { type: "string" } },
    description: { check: nonEmpty(20_000), schema: { type: "string" } },
    price: { check: (v) => typeof v === "number" && Number.isFinite(v) && v >= 0, schema: { type: "number" } },
    currency: { check: (v) => typeof v === "string" && /^[A-Z]{3}$/.test(v), schema: { type: "string" } },
    availability: { check: nonEmpty(100), schema: { type: "string" } },
    sku: { check: nonEmpty(200), schema: { type: "string" } },
    brand: { check: nonEmpty(300), schema: { type: "string" } },
    images: { check: images, schema: { type: "array", items: { type: "object", properties: { url: { type: "string" } }, required: ["url"] } } }
  }
}

const isEmpty = (v: unknown) => v === undefined || v === null || v === "" || (Array.isArray(v) && v.length === 0)

const jsonSchemaOf = (type: "article" | "product") => ({
  type: "object",
  additionalProperties: false,
  properties: Object.fromEntries(Object.entries(fieldChecks[type]).map(([k, v]) => [k, v.schema]))
})

const promptOf = (input: RefineInput) =>
  input.llm.promptOverride ??
    (input.mode === "fill-missing"
      ? `Extract the ${input.type} described by the page text. Fill only fields that are missing from the current data. Answer with one JSON object whose keys are ${input.type} fields; leave out what the page does not say.`
      : `Check the current ${input.type} data against the page text and correct wrong values; fill missing ones. Answer with one JSON object whose keys are ${input.type} fields; leave out fields that are already right or unknown.`)

export const refineWithLlm = async (input: RefineInput): Promise<{ data: Record<string, unknown>; llm: LlmReport }> => {
  const started = Date.now()
  const report = (status: LlmStatus, extra: Partial<LlmReport> = {}): LlmReport => ({
    model: input.llm.model,
    status,
    refinedFields: [],
    correctedFields: [],
    rejectedRefines: [],
    durationMs: Date.now() - started,
    ...extra
  })
  const timeout = AbortSignal.timeout(input.llm.timeoutMs ?? 20_000)
  const signal = input.signal ? AbortSignal.any([input.signal, timeout]) : timeout
  let answer: any
  try {
    const res = await fetch(`${input.llm.baseUrl.replace(/\/$/, "")}/chat/completions`, {
      method: "POST",
      signal,
      headers: {
        "content-type": "application/json",
        ...(input.llm.apiKey ? { authorization: `Bearer ${input.llm.apiKey}` } : {})
      },
      body: JSON.stringify({
        model: input.llm.model,
        temperature: input.llm.temperature ?? 0,
        messages: [
          { role: "system", content: promptOf(input) },
          { role: "user", content: `Current data:\n${JSON.stringify(input.data)}\n\nPage text:\n${input.text.slice(0, TEXT_BUDGET)}` }
        ],
        response_format: { type: "json_schema", json_schema: { name: input.type, strict: true, schema: jsonSchemaOf(input.type) } }
      })
    })
    if (!res.ok) {
      await res.body?.cancel()
      return { data: input.data, llm: report("failed_request") }
    }
    answer = await res.json()
  } catch (e) {
    const timedOut = timeout.aborted || (e as Error)?.name === "TimeoutError"
    return { data: input.data, llm: report(timedOut ? "failed_timeout" : "failed_request") }
  }
  const usage = {
    ...(typeof answer?.usage?.prompt_tokens === "number" ? { promptTokens: answer.usage.prompt_tokens } : {}),
    ...(typeof answer?.usage?.completion_tokens === "number" ? { completionTokens: answer.usage.completion_tokens } : {})
  }
  let proposed: unknown
  try {
    proposed = JSON.parse(answer?.choices?.[0]?.message?.content)
  } catch {
    return { data: input.data, llm: report("failed_validation", usage) }
  }
  if (typeof proposed !== "object" || proposed === null || Array.isArray(proposed)) {
    return { data: input.data, llm: report("failed_validation", usage) }
  }
  const checks = fieldChecks[input.type]
  const data = { ...input.data }
  const refinedFields: string[] = []
  const correctedFields: string[] = []
  const rejectedRefines: string[] = []
  for (const [field, value] of Object.entries(proposed)) {
    const rule = checks[field]
    if (!rule || !rule.check(value)) {
      rejectedRefines.push(field)
      continue
    }
    if (isEmpty(data[field])) {
      data[field] = value
      refinedFields.push(field)
    } else if (input.mode === "correct" && JSON.stringify(data[field]) !== JSON.stringify(value)) {
      data[field] = value
      correctedFields.push(field)
    } else if (input.mode === "fill-missing" && JSON.stringify(data[field]) !== JSON.stringify(value)) {
      rejectedRefines.push(field)
    }
  }
  return { data, llm: report("ok", { ...usage, refinedFields, correctedFields, rejectedRefines }) }
}
