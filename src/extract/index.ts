/** Public surface of the extraction engine. */
export { extract, MAX_PROCESSED_CHARS, MAX_CONTENT_CHARS } from "./extract.js"
export * from "./types.js"
export { ExtractError, isExtractError, type ExtractErrorClass } from "./errors.js"
export { parsePrice, parseNumber, detectCurrency, type ParsedPrice, type NumberLocale } from "./product/price.js"
export { detectLanguage, normalizeLang } from "./language.js"
export { applyPostProcess } from "./post-process.js"
