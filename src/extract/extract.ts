/**
 * Trawl's extraction engine: `extract(input)` turns HTML, Markdown, text or JSON into an Article
 * or a Product. Pure and synchronous (CPU only, no I/O); see docs/extraction.md.
 */
import type { AppliedConfig, Article, ExtractInput, ExtractOutput, Image, InputFormat, Product } from "./types.ts"
import { ExtractError } from "./errors.ts"
import { fitToLimit } from "./html/slim.ts"
import { loadPage, type Page } from "./page.ts"
import { articleFromPage } from "./article/article.ts"
import { productFromPage, normalizeAvailability } from "./product/product.ts"
import { parseHtml } from "./html/parser.ts"
import { querySelector, SelectorError } from "./html/selector.ts"
import { markdownToText, plainText, type TextDocument } from "./markdown.ts"
import { flattenJsonLd, collectMeta, readJsonInput, type JsonObject } from "./structured.ts"
import { selectHtml, selectJson } from "./selectors.ts"
import { applyPostProcess, type FieldValue } from "./post-process.ts"
import { detectLanguage, normalizeLang } from "./language.ts"
import { toIsoDateTime } from "./dates.ts"
import { absoluteUrl } from "./url.ts"
import { normalizeCurrency, parsePrice } from "./product/price.ts"
import { normalizeSpace } from "./html/dom.ts"
import { htmlToText } from "./html/text.ts"

export * from "./types.ts"
export { ExtractError, isExtractError, type ExtractErrorClass } from "./errors.ts"

/** At most this many characters of input are processed; the rest is cut and `truncated` is set. */
export const MAX_PROCESSED_CHARS = 2_000_000
/** Article content longer than this is cut (and `truncated` set). */
export const MAX_CONTENT_CHARS = 500_000

const ARTICLE_FIELDS = ["title", "content", "description", "summary", "author", "authors", "publishedAt", "modifiedAt", "lang", "images", "tags"] as const
const PRODUCT_FIELDS = ["name", "description", "price", "currency", "availability", "sku", "brand", "images", "attributes"] as const
const FORMATS: ReadonlyArray<InputFormat> = ["html", "markdown", "text", "json"]

type Data = Record<string, unknown>

