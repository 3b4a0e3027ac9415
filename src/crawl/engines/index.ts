/**
 * The node's engine set, built once at start from configuration (README.md, "Configuration"; docs/crawling.md, "Engines").
 */
import type { CrawlConfig } from "../config.ts"
import type { AddressClassifier } from "../ssrf.ts"
import { DEFAULT_CRAWL_CONFIG } from "../config.ts"
import { createBrowserEngine } from "./browser.ts"
import { createHttpEngine } from "./http.ts"
import { Semaphore } from "../semaphore.ts"
import type { Engine, EngineName } from "./types.ts"

export interface EngineSettings {
  /** BRAVE_PATH; default /usr/bin/chromium. */
  bravePath?: string | undefined
  /** CAMOUFOX_PATH; unset → camoufox is `engine_unavailable`. */
  camoufoxPath?: string | undefined
  /** ALTERNATE_PROXY_URL; unset → `alternate` goes direct. */
  alternateProxyUrl?: string | undefined
  crawl?: CrawlConfig
  /** The SSRF address classifier (default `classifyAddress`). */
  classify?: AddressClassifier
}

export type EngineSet = Record<EngineName, Engine> & { close(): Promise<void> }

/** One long-lived instance of every engine; call `close()` on shutdown. */
export const createEngines = (s: EngineSettings = {}): EngineSet => {
  const c = s.crawl ?? DEFAULT_CRAWL_CONFIG
  const guard = s.classify ? { classify: s.classify } : {}
  const httpCommon = {
    ...guard,
    maxBodyBytes: c.maxBodyBytes,
    maxRedirects: c.maxRedirects,
    transport: c.http.transport,
    maxSocketsPerOrigin: c.http.maxSocketsPerOrigin,
    headerPoolSize: c.http.headerPoolSize
  }
  const browserCommon = {
    ...guard,
    maxBodyBytes: c.maxBodyBytes,
    // One cap on open pages for the node, whichever browser engine opens them.
    pageSlots: new Semaphore(Math.max(1, c.browser.maxPages)),
    maxTransferBytes: c.browser.maxTransferBytes,
    recycleAfterPages: c.browser.recycleAfterPages,
    settleMs: c.browser.settleMs,
    challengeWaitMs: c.browser.challengeWaitMs
  }
  const engines = {
    http: createHttpEngine({ ...httpCommon, name: "http" }),
    alternate: createHttpEngine({ ...httpCommon, name: "alternate", proxyUrl: s.alternateProxyUrl }),
    brave: createBrowserEngine({ ...browserCommon, name: "brave", executablePath: s.bravePath }),
    camoufox: createBrowserEngine({ ...browserCommon, name: "camoufox", executablePath: s.camoufoxPath })
  }
  return {
    ...engines,
    close: async () => {
      await Promise.all(Object.values(engines).map((e) => e.close?.()))
    }
  }
}
