/**
 * `http` and `alternate` engines: Crawlee's HTTP client family (got-scraping, the client behind
 * `@crawlee/http`'s HttpCrawler and `GotScrapingHttpClient`) with browser-like headers, used
 * directly with one long-lived pair of keep-alive agents per engine instance. No crawler, request
 * queue or storage per URL. Two transports (see `HttpEngineOptions.transport` and
 * docs/crawling.md "http engine"): `native` (default) keeps got-scraping's fingerprint pieces
 * (header generator, TransformHeadersAgent, TLS profile) on Node's http client; `got-scraping`
 * runs the full got pipeline.
 *
 * SSRF: every connection is opened through agents whose `lookup` is the guard's safe lookup (the
 * socket goes to exactly the address that was classified), IP-literal hosts are classified before
 * the request, redirects are followed manually and every hop is checked again. Through a proxy
 * (`alternate` with ALTERNATE_PROXY_URL) the proxy resolves names, so every hop is pre-resolved and
 * classified with `checkUrl` instead (a rebinding window remains at the proxy; see the docs).
 */
import http from "node:http"
import https from "node:https"
import { isIP } from "node:net"
import { promisify } from "node:util"
import zlib from "node:zlib"
import { got, gotScraping, hooks as gotScrapingHooks, TransformHeadersAgent } from "got-scraping"
import {
  type AddressClassifier,
  checkUrl,
  classifyAddress,
  createSafeLookup,
  literalAddressOf,
  type LookupFunction,
  parseTargetUrl,
  refusedClass
} from "../ssrf.ts"
import { usableContentType } from "../content-type.ts"
import { classifyCheckFailure, classifyError, classifyResponse, errorText, SCRIPT_SHELL } from "./classify.ts"
import { type Attempt, type Engine, emptyAttempt, type FetchRequest } from "./types.ts"

export interface HttpEngineOptions {
  /** `http` (default) or `alternate`. */
  name?: "http" | "alternate"
  /** Outbound proxy (ALTERNATE_PROXY_URL); direct when unset. */
  proxyUrl?: string | undefined
  /** Body cap in bytes (decompressed); larger bodies give `too_large`. Default 10 MiB. */
  maxBodyBytes?: number
  /** Default 10. */
  maxRedirects?: number
  /** Sockets per origin in the shared agents. Default 256. */
  maxSocketsPerOrigin?: number
  /** Number of pre-generated browser header sets rotated over requests. Default 32. */
  headerPoolSize?: number
  /**
   * `native` (default): got-scraping's fingerprint stack — its header generator (pooled), its
   * TransformHeadersAgent (browser header order and casing) and its TLS profile (tlsHook) — on
   * Node's http client, without got's per-request machinery. `got-scraping`: the full got request
   * pipeline with got-scraping's hooks (about half the throughput). Through a proxy
   * (`proxyUrl`) the got-scraping transport is always used (its proxy agents).
   */
  transport?: "native" | "got-scraping"
  /** Test hooks for the SSRF guard (resolver and classifier). */
  lookup?: LookupFunction
  classify?: AddressClassifier
}

type HeaderSet = Record<string, string>

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308])
const REDIRECT_BODY_CAP = 64 * 1024

/**
 * The refusal of a Location that names its host in a non-canonical IPv4 spelling, as written. It
 * is read as the URL parser reads it (blanks and controls around it dropped, tabs and newlines in
 * it too; for http(s), backslashes are slashes): a host is named after `//`, or after a scheme
 * other than the base's, with or without slashes; `http:x` from an http page is a path.
 */
