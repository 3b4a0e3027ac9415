/**
 * Structured data embedded in pages: schema.org JSON-LD, microdata, RDFa (Lite) and
 * `<meta>` tags (OpenGraph, Twitter cards, Dublin Core, plain names).
 */
import { Element, normalizeSpace, rawText, walk } from "./html/dom.ts"

export type JsonValue = string | number | boolean | null | JsonValue[] | { [k: string]: JsonValue }
export type JsonObject = { [k: string]: JsonValue }

/** An item of any syntax, normalized to JSON-LD-like objects (`@type` + properties). */
export interface StructuredItems {
  jsonld: JsonObject[]
  microdata: JsonObject[]
  rdfa: JsonObject[]
}

/**
 * JSON input as the engine reads it: strictly, else leniently (`parseLenientJson`). Its root when
 * that is an object or an array, else why it cannot be read. Extraction creation asks the same
 * question before accepting an input, so that what the engine would refuse is refused at once.
 */
export function readJsonInput(content: string): { readonly root: object } | { readonly problem: string } {
  let root: unknown
  try {
    root = JSON.parse(content)
  } catch (e) {
    root = parseLenientJson(content)
    if (root === undefined) return { problem: `invalid JSON: ${(e as Error).message}` }
  }
  return root !== null && typeof root === "object" ? { root } : { problem: "JSON input must be an object or an array" }
}

/** Parses JSON leniently (raw control characters in strings, HTML comment or CDATA wrappers, trailing commas). */
export function parseLenientJson(text: string): unknown {
  let t = text.trim()
  t = t.replace(/^<!--/, "").replace(/-->$/, "").replace(/^\/\/\s*<!\[CDATA\[/, "").replace(/\/\/\s*\]\]>$/, "").trim()
  try {
    return JSON.parse(t)
  } catch {
    // escape control characters inside strings, drop trailing commas
    let out = ""
    let inStr = false
    let esc = false
    for (let i = 0; i < t.length; i++) {
      const ch = t[i]!
      const code = ch.charCodeAt(0)
      if (inStr) {
        if (esc) { esc = false; out += ch; continue }
        if (ch === "\\") { esc = true; out += ch; continue }
        if (ch === "\"") { inStr = false; out += ch; continue }
        if (code < 32) { out += code === 10 ? "\\n" : code === 9 ? "\\t" : code === 13 ? "\\r" : " "; continue }
        out += ch
      } else {
        if (ch === "\"") inStr = true
        out += ch
      }
    }
    out = out.replace(/,\s*([}\]])/g, "$1")
    try {
      return JSON.parse(out)
    } catch {
      return undefined
    }
  }
}

/** Flattens `@graph`, arrays and nested typed values into a list of typed nodes (top-level first). */
export function flattenJsonLd(value: unknown): JsonObject[] {
  const out: JsonObject[] = []
  const seen = new Set<unknown>()
  const visit = (v: unknown, depth: number) => {
    if (depth > 12 || v === null || typeof v !== "object" || seen.has(v)) return
    seen.add(v)
    if (Array.isArray(v)) {
      for (const x of v) visit(x, depth + 1)
      return
    }
    const o = v as JsonObject
    if (o["@type"] !== undefined) out.push(o)
    if (Array.isArray(o["@graph"])) visit(o["@graph"], depth + 1)
    for (const [k, x] of Object.entries(o)) {
      if (k === "@graph" || k === "@context") continue
      if (x !== null && typeof x === "object") visit(x, depth + 1)
    }
  }
  visit(value, 0)
  return out
}

