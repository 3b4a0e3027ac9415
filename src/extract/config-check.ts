/**
 * What an extractor config's payload would fail on, found when the config is written rather than
 * on every extraction it applies to: CSS selectors that do not parse, JSON paths that do not parse,
 * post-processing operations that are unknown or have invalid options, and option values nested
 * deeper than any operation reads.
 */
import type { ErrorDetail } from "../schema/errors.ts"
import type { ConfigPayload } from "../schema/extraction.ts"
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

export const configPayloadProblems = (payload: ConfigPayload, at = "payload"): Array<ErrorDetail> => {
  const problems: Array<ErrorDetail> = []
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
    // Run once on a sample value: an unknown operation or invalid options throw as they would on a page.
    for (const [op, options] of Object.entries(ops)) {
      try {
        applyPostProcess(field, "sample 1", { [op]: options }, { url: null })
      } catch (e) {
        problems.push(problem(`${path}.${op}`, isExtractError(e) ? e.message : e instanceof Error ? e.message : String(e)))
      }
    }
  }
  return problems
}