/** Runs the extraction. Throws `ExtractError` (`invalid_input`, `parse_error`) for unusable input or configs. */
export function extract(input: ExtractInput): ExtractOutput {
  if (input === null || typeof input !== "object") throw new ExtractError("invalid_input", "input must be an object")
  const { type, inputFormat } = input
  if (type !== "article" && type !== "product") throw new ExtractError("invalid_input", `type must be article or product`)
  if (!FORMATS.includes(inputFormat)) throw new ExtractError("invalid_input", `inputFormat must be one of ${FORMATS.join(", ")}`)
  if (typeof input.content !== "string" || input.content.trim() === "") throw new ExtractError("invalid_input", "content is empty")
  const url = input.url !== null && input.url !== undefined ? (absoluteUrl(input.url, null) ?? null) : null
  const configs: ReadonlyArray<AppliedConfig> = Array.isArray(input.configs) ? input.configs : []

  let content = input.content
  let truncated = false
  if (content.length > MAX_PROCESSED_CHARS && inputFormat !== "json") {
    // (a page sheds its scripts, style sheets and drawings before its text is cut)
    content = inputFormat === "html" ? fitToLimit(content, MAX_PROCESSED_CHARS) : content.slice(0, MAX_PROCESSED_CHARS)
    truncated = true
  }

  const strategies: string[] = []
  const applied = new Set<string>()
  const sources: Record<string, string> = {}
  let data: Data
  let page: Page | null = null
  let jsonRoot: unknown = undefined
  let rootSelector: string | undefined
  let declaredLang: string | undefined
  let textForLang = ""

  if (inputFormat === "html") {
    page = loadPage(content, url)
    for (const rs of configs) {
      const sel = rs.payload?.rootSelector
      if (typeof sel !== "string" || sel.trim() === "") continue
      let el
      try {
        el = querySelector(page.doc.root, sel)
      } catch (e) {
        if (e instanceof SelectorError) throw new ExtractError("invalid_input", `invalid rootSelector: ${e.message}`)
        throw e
      }
      if (el !== null) {
        page.scope = el
        rootSelector = sel
        applied.add(rs.id)
        break
      }
    }
    const r = type === "article" ? articleFromPage(page) : productFromPage(page)
    data = r.data as unknown as Data
    Object.assign(sources, r.sources)
    strategies.push(...r.extra)
    declaredLang = normalizeLang(page.meta.htmlLang) ?? normalizeLang(page.meta.get("content-language"))
    textForLang = type === "article" ? (r.data as Article).content : ((r.data as Product).description ?? "") + " " + (r.data as Product).name
  } else if (inputFormat === "json") {
    const read = readJsonInput(content)
    if ("problem" in read) throw new ExtractError("parse_error", read.problem)
    jsonRoot = read.root
    const r = fromJson(read.root, type, url)
    data = r.data
    Object.assign(sources, r.sources)
    textForLang = String(data.content ?? data.description ?? "")
    declaredLang = normalizeLang(typeof data.lang === "string" ? data.lang : undefined)
  } else {
    const doc = inputFormat === "markdown" ? markdownToText(content) : plainText(content)
    const r = fromText(doc, type, url, inputFormat)
    data = r.data
    Object.assign(sources, r.sources)
    textForLang = doc.paragraphs.join("\n")
  }

  // config selectors: per field, the first config (highest priority) whose selectors yield a value
  const wanted = new Set<string>()
  for (const c of configs) for (const f of Object.keys(c.payload?.selectors ?? {})) wanted.add(f)
  for (const field of wanted) {
    for (const c of configs) {
      const specs = c.payload?.selectors?.[field]
      if (!Array.isArray(specs) || specs.length === 0) continue
      let values: unknown[] = []
      for (const spec of specs) {
        if (spec === null || typeof spec !== "object") continue
        values = page !== null ? selectHtml(page.doc.root, spec, page.base) : jsonRoot !== undefined ? selectJson(jsonRoot, spec) : []
        if (values.length > 0) break
      }
      if (values.length === 0) continue
      if (setField(data, type, field, values, page?.base ?? url)) {
        sources[field.split(".")[0]!] = "selectors"
        applied.add(c.id)
        break
      }
    }
  }

  // postProcess: per field, the first config that defines operations for it
  const ppFields = new Set<string>()
  for (const c of configs) for (const f of Object.keys(c.payload?.postProcess ?? {})) ppFields.add(f)
  for (const field of ppFields) {
    const c = configs.find((x) => x.payload?.postProcess?.[field] !== undefined)!
    const ops = c.payload.postProcess![field]!
    if (ops === null || typeof ops !== "object") throw new ExtractError("invalid_input", `postProcess.${field} must be an object`)
    const before = getField(data, field)
    const after = applyPostProcess(field, before as FieldValue, ops, { url: page?.base ?? url })
    const wrote = writeField(data, type, field, after, page?.base ?? url)
    // applied when its steps had a value to work on, or made one (`default`); not for a field
    // that neither the page nor the steps gave a value, or that the type does not have
    if (before !== undefined || wrote) applied.add(c.id)
  }

  // fields filter
  const fc = configs.find((c) => Array.isArray(c.payload?.fields) && c.payload.fields.length > 0)
  if (fc !== undefined) {
    const keep = new Set(fc.payload.fields!.map((f) => f.split(".")[0]!))
    keep.add(type === "article" ? "title" : "name")
    if (type === "article") keep.add("content")
    for (const k of Object.keys(data)) if (!keep.has(k)) delete data[k]
    applied.add(fc.id)
  }

  // language
  const detected = declaredLang ?? detectLanguage(textForLang)
  if (type === "article" && data.lang === undefined && detected !== undefined && fieldAllowed(fc, "lang")) data.lang = detected

  // final shape
  if (type === "article") {
    if (typeof data.content !== "string") data.content = ""
    if ((data.content as string).length > MAX_CONTENT_CHARS) {
      data.content = (data.content as string).slice(0, MAX_CONTENT_CHARS)
      truncated = true
    }
    if (typeof data.title !== "string" || data.title.trim() === "") {
      const first = (data.content as string).split("\n")[0]?.slice(0, 120).trim()
      data.title = first !== undefined && first !== "" ? first : "Untitled"
    }
  } else if (typeof data.name !== "string" || data.name.trim() === "") data.name = "Untitled product"
  cleanup(data)

  for (const k of Object.keys(data)) {
    const s = sources[k]
    if (s !== undefined && !strategies.includes(s)) strategies.push(s)
  }
  const order = ["selectors", "json-ld", "microdata", "rdfa", "opengraph", "meta", "main-content", "product-heuristics", "images", "markdown", "text", "json", "fallback"]
  const strategiesUsed = [...new Set(strategies)].filter((s) => s !== "fallback").sort((a, b) => order.indexOf(a) - order.indexOf(b))

  const metadata: ExtractOutput["metadata"] = {
    inputFormat,
    strategiesUsed,
    configsApplied: configs.filter((c) => applied.has(c.id)).map((c) => c.id),
    truncated,
  }
  if (detected !== undefined) metadata.detectedLanguage = detected
  if (rootSelector !== undefined) metadata.rootSelector = rootSelector
  return { data: data as unknown as Article | Product, metadata }
}