const obfuscatedHostOf = (location: string, base: URL): string | undefined => {
  const raw = location.replace(/^[\u0000-\u0020]+|[\u0000-\u0020]+$/g, "").replace(/[\t\n\r]/g, "")
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(raw)
  const rest = scheme ? raw.slice(scheme[0].length) : raw
  const namesHost = /^[\\/]{2}/.test(rest) || (scheme !== null && `${scheme[1]!.toLowerCase()}:` !== base.protocol)
  if (!namesHost) return undefined
  // Only the authority matters here: what follows it (a path with a space, say) is the parser's to encode.
  const authority = /^[^\\/?#]*/.exec(rest.replace(/^[\\/]*/, ""))![0]
  const parsed = parseTargetUrl(`${scheme ? scheme[1]!.toLowerCase() + ":" : base.protocol}//${authority}/`, { allowPrivate: true })
  return !parsed.ok && parsed.reason === "obfuscated_ip" ? parsed.detail : undefined
}

/** A fallback header set, used only if got-scraping's header generator is unavailable. */
const FALLBACK_HEADERS: HeaderSet = {
  "sec-ch-ua": '"Chromium";v="130", "Google Chrome";v="130", "Not?A_Brand";v="99"',
  "sec-ch-ua-mobile": "?0",
  "sec-ch-ua-platform": '"Windows"',
  "upgrade-insecure-requests": "1",
  "user-agent":
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36",
  accept:
    "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7",
  "sec-fetch-site": "none",
  "sec-fetch-mode": "navigate",
  "sec-fetch-user": "?1",
  "sec-fetch-dest": "document",
  "accept-encoding": "gzip, deflate, br",
  "accept-language": "en-US,en;q=0.9"
}

/**
 * Browser-like header sets from got-scraping's own header generator (the same generator the
 * HttpCrawler uses per request), generated once and rotated: generation costs ~0.3 ms.
 */
const buildHeaderPool = (size: number): HeaderSet[] => {
  const generator = (gotScraping.defaults.options.context as { headerGenerator?: { getHeaders(o: object): HeaderSet } })
    .headerGenerator
  const pool: HeaderSet[] = []
  for (let i = 0; i < size && generator; i++) {
    try {
      const raw = generator.getHeaders({
        httpVersion: "1",
        browsers: ["chrome", "firefox", "edge"],
        devices: ["desktop"],
        operatingSystems: ["windows", "macos", "linux"],
        locales: ["en-US", "en"]
      })
      const set: HeaderSet = {}
      for (const [k, v] of Object.entries(raw)) {
        const key = k.toLowerCase()
        if (key === "connection" || key === "host") continue
        set[key] = v
      }
      // got-scraping decompresses gzip/deflate/br only; a top-level navigation is "none"
      if (set["accept-encoding"]) set["accept-encoding"] = "gzip, deflate, br"
      if (set["sec-fetch-site"]) set["sec-fetch-site"] = "none"
      pool.push(set)
    } catch {
      break
    }
  }
  return pool.length > 0 ? pool : [FALLBACK_HEADERS]
}

/**
 * A header set as the raw list Node sends untouched: browser casing and browser order for its
 * User-Agent (got-scraping's header generator, as its TransformHeadersAgent does per request), with
 * `Host` and `Connection` where that browser sends them, and the place a `Cookie` goes. Worked out
 * once per set instead of on every request. Unlike the per-request transform it adds no
 * `Content-Length: 0` to a GET, which no browser sends.
 */
interface OrderedHeaders {
  readonly userAgent: string | undefined
  /** Name/value pairs before the cookie, flat; `Host`'s value is filled in per request. */
  readonly beforeCookie: ReadonlyArray<string>
  readonly afterCookie: ReadonlyArray<string>
  /** Index of `Host`'s value in `beforeCookie`. */
  readonly hostAt: number
}

const pascalCase = (name: string) => name.split("-").map((part) => part[0]!.toUpperCase() + part.slice(1).toLowerCase()).join("-")

const orderHeaders = (set: HeaderSet): OrderedHeaders => {
  const generator = (gotScraping.defaults.options.context as { headerGenerator?: { orderHeaders(h: object): object } }).headerGenerator
  const named: Record<string, string> = { Host: "", Connection: "keep-alive", Cookie: "" }
  for (const [k, v] of Object.entries(set)) named[k.startsWith("x-") ? k : pascalCase(k)] = v
  const order = Object.keys(generator ? generator.orderHeaders(named) : named)
  const cookieAt = order.indexOf("Cookie")
  const flat = (names: ReadonlyArray<string>) => names.flatMap((n) => [n, named[n]!])
  const beforeCookie = flat(order.slice(0, cookieAt))
  return { userAgent: set["user-agent"], beforeCookie, afterCookie: flat(order.slice(cookieAt + 1)), hostAt: beforeCookie.indexOf("Host") + 1 }
}

/** The raw header list of one request. */
const rawHeaders = (h: OrderedHeaders, host: string, cookie: string | undefined): Array<string> => {
  const before = h.beforeCookie.slice()
  before[h.hostAt] = host
  return cookie ? [...before, "Cookie", cookie, ...h.afterCookie] : before.concat(h.afterCookie)
}

/** Minimal per-attempt cookie jar: cookies set during a redirect chain go back to the same host. */
class AttemptCookies {
  private readonly byHost = new Map<string, Map<string, string>>()
  store(host: string, setCookie: string | string[] | undefined) {
    if (!setCookie) return
    const list = Array.isArray(setCookie) ? setCookie : [setCookie]
    let jar = this.byHost.get(host)
    for (const c of list) {
      const pair = c.split(";", 1)[0]!
      const eq = pair.indexOf("=")
      if (eq <= 0) continue
      if (!jar) this.byHost.set(host, (jar = new Map()))
      jar.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim())
    }
  }
  header(host: string): string | undefined {
    const jar = this.byHost.get(host)
    if (!jar || jar.size === 0) return undefined
    return [...jar].map(([k, v]) => `${k}=${v}`).join("; ")
  }
}

