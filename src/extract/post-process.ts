/**
 * Per-field post-processing of extractor configs: `postProcess: { <field>: { <op>: <options>, ... } }`.
 * Operations run in the order their keys are written. Each works on a string, on a number
 * where that makes sense, and element-wise on lists.
 *
 * | op | options | effect |
 * |---|---|---|
 * | `regexReplace` | `{pattern, replacement?, flags?}` (default flags `g`) | `String.replace` |
 * | `parseNumber` | `{locale?: "auto"\|"de"\|"en"}` | first number of the text (see `product/price.ts`) |
 * | `absoluteUrl` | `{}` (`base?`) | resolves against the input URL; non-http(s) becomes absent |
 * | `trim` | `{}` | trims and collapses white space |
 * | `lowercase` / `uppercase` | `{}` | case mapping |
 * | `split` | `{separator, limit?}` | string → list of trimmed, non-empty parts |
 * | `join` | `{separator?}` | list → string (default `", "`) |
 * | `prefix` / `suffix` | `{value}` | adds text |
 * | `default` | `{value}` | value when the field is absent or empty |
 * | `truncate` | `{length}` | cuts to at most `length` characters |
 * Unknown operations or invalid options throw `ExtractError("invalid_input")`.
 */
import { ExtractError } from "./errors.ts"
import { parseNumber, type NumberLocale } from "./product/price.ts"
import { absoluteUrl } from "./url.ts"

export type FieldValue = string | number | boolean | null | undefined | FieldValue[] | { [k: string]: unknown }

export interface PostProcessContext {
  url: string | null
}

const MAX_PATTERN = 1000

function opt<T>(o: unknown, k: string): T | undefined {
  return o !== null && typeof o === "object" ? ((o as Record<string, unknown>)[k] as T | undefined) : undefined
}

function each(v: FieldValue, f: (x: string | number | boolean) => FieldValue): FieldValue {
  if (v === null || v === undefined) return v
  if (Array.isArray(v)) return v.map((x) => each(x, f)).filter((x) => x !== undefined)
  if (typeof v === "object") return v
  return f(v)
}

export function applyPostProcess(field: string, value: FieldValue, ops: Readonly<Record<string, unknown>>, ctx: PostProcessContext): FieldValue {
  let v = value
  for (const [op, o] of Object.entries(ops)) {
    v = applyOne(field, op, o, v, ctx)
  }
  return v
}

function applyOne(field: string, op: string, o: unknown, v: FieldValue, ctx: PostProcessContext): FieldValue {
  const bad = (msg: string) => new ExtractError("invalid_input", `postProcess.${field}.${op}: ${msg}`)
  switch (op) {
    case "regexReplace": {
      const pattern = opt<string>(o, "pattern")
      const replacement = opt<string>(o, "replacement") ?? ""
      const flags = opt<string>(o, "flags") ?? "g"
      if (typeof pattern !== "string" || pattern.length > MAX_PATTERN) throw bad("pattern must be a string of at most 1000 characters")
      if (typeof replacement !== "string" || !/^[dgimsuy]*$/.test(flags)) throw bad("invalid replacement or flags")
      let re: RegExp
      try {
        re = new RegExp(pattern, flags)
      } catch (e) {
        throw bad(`invalid pattern (${(e as Error).message})`)
      }
      return each(v, (x) => String(x).replace(re, replacement))
    }
    case "parseNumber": {
      const locale = (opt<string>(o, "locale") ?? "auto") as NumberLocale
      if (!["auto", "de", "en"].includes(locale)) throw bad("locale must be auto, de or en")
      return each(v, (x) => (typeof x === "number" ? x : parseNumber(String(x), locale)))
    }
    case "absoluteUrl": {
      const base = opt<string>(o, "base") ?? ctx.url
      return each(v, (x) => absoluteUrl(String(x), base))
    }
    case "trim":
      return each(v, (x) => (typeof x === "string" ? x.replace(/\s+/g, " ").trim() : x))
    case "lowercase":
      return each(v, (x) => (typeof x === "string" ? x.toLowerCase() : x))
    case "uppercase":
      return each(v, (x) => (typeof x === "string" ? x.toUpperCase() : x))
    case "split": {
      const sep = opt<string>(o, "separator")
      const limit = opt<number>(o, "limit")
      if (typeof sep !== "string" || sep.length === 0) throw bad("separator must be a non-empty string")
      const split = (x: string) => x.split(sep).map((p) => p.trim()).filter((p) => p.length > 0)
      if (typeof v === "string") return limit !== undefined ? split(v).slice(0, limit) : split(v)
      if (Array.isArray(v)) return v.flatMap((x): FieldValue[] => (typeof x === "string" ? split(x) : [x]))
      return v
    }
    case "join": {
      const sep = opt<string>(o, "separator") ?? ", "
      return Array.isArray(v) ? v.filter((x) => x !== null && x !== undefined).map(String).join(sep) : v
    }
    case "prefix":
    case "suffix": {
      const s = opt<string>(o, "value")
      if (typeof s !== "string") throw bad("value must be a string")
      return each(v, (x) => (op === "prefix" ? s + String(x) : String(x) + s))
    }
    case "default": {
      const d = opt<FieldValue>(o, "value")
      return v === undefined || v === null || v === "" || (Array.isArray(v) && v.length === 0) ? d : v
    }
    case "truncate": {
      const len = opt<number>(o, "length")
      if (typeof len !== "number" || len < 0) throw bad("length must be a number >= 0")
      return each(v, (x) => (typeof x === "string" ? x.slice(0, len) : x))
    }
    default:
      throw bad("unknown operation")
  }
}