function fieldAllowed(fc: AppliedConfig | undefined, field: string): boolean {
  return fc === undefined || fc.payload.fields!.some((f) => f.split(".")[0] === field)
}

function getField(data: Data, field: string): unknown {
  if (field.startsWith("attributes.")) return (data.attributes as Data | undefined)?.[field.slice(11)]
  return data[field]
}

/** Writes a selector result into a field, with the field's type. Returns false when nothing usable came out. */
function setField(data: Data, type: "article" | "product", field: string, values: unknown[], base: string | null): boolean {
  const list = values.map((v) => (typeof v === "string" ? v : typeof v === "number" || typeof v === "boolean" ? String(v) : v))
  const known = (type === "article" ? ARTICLE_FIELDS : PRODUCT_FIELDS) as readonly string[]
  const isList = field === "authors" || field === "tags" || field === "images"
  const value: FieldValue = isList ? (list as FieldValue[]) : (list[0] as FieldValue)
  if (!known.includes(field) && !field.startsWith("attributes.")) {
    if (type === "article") return false
    return writeField(data, type, "attributes." + field, value, base)
  }
  // a price text no amount can be read from leaves the field as it was
  if (type === "product" && field === "price" && typeof value === "string" && parsePrice(value) === undefined) return false
  return writeField(data, type, field, value, base)
}

/** Coerces and stores a field value; an unusable value removes the field. */
function writeField(data: Data, type: "article" | "product", field: string, v: FieldValue, base: string | null): boolean {
  if (field.startsWith("attributes.")) {
    if (type !== "product") return false
    const attrs = (data.attributes as Data | undefined) ?? {}
    const key = field.slice(11)
    const x = Array.isArray(v) ? v.map((y) => String(y)).join(", ") : v
    if (x === undefined) delete attrs[key]
    else attrs[key] = typeof x === "object" && x !== null ? JSON.stringify(x) : x
    data.attributes = attrs
    return x !== undefined
  }
  const asText = (x: FieldValue): string | undefined => {
    if (x === undefined || x === null) return undefined
    if (Array.isArray(x)) return x.length > 0 ? x.map((y) => asText(y)).filter((y) => y !== undefined).join(", ") : undefined
    if (typeof x === "object") return undefined
    const s = String(x)
    return s.trim() === "" ? undefined : s
  }
  const asList = (x: FieldValue): string[] => (Array.isArray(x) ? x.flatMap((y) => asList(y)) : asText(x) !== undefined ? [asText(x)!] : [])
  let out: unknown
  switch (field) {
    case "price": {
      const parsed = typeof v === "number" || asText(v) === undefined ? undefined : parsePrice(asText(v)!)
      out = typeof v === "number" ? v : parsed?.price
      // "£19.99" also says the currency, unless the data names one already
      if (parsed?.currency !== undefined && data.currency === undefined && typeof out === "number") data.currency = parsed.currency
      // A price is a finite amount, never below zero (as the HTML path and the LLM check hold).
      if (typeof out === "number" && !(Number.isFinite(out) && out >= 0)) out = undefined
      break
    }
    case "currency": out = normalizeCurrency(asText(v)); break
    case "availability": out = normalizeAvailability(asText(v)); break
    case "publishedAt": case "modifiedAt": out = toIsoDateTime(asText(v)); break
    case "authors": case "tags": {
      const l = asList(v).map((s) => normalizeSpace(s)).filter((s) => s !== "")
      out = l.length > 0 ? [...new Set(l)] : undefined
      if (field === "authors" && out !== undefined) data.author = (out as string[]).join(", ")
      break
    }
    case "author": {
      out = asText(v)
      if (out !== undefined) data.authors = [out]
      break
    }
    case "images": {
      const imgs: Image[] = []
      const items = Array.isArray(v) ? v : [v]
      for (const it of items) {
        if (it !== null && typeof it === "object" && !Array.isArray(it) && typeof (it as Data).url === "string") {
          const u = absoluteUrl((it as Data).url as string, base)
          if (u !== undefined) imgs.push(imageOf(u, it as Data))
        } else {
          const u = absoluteUrl(asText(it as FieldValue), base)
          if (u !== undefined) imgs.push({ url: u })
        }
      }
      out = imgs.length > 0 ? imgs : undefined
      break
    }
    case "attributes": out = v !== null && typeof v === "object" && !Array.isArray(v) ? v : undefined; break
    case "lang": out = normalizeLang(asText(v)) ?? asText(v); break
    default: out = asText(v)
  }
  if (out === undefined) {
    if (field !== "title" && field !== "name" && field !== "content") delete data[field]
    return false
  }
  data[field] = out
  return true
}