/**
 * The request client: got with got-scraping's own hooks, minus the ones that are per-request cost
 * or a guard bypass here — option validation (`ow`, ~5% CPU per request), the per-request header
 * generator (replaced by the pre-generated pool) and HTTP/2 ALPN probing (opens TLS connections
 * outside the guarded agents). Kept: custom options (proxyUrl), the insecure-parser switch, the
 * proxy agents, browser-like TLS settings (ciphers, sigalgs, curves by User-Agent) and the
 * decompression fix.
 */
const client = got.extend({
  handlers: [gotScrapingHooks.fixDecompress],
  mutableDefaults: false,
  http2: false,
  https: { rejectUnauthorized: false },
  throwHttpErrors: false,
  followRedirect: false,
  decompress: true,
  retry: { limit: 0 },
  headers: { "user-agent": undefined },
  context: { insecureHTTPParser: true },
  hooks: {
    init: [gotScrapingHooks.customOptionsHook],
    beforeRequest: [gotScrapingHooks.insecureParserHook, gotScrapingHooks.proxyHook, gotScrapingHooks.tlsHook]
  }
} as never) as unknown as typeof gotScraping

interface Agents {
  http: http.Agent
  https: https.Agent
}

interface HopResult {
  status: number
  headers: http.IncomingHttpHeaders
  url: string
  body: Buffer | null
  bytes: number
  tooLarge: boolean
}

type TlsProfile = Pick<https.RequestOptions, "ciphers" | "sigalgs" | "ecdhCurve" | "minVersion" | "maxVersion" | "secureOptions"> & {
  requestOCSP?: boolean
}
const tlsProfiles = new Map<string, TlsProfile>()

/** got-scraping's TLS settings for a User-Agent (ciphers, signature algorithms, curves, versions). */
const tlsProfileFor = (userAgent: string | undefined): TlsProfile => {
  const key = userAgent ?? ""
  let p = tlsProfiles.get(key)
  if (!p) {
    const fake = { https: {} as Record<string, unknown>, headers: { "user-agent": userAgent }, _unixOptions: {} as Record<string, unknown> }
    try {
      gotScrapingHooks.tlsHook(fake as never)
    } catch {
      /* keep Node defaults */
    }
    p = {
      ...(fake.https.ciphers ? { ciphers: fake.https.ciphers as string } : {}),
      ...(fake.https.signatureAlgorithms ? { sigalgs: fake.https.signatureAlgorithms as string } : {}),
      ...(fake.https.ecdhCurve ? { ecdhCurve: fake.https.ecdhCurve as string } : {}),
      ...(fake.https.minVersion ? { minVersion: fake.https.minVersion as https.RequestOptions["minVersion"] } : {}),
      ...(fake.https.maxVersion ? { maxVersion: fake.https.maxVersion as https.RequestOptions["maxVersion"] } : {}),
      ...(typeof fake._unixOptions.secureOptions === "number" ? { secureOptions: fake._unixOptions.secureOptions } : {})
    }
    tlsProfiles.set(key, p)
  }
  return p
}

/**
 * Decodes a buffered body through the codings its `Content-Encoding` lists (last applied first),
 * never producing more than `cap + 1` bytes at any step. A truncated stream is an error, not a
 * shorter page; a coding this engine does not know fails the attempt instead of keeping bytes
 * that are still encoded.
 */
