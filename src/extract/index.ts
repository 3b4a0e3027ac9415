/** Public surface of the extraction engine. */
export { extract, MAX_PROCESSED_CHARS, MAX_CONTENT_CHARS } from "./extract.ts"
export * from "./types.ts"
export { ExtractError, isExtractError, type ExtractErrorClass } from "./errors.ts"
export { parsePrice, parseNumber, detectCurrency, type ParsedPrice, type NumberLocale } from "./product/price.ts"
export { detectLanguage, normalizeLang } from "./language.ts"
export { applyPostProcess } from "./post-process.ts"