function cleanup(data: Data): void {
  for (const [k, v] of Object.entries(data)) {
    if (v === undefined || v === null || (typeof v === "string" && v === "" && k !== "content") || (Array.isArray(v) && v.length === 0)) delete data[k]
  }
}

// ---------- JSON input ----------

const ALIASES: Record<string, string[]> = {
  title: ["title", "headline", "name", "subject"],
  name: ["name", "title", "productName", "product_name"],
  content: ["content", "articleBody", "body", "text", "article", "markdown", "html"],
  description: ["description", "summary", "excerpt", "abstract", "subtitle"],
  summary: ["summary", "excerpt", "abstract", "lead"],
  author: ["author", "byline", "creator", "writer"],
  authors: ["authors", "author", "creators"],
  publishedAt: ["publishedAt", "datePublished", "published", "published_at", "pubDate", "date", "createdAt"],
  modifiedAt: ["modifiedAt", "dateModified", "updated", "updatedAt", "modified_at", "lastModified"],
  lang: ["lang", "language", "inLanguage", "locale"],
  images: ["images", "image", "imageUrl", "image_url", "thumbnail", "photos"],
  tags: ["tags", "keywords", "categories", "labels"],
  price: ["price", "amount", "salePrice", "currentPrice", "offers.price"],
  currency: ["currency", "priceCurrency", "currencyCode"],
  availability: ["availability", "stock", "inStock", "stockStatus"],
  sku: ["sku", "id", "productId", "productID", "itemId", "mpn"],
  brand: ["brand", "manufacturer", "vendor"],
  attributes: ["attributes", "specs", "specifications", "properties"],
}

function lookup(o: Data, keys: string[]): unknown {
  const lower = new Map(Object.keys(o).map((k) => [k.toLowerCase(), k]))
  for (const k of keys) {
    const real = lower.get(k.toLowerCase())
    if (real !== undefined && o[real] !== undefined && o[real] !== null && o[real] !== "") return o[real]
  }
  return undefined
}

/** An image of the output from an object of the input: its url, and only the image fields that hold (a size is a whole number ≥ 1). */
const imageOf = (url: string, from: Data): Image => {
  const size = (v: unknown) => (typeof v === "number" && Number.isSafeInteger(v) && v >= 1 ? v : undefined)
  const alt = typeof from.alt === "string" ? normalizeSpace(from.alt) : undefined
  const width = size(from.width)
  const height = size(from.height)
  return { url, ...(alt ? { alt } : {}), ...(width !== undefined ? { width } : {}), ...(height !== undefined ? { height } : {}) }
}

/** A tag, comment or declaration in a string: markup, not text. */
const MARKUP = /<[a-z!/?]/i
/** Fields whose text runs over paragraphs (separated by a blank line, as the HTML pipeline does). */
const PARAGRAPH_FIELDS = new Set(["content", "description", "summary"])

/**
 * The text of markup found in a JSON value, as the HTML pipeline reads it (scripts, styles and
 * hidden parts left out): an article's content by the main-content extractor when it finds one,
 * paragraphs for the long text fields, one line for the others.
 */
const textOfMarkup = (field: string, markup: string, url: string | null): string => {
  const lines = htmlToText(markup).split("\n")
  if (field === "content") return articleFromPage(loadPage(markup, url)).data.content || lines.join("\n\n")
  return PARAGRAPH_FIELDS.has(field) ? lines.join("\n\n") : normalizeSpace(lines.join(" "))
}

