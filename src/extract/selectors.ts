/** Extractor-config selectors: CSS (+ attribute) on HTML, JSON paths on JSON input, and field coercion. */
import { Element, normalizeSpace } from "./html/dom.ts"
import { querySelectorAll, SelectorError } from "./html/selector.ts"
import { BLOCK_TAGS, NO_TEXT_TAGS } from "./html/text.ts"
import { evalJsonPath } from "./json-path.ts"
import type { SelectorSpec } from "./types.ts"
import { ExtractError } from "./errors.ts"
import { absoluteUrl } from "./url.ts"

const URL_ATTRS = new Set(["href", "src", "data-src", "srcset", "poster", "content-url", "data-href", "action"])

/** Text with line breaks at block boundaries (for `textOnly: false`). */
function blockText(el: Element): string {
  let out = ""
  const rec = (e: Element) => {
    for (const c of e.children) {
      if (typeof c === "string") out += c
      else if (c.tag === "br") out += "\n"
      else if (NO_TEXT_TAGS.has(c.tag)) continue
      else {
        const b = BLOCK_TAGS.has(c.tag)
        if (b) out += "\n"
        rec(c)
        if (b) out += "\n"
      }
    }
  }
  rec(el)
  return out.split("\n").map((l) => normalizeSpace(l)).filter((l) => l !== "").join("\n")
}

/** Values a selector yields on an HTML tree (document order; empty strings dropped). */
export function selectHtml(root: Element, spec: SelectorSpec, base: string | null): string[] {
  if (spec.css === undefined || spec.css.trim() === "") return []
  let els: Element[]
  try {
    els = querySelectorAll(root, spec.css)
  } catch (e) {
    if (e instanceof SelectorError) throw new ExtractError("invalid_input", `invalid CSS selector '${spec.css}': ${e.message}`)
    throw e
  }
  const trim = spec.trim !== false
  const out: string[] = []
  for (const el of els) {
    let v: string | undefined
    if (spec.attr !== undefined && spec.attr !== "") {
      const name = spec.attr.toLowerCase()
      v = el.attr(name)
      if (v !== undefined && URL_ATTRS.has(name)) v = absoluteUrl(name === "srcset" ? v.trim().split(/\s+/)[0] : v, base)
    } else {
      v = spec.textOnly === false ? blockText(el) : el.children.length === 0 && el.attr("content") !== undefined ? el.attr("content") : blockText(el).replace(/\n/g, " ")
    }
    if (v === undefined) continue
    if (trim) v = spec.textOnly === false ? v.trim() : normalizeSpace(v)
    if (v !== "") out.push(v)
  }
  return out
}

/** Values a selector yields on JSON input. */
export function selectJson(root: unknown, spec: SelectorSpec): unknown[] {
  if (spec.json === undefined || spec.json.trim() === "") return []
  let vals: unknown[]
  try {
    vals = evalJsonPath(root, spec.json)
  } catch (e) {
    throw new ExtractError("invalid_input", (e as Error).message)
  }
  return vals.flatMap((v) => (Array.isArray(v) ? v : [v])).filter((v) => v !== null && v !== undefined && v !== "")
    .map((v) => (typeof v === "string" && spec.trim !== false ? v.trim() : v))
}
