/**
 * Browser engines driven by Playwright: `brave` (Chromium family, default the system Chromium at
 * /usr/bin/chromium, BRAVE_PATH overrides) and `camoufox` (a Firefox build, CAMOUFOX_PATH).
 *
 * One long-lived browser per engine instance (per node), a fresh context per fetch (always
 * closed), a cap on concurrent pages, and the browser recycled after N pages (a retiring browser
 * closes once its last page is done).
 *
 * SSRF: the target is checked (resolve + classify) before the browser is involved; every request
 * of the context goes through `context.route('**' + '/*')` (scheme + resolve + classify, refused ones
 * aborted) and through a per-fetch guard proxy (guard-proxy.ts) that resolves names itself with the
 * safe lookup, so redirect hops (invisible to `route`) and DNS rebinding are covered too.
 */
import { access, constants } from "node:fs/promises"
import type { Browser, BrowserContext, Page, Request, Response } from "playwright-core"
import { looksBinary, usableContentType } from "../content-type.ts"
import { type AddressClassifier, checkUrl, type CheckResult, type LookupFunction, parseTargetUrl } from "../ssrf.ts"
import { Semaphore } from "../semaphore.ts"
import { classifyCheckFailure, classifyError, classifyResponse, errorText } from "./classify.ts"
import { type GuardProxy, startGuardProxy } from "./guard-proxy.ts"
import { type Attempt, type Classification, type Engine, emptyAttempt, type FetchRequest } from "./types.ts"

export const DEFAULT_CHROMIUM_PATH = "/usr/bin/chromium"

/**
 * The content type of a rendered page: the page is serialized from the DOM as UTF-8 whatever
 * charset the site sent, so a charset the header names is replaced with utf-8 (stored bytes and
 * their label must agree).
 */
export const renderedContentType = (contentType: string | null): string | null =>
  contentType !== null && /html|xml|text\//i.test(contentType) ? withUtf8Charset(contentType) : contentType

/** `contentType` with `charset=utf-8` in the place of any charset it names. */
const withUtf8Charset = (contentType: string): string =>
  `${contentType.split(";").filter((part, i) => i === 0 || !/^\s*charset\s*=/i.test(part)).join(";").trim()}; charset=utf-8`

/** Types Chromium hands over decoded as text (re-encoded as UTF-8 by Playwright) even without a charset. */
const DECODED_TYPE = /^\s*(text\/|[^;]*[+/](xml|json)\s*(;|$)|application\/(javascript|ecmascript|x-javascript))/i

/**
 * Run in the page before a full-page capture: lazy images and frames are made eager, the page is
 * scrolled through once (for content that loads when it comes into view) and back to the top, then
 * the images are waited for until each has loaded or failed, all within `budgetMs`. Source text,
 * as `boundedMarkup` is, and run in a world of its own where the page's scripts cannot change what
 * it calls.
 */
const lazyLoadScript = (budgetMs: number, step: number) => `(async () => {
  const until = Date.now() + ${budgetMs}
  const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
  for (const el of document.querySelectorAll('img[loading="lazy"], iframe[loading="lazy"]')) el.loading = "eager"
  const height = document.documentElement ? document.documentElement.scrollHeight : 0
  for (let y = ${step}, n = 0; y < height && n < 100 && Date.now() < until - 100; y += ${step}, n++) {
    window.scrollTo(0, y)
    await pause(30)
  }
  window.scrollTo(0, 0)
  while (Date.now() < until && Array.from(document.images).some((img) => !img.complete)) await pause(50)
})()`

/**
 * Loads what a full-page capture shows (see `lazyLoadScript`), for at most `budgetMs`: a page
 * that stalls its renderer cannot hold the attempt past that. What this loads still counts towards
 * the attempt's transfer cap.
 */
const loadLazyContent = async (page: Page, kind: "chromium" | "firefox", budgetMs: number) => {
  const script = lazyLoadScript(budgetMs, page.viewportSize()?.height ?? 768)
  const run = kind === "chromium" ? evaluateInOwnWorld(page, script) : page.evaluate(script)
  let timer: NodeJS.Timeout | undefined
  await Promise.race([run.catch(() => {}), new Promise<void>((resolve) => (timer = setTimeout(resolve, budgetMs + 250)))])
  clearTimeout(timer)
}

/** How long the bytes the target sent are waited for, once the page has been read. */
const SENT_BODY_WAIT_MS = 5_000

/** The bytes of `response` as the target sent them, or null when unavailable or not there within `ms`. */
const sentBody = (response: Response, ms: number): Promise<Buffer | null> =>
  new Promise((resolve) => {
    const timer = setTimeout(() => resolve(null), ms)
    response.body().then(
      (bytes) => (clearTimeout(timer), resolve(bytes)),
      () => (clearTimeout(timer), resolve(null))
    )
  })