/** The `@type` names of a node, without the schema.org prefix. */
export function typesOf(o: JsonObject): string[] {
  const t = o["@type"] ?? o["type"]
  const list = Array.isArray(t) ? t : [t]
  return list.filter((x): x is string => typeof x === "string").map((x) => x.replace(/^https?:\/\/schema\.org\//i, "").replace(/^schema:/i, ""))
}

export function collectJsonLd(root: Element): JsonObject[] {
  const out: JsonObject[] = []
  walk(root, (el) => {
    if (el.tag !== "script") return
    const type = (el.attr("type") ?? "").toLowerCase()
    if (!type.includes("ld+json")) return false
    const text = el.children.filter((c): c is string => typeof c === "string").join("")
    const parsed = parseLenientJson(text)
    if (parsed !== undefined) out.push(...flattenJsonLd(parsed))
    return false
  })
  resolveReferences(out)
  return out
}

/**
 * Replaces references (`{"@id": "…#brand"}`, alone) in the nodes' properties by a copy of the node
 * the page defines with that `@id` elsewhere, in any of its JSON-LD scripts: graph generators name
 * an article's author or a product's brand and offers once and point at them. The copy keeps the
 * referenced node's plain values (and those of its nested objects, one level down), not its own
 * references, so the result has no cycles and stays small.
 */
function resolveReferences(nodes: JsonObject[]): void {
  const byId = new Map<string, JsonObject>()
  for (const n of nodes) {
    const id = n["@id"]
    // the fullest definition wins (a stub with only a url may come first)
    if (typeof id === "string" && Object.keys(n).length > 2 && Object.keys(n).length > Object.keys(byId.get(id) ?? {}).length) byId.set(id, n)
  }
  if (byId.size === 0) return
  const plain = (o: JsonObject, depth: number): JsonObject => {
    const c: JsonObject = {}
    for (const [k, v] of Object.entries(o)) {
      if (v === null || typeof v !== "object") c[k] = v
      else if (Array.isArray(v)) c[k] = v.flatMap((x): JsonValue[] => x === null || typeof x !== "object" ? [x] : depth > 0 && !Array.isArray(x) ? [plain(x, depth - 1)] : [])
      else if (depth > 0) c[k] = plain(v, depth - 1)
    }
    return c
  }
  const copies = new Map<string, JsonObject>()
  const target = (v: JsonValue): JsonValue => {
    if (v === null || typeof v !== "object" || Array.isArray(v)) return v
    const id = v["@id"]
    if (typeof id !== "string" || Object.keys(v).length !== 1) return v
    const n = byId.get(id)
    if (n === undefined) return v
    let c = copies.get(id)
    if (c === undefined) copies.set(id, (c = plain(n, 1)))
    return c
  }
  for (const n of nodes) {
    for (const [k, v] of Object.entries(n)) {
      if (k === "@graph" || v === null || typeof v !== "object") continue
      n[k] = Array.isArray(v) ? v.map(target) : target(v)
    }
  }
}

interface ScopeSyntax {
  scope: (el: Element) => boolean
  type: (el: Element) => string | undefined
  prop: (el: Element) => string | undefined
}

const MICRODATA: ScopeSyntax = {
  scope: (el) => el.attr("itemscope") !== undefined,
  type: (el) => el.attr("itemtype"),
  prop: (el) => el.attr("itemprop"),
}
const RDFA: ScopeSyntax = {
  scope: (el) => el.attr("typeof") !== undefined,
  type: (el) => el.attr("typeof"),
  prop: (el) => {
    const p = el.attr("property")
    // OpenGraph-style properties in <meta> are handled by the meta strategy
    if (p === undefined || (el.tag === "meta" && /^(og|twitter|fb|article|product):/i.test(p))) return undefined
    return p
  },
}

/** Value of a property element, per the microdata rules (also used for RDFa). */
function propValue(el: Element): string {
  const a = (n: string) => el.attr(n)
  const content = a("content")
  if (content !== undefined) return content.trim()
  switch (el.tag) {
    case "meta": return (a("content") ?? "").trim()
    case "img": case "audio": case "video": case "source": case "embed": case "iframe": case "track":
      return a("src") ?? a("data-src") ?? ""
    case "a": case "area": case "link": return a("href") ?? a("resource") ?? ""
    case "object": return a("data") ?? ""
    case "data": case "meter": return a("value") ?? ""
    case "time": return a("datetime") ?? normalizeSpace(rawText(el))
  }
  const r = a("resource") ?? a("href")
  if (r !== undefined && a("property") !== undefined && el.tag !== "div" && el.tag !== "span") return r
  return normalizeSpace(rawText(el))
}

function addProp(o: JsonObject, names: string, v: JsonValue) {
  for (const raw of names.trim().split(/\s+/)) {
    const name = raw.replace(/^https?:\/\/schema\.org\//i, "").replace(/^schema:/i, "")
    if (name.length === 0) continue
    const prev = o[name]
    if (prev === undefined) o[name] = v
    else if (Array.isArray(prev)) prev.push(v)
    else o[name] = [prev, v]
  }
}

function collectScoped(root: Element, syn: ScopeSyntax): JsonObject[] {
  const top: JsonObject[] = []
  const rec = (el: Element, item: JsonObject | null) => {
    for (const c of el.children) {
      if (typeof c === "string") continue
      if (c.tag === "script" || c.tag === "style") continue
      const prop = syn.prop(c)
      if (syn.scope(c)) {
        const child: JsonObject = {}
        const t = syn.type(c)
        if (t !== undefined) child["@type"] = t.trim().split(/\s+/).map((x) => x.replace(/^https?:\/\/schema\.org\//i, "").replace(/^schema:/i, ""))[0] ?? t
        if (prop !== undefined && item !== null) addProp(item, prop, child)
        else top.push(child)
        rec(c, child)
        continue
      }
      if (prop !== undefined && item !== null) addProp(item, prop, propValue(c))
      rec(c, item)
    }
  }
  rec(root, null)
  return top
}

export function collectStructured(root: Element): StructuredItems {
  const jsonld = collectJsonLd(root)
  const microdata = flattenJsonLd(collectScoped(root, MICRODATA))
  const rdfa = flattenJsonLd(collectScoped(root, RDFA))
  return { jsonld, microdata, rdfa }
}

/** `<meta>` values by lower-cased name/property/itemprop (first occurrence wins; lists for repeated keys). */
export interface MetaTags {
  get(key: string): string | undefined
  all(key: string): string[]
  /** The first value, in document order, that passes \`test\` with its key. */
  find(test: (key: string, value: string) => boolean): string | undefined
  title: string | undefined
  htmlLang: string | undefined
  canonical: string | undefined
}

export function collectMeta(root: Element, html: Element): MetaTags {
  const map = new Map<string, string[]>()
  let title: string | undefined
  let canonical: string | undefined
  walk(root, (el) => {
    const t = el.tag
    if (t === "meta") {
      const k = el.attr("property") ?? el.attr("name") ?? el.attr("itemprop") ?? el.attr("http-equiv")
      const v = el.attr("content")
      if (k !== undefined && v !== undefined && v.trim() !== "") {
        const key = k.trim().toLowerCase()
        const list = map.get(key)
        if (list === undefined) map.set(key, [v.trim()])
        else list.push(v.trim())
      }
    } else if (t === "title") {
      if (title === undefined) title = normalizeSpace(el.children.filter((c): c is string => typeof c === "string").join(""))
    } else if (t === "link") {
      if (canonical === undefined && /(^|\s)canonical(\s|$)/i.test(el.attr("rel") ?? "")) canonical = el.attr("href")
    } else if (t === "svg" || t === "script" || t === "style") return false
    return
  })
  return {
    get: (k) => map.get(k)?.[0],
    all: (k) => map.get(k) ?? [],
    find: (test) => {
      for (const [k, v] of map) if (test(k, v[0]!)) return v[0]
      return undefined
    },
    title,
    htmlLang: html.attr("lang") ?? html.attr("xml:lang"),
    canonical,
  }
}

/** A JSON value as an object (not an array), else undefined. */
export const objectOf = (v: JsonValue | undefined): JsonObject | undefined =>
  v !== null && v !== undefined && typeof v === "object" && !Array.isArray(v) ? v : undefined

/** First string of a JSON-LD value (strings, arrays, `{name}` / `{@value}` / `{url}` objects). */
export function str(v: JsonValue | undefined, field: "name" | "url" = "name"): string | undefined {
  if (v === undefined || v === null) return undefined
  if (typeof v === "string") return v.trim() === "" ? undefined : v.trim()
  if (typeof v === "number") return String(v)
  if (Array.isArray(v)) {
    for (const x of v) {
      const s = str(x, field)
      if (s !== undefined) return s
    }
    return undefined
  }
  if (typeof v === "object") {
    const o = v as JsonObject
    return str(o[field] ?? o["@value"] ?? o["@id"] ?? (field === "url" ? o["contentUrl"] : o["text"]), field)
  }
  return undefined
}

/** All strings of a JSON-LD value. */
export function strs(v: JsonValue | undefined, field: "name" | "url" = "name"): string[] {
  if (v === undefined || v === null) return []
  if (Array.isArray(v)) return v.flatMap((x) => strs(x, field))
  const s = str(v, field)
  return s === undefined ? [] : [s]
}
