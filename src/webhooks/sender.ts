/**
 * One webhook delivery attempt over HTTP, plus the exact headers and bodies of a delivery.
 *
 * No durable state here: the delivery workflow decides when to call {@link sendWebhook} (see
 * `schedule.ts`) and records each result.
 */
import { isIP } from "node:net"
import type { LookupAddress, LookupOptions } from "node:dns"
import { StringDecoder } from "node:string_decoder"
import { Agent, request, type Dispatcher } from "undici"
import { signPayload, standardWebhookSignature } from "./signing.ts"
import { webhooksConfig } from "./schedule.ts"

/** A `dns.lookup`-compatible function, e.g. an SSRF guard that fails for non-public addresses. */
export type LookupFunction = (
  hostname: string,
  options: LookupOptions,
  callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void
) => void

/** Short error codes of {@link SendWebhookResult.error}. */
export type SendErrorCode =
  | "invalid_url"
  | "unsafe_url"
  | "dns_error"
  | "connection_refused"
  | "connection_reset"
  | "unreachable"
  | "tls_error"
  | "protocol_error"
  | "timeout"
  | "response_too_large"
  | "network_error"

export interface SendWebhookOptions {
  readonly url: string
  /** The serialized body; sent byte for byte as signed. */
  readonly body: string
  readonly headers: Readonly<Record<string, string>>
  /** Whole attempt, from connecting to the end of the response body. Default 10 000. */
  readonly timeoutMs?: number
  /**
   * Resolves host names (and vets IP literals) before connecting: the caller's SSRF guard. A failure
   * of this function (other than "not found") is reported as `unsafe_url`. Ignored with `dispatcher`.
   */
  readonly lookup?: LookupFunction
  /** Bytes of the response body kept in the result. Default 4096. */
  readonly maxResponseBytes?: number
  /** Overrides the shared agent (tests, proxies). Cannot be combined with `lookup`. */
  readonly dispatcher?: Dispatcher
}

export interface SendWebhookResult {
  /** True for a 2xx answer only (a 3xx is not followed and counts as a failure). */
  readonly ok: boolean
  /** The receiver's status; null when no HTTP answer arrived. With `error` set, the answer began but did not end. */
  readonly httpStatus: number | null
  /** Short code when no complete HTTP answer arrived; null otherwise. */
  readonly error: SendErrorCode | null
  /** The underlying error message, for the operator's audit log; null when `error` is null. */
  readonly errorDetail: string | null
  readonly durationMs: number
  /** Start of the response body (UTF-8), at most `maxResponseBytes` bytes. */
  readonly responseBody: string
  /** The raw `Retry-After` response header, if any. */
  readonly retryAfter: string | null
}

const { delivery } = webhooksConfig

const agentOptions = (lookup?: LookupFunction): Agent.Options => ({
  connections: delivery.connectionsPerOrigin,
  pipelining: 1,
  keepAliveTimeout: delivery.keepAliveTimeoutMs,
  connect: lookup ? { lookup } : {}
})

/** Errors that came out of a caller's lookup function (to tell an SSRF refusal from other failures). */
const lookupErrors = new WeakSet<object>()
const agents = new Set<Agent>()
let defaultAgent: Agent | undefined
let guardedAgents = new WeakMap<LookupFunction, { agent: Agent; lookup: LookupFunction }>()

const track = (agent: Agent): Agent => {
  agents.add(agent)
  return agent
}

/** One pooled agent per lookup function, so guarded and unguarded connections never mix. */
const guardedAgentFor = (lookup: LookupFunction) => {
  let entry = guardedAgents.get(lookup)
  if (!entry) {
    const tagged: LookupFunction = (hostname, options, callback) =>
      lookup(hostname, options, (err, address, family) => {
        if (err) lookupErrors.add(err)
        callback(err, address, family)
      })
    entry = { agent: track(new Agent(agentOptions(tagged))), lookup: tagged }
    guardedAgents.set(lookup, entry)
  }
  return entry
}