/**
 * Run in the page: its markup (doctype and document element, as `page.content()` gives it), or
 * only its length when that passes `max` characters, so that a page of any size (a script can
 * build one) is never carried into this process whole. A document still being parsed (one that
 * just replaced the last, as a refresh to itself does) is read the moment its parsing ends, or
 * after `waitMs` as it stands (an answer that never ends): read a moment later it may be gone
 * again. Source text rather than a function: the TypeScript loader may add helpers to a function's
 * text that the page does not have. It runs in a world of its own (see `readMarkup`), where the
 * page's scripts cannot change what it calls.
 */
const boundedMarkup = (max: number, waitMs: number) => `new Promise((resolve) => {
  const read = () => {
    const doctype = document.doctype ? new XMLSerializer().serializeToString(document.doctype) : ""
    const markup = doctype + (document.documentElement ? document.documentElement.outerHTML : "")
    resolve(markup.length > ${max} ? { length: markup.length } : { markup })
  }
  if (document.readyState !== "loading") return read()
  document.addEventListener("DOMContentLoaded", read, { once: true })
  setTimeout(read, ${waitMs})
})`

/**
 * The page's markup, bounded by `max` characters. Chromium reads it in an isolated world of the
 * main frame (its own JavaScript globals over the same DOM), so a page that redefines `outerHTML`
 * or `XMLSerializer` changes nothing; Firefox has no such world here and is read by
 * `page.content()` (Playwright's own isolated read), bounded by the transfer cap only.
 */
const readMarkup = async (page: Page, kind: "chromium" | "firefox", max: number, waitMs: number): Promise<{ markup?: string; length?: number }> =>
  kind === "chromium" ? (await evaluateInOwnWorld(page, boundedMarkup(max, waitMs))) as { markup?: string; length?: number } : { markup: await page.content() }

/**
 * Evaluates `expression` in an isolated world of Chromium's main frame (its own JavaScript globals
 * over the same DOM), awaiting a promise it gives; answers its value.
 */
const evaluateInOwnWorld = async (page: Page, expression: string): Promise<unknown> => {
  const cdp = await page.context().newCDPSession(page)
  try {
    const { frameTree } = await cdp.send("Page.getFrameTree")
    const { executionContextId } = await cdp.send("Page.createIsolatedWorld", { frameId: frameTree.frame.id, worldName: "trawl" })
    const { result, exceptionDetails } = await cdp.send("Runtime.evaluate", {
      expression,
      contextId: executionContextId,
      returnByValue: true,
      awaitPromise: true
    })
    if (exceptionDetails) throw new Error(`evaluating in the page failed: ${exceptionDetails.text}`)
    return result.value
  } finally {
    await cdp.detach().catch(() => {})
  }
}

class MarkupTooLarge extends Error {
  readonly chars: number
  constructor(chars: number) {
    super(`rendered HTML of ${chars} characters`)
    this.chars = chars
  }
}

/**
 * What the bytes a browser gives for a document it showed in a viewer are. Chromium hands text over
 * decoded (text, XML, JSON, scripts, and any type that names a charset) and Playwright encodes it
 * as UTF-8: such text is UTF-8 now, labelled so. A type that is not text but names a charset
 * (`image/png; charset=binary`) was decoded as text too, its bytes spoilt: none are kept.
 */
const sentContentType = (declared: string): { readonly keep: boolean; readonly contentType: string } =>
  DECODED_TYPE.test(declared) ? { keep: true, contentType: withUtf8Charset(declared) }
  : /;\s*charset\s*=/i.test(declared) ? { keep: false, contentType: declared }
  : { keep: true, contentType: declared }

/** How every PDF starts; Chromium answers its viewer's page in the place of a PDF's bytes. */
const PDF_MAGIC = Buffer.from("%PDF-")

/** The markup of a document that nothing made an element of. */
const BARE_DOCUMENT = /^\s*<html><head><\/head><body><\/body><\/html>\s*$/

/** Content types the browser renders as a document of their own (anything else opens in a viewer). */
const MARKUP_TYPE = /^\s*(text\/html|application\/xhtml\+xml)\s*(;|$)/i

/** The JavaScript heap one page's renderer may use (MiB). */
const PAGE_HEAP_MIB = 512

/**
 * The largest screenshot kept: a full-page PNG of a tall, busy page can run to 60 MB, past what
 * the database client reads back in one message (16 MiB), so it could be stored but never served.
 */
export const MAX_SCREENSHOT_BYTES = 10 * 1024 * 1024

/**
 * Flags every Chromium launch gets (headless, no background traffic, no QUIC). WebRTC may use UDP
 * only through a proxy, and there is none for UDP: a page's STUN/TURN packets would otherwise leave
 * the browser directly, past the guard proxy and the route checks, to any address it names.
 */