function fromJson(root: unknown, type: "article" | "product", url: string | null): { data: Data; sources: Record<string, string> } {
  const nodes = flattenJsonLd(root)
  const hasLd = nodes.length > 0 && (Array.isArray(root) || (root as Data)["@context"] !== undefined || (root as Data)["@type"] !== undefined || (root as Data)["@graph"] !== undefined)
  if (hasLd) {
    const doc = parseHtml("")
    const page: Page = { doc, base: url, url, structured: { jsonld: nodes as JsonObject[], microdata: [], rdfa: [] }, meta: collectMeta(doc.root, doc.html), scope: doc.body }
    const r = type === "article" ? articleFromPage(page) : productFromPage(page)
    return { data: r.data as unknown as Data, sources: r.sources }
  }
  const obj = (Array.isArray(root) ? root.find((x) => x !== null && typeof x === "object") : root) as Data | undefined
  const data: Data = type === "article" ? { title: "", content: "" } : { name: "" }
  const sources: Record<string, string> = {}
  if (obj === undefined) return { data, sources }
  const fields = type === "article" ? ARTICLE_FIELDS : PRODUCT_FIELDS
  for (const f of fields) {
    let v = lookup(obj, ALIASES[f] ?? [f])
    if (v === undefined && f === "price" && obj.offers !== null && typeof obj.offers === "object") v = lookup(obj.offers as Data, ["price", "lowPrice"])
    if (v === undefined) continue
    if (typeof v === "string" && MARKUP.test(v)) v = textOfMarkup(f, v, url)
    if (Array.isArray(v)) v = v.map((x) => (typeof x === "string" && MARKUP.test(x) ? textOfMarkup(f, x, url) : x))
    if (f === "availability" && typeof v === "boolean") v = v ? "InStock" : "OutOfStock"
    if ((f === "author" || f === "brand") && v !== null && typeof v === "object" && !Array.isArray(v)) v = (v as Data).name
    if (f === "authors" && Array.isArray(v)) v = v.map((x) => (x !== null && typeof x === "object" ? (x as Data).name : x))
    if (writeField(data, type, f, v as FieldValue, url)) sources[f] = "json"
  }
  if (type === "article" && data.title === "" && typeof data.content === "string") data.title = (data.content as string).split("\n")[0]!.slice(0, 120)
  return { data, sources }
}

// ---------- Markdown / text input ----------

function fromText(doc: TextDocument, type: "article" | "product", url: string | null, format: "markdown" | "text"): { data: Data; sources: Record<string, string> } {
  const sources: Record<string, string> = {}
  const images = doc.images.map((i) => ({ ...i, url: absoluteUrl(i.url, url) })).filter((i): i is Image => i.url !== undefined)
  const body = doc.paragraphs.join("\n\n")
  if (type === "article") {
    const data: Data = { title: doc.title ?? doc.paragraphs[0]?.slice(0, 120) ?? "Untitled", content: body }
    sources.title = format
    sources.content = format
    if (doc.paragraphs[0] !== undefined) {
      const first = doc.paragraphs[0]
      data.summary = first.length > 400 ? first.slice(0, 400).replace(/\s+\S*$/, "") + "…" : first
      sources.summary = format
    }
    if (images.length > 0) { data.images = images; sources.images = format }
    return { data, sources }
  }
  const data: Data = { name: doc.title ?? doc.paragraphs[0]?.slice(0, 120) ?? "Untitled product" }
  sources.name = format
  if (body !== "") { data.description = body; sources.description = format }
  const priceLine = doc.paragraphs.join("\n").split("\n").find((l) => /(\d)/.test(l) && /[€$£¥₹]|\b[A-Z]{3}\b|price|preis|prix|precio|prezzo/i.test(l))
  if (priceLine !== undefined) {
    const p = parsePrice(priceLine.replace(/^.*?(price|preis|prix|precio|prezzo)\s*:?/i, ""))
    if (p !== undefined) {
      data.price = p.price
      sources.price = "product-heuristics"
      if (p.currency !== undefined) { data.currency = p.currency; sources.currency = "product-heuristics" }
    }
  }
  const av = normalizeAvailability(doc.paragraphs.find((p) => /stock|availab|lager|verfügbar|dispon/i.test(p)))
  if (av !== undefined) { data.availability = av; sources.availability = "product-heuristics" }
  if (images.length > 0) { data.images = images; sources.images = format }
  return { data, sources }
}