/** Closes every agent this module opened (graceful shutdown, end of tests); later sends open new ones. */
export const closeWebhookAgents = async (): Promise<void> => {
  const open = [...agents]
  agents.clear()
  defaultAgent = undefined
  guardedAgents = new WeakMap()
  await Promise.all(open.map((agent) => agent.close()))
}

/** `net.connect` skips `lookup` for an IP literal, so the guard is asked about it explicitly. */
const vetIpLiteral = (lookup: LookupFunction, host: string): Promise<void> =>
  new Promise((resolve, reject) =>
    lookup(host, { all: true }, (err) => (err ? reject(err) : resolve()))
  )

const DNS_CODES = new Set(["ENOTFOUND", "EAI_AGAIN", "EAI_FAIL", "EAI_NONAME", "ENODATA", "ESERVFAIL"])
const ERROR_CODES: Readonly<Record<string, SendErrorCode>> = {
  ECONNREFUSED: "connection_refused",
  ECONNRESET: "connection_reset",
  EPIPE: "connection_reset",
  UND_ERR_SOCKET: "connection_reset",
  EHOSTUNREACH: "unreachable",
  ENETUNREACH: "unreachable",
  EADDRNOTAVAIL: "unreachable",
  ETIMEDOUT: "timeout",
  UND_ERR_CONNECT_TIMEOUT: "timeout",
  UND_ERR_HEADERS_TIMEOUT: "timeout",
  UND_ERR_BODY_TIMEOUT: "timeout",
  UND_ERR_HEADERS_OVERFLOW: "protocol_error",
  UND_ERR_RES_CONTENT_LENGTH_MISMATCH: "protocol_error",
  UND_ERR_INFO: "protocol_error"
}

const errorCodeOf = (err: unknown): string | undefined => {
  const e = err as { code?: unknown; errors?: unknown[]; cause?: unknown } | null
  if (typeof e?.code === "string") return e.code
  const inner = e?.errors?.[0] ?? e?.cause
  return inner ? errorCodeOf(inner) : undefined
}

const isLookupError = (err: unknown): boolean => {
  const e = err as { errors?: unknown[]; cause?: unknown } | null
  if (e === null || typeof e !== "object") return false
  return lookupErrors.has(e) || (e.errors ?? []).some(isLookupError) || isLookupError(e.cause)
}

const classify = (err: unknown): SendErrorCode => {
  if (err instanceof ResponseTooLarge) return "response_too_large"
  const code = errorCodeOf(err) ?? ""
  if (DNS_CODES.has(code)) return "dns_error"
  if (isLookupError(err)) return "unsafe_url"
  const mapped = ERROR_CODES[code]
  if (mapped) return mapped
  if (code.startsWith("HPE_")) return "protocol_error"
  if (/TLS|SSL|CERT|SELF_SIGNED|UNABLE_TO_/i.test(code)) return "tls_error"
  return "network_error"
}

const firstHeader = (value: string | string[] | undefined): string | null =>
  (Array.isArray(value) ? value[0] : value) ?? null

/**
 * How much of a response body is read to its end: an answer is complete only when its body ends
 * (docs/webhooks.md, "Verifying"), so the rest past what is kept is read and dropped, up to this;
 * a longer one is no answer either (retried), and cannot keep a node reading for the whole timeout.
 */
export const MAX_DRAINED_RESPONSE_BYTES = 1024 * 1024

/** A 2xx whose body went on past MAX_DRAINED_RESPONSE_BYTES. */
class ResponseTooLarge extends Error {}

/**
 * Reads a body to its end, keeping at most `maxBytes` of it (as text). `error` is set when the body
 * failed before its end (timeout, reset) or ran past MAX_DRAINED_RESPONSE_BYTES: the receiver never
 * gave a complete answer, so the attempt does not count as delivered whatever its status.
 */
