/**
 * Maps responses and errors of every engine to one `Classification`.
 * The table is documented in docs/crawling.md.
 */
import { isUnsafeAddressError } from "../ssrf.ts"
import type { Classification } from "./types.ts"

/**
 * Markers that only appear on bot walls / challenge interstitials. Checked on any page size.
 * (Crawlee's own RETRY_CSS_SELECTORS cover Cloudflare Turnstile and Incapsula; these are broader.)
 */
const STRONG_MARKERS = [
  "cf-challenge",
  "cf_chl_opt",
  "cf-browser-verification",
  'id="challenge-form"',
  "challenge-running",
  "<title>just a moment...</title>",
  "attention required! | cloudflare",
  "_incapsula_resource",
  "px-captcha",
  "captcha-delivery.com",
  "geo.captcha-delivery",
  "/_sec/cp_challenge/",
  "ak_bmsc_challenge",
  "data-cf-challenge",
  "challenges.cloudflare.com/cdn-cgi/challenge-platform"
]

/** Phrases that mean a wall only on a page with little visible text. */
const WEAK_MARKERS = [
  "captcha",
  "verify you are human",
  "verify that you are human",
  "verify you are a human",
  "are you a robot",
  "not a robot",
  "checking your browser",
  "checking if the site connection is secure",
  "unusual traffic",
  "automated queries",
  "bot detection",
  "enable javascript and cookies to continue",
  "please enable javascript to continue",
  "request unsuccessful. incapsula",
  "access denied",
  "pardon our interruption"
]

/**
 * Visible text at most this long makes a page "small" for the weak markers. A page sent as a
 * success must be terser: walls say a sentence or two, while a small ordinary page (a contact form,
 * an order status) may well use one of the phrases in passing.
 */
const SMALL_PAGE_TEXT_CHARS = 2_000
const SMALL_SUCCESS_PAGE_TEXT_CHARS = 500

/**
 * The notice Google asks sites with an invisible reCAPTCHA to show ("This site is protected by
 * reCAPTCHA and the Google Privacy Policy and Terms of Service apply."): ordinary pages carry it,
 * so it is not read as a wall's "captcha".
 */
const RECAPTCHA_NOTICE = /(this|the) (site|page|form) is protected by (google )?recaptcha[^.]*\.?/g
/** Pages above this size are never scanned (a wall is small). */
const MAX_SCAN_BYTES = 2 * 1024 * 1024

const HIDDEN_ELEMENTS = ["script", "style", "noscript", "template"]
const NAME_END = /[\s/>]/