export const CHROMIUM_BASE_ARGS = [
  "--no-sandbox",
  "--webrtc-ip-handling-policy=disable_non_proxied_udp",
  "--force-webrtc-ip-handling-policy",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-dev-shm-usage",
  "--disable-default-apps",
  "--disable-domain-reliability",
  "--disable-client-side-phishing-detection",
  "--no-pings",
  "--metrics-recording-only",
  // A page's JavaScript heap is bounded, so a page that allocates without end crashes alone at
  // 512 MiB instead of taking gigabytes of the node's memory (4 such pages had reached 5.4 GB).
  `--js-flags=--max-old-space-size=${PAGE_HEAP_MIB}`
]

/**
 * Firefox preferences that silence background connections, turn WebRTC off (its UDP would bypass
 * the guard proxy), and send loopback requests through the proxy too (Firefox skips it for them by
 * default), so every hop meets the guard.
 */
const FIREFOX_QUIET_PREFS: Record<string, string | number | boolean> = {
  "media.peerconnection.enabled": false,
  "network.proxy.allow_hijacking_localhost": true,
  "network.proxy.no_proxies_on": "",
  "app.update.enabled": false,
  "browser.safebrowsing.malware.enabled": false,
  "browser.safebrowsing.phishing.enabled": false,
  "network.captive-portal-service.enabled": false,
  "network.connectivity-service.enabled": false,
  "toolkit.telemetry.enabled": false,
  "datareporting.policy.dataSubmissionEnabled": false,
  "network.http.http3.enable": false,
  "network.dns.disablePrefetch": true,
  "network.prefetch-next": false
}

export interface BrowserEngineOptions {
  name: "brave" | "camoufox"
  /** Browser binary; `brave` defaults to /usr/bin/chromium, `camoufox` has no default. */
  executablePath?: string | undefined
  /** Concurrent pages of this engine, unless `pageSlots` is given. Default 4. */
  maxPages?: number
  /** Pages served before the browser is replaced. Default 100. */
  recycleAfterPages?: number
  /** Cap on the rendered HTML size. Default 10 MiB. */
  maxBodyBytes?: number
  /** Cap on what one fetch downloads in all (the page and its resources). Default 5 x maxBodyBytes. */
  maxTransferBytes?: number
  /** The page slots, shared by the node's browser engines (the cap is per node). Default: its own, of `maxPages`. */
  pageSlots?: Semaphore
  /** Extra launch arguments (tests use --host-resolver-rules). */
  launchArgs?: string[]
  /** After `load`, wait up to this long for the network to go idle (JS-injected content). Default 2000. */
  settleMs?: number
  /** When the page looks like a wall, wait up to this long for it to navigate by itself. Default 8000. */
  challengeWaitMs?: number
  /** Test hooks for the SSRF guard. */
  lookup?: LookupFunction
  classify?: AddressClassifier
}

interface BrowserSlot {
  browser: Browser
  served: number
  active: number
  retiring: boolean
}

/**
 * Why the redirect `response` answers is refused: its Location as written (scheme, credentials),
 * which the route checks never see (Playwright routes a chain's first request only, and Chromium
 * takes the credentials out of the URL it follows). Undefined when it is no redirect or passes;
 * where the next hop connects is the guard proxy's to judge.
 */
const redirectRefusal = (response: Response, allowPrivate: boolean): string | undefined => {
  const location = response.status() >= 300 && response.status() < 400 ? response.headers()["location"] : undefined
  if (location === undefined || !URL.canParse(location, response.url())) return undefined
  const checked = parseTargetUrl(new URL(location, response.url()).href, { allowPrivate })
  return checked.ok ? undefined : `${location}: ${checked.reason}: ${checked.detail}`
}

const PASSTHROUGH_SCHEMES = new Set(["data:", "blob:", "about:"])

/** What a screenshot with `loadResources: false` renders without. */
const SKIPPABLE_RESOURCES = new Set(["image", "media", "font"])

/** How long an aborted or timed-out attempt waits for the browser to wind down before it answers anyway. */
const ABORT_GRACE_MS = 2_000