const readCapped = async (body: AsyncIterable<Uint8Array> & { destroy(): void }, maxBytes: number) => {
  const decoder = new StringDecoder("utf8")
  let text = ""
  let kept = 0
  let read = 0
  let error: unknown
  try {
    for await (const chunk of body) {
      read += chunk.length
      if (read > MAX_DRAINED_RESPONSE_BYTES) {
        error = new ResponseTooLarge(`the response body went on past ${MAX_DRAINED_RESPONSE_BYTES} bytes`)
        break
      }
      const take = Math.min(chunk.length, maxBytes - kept)
      if (take <= 0) continue
      // An incomplete trailing UTF-8 sequence stays in the decoder and is dropped.
      text += decoder.write(Buffer.from(chunk.buffer, chunk.byteOffset, take))
      kept += take
    }
  } catch (err) {
    error = err ?? new Error("response body failed")
  } finally {
    body.destroy()
  }
  return { text, error }
}

/**
 * POSTs `body` to `url` once. Never throws for network trouble or a bad URL: the result says what
 * happened. Redirects are not followed.
 */
export const sendWebhook = async (options: SendWebhookOptions): Promise<SendWebhookResult> => {
  const { url, body, headers, lookup, dispatcher } = options
  const timeoutMs = options.timeoutMs ?? delivery.timeoutMs
  const maxResponseBytes = options.maxResponseBytes ?? delivery.maxResponseBytes
  if (lookup && dispatcher) throw new TypeError("sendWebhook: pass either lookup or dispatcher, not both")

  const started = performance.now()
  const elapsed = () => Math.round(performance.now() - started)
  const failure = (error: SendErrorCode, detail: string): SendWebhookResult => ({
    ok: false,
    httpStatus: null,
    error,
    errorDetail: detail,
    durationMs: elapsed(),
    responseBody: "",
    retryAfter: null
  })

  let target: URL
  try {
    target = new URL(url)
  } catch {
    return failure("invalid_url", "not an absolute URL")
  }
  if (target.protocol !== "http:" && target.protocol !== "https:") {
    return failure("invalid_url", `scheme ${target.protocol} is not http or https`)
  }

  const controller = new AbortController()
  const timer = setTimeout(() => controller.abort(new Error(`no complete answer within ${timeoutMs} ms`)), timeoutMs)
  try {
    let via: Dispatcher
    if (dispatcher) {
      via = dispatcher
    } else if (lookup) {
      const guarded = guardedAgentFor(lookup)
      const host = target.hostname.replace(/^\[(.*)\]$/, "$1")
      if (isIP(host) !== 0) await vetIpLiteral(guarded.lookup, host)
      via = guarded.agent
    } else {
      via = defaultAgent ??= track(new Agent(agentOptions()))
    }

    const response = await request(target, {
      dispatcher: via,
      method: "POST",
      headers: { ...headers },
      body,
      signal: controller.signal,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs
    })
    const httpStatus = response.statusCode
    const retryAfter = firstHeader(response.headers["retry-after"])
    const read = await readCapped(response.body, maxResponseBytes)
    if (read.error !== undefined) {
      // The status arrived but the answer did not end: recorded with what came, and retried.
      const cut = controller.signal.aborted
        ? failure("timeout", String((controller.signal.reason as Error).message))
        : failure(classify(read.error), read.error instanceof Error ? read.error.message || errorCodeOf(read.error) || read.error.name : String(read.error))
      return { ...cut, httpStatus, responseBody: read.text, retryAfter }
    }
    return {
      ok: httpStatus >= 200 && httpStatus < 300,
      httpStatus,
      error: null,
      errorDetail: null,
      durationMs: elapsed(),
      responseBody: read.text,
      retryAfter
    }
  } catch (err) {
    if (controller.signal.aborted) return failure("timeout", String((controller.signal.reason as Error).message))
    return failure(classify(err), err instanceof Error ? err.message || errorCodeOf(err) || err.name : String(err))
  } finally {
    clearTimeout(timer)
  }
}

// ---------------------------------------------------------------------------------------------
// Headers and bodies

export type WebhookKind = "job" | "extraction" | "crawl"

export interface DeliveryHeadersInput {
  readonly kind: WebhookKind
  /** The job, extraction or crawl identifier. */
  readonly resourceId: string
  /** Stable across every attempt and manual redelivery of one delivery. */
  readonly deliveryId: string
  readonly secret: string
  /** The serialized body exactly as it will be sent. */
  readonly body: string
  /** Signing time; default now. Refreshed on every attempt. */
  readonly timestampSeconds?: number
}