const collapse = (text: string) => text.replace(/&nbsp;|&#160;/g, " ").replace(/\s+/g, " ")

/**
 * The visible text of lower-cased HTML: tags, comments and script-like elements dropped; undefined
 * as soon as it is known to be longer than `limit` characters. One pass with forward searches
 * only, and a search that finds nothing is not repeated, so no page (such as thousands of `<`
 * never closed) makes it slower than linear. What is never closed runs to the end.
 */
const visibleText = (html: string, limit: number): string | undefined => {
  const n = html.length
  let parts: Array<string> = []
  let collected = 0
  let nextCheck = 2 * limit
  let noGtFrom = n + 1 // no ">" at or after this position
  let noLtFrom = n + 1 // no "<" at or after this position
  let i = 0
  while (i < n) {
    // Now and then (at doubling lengths, so still linear) the text so far is collapsed: once it is
    // over the limit the rest cannot make it shorter, and a hostile page stops costing at once.
    if (collected > nextCheck) {
      const sofar = collapse(parts.join(""))
      if (sofar.trim().length > limit) return undefined
      parts = [sofar]
      collected = sofar.length
      nextCheck = 2 * Math.max(limit, collected)
    }
    const lt = i >= noLtFrom ? -1 : html.indexOf("<", i)
    if (lt < 0) {
      // The rest is text: taken in pieces, so that a long rest is checked against the limit too.
      noLtFrom = Math.min(noLtFrom, i)
      const end = Math.min(n, i + 4 * limit)
      parts.push(html.slice(i, end))
      collected += end - i
      i = end
      continue
    }
    parts.push(html.slice(i, lt), " ")
    collected += lt - i + 1
    if (html.startsWith("<!--", lt)) {
      const end = html.indexOf("-->", lt + 4)
      if (end < 0) break
      i = end + 3
      continue
    }
    const gt = lt + 1 >= noGtFrom ? -1 : html.indexOf(">", lt + 1)
    if (gt < 0) {
      noGtFrom = Math.min(noGtFrom, lt + 1)
      parts.push("<")
      collected++
      i = lt + 1
      continue
    }
    const hidden = HIDDEN_ELEMENTS.find((name) => html.startsWith(name, lt + 1) && NAME_END.test(html[lt + 1 + name.length] ?? ">"))
    if (hidden) {
      const close = html.indexOf(`</${hidden}`, gt + 1)
      if (close < 0) break
      const closeEnd = html.indexOf(">", close)
      if (closeEnd < 0) break
      i = closeEnd + 1
      continue
    }
    i = gt + 1
  }
  const text = collapse(parts.join("")).trim()
  return text.length > limit ? undefined : text
}

/** The text of the first `<title>`, by forward searches only. */
const titleText = (html: string): string => {
  const open = html.indexOf("<title")
  if (open < 0) return ""
  const gt = html.indexOf(">", open)
  if (gt < 0) return ""
  const close = html.indexOf("</title>", gt)
  return close < 0 ? "" : html.slice(gt + 1, close)
}

/**
 * Generic bot-wall / captcha detection. Returns the marker that matched, or null.
 * A strong marker matches anywhere; a weak phrase only when the page has little visible text
 * (a normal article that mentions "captcha" is not a wall) and it appears in the title or text.
 */
const escapeRe = (m: string) => m.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
const STRONG_RE = new RegExp(STRONG_MARKERS.map(escapeRe).join("|"), "i")
const WEAK_RE = new RegExp([...WEAK_MARKERS.map(escapeRe), "captcha", "cf-turnstile"].join("|"), "i")
/**
 * Words every marker above contains: one pass over the page's bytes for them clears the common
 * page (most pages contain none), at a fraction of the cost of scanning for all the markers.
 */
const MARKER_ANCHORS = [
  "captcha", "challenge", "cf_chl_", "cf-browser", "just a moment", "cloudflare", "incapsula", "verify ", "a robot",
  "checking", "unusual traffic", "automated queries", "bot detection", "enable javascript", "access denied",
  "pardon our", "turnstile"
]
for (const m of [...STRONG_MARKERS, ...WEAK_MARKERS, "cf-turnstile"]) {
  if (!MARKER_ANCHORS.some((a) => m.includes(a))) throw new Error(`bot-wall marker without an anchor: ${m}`)
}

/**
 * A matcher that tells whether any of `words` (ASCII) occurs in a byte string, ignoring ASCII
 * case, and builds no string. A window as long as the shortest word slides over the bytes; the
 * two bytes at its end say how far it may jump without passing an occurrence (no word has them
 * nearer its window's end), so most of a page is skipped several bytes at a time (a multi-word
 * Horspool search, after Wu and Manber). Where a jump is 0, the words are compared in full.
 *
 * The jump table is looked up with every byte OR 0x20: that lower-cases letters in one operation
 * and merges a few other pairs of bytes (`@` and a backquote, say), which can only add places
 * where the words are compared in full, never skip a match. Those comparisons fold case exactly.
 */
export const anyWordMatcher = (words: ReadonlyArray<string>): ((bytes: Uint8Array) => boolean) => {
  const lower = words.map((w) => w.toLowerCase())
  for (const w of lower) {
    if (w.length === 0) throw new Error("an empty word")
    for (let i = 0; i < w.length; i++) if (w.charCodeAt(i) > 127) throw new Error(`not an ASCII word: ${w}`)
  }
  // ASCII upper case folds to lower case; every other byte stands for itself.
  const fold = new Uint8Array(256).map((_, c) => (c >= 65 && c <= 90 ? c + 32 : c))
  const codes = lower.map((w) => Uint8Array.from(w, (ch) => ch.charCodeAt(0)))
  const window = Math.min(...codes.map((w) => w.length))
  // Blocks of two bytes; of one when a word has one byte (the first byte of the key is then 0).
  const firstMask = window >= 2 ? 0xff : 0
  const blockKey = (first: number, second: number) => ((((first | 0x20) & firstMask) << 8) | (second | 0x20))
  // The jump for each block that can end a window: how far it is from the end of each word's
  // first `window` bytes, at its nearest; any other block jumps the whole window less the block.
  const jump = new Uint8Array(65536).fill(Math.min(255, window === 1 ? 1 : window - 1))
  // The words that can end where the jump is 0, by the block there.
  const candidates: Array<Array<Uint8Array> | undefined> = new Array(65536).fill(undefined)
  for (const w of codes) {
    for (let end = window === 1 ? 0 : 1; end < window; end++) {
      const key = blockKey(w[end - 1] ?? 0, w[end]!)
      jump[key] = Math.min(jump[key]!, window - 1 - end)
    }
    ;(candidates[blockKey(w[window - 2] ?? 0, w[window - 1]!)] ??= []).push(w)
  }
  return (bytes) => {
    const n = bytes.length
    for (let end = window - 1; end < n;) {
      const key = ((((bytes[end - 1]! | 0x20) & firstMask) << 8) | (bytes[end]! | 0x20))
      const shift = jump[key]!
      if (shift !== 0) {
        end += shift
        continue
      }
      const start = end - window + 1
      for (const w of candidates[key]!) {
        const len = w.length
        if (start + len > n) continue
        let i = 0
        while (i < len && fold[bytes[start + i]!] === w[i]) i++
        if (i === len) return true
      }
      end++
    }
    return false
  }
}
const anyMarkerAnchor = anyWordMatcher(MARKER_ANCHORS)

export const detectBotWall = (body: Buffer | string | null, status?: number): string | null => {
  if (!body) return null
  const len = typeof body === "string" ? body.length : body.byteLength
  if (len === 0 || len > MAX_SCAN_BYTES) return null
  if (!anyMarkerAnchor(typeof body === "string" ? Buffer.from(body, "latin1") : body)) return null
  const raw = typeof body === "string" ? body : body.toString("utf8")
  // One case-insensitive scan of the page; lower-casing a whole page is only paid when a marker occurs.
  const strong = STRONG_RE.exec(raw)
  if (strong) return strong[0].toLowerCase()
  if (!WEAK_RE.test(raw)) return null
  const html = raw.toLowerCase()
  const success = status !== undefined && status >= 200 && status < 300
  const limit = success ? SMALL_SUCCESS_PAGE_TEXT_CHARS : SMALL_PAGE_TEXT_CHARS
  const visible = visibleText(html, limit + 200)
  const text = visible?.replace(RECAPTCHA_NOTICE, "").trim()
  if (text === undefined || text.length > limit) return null
  // The notice, or an invisible or score-only reCAPTCHA, is a form's guard, not a wall.
  const invisibleCaptcha = text !== visible || /data-size=["']?invisible|recaptcha\/api\.js\?render=/.test(html)
  const title = titleText(html)
  for (const m of WEAK_MARKERS) if (text.includes(m) || title.includes(m)) return m
  // a captcha widget on an otherwise empty page
  if (text.length < 300 && !invisibleCaptcha && /g-recaptcha|h-captcha|hcaptcha\.com|cf-turnstile|recaptcha\/api/.test(html)) return "captcha-widget"
  return null
}

/** Whether a body holds nothing but white space (ASCII, or UTF-8 white space such as a no-break space or a BOM). */
const isBlank = (body: Buffer | null): boolean => {
  if (!body) return true
  for (let i = 0; i < body.byteLength; i++) {
    const b = body[i]!
    if (b === 0x20 || (b >= 0x09 && b <= 0x0d)) continue
    if (b < 0x80) return false
    const ch = body.toString("utf8", i, Math.min(i + 4, body.byteLength)).charAt(0)
    if (ch === "\ufffd" || !/\s/.test(ch)) return false
    i += Buffer.byteLength(ch) - 1
  }
  return true
}

/** A page with scripts and at most this much visible text (its title aside) shows what its scripts build. */
const SHELL_TEXT_CHARS = 30
/** The marker of an `empty` classification given to a script shell. */
export const SCRIPT_SHELL = "script-shell"

/**
 * Whether a page is a shell its scripts fill in (`<div id="root"></div>` and a bundle): next to no
 * visible text but its title, and a script. Only a browser shows such a page, so it is `empty` to
 * the http engine and escalates (docs/crawling.md, "Escalation"). Tags in upper case are not
 * recognized, which errs towards reading the page as it is.
 */
const isScriptShell = (body: Buffer | null): boolean => {
  if (!body || body.byteLength > MAX_SCAN_BYTES || body.indexOf("<script") < 0) return false
  const html = body.toString("latin1")
  const text = visibleText(html, SHELL_TEXT_CHARS + 300)
  if (text === undefined) return false
  const title = collapse(titleText(html)).trim()
  return (title === "" ? text : text.replace(title, "")).trim().length <= SHELL_TEXT_CHARS
}

/**
 * The classification of a failed `checkUrl`: a refusal is `unsafe_url`; a name that does not
 * resolve is `dns_error`, and a resolver that did not answer in time is a `timeout` (retried), as
 * `classifyError` has it.
 */
export const classifyCheckFailure = (r: { readonly reason: string; readonly code?: string | undefined }): "unsafe_url" | "dns_error" | "timeout" =>
  r.reason !== "dns_error" ? "unsafe_url" : r.code !== undefined && TIMEOUT_CODES.has(r.code) ? "timeout" : "dns_error"

/**
 * Classification of a response the target answered with. `scriptsRun`: whether the body is what a
 * browser made of the page; a body read without running its scripts is `empty` when it is only a
 * script shell (see `isScriptShell`).
 */
export const classifyResponse = (status: number, body: Buffer | null, scriptsRun = true): { classification: Classification; marker?: string } => {
  if (status === 403 || status === 429 || status === 503 || (status >= 200 && status < 300)) {
    const marker = detectBotWall(body, status)
    if (marker) return { classification: "blocked", marker }
  }
  if (status === 403 || status === 429) return { classification: "blocked" }
  if (status === 404 || status === 410) return { classification: "not_found" }
  if (status >= 500) return { classification: "server_error" }
  if (status >= 200 && status < 300 && isBlank(body)) return { classification: "empty" }
  if (!scriptsRun && status >= 200 && status < 300 && isScriptShell(body)) return { classification: "empty", marker: SCRIPT_SHELL }
  // Any other status the target answered with (401, 451, 3xx without Location, ...) is content.
  return { classification: "ok" }
}

const DNS_CODES = new Set(["ENOTFOUND", "EAI_FAIL", "EAI_NODATA", "EAI_NONAME", "ENODATA", "ESERVFAIL", "EDNS"])
// EAI_AGAIN is a resolver that did not answer in time (the guard's own lookup deadline gives it too):
// a passing fault worth a retry, unlike a name that does not exist.
const TIMEOUT_CODES = new Set(["EAI_AGAIN", "ETIMEDOUT", "ESOCKETTIMEDOUT", "UND_ERR_CONNECT_TIMEOUT", "UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"])

const codesOf = (e: unknown): string[] => {
  const out: string[] = []
  let cur: unknown = e
  for (let i = 0; i < 5 && cur && typeof cur === "object"; i++) {
    const c = (cur as { code?: unknown }).code
    if (typeof c === "string") out.push(c)
    const n = (cur as { name?: unknown }).name
    if (typeof n === "string") out.push(n)
    cur = (cur as { cause?: unknown }).cause
  }
  return out
}

const messagesOf = (e: unknown): string => {
  const parts: string[] = []
  let cur: unknown = e
  for (let i = 0; i < 5 && cur; i++) {
    parts.push(String((cur as { message?: unknown }).message ?? cur))
    cur = (cur as { cause?: unknown }).cause
  }
  return parts.join(" | ")
}

/** Classification of a failure (no usable response): HTTP client errors and browser net errors. */
export const classifyError = (e: unknown): Classification => {
  if (isUnsafeAddressError(e)) return "unsafe_url"
  const codes = codesOf(e)
  const msg = messagesOf(e)
  if (codes.some((c) => DNS_CODES.has(c)) || /ERR_NAME_NOT_RESOLVED|ERR_NAME_RESOLUTION_FAILED|NS_ERROR_UNKNOWN_HOST/.test(msg)) {
    return "dns_error"
  }
  if (
    codes.some((c) => TIMEOUT_CODES.has(c) || c === "TimeoutError") ||
    /ERR_TIMED_OUT|ERR_CONNECTION_TIMED_OUT|NS_ERROR_NET_TIMEOUT|Timeout \d+ms exceeded/.test(msg)
  ) {
    return "timeout"
  }
  if (
    codes.some((c) => /^(ERR_TLS|ERR_SSL|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED|ERR_OSSL)/.test(c)) ||
    /ERR_CERT_|ERR_SSL_|SSL_ERROR_|SEC_ERROR_|ssl3_|tls_process|wrong version number|handshake failure/i.test(msg)
  ) {
    return "tls_error"
  }
  if (codes.includes("AbortError") || codes.includes("ABORT_ERR") || codes.includes("ERR_ABORTED")) return "cancelled"
  return "connection_error"
}

/**
 * Short human-readable text of an error for `Attempt.error`. Cancellations and the browser's
 * timeouts are said plainly rather than in the words of the library that raised them.
 */
export const errorText = (e: unknown): string => {
  const all = codesOf(e)
  if (all.includes("AbortError") || all.includes("ABORT_ERR")) return "cancelled"
  const timeout = /Timeout (\d+)ms exceeded/.exec(messagesOf(e))
  if (timeout) return `timed out after ${timeout[1]} ms`
  const codes = all.filter((c) => c !== "Error" && c !== "RequestError")
  const msg = String((e as { message?: unknown })?.message ?? e).split("\n")[0]!.slice(0, 300)
  return codes.length > 0 && !msg.includes(codes[0]!) ? `${codes[0]}: ${msg}` : msg
}