export const createBrowserEngine = (opts: BrowserEngineOptions): Engine => {
  const name = opts.name
  const kind = name === "camoufox" ? "firefox" : "chromium"
  const executablePath = opts.executablePath && opts.executablePath.trim() !== "" ? opts.executablePath : name === "brave" ? DEFAULT_CHROMIUM_PATH : undefined
  const maxBody = opts.maxBodyBytes ?? 10 * 1024 * 1024
  const recycleAfter = Math.max(1, opts.recycleAfterPages ?? 100)
  const settleMs = opts.settleMs ?? 2000
  const challengeWaitMs = opts.challengeWaitMs ?? 8000
  const maxTransfer = opts.maxTransferBytes ?? 5 * maxBody
  const pages = opts.pageSlots ?? new Semaphore(Math.max(1, opts.maxPages ?? 4))
  let current: Promise<BrowserSlot> | null = null
  let userAgent: string | undefined
  let closed = false
  const live = new Set<BrowserSlot>()

  const available = async (): Promise<boolean> => {
    if (!executablePath) return false
    try {
      await access(executablePath, constants.X_OK)
      return true
    } catch {
      return false
    }
  }

  const launch = async (): Promise<BrowserSlot> => {
    // Loaded on the first launch: a node that never needs a browser does not pay for Playwright.
    const { chromium, firefox } = await import("playwright-core")
    const browser =
      kind === "chromium"
        ? await chromium.launch({
            executablePath: executablePath!,
            headless: true,
            args: [...CHROMIUM_BASE_ARGS, ...(opts.launchArgs ?? [])],
            timeout: 30_000
          })
        : await firefox.launch({
            executablePath: executablePath!,
            headless: true,
            args: opts.launchArgs ?? [],
            firefoxUserPrefs: FIREFOX_QUIET_PREFS,
            timeout: 30_000
          })
    if (kind === "chromium" && !userAgent) {
      // headless Chromium announces "HeadlessChrome"; present the regular desktop UA instead
      const major = browser.version().split(".")[0]
      userAgent = `Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/${major}.0.0.0 Safari/537.36`
    }
    if (closed) {
      // The engine was closed while this browser started: nothing would ever close it.
      await browser.close().catch(() => {})
      throw new Error("engine closed")
    }
    const slot: BrowserSlot = { browser, served: 0, active: 0, retiring: false }
    live.add(slot)
    browser.on("disconnected", () => {
      live.delete(slot)
      slot.retiring = true
    })
    return slot
  }

  const acquireBrowser = async (): Promise<BrowserSlot> => {
    for (let i = 0; i < 3; i++) {
      if (!current) {
        const p = launch()
        current = p
        p.catch(() => {
          if (current === p) current = null
        })
      }
      const slot = await current
      if (slot.retiring || !slot.browser.isConnected()) {
        if (current && (await current) === slot) current = null
        continue
      }
      slot.active++
      slot.served++
      if (slot.served >= recycleAfter) {
        slot.retiring = true
        current = null
      }
      return slot
    }
    throw new Error("could not obtain a browser")
  }

  const releaseBrowser = (slot: BrowserSlot) => {
    slot.active--
    if ((slot.retiring || closed) && slot.active <= 0) {
      live.delete(slot)
      slot.browser.close().catch(() => {})
    }
  }

  /**
   * The attempt ends at its deadline or on its caller's signal even when a browser step does not
   * (a launch or a context that hangs): the answer comes at most `ABORT_GRACE_MS` after, while the
   * stuck step finishes and cleans up in the background (its page slot is freed only then, so a
   * wedged browser cannot make the engine open more pages than its cap).
   */
  const fetch = async (req: FetchRequest): Promise<Attempt> => {
    const t0 = performance.now()
    const deadline = new AbortController()
    const timer = setTimeout(() => deadline.abort(new DOMException("attempt timed out", "TimeoutError")), req.timeoutMs)
    const signal = req.signal ? AbortSignal.any([req.signal, deadline.signal]) : deadline.signal
    const work = fetchWithin(req, t0, signal, deadline.signal).finally(() => clearTimeout(timer))
    let onAbort: (() => void) | undefined
    let grace: NodeJS.Timeout | undefined
    const abandoned = new Promise<Attempt>((resolve) => {
      onAbort = () => {
        grace = setTimeout(() => {
          const classification: Classification = req.signal?.aborted ? "cancelled" : "timeout"
          resolve(emptyAttempt(name, classification, t0, { finalUrl: req.url, error: `${classification}: the browser did not stop in time` }))
        }, ABORT_GRACE_MS)
      }
      if (signal.aborted) onAbort()
      else signal.addEventListener("abort", onAbort, { once: true })
    })
    try {
      return await Promise.race([work, abandoned])
    } finally {
      clearTimeout(grace)
      signal.removeEventListener("abort", onAbort!)
    }
  }

  const fetchWithin = async (req: FetchRequest, t0: number, signal: AbortSignal, deadlineSignal: AbortSignal): Promise<Attempt> => {
    const remaining = () => req.timeoutMs - (performance.now() - t0)
    // Time the waits for a page to settle leave for reading it (and taking its screenshot): a page
    // whose load never ends (one resource that never answers) is read as it stands, not lost.
    const readReserve = Math.min(req.timeoutMs / 4, req.screenshot ? 6_000 : 2_000)
    const waitBudget = (cap: number) => Math.max(1, Math.min(remaining() - readReserve, cap))
    if (req.signal?.aborted) return emptyAttempt(name, "cancelled", t0, { error: "cancelled before start" })
    if (closed) return emptyAttempt(name, "engine_unavailable", t0, { error: "engine closed" })
    if (!(await available())) {
      return emptyAttempt(name, "engine_unavailable", t0, {
        error: executablePath ? `browser binary not found at ${executablePath}` : `no binary configured for ${name}`
      })
    }
    const guard = { allowPrivate: req.allowPrivate, lookup: opts.lookup, classify: opts.classify }
    const pre = await checkUrl(req.url, guard)
    if (!pre.ok) {
      return emptyAttempt(name, classifyCheckFailure(pre), t0, {
        finalUrl: req.url,
        error: `${pre.reason}: ${pre.detail}`
      })
    }

    // A renderer that crashed (out of its heap, say) answers nothing more: the context is closed at
    // once, which ends every step that waits on it, and the attempt is a connection_error.
    let crashed = false
    const crashText = "the page's renderer crashed (it may have run out of memory)"
    const outcome = (e?: unknown): Classification =>
      req.signal?.aborted ? "cancelled" : deadlineSignal.aborted ? "timeout" : proxy?.overBudget() ? "too_large"
      : crashed || e === undefined ? "connection_error" : classifyError(e)
    const overBudgetText = `the page downloaded more than ${maxTransfer} bytes`

    let releasePage: (() => void) | undefined
    let slot: BrowserSlot | undefined
    let proxy: GuardProxy | undefined
    let context: BrowserContext | undefined
    let onAbort: (() => void) | undefined
    const redirects: string[] = []
    try {
      releasePage = await pages.acquire(signal)
      try {
        slot = await acquireBrowser()
      } catch (e) {
        return emptyAttempt(name, "engine_unavailable", t0, { error: `browser launch failed: ${errorText(e)}` })
      }
      // Past the transfer budget the page is closed at once, so that its navigation ends now.
      proxy = await startGuardProxy({ ...guard, maxInboundBytes: maxTransfer, onOverBudget: () => void context?.close().catch(() => {}) })
      context = await slot.browser.newContext({
        proxy: { server: proxy.url },
        ignoreHTTPSErrors: true,
        javaScriptEnabled: true,
        acceptDownloads: false,
        serviceWorkers: "block",
        locale: "en-US",
        viewport: { width: 1366, height: 768 },
        ...(userAgent ? { userAgent } : {})
      })
      const ctx = context
      onAbort = () => void ctx.close().catch(() => {})
      signal.addEventListener("abort", onAbort, { once: true })
      if (signal.aborted) throw signal.reason

      // A screenshot asked for without resources: the page renders without images, media and fonts.
      const skipResources = req.screenshot ? req.screenshot.loadResources === false : false
      // request-level guard: scheme + resolve + classify, cached per origin for this fetch
      let mainRefusal: string | undefined
      const checks = new Map<string, Promise<CheckResult>>()
      const isMainNavigation = (r: Request) => {
        try {
          return r.isNavigationRequest() && r.frame().parentFrame() === null
        } catch {
          return false
        }
      }
      await context.route("**/*", async (route) => {
        const request = route.request()
        const raw = request.url()
        let u: URL
        try {
          u = new URL(raw)
        } catch {
          return route.abort("blockedbyclient").catch(() => {})
        }
        if (PASSTHROUGH_SCHEMES.has(u.protocol)) return route.continue().catch(() => {})
        if (skipResources && SKIPPABLE_RESOURCES.has(request.resourceType())) return route.abort("blockedbyclient").catch(() => {})
        let verdict = checks.get(u.origin)
        if (!verdict) checks.set(u.origin, (verdict = checkUrl(u, guard)))
        const r = await verdict
        if (!r.ok && r.reason !== "dns_error") {
          if (isMainNavigation(request)) mainRefusal ??= `${raw}: ${r.reason}: ${r.detail}`
          return route.abort("blockedbyclient").catch(() => {})
        }
        return route.continue().catch(() => {})
      })

      const page: Page = await context.newPage()
      page.on("crash", () => {
        crashed = true
        void ctx.close().catch(() => {})
      })
      // Only the page being fetched is kept open: pop-ups a page opens (each a renderer, possibly
      // allocating as much as the page) are closed as they appear, so they cannot pass the node's page cap.
      context.on("page", (opened) => {
        if (opened !== page) opened.close().catch(() => {})
      })
      /** `too_large` for a page past one of the caps, with what its main response said. */
      const tooLarge = (main: Response | null, error: string, contentType: string | null = null) =>
        emptyAttempt(name, "too_large", t0, { httpStatus: main?.status() ?? null, finalUrl: page.url(), contentType, redirects: chainOf(main), error })
      /**
       * The attempt for an answer Chromium refused to show. What Playwright gives as its body then is
       * not what the target sent (Chromium's own error page, or an empty document), so only its
       * status is kept. A 2xx it refused is a download, which a browser cannot show.
       */
      const failedNavigationAnswer = (said: Response, error: string): Attempt => {
        const status = said.status()
        const classification = status >= 200 && status < 300 ? "connection_error" : classifyResponse(status, null).classification
        return emptyAttempt(name, classification, t0, { httpStatus: status, finalUrl: said.url(), redirects: chainOf(said), error })
      }
      let lastMain: Response | null = null
      const failedNavigations: string[] = []
      page.on("response", (r) => {
        if (!isMainNavigation(r.request())) return
        lastMain = r
        const redirected = redirectRefusal(r, req.allowPrivate)
        if (redirected !== undefined) mainRefusal ??= redirected
      })
      page.on("requestfailed", (r) => {
        if (!isMainNavigation(r)) return
        // Chromium refuses a redirect to file:, data: and the like itself, before any response event.
        if (r.failure()?.errorText.includes("ERR_UNSAFE_REDIRECT")) mainRefusal ??= `${r.url()}: scheme_not_allowed: a redirect to a scheme other than http(s)`
        failedNavigations.push(r.url())
      })

      const refusedMain = (): string | undefined => {
        if (mainRefusal) return mainRefusal
        const urls = [...failedNavigations, ...(lastMain ? [(lastMain as Response).url()] : [])]
        for (const u of urls) {
          const r = proxy!.refused(u)
          if (r) return `${r.target}: ${r.reason}`
        }
        return undefined
      }

      let navError: unknown
      try {
        lastMain = (await page.goto(req.url, { waitUntil: "domcontentloaded", timeout: Math.max(1, remaining()) })) ?? lastMain
      } catch (e) {
        navError = e
      }
      const refusal = refusedMain()
      if (refusal) {
        return emptyAttempt(name, "unsafe_url", t0, { finalUrl: page.url(), redirects: chainOf(lastMain), error: `refused: ${refusal}` })
      }
      if (proxy.overBudget()) return tooLarge(lastMain, overBudgetText)
      const answered = lastMain as Response | null
      /**
       * The attempt when the guard proxy could not reach the target of `response` and answered 502
       * in its place: the target said nothing (its text is the proxy's, not the page's).
       */
      const unreachedAttempt = (response: Response | null): Attempt | undefined => {
        const unreached = response?.status() === 502 ? proxy!.unreached(response.url()) : undefined
        if (unreached === undefined) return undefined
        const error = Object.assign(new Error(`the target could not be reached: ${unreached}`), { code: unreached })
        return emptyAttempt(name, classifyError(error), t0, { finalUrl: response!.url(), redirects: chainOf(response), error: error.message })
      }
      const unreachedFirst = unreachedAttempt(answered)
      if (unreachedFirst) return { ...unreachedFirst, finalUrl: req.url }
      // A 204 or 205 answers with no content: the browser stays on its blank page and calls the
      // navigation aborted, but the target did answer.
      if (answered && (answered.status() === 204 || answered.status() === 205)) {
        return emptyAttempt(name, "empty", t0, { httpStatus: answered.status(), finalUrl: answered.url(), redirects: chainOf(answered) })
      }
      if (navError !== undefined || !lastMain) {
        const failure = navError !== undefined ? outcome(navError) : "connection_error"
        // Chromium fails the navigation to some answers it shows nothing for (an empty 4xx or 5xx,
        // a 401 it cannot authenticate, a 304, a download), though the target did answer: then
        // the attempt is that answer, as the http engine would have it. A redirect is no answer.
        const said = navError !== undefined && failure === "connection_error" && answered && !isRedirectResponse(answered) ? answered : null
        if (said) return failedNavigationAnswer(said, errorText(navError))
        return emptyAttempt(name, failure, t0, { finalUrl: req.url, error: crashed ? crashText : navError !== undefined ? errorText(navError) : "no response" })
      }

      // let scripts run: load, then a bounded network-idle wait
      const settle = async () => {
        await page.waitForLoadState("load", { timeout: waitBudget(15_000) }).catch(() => {})
        await page.waitForLoadState("networkidle", { timeout: waitBudget(settleMs) }).catch(() => {})
      }
      await settle()

      // A page that navigates by itself (a challenge's reload) can be read just as its document is
      // replaced; the read fails then, and is tried again once the new document has loaded.
      const readContent = async (): Promise<string> => {
        for (let tries = 0; ; tries++) {
          try {
            const read = await readMarkup(page, kind, maxBody, Math.max(1, Math.min(remaining() - 250, 2_000)))
            if (read.markup === undefined) throw new MarkupTooLarge(read.length ?? 0)
            return read.markup
          } catch (e) {
            if (e instanceof MarkupTooLarge || tries === 2 || remaining() < 250 || page.isClosed()) throw e
            await page.waitForLoadState("domcontentloaded", { timeout: Math.max(1, Math.min(remaining() - 100, 5_000)) }).catch(() => {})
          }
        }
      }

      // a challenge page usually navigates by itself once its script ran (cookie + reload)
      let html = ""
      let verdict: { classification: Classification; marker?: string } = { classification: "ok" }
      for (let round = 0; round < 4; round++) {
        const read = await readContent().catch((e: unknown) => e)
        if (read instanceof MarkupTooLarge) return tooLarge(lastMain, `${read.message}, more than ${maxBody}`)
        if (proxy.overBudget()) return tooLarge(lastMain, overBudgetText)
        // A page that kept replacing its document (a refresh to itself, say) could not be read: that
        // is no answer, not an empty one.
        if (typeof read !== "string") {
          if (signal.aborted) throw signal.reason
          return emptyAttempt(name, outcome(read), t0, {
            httpStatus: (lastMain as Response | null)?.status() ?? null, finalUrl: page.url(), redirects: chainOf(lastMain),
            error: crashed ? crashText : `the page could not be read (it kept replacing its document): ${errorText(read)}`
          })
        }
        html = read
        const main = lastMain as Response
        verdict = classifyResponse(main.status(), Buffer.from(html))
        // only a recognised wall (marker) is worth waiting for; a bare 403/429 will not move
        if (verdict.classification !== "blocked" || !verdict.marker || remaining() < 500 || round === 3) break
        const navigated = await page
          .waitForEvent("framenavigated", {
            predicate: (f) => f === page.mainFrame(),
            timeout: waitBudget(challengeWaitMs)
          })
          .then(() => true)
          .catch(() => false)
        if (!navigated) break
        await settle()
      }
      if (signal.aborted) throw signal.reason

      const refusalAfter = refusedMain()
      if (refusalAfter) {
        return emptyAttempt(name, "unsafe_url", t0, { finalUrl: page.url(), redirects: chainOf(lastMain), error: `refused: ${refusalAfter}` })
      }
      const main = lastMain as Response
      // The page went on to a target the proxy could not reach (a script's navigation after load).
      const unreachedLater = unreachedAttempt(main)
      if (unreachedLater) return unreachedLater
      // For an empty 404, say, Chromium may show an error page of its own (once the navigation
      // seemed to succeed): that is not what the target sent.
      if (page.url().startsWith("chrome-error:") && !isRedirectResponse(main)) {
        return failedNavigationAnswer(main, `the browser showed its own error page for HTTP ${main.status()}`)
      }
      redirects.push(...chainOf(main))
      const headers = await main.allHeaders().catch(() => main.headers())
      const declaredType = usableContentType(headers["content-type"])
      // A document that is not markup (JSON, an image, plain text) is shown in one of the browser's
      // viewers, whose HTML is not what the target answered: its own bytes are kept instead. A markup
      // page the browser shows with no text at all may have been an empty answer. Only then are the
      // bytes the target sent read (bounded in time: an answer that never ends must not hold the
      // attempt; unavailable for some answers, when the rendered page stands).
      const viewer = declaredType !== null && !MARKUP_TYPE.test(declaredType)
      // An answer without a type is sniffed by the browser, which shows an image or a PDF in a
      // viewer too: its bytes are read, and kept when they are not text.
      const untyped = declaredType === null
      const looksEmpty = !viewer && html.length < 4096 && !/\S/.test(html.replace(/<[^>]*>/g, ""))
      const declaredBytes = Number(headers["content-length"])
      if (viewer && Number.isFinite(declaredBytes) && declaredBytes > maxBody) {
        return emptyAttempt(name, "too_large", t0, {
          httpStatus: main.status(), finalUrl: page.url(), contentType: declaredType, bytes: declaredBytes, redirects,
          error: `body larger than ${maxBody} bytes`
        })
      }
      const sent = viewer || looksEmpty || untyped
        ? await sentBody(main, Math.max(1, Math.min(remaining() - 250, SENT_BODY_WAIT_MS)))
        : null
      if (signal.aborted) throw signal.reason
      if (proxy.overBudget()) return tooLarge(main, overBudgetText, declaredType)
      const sentAs = viewer && declaredType !== null ? sentContentType(declaredType) : undefined
      const keepSent = sent !== null && ((viewer && sentAs?.keep === true) || (untyped && looksBinary(sent)))
      // An answer of no bytes at all is kept as that, not as the empty document the browser made of it.
      const body = keepSent || sent?.byteLength === 0 ? sent! : Buffer.from(html)
      // Without the bytes it was sent, a document is kept as the markup the browser shows, and
      // labelled as what it is. So is a PDF: Chromium answers its viewer's page for it.
      const pdfViewer = keepSent && declaredType !== null && /^\s*application\/pdf/i.test(declaredType) && !body.subarray(0, 5).equals(PDF_MAGIC)
      const contentType = (viewer && !keepSent) || pdfViewer ? "text/html; charset=utf-8"
        : keepSent ? sentAs?.contentType ?? null
        : renderedContentType(declaredType)
      if (keepSent) verdict = classifyResponse(main.status(), sent)
      // An empty answer is empty, though the browser shows it as an empty document. So is one whose
      // bytes could not be read (a body of blanks past the browser's buffer) when the document it
      // made has no element at all.
      else if (sent !== null ? classifyResponse(main.status(), sent).classification === "empty" : looksEmpty && BARE_DOCUMENT.test(html)) {
        verdict = { classification: "empty" }
      }
      if (body.byteLength > maxBody) {
        return emptyAttempt(name, "too_large", t0, {
          httpStatus: main.status(),
          finalUrl: page.url(),
          contentType,
          bytes: body.byteLength,
          redirects,
          error: `${keepSent ? "body" : "rendered HTML"} larger than ${maxBody} bytes`
        })
      }

      // Where the content came from, read before a screenshot's scrolling can move the page on.
      const finalUrl = page.url()
      let screenshot: Buffer | null = null
      let screenshotUnavailable: string | undefined
      if (req.screenshot) {
        const s = req.screenshot
        try {
          if (s.fullPage && s.loadResources !== false) await loadLazyContent(page, kind, waitBudget(5_000))
          screenshot = await page.screenshot({
            type: s.format,
            ...(s.format === "jpeg" ? { quality: Math.min(100, Math.max(0, Math.round(s.quality ?? 80))) } : {}),
            fullPage: s.fullPage ?? false,
            // Within the attempt: a capture that cannot finish in time is left out, the page kept.
            timeout: Math.max(1, Math.min(remaining() - 250, 30_000)),
            animations: "disabled"
          })
        } catch (e) {
          if (signal.aborted) throw signal.reason
          screenshotUnavailable = `screenshot failed: ${errorText(e)}`
        }
        if (screenshot && screenshot.byteLength > MAX_SCREENSHOT_BYTES) {
          screenshotUnavailable = `the screenshot was ${screenshot.byteLength} bytes, more than the ${MAX_SCREENSHOT_BYTES} kept (a JPEG, or the viewport only, is smaller)`
          screenshot = null
        }
        // A full-page capture can load more of the page (lazy images) past the transfer cap.
        if (proxy.overBudget()) return tooLarge(main, overBudgetText, contentType)
      }

      return {
        engine: name,
        classification: verdict.classification,
        httpStatus: main.status(),
        finalUrl,
        contentType,
        body,
        bytes: body.byteLength,
        screenshot,
        ...(screenshotUnavailable ? { screenshotUnavailable } : {}),
        durationMs: Math.round(performance.now() - t0),
        redirects,
        ...(verdict.marker ? { error: `bot wall detected (${verdict.marker})` } : {})
      }
    } catch (e) {
      return emptyAttempt(name, outcome(e), t0, {
        finalUrl: req.url,
        redirects,
        error: signal.aborted ? String((signal.reason as Error)?.message ?? "aborted") : proxy?.overBudget() ? overBudgetText
          : crashed ? crashText : errorText(e)
      })
    } finally {
      if (onAbort) signal.removeEventListener("abort", onAbort)
      if (context) await context.close().catch(() => {})
      if (proxy) await proxy.close().catch(() => {})
      if (slot) releaseBrowser(slot)
      releasePage?.()
    }
  }

  return {
    name,
    available,
    fetch,
    close: async () => {
      closed = true
      const slots = [...live]
      live.clear()
      current = null
      await Promise.all(slots.map((s) => s.browser.close().catch(() => {})))
    }
  }
}

/** A redirect hop's answer: the navigation went on from it. */
const isRedirectResponse = (response: Response) => response.status() >= 300 && response.status() < 400 && response.headers()["location"] !== undefined

/** URLs that answered with a redirect before `response`, oldest first. */
const chainOf = (response: Response | null): string[] => {
  const out: string[] = []
  let r = response?.request().redirectedFrom() ?? null
  while (r) {
    out.unshift(r.url())
    r = r.redirectedFrom()
  }
  return out
}

/** Convenience factories matching the contract's variables. */
export const createBraveEngine = (o: Omit<BrowserEngineOptions, "name"> & { bravePath?: string | undefined } = {}) =>
  createBrowserEngine({ ...o, name: "brave", executablePath: o.bravePath ?? o.executablePath })

export const createCamoufoxEngine = (o: Omit<BrowserEngineOptions, "name"> & { camoufoxPath?: string | undefined } = {}) =>
  createBrowserEngine({ ...o, name: "camoufox", executablePath: o.camoufoxPath ?? o.executablePath })