const decompress = async (encoding: string | undefined, raw: Buffer, cap: number): Promise<Buffer> => {
  const codings = (encoding ?? "").split(",").map((c) => c.trim().toLowerCase()).filter((c) => c !== "" && c !== "identity")
  let body = raw
  for (const coding of codings.reverse()) {
    if (body.byteLength === 0) return body
    body = await decode(coding, body, cap)
  }
  return body
}
const decode = (coding: string, body: Buffer, cap: number): Promise<Buffer> => {
  const opts = { maxOutputLength: cap + 1 }
  switch (coding) {
    case "gzip":
    case "x-gzip":
      return gunzip(body, opts)
    case "br":
      return brotli(body, opts)
    case "zstd":
      return zstd(body, opts)
    case "deflate":
    case "x-deflate":
      // Servers send either zlib-wrapped or raw deflate under this name.
      return (body[0]! & 0x0f) === 8 ? inflate(body, opts) : inflateRaw(body, opts)
    default:
      return Promise.reject(Object.assign(new Error(`unsupported Content-Encoding: ${coding.slice(0, 40)}`), { code: "ERR_CONTENT_ENCODING" }))
  }
}
const gunzip = promisify(zlib.gunzip) as (b: Buffer, o: zlib.ZlibOptions) => Promise<Buffer>
const inflate = promisify(zlib.inflate) as (b: Buffer, o: zlib.ZlibOptions) => Promise<Buffer>
const inflateRaw = promisify(zlib.inflateRaw) as (b: Buffer, o: zlib.ZlibOptions) => Promise<Buffer>
const brotli = promisify(zlib.brotliDecompress) as (b: Buffer, o: zlib.BrotliOptions) => Promise<Buffer>
const zstd = promisify(zlib.zstdDecompress) as (b: Buffer, o: zlib.ZstdOptions) => Promise<Buffer>

/**
 * A `Location` header as the browser reads it. Node hands header bytes over as Latin-1; a target
 * that writes a non-ASCII path writes UTF-8, so such a value is read again as UTF-8, and bytes
 * that are not UTF-8 are percent-encoded as they stand.
 */
const locationOf = (value: string): string => {
  if (!/[\u0080-\u00ff]/.test(value)) return value
  const bytes = Buffer.from(value, "latin1")
  try {
    return utf8.decode(bytes)
  } catch {
    return value.replace(/[\u0080-\u00ff]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
  }
}
const utf8 = new TextDecoder("utf-8", { fatal: true })

/** What `work` gives, or undefined as soon as `signal` is aborted (the work goes on, unheeded). */
const untilAborted = <A>(work: Promise<A>, signal: AbortSignal): Promise<A | undefined> =>
  signal.aborted ? Promise.resolve(undefined) : new Promise((resolve, reject) => {
    const onAbort = () => resolve(undefined)
    signal.addEventListener("abort", onAbort, { once: true })
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort))
  })

