export * from "./ssrf.js"
export * from "./domain.js"
export * from "./escalation.js"
export * from "./config.js"
export * from "./semaphore.js"
export * from "./engines/types.js"
export { classifyError, classifyResponse, detectBotWall } from "./engines/classify.js"
export { createHttpEngine, type HttpEngineOptions } from "./engines/http.js"
export {
  createBrowserEngine,
  createBraveEngine,
  createCamoufoxEngine,
  CHROMIUM_BASE_ARGS,
  DEFAULT_CHROMIUM_PATH,
  type BrowserEngineOptions
} from "./engines/browser.js"
export { startGuardProxy, type GuardProxy } from "./engines/guard-proxy.js"
export { createEngines, type EngineSet, type EngineSettings } from "./engines/index.js"
