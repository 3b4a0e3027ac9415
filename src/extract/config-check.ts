/**
 * What an extractor config's payload would fail on, found when the config is written rather than
 * on every extraction it applies to: CSS selectors that do not parse, JSON paths that do not parse,
 * post-processing operations that are unknown or have invalid options, and option values nested
 * deeper than any operation reads.
 */
import type { ErrorDetail } from "../schema/errors.ts"
import { type ConfigPayload, MAX_CONFIG_FIELDS, MAX_FIELD_NAME, MAX_FIELD_OPERATIONS, MAX_PAYLOAD_JSON, RESERVED_NAMES } from "../schema/extraction.ts"
import { isExtractError } from "./errors.ts"
import { parseSelector } from "./html/selector.ts"
import { parseJsonPath } from "./json-path.ts"
import { applyPostProcess } from "./post-process.ts"

/** Post-processing options are flat objects of text, numbers and flags: 8 levels is far more than any needs. */
const MAX_OPTION_DEPTH = 8

/** The depth of a JSON value (a scalar is 0), measured without recursion; stops counting past `limit`. */
const depthOf = (value: unknown, limit: number): number => {
  let deepest = 0
  const stack: Array<{ readonly value: unknown; readonly depth: number }> = [{ value, depth: 0 }]
  while (stack.length > 0) {
    const { value: v, depth } = stack.pop()!
    deepest = Math.max(deepest, depth)
    if (deepest > limit) return deepest
    if (v !== null && typeof v === "object") for (const item of Object.values(v)) stack.push({ value: item, depth: depth + 1 })
  }
  return deepest
}

const problem = (path: string, message: string): ErrorDetail => ({ path, code: "invalid_value", message })

/**
 * The size of `value` as UTF-8 JSON, in bytes (what "64 KiB" means); 0 for a value nested too
 * deeply to write, which only options can be, and which the depth check below refuses with a
 * clearer message.
 */
const jsonLength = (value: unknown): number => {
  try {
    return Buffer.byteLength(JSON.stringify(value))
  } catch {
    return 0
  }
}

/** Characters as the OpenAPI document counts them (code points: an emoji is one, not two UTF-16 units). */
const characters = (s: string) => [...s].length

/**
 * The payload's size and shape beyond what its schema checks (checked when a config is written, so
 * configs stored before a bound existed are still read and served).
 */
const boundProblems = (payload: ConfigPayload, at: string): Array<ErrorDetail> => {
  const problems: Array<ErrorDetail> = []
  if (jsonLength(payload) > MAX_PAYLOAD_JSON) problems.push(problem(at, `is larger than ${MAX_PAYLOAD_JSON / 1024} KiB as JSON`))
  for (const [part, map] of [["selectors", payload.selectors], ["postProcess", payload.postProcess]] as const) {
    const names = Object.keys(map ?? {})
    if (names.length > MAX_CONFIG_FIELDS) problems.push(problem(`${at}.${part}`, `names ${names.length} fields; at most ${MAX_CONFIG_FIELDS}`))
    for (const name of names) {
      if (name.length === 0 || characters(name) > MAX_FIELD_NAME) problems.push(problem(`${at}.${part}`, `field names are 1 to ${MAX_FIELD_NAME} characters`))
      else if (RESERVED_NAMES.has(name)) problems.push(problem(`${at}.${part}.${name}`, "is not a field name a config may use"))
    }
  }
  payload.fields?.forEach((name, i) => {
    if (name.trim().length === 0 || characters(name) > MAX_FIELD_NAME) problems.push(problem(`${at}.fields.${i}`, `field names are 1 to ${MAX_FIELD_NAME} characters, not only white space`))
  })
  for (const [field, selectors] of Object.entries(payload.selectors ?? {})) {
    selectors.forEach((s, i) => {
      if (s.css === undefined && s.json === undefined) problems.push(problem(`${at}.selectors.${field}.${i}`, "needs css or json"))
    })
  }
  for (const [field, ops] of Object.entries(payload.postProcess ?? {})) {
    if (Object.keys(ops).length > MAX_FIELD_OPERATIONS) problems.push(problem(`${at}.postProcess.${field}`, `at most ${MAX_FIELD_OPERATIONS} operations`))
  }
  return problems
}

export const configPayloadProblems = (payload: ConfigPayload, at = "payload"): Array<ErrorDetail> => {
  const problems: Array<ErrorDetail> = boundProblems(payload, at)
  // A payload far out of bounds is not also parsed field by field.
  if (problems.length > 0) return problems
  const parses = (path: string, parse: () => unknown) => {
    try {
      parse()
    } catch (e) {
      problems.push(problem(path, e instanceof Error ? e.message : String(e)))
    }
  }
  if (payload.rootSelector !== undefined) parses(`${at}.rootSelector`, () => parseSelector(payload.rootSelector!))
  for (const [field, selectors] of Object.entries(payload.selectors ?? {})) {
    selectors.forEach((s, i) => {
      if (s.css !== undefined) parses(`${at}.selectors.${field}.${i}.css`, () => parseSelector(s.css!))
      if (s.json !== undefined && s.json.trim() !== "") parses(`${at}.selectors.${field}.${i}.json`, () => parseJsonPath(s.json!))
    })
  }
  for (const [field, ops] of Object.entries(payload.postProcess ?? {})) {
    const path = `${at}.postProcess.${field}`
    if (depthOf(ops, MAX_OPTION_DEPTH) > MAX_OPTION_DEPTH) {
      problems.push(problem(path, `options nested deeper than ${MAX_OPTION_DEPTH} levels`))
      continue
    }
    // Run once on an empty value: an unknown operation or invalid options throw as they would on a
    // page. Empty, because this runs on the request's thread: a tenant's pattern that backtracks
    // without end (`((.*)*)*x`) has no characters to do it on here (pages are read in a time-limited worker).
    for (const [op, options] of Object.entries(ops)) {
      try {
        applyPostProcess(field, "", { [op]: options }, { url: null })
      } catch (e) {
        problems.push(problem(`${path}.${op}`, isExtractError(e) ? e.message : e instanceof Error ? e.message : String(e)))
      }
    }
  }
  return problems
}