export const createHttpEngine = (opts: HttpEngineOptions = {}): Engine => {
  const name = opts.name ?? "http"
  const maxBody = opts.maxBodyBytes ?? 10 * 1024 * 1024
  const maxRedirects = opts.maxRedirects ?? 10
  const proxyUrl = opts.proxyUrl && opts.proxyUrl.trim() !== "" ? opts.proxyUrl : undefined
  const classify = opts.classify ?? classifyAddress
  const transport = opts.transport ?? "native"
  let headerPool: Array<{ set: HeaderSet; ordered: OrderedHeaders }> | null = null
  let headerIndex = Math.floor(Math.random() * 1000)

  const makeAgents = (allowPrivate: boolean): Agents => {
    const lookup = createSafeLookup({ allowPrivate, lookup: opts.lookup, classify }) as unknown as http.AgentOptions["lookup"]
    // Agent options override request options in Node's createSocket, so `lookup` cannot be bypassed.
    const common = {
      keepAlive: true,
      keepAliveMsecs: 1000,
      maxSockets: opts.maxSocketsPerOrigin ?? 256,
      maxFreeSockets: 64,
      scheduling: "lifo" as const,
      timeout: 60_000,
      lookup
    }
    // The native transport sends ready-made raw header lists; got's pipeline needs the
    // TransformHeadersAgent to put its headers in browser order.
    const wrap = <A>(agent: A): A => (transport === "native" && !proxyUrl ? agent : new TransformHeadersAgent(agent as never) as unknown as A)
    return {
      http: wrap(new http.Agent(common)),
      https: wrap(new https.Agent({ ...common, rejectUnauthorized: false }))
    }
  }
  const agentsByMode = new Map<boolean, Agents & { lookup: LookupFunction }>()
  const agentsFor = (allowPrivate: boolean) => {
    let a = agentsByMode.get(allowPrivate)
    if (!a) {
      a = { ...makeAgents(allowPrivate), lookup: createSafeLookup({ allowPrivate, lookup: opts.lookup, classify }) }
      agentsByMode.set(allowPrivate, a)
    }
    return a
  }

  const nextHeaders = (): { set: HeaderSet; ordered: OrderedHeaders } => {
    if (!headerPool) headerPool = buildHeaderPool(opts.headerPoolSize ?? 32).map((set) => ({ set, ordered: orderHeaders(set) }))
    headerIndex = (headerIndex + 1) % headerPool.length
    return headerPool[headerIndex]!
  }

  /** Guard for one hop (the first URL or a redirect target). Returns a refusal text or null. */
  const checkHop = async (
    raw: string,
    allowPrivate: boolean,
    signal: AbortSignal,
    abortedAs: () => "cancelled" | "timeout"
  ): Promise<{ ok: true; url: URL } | { ok: false; classification: "unsafe_url" | "dns_error" | "cancelled" | "timeout"; error: string }> => {
    const parsed = parseTargetUrl(raw, { allowPrivate })
    if (!parsed.ok) return { ok: false, classification: "unsafe_url", error: `${parsed.reason}: ${parsed.detail}` }
    const literal = literalAddressOf(parsed.url)
    if (literal !== undefined) {
      // literals never reach `lookup`: classify them here (a development node too: it still refuses link-local...)
      const c = refusedClass(literal, allowPrivate, classify)
      return c ? { ok: false, classification: "unsafe_url", error: `non_public_address: ${literal} is ${c}` } : parsed
    }
    if (proxyUrl && !allowPrivate) {
      // the proxy resolves the name: resolve and classify every address ourselves first, within
      // the attempt's deadline and its caller's signal (a slow resolver must not outlast them)
      const r = await untilAborted(checkUrl(parsed.url, { allowPrivate, lookup: opts.lookup, classify }), signal)
      if (r === undefined) return { ok: false, classification: abortedAs(), error: `${abortedAs()} while resolving ${parsed.url.hostname}` }
      if (!r.ok) {
        return { ok: false, classification: classifyCheckFailure(r), error: `${r.reason}: ${r.detail}` }
      }
      return { ok: true, url: parsed.url }
    }
    // names are classified by the safe lookup when the socket is opened, before connecting
    return parsed
  }

  const gotHop = async (
    url: URL,
    headers: HeaderSet,
    signal: AbortSignal,
    allowPrivate: boolean,
    isRedirectProbe: (status: number, h: http.IncomingHttpHeaders) => boolean,
    onStatus: (status: number) => void
  ): Promise<HopResult> => {
    const agents = agentsFor(allowPrivate)
    // the attempt deadline (redirects and body included) is enforced through `signal`
    const stream = client.stream(url, {
      headers,
      signal,
      ...(proxyUrl ? { proxyUrl } : { agent: { http: agents.http, https: agents.https }, dnsLookup: agents.lookup as never })
    } as never) as unknown as NodeJS.ReadableStream & {
      destroy(e?: Error): void
      once(ev: string, fn: (...a: unknown[]) => void): unknown
      removeListener(ev: string, fn: (...a: unknown[]) => void): unknown
    }

    let onError: ((e: unknown) => void) | undefined
    const response = await new Promise<http.IncomingMessage & { url: string }>((resolve, reject) => {
      onError = reject
      stream.once("response", (res) => resolve(res as http.IncomingMessage & { url: string }))
      stream.once("error", onError)
    })
    // keep a listener so a late error cannot become an unhandled 'error' event
    stream.removeListener("error", onError!)
    stream.once("error", () => {})

    const status = response.statusCode ?? 0
    onStatus(status)
    const redirect = isRedirectProbe(status, response.headers)
    const cap = redirect ? REDIRECT_BODY_CAP : maxBody
    const declared = Number(response.headers["content-length"])
    if (!redirect && Number.isFinite(declared) && declared > maxBody) {
      stream.destroy()
      return { status, headers: response.headers, url: url.href, body: null, bytes: declared, tooLarge: true }
    }
    const chunks: Buffer[] = []
    let bytes = 0
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      bytes += chunk.byteLength
      if (bytes > cap) {
        stream.destroy()
        return { status, headers: response.headers, url: url.href, body: null, bytes, tooLarge: !redirect }
      }
      chunks.push(chunk)
    }
    return {
      status,
      headers: response.headers,
      url: url.href,
      body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, bytes),
      bytes,
      tooLarge: false
    }
  }

  const nativeHop = (
    url: URL,
    headers: OrderedHeaders,
    cookie: string | undefined,
    signal: AbortSignal,
    allowPrivate: boolean,
    isRedirectProbe: (status: number, h: http.IncomingHttpHeaders) => boolean,
    onStatus: (status: number) => void
  ): Promise<HopResult> =>
    new Promise<HopResult>((resolve, reject) => {
      const agents = agentsFor(allowPrivate)
      const secure = url.protocol === "https:"
      const host = url.hostname.replace(/^\[|\]$/g, "")
      const options: https.RequestOptions = {
        protocol: url.protocol,
        hostname: host,
        port: url.port === "" ? (secure ? 443 : 80) : Number(url.port),
        path: url.pathname + url.search,
        method: "GET",
        headers: rawHeaders(headers, url.host, cookie),
        agent: secure ? agents.https : agents.http,
        lookup: agents.lookup as unknown as https.RequestOptions["lookup"],
        signal,
        insecureHTTPParser: true,
        ...(secure ? { ...tlsProfileFor(headers.userAgent), rejectUnauthorized: false, ...(isIP(host) ? {} : { servername: host }) } : {})
      }
      const request = (secure ? https : http).request(options)
      request.once("error", reject)
      request.once("response", (response) => {
        const status = response.statusCode ?? 0
        onStatus(status)
        const redirect = isRedirectProbe(status, response.headers)
        const cap = redirect ? REDIRECT_BODY_CAP : maxBody
        const declared = Number(response.headers["content-length"])
        const done = (r: Omit<HopResult, "status" | "headers" | "url">) => resolve({ status, headers: response.headers, url: url.href, ...r })
        // resolve before destroying: destroy() emits 'aborted'/'error' synchronously
        if (!redirect && Number.isFinite(declared) && declared > maxBody) {
          done({ body: null, bytes: declared, tooLarge: true })
          return response.destroy()
        }
        const chunks: Buffer[] = []
        let bytes = 0
        response.on("data", (chunk: Buffer) => {
          if (bytes > cap) return
          bytes += chunk.byteLength
          if (bytes > cap) {
            done({ body: null, bytes, tooLarge: !redirect })
            return response.destroy()
          }
          chunks.push(chunk)
        })
        response.once("error", reject)
        response.once("aborted", () => reject(Object.assign(new Error("response aborted"), { code: "ECONNRESET" })))
        response.once("end", () => {
          if (bytes > cap) return
          const raw = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, bytes)
          if (redirect) return done({ body: raw, bytes, tooLarge: false })
          decompress(response.headers["content-encoding"], raw, maxBody).then(
            (body) =>
              body.byteLength > maxBody
                ? done({ body: null, bytes: body.byteLength, tooLarge: true })
                : done({ body, bytes: body.byteLength, tooLarge: false }),
            (e: NodeJS.ErrnoException) =>
              e.code === "ERR_BUFFER_TOO_LARGE" ? done({ body: null, bytes: maxBody + 1, tooLarge: true }) : reject(e)
          )
        })
      })
      request.end()
    })

  const native = transport === "native" && !proxyUrl

  const isRedirect = (status: number, h: http.IncomingHttpHeaders) => REDIRECT_STATUSES.has(status) && !!h.location

  const fetch = async (req: FetchRequest): Promise<Attempt> => {
    const t0 = performance.now()
    const redirects: string[] = []
    if (req.signal?.aborted) return emptyAttempt(name, "cancelled", t0, { error: "cancelled before start" })

    const deadline = new AbortController()
    const timer = setTimeout(
      () => deadline.abort(new DOMException(`attempt timed out after ${req.timeoutMs} ms`, "TimeoutError")),
      req.timeoutMs
    )
    const signal = req.signal ? AbortSignal.any([req.signal, deadline.signal]) : deadline.signal
    const abortedAs = () => (req.signal?.aborted ? "cancelled" as const : "timeout" as const)
    const first = await checkHop(req.url, req.allowPrivate, signal, abortedAs)
    if (!first.ok) {
      clearTimeout(timer)
      return emptyAttempt(name, first.classification, t0, { error: first.error, finalUrl: req.url })
    }
    const baseHeaders = nextHeaders()
    const cookies = new AttemptCookies()
    let url = first.url
    let lastStatus: number | null = null
    let redirectStatus: number | null = null
    try {
      for (let hop = 0; ; hop++) {
        const cookie = cookies.header(url.host)
        // Set as soon as the status line arrives: a body that then fails still says what the target answered.
        lastStatus = null
        const onStatus = (status: number) => {
          lastStatus = status
        }
        const res = native
          ? await nativeHop(url, baseHeaders.ordered, cookie, signal, req.allowPrivate, isRedirect, onStatus)
          : await gotHop(url, cookie ? { ...baseHeaders.set, cookie } : baseHeaders.set, signal, req.allowPrivate, isRedirect, onStatus)
        const contentType = usableContentType(res.headers["content-type"])
        if (isRedirect(res.status, res.headers)) {
          redirects.push(url.href)
          redirectStatus = res.status
          cookies.store(url.host, res.headers["set-cookie"])
          if (hop >= maxRedirects) {
            return emptyAttempt(name, "connection_error", t0, {
              httpStatus: res.status,
              finalUrl: url.href,
              contentType,
              redirects,
              error: `more than ${maxRedirects} redirects`
            })
          }
          // Resolving the Location rewrites an odd IPv4 spelling (2130706433, 0x7f.1) in dotted form:
          // a Location that names its host is checked as written first, as a job's own URL is.
          const location = locationOf(res.headers.location!)
          const spelled = obfuscatedHostOf(location, url)
          if (spelled) {
            return emptyAttempt(name, "unsafe_url", t0, {
              httpStatus: res.status,
              finalUrl: url.href,
              redirects,
              error: `redirect refused: ${spelled}`
            })
          }
          let target: string
          try {
            target = new URL(location, url).href
          } catch {
            return emptyAttempt(name, "connection_error", t0, {
              httpStatus: res.status,
              finalUrl: url.href,
              redirects,
              error: `invalid redirect location ${location.slice(0, 200)}`
            })
          }
          const next = await checkHop(target, req.allowPrivate, signal, abortedAs)
          if (!next.ok) {
            return emptyAttempt(name, next.classification, t0, {
              httpStatus: res.status,
              finalUrl: target,
              redirects,
              error: next.classification === "unsafe_url" ? `redirect refused: ${next.error}` : next.error
            })
          }
          url = next.url
          continue
        }
        if (res.tooLarge) {
          return emptyAttempt(name, "too_large", t0, {
            httpStatus: res.status,
            finalUrl: res.url,
            contentType,
            bytes: res.bytes,
            redirects,
            error: `body larger than ${maxBody} bytes`
          })
        }
        const { classification, marker } = classifyResponse(res.status, res.body, false)
        return {
          engine: name,
          classification,
          httpStatus: res.status,
          finalUrl: res.url,
          contentType,
          body: res.body,
          bytes: res.bytes,
          screenshot: null,
          ...(req.screenshot ? { screenshotUnavailable: `the ${name} engine does not render pages` } : {}),
          durationMs: Math.round(performance.now() - t0),
          redirects,
          ...(marker === SCRIPT_SHELL ? { error: "a page its scripts build (next to no text but scripts): only a browser shows it" }
            : marker ? { error: `bot wall detected (${marker})` } : {})
        }
      }
    } catch (e) {
      const classification = req.signal?.aborted ? "cancelled" : deadline.signal.aborted ? "timeout" : classifyError(e)
      // a name refused by the safe lookup on a redirect hop: report it like a refused redirect
      const refusedRedirect = classification === "unsafe_url" && redirects.length > 0
      return emptyAttempt(name, classification, t0, {
        httpStatus: refusedRedirect ? redirectStatus : lastStatus,
        finalUrl: url.href,
        redirects,
        error:
          classification === "timeout" && deadline.signal.aborted
            ? `timed out after ${req.timeoutMs} ms`
            : `${refusedRedirect ? "redirect refused: " : ""}${errorText(e)}`
      })
    } finally {
      clearTimeout(timer)
    }
  }

  return {
    name,
    available: async () => true,
    fetch,
    close: async () => {
      for (const a of agentsByMode.values()) {
        a.http.destroy()
        a.https.destroy()
      }
      agentsByMode.clear()
    }
  }
}