/** Every header of a delivery, spelled as documented. */
export const buildDeliveryHeaders = (input: DeliveryHeadersInput): Record<string, string> => {
  const { kind, resourceId, deliveryId, secret, body } = input
  const timestamp = input.timestampSeconds ?? Math.floor(Date.now() / 1000)
  const names = kind === "job"
    ? ["X-Service-Webhook-Version", "X-Service-Jobid"]
    : kind === "crawl"
    ? ["X-Service-Crawl-Webhook-Version", "X-Service-Crawlid"]
    : ["X-Service-Extraction-Webhook-Version", "X-Service-Extractionid"]
  return {
    "Content-Type": "application/json",
    "User-Agent": "service-webhook/1.0",
    [names[0]!]: "1",
    [names[1]!]: resourceId,
    "X-Service-Timestamp": String(timestamp),
    "X-Service-Signature": signPayload(secret, timestamp, body),
    "X-Service-Delivery-Id": deliveryId,
    "webhook-id": deliveryId,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": standardWebhookSignature(secret, deliveryId, timestamp, body)
  }
}

const iso = (value: Date | string): string => (typeof value === "string" ? value : value.toISOString())

export interface JobWebhookBodyInput {
  readonly jobId: string
  readonly status: "done" | "failed"
  /** The target's status; null only when it never answered. */
  readonly httpStatus: number | null
  readonly finalUrl: string | null
  readonly classification: string | null
  readonly durationMs: number
  readonly requestId: string
  /** Fixed when the delivery is created; identical on every attempt. */
  readonly deliveredAt: Date | string
}

/** The scraper job body, keys in documented order. */
export const jobWebhookBody = (input: JobWebhookBodyInput): string =>
  JSON.stringify({
    jobId: input.jobId,
    status: input.status,
    // An integer always (the contract's body): 0 when the target never answered (a timeout, a refused connection).
    httpStatus: input.httpStatus ?? 0,
    finalUrl: input.finalUrl,
    classification: input.classification,
    durationMs: input.durationMs,
    requestId: input.requestId,
    deliveredAt: iso(input.deliveredAt)
  })

/**
 * The body of a crawl event's webhook (docs/webhooks.md, "Crawl events"): `event` is
 * `crawl.started`, `crawl.page`, `crawl.done`, `crawl.failed` or `crawl.cancelled`; a page event
 * names the page's job, URL, depth and status, an end event the crawl's counts.
 */
export const crawlWebhookBody = (input: {
  readonly crawlId: string
  readonly event: string
  readonly requestId: string
  readonly deliveredAt: Date
  readonly [field: string]: unknown
}): string => {
  const { crawlId, event, requestId, deliveredAt, ...rest } = input
  return JSON.stringify({ crawlId, event, ...rest, requestId, deliveredAt: iso(deliveredAt) })
}

interface ExtractionBodyCommon {
  readonly extractionId: string
  readonly type: "article" | "product"
  readonly url: string | null
  readonly metadata: Readonly<Record<string, unknown>>
  readonly requestId: string
  readonly deliveredAt: Date | string
}

export type ExtractionWebhookBodyInput =
  | (ExtractionBodyCommon & { readonly status: "done"; readonly data: Readonly<Record<string, unknown>> })
  | (ExtractionBodyCommon & {
      readonly status: "failed" | "dead"
      readonly errorClass: string
      readonly errorMessage: string | null
    })

/**
 * The extraction body, keys in documented order: `done` carries `data`; `failed` and `dead` carry
 * `errorClass` and `errorMessage` in its place.
 */
export const extractionWebhookBody = (input: ExtractionWebhookBodyInput): string =>
  JSON.stringify({
    extractionId: input.extractionId,
    type: input.type,
    status: input.status,
    url: input.url,
    ...(input.status === "done"
      ? { data: input.data }
      : { errorClass: input.errorClass, errorMessage: input.errorMessage }),
    metadata: input.metadata,
    requestId: input.requestId,
    deliveredAt: iso(input.deliveredAt)
  })
