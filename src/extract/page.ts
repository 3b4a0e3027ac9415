/** A parsed, sanitized HTML page with what every strategy needs. */
import { parseHtml, type ParsedDocument } from "./html/parser.ts"
import { repairMojibake } from "./html/mojibake.ts"
import { byTags, Element, normalizeSpace, rawText, walk } from "./html/dom.ts"
import { collectMeta, collectStructured, typesOf, type JsonObject, type MetaTags, type StructuredItems } from "./structured.ts"
import { sanitizeTree } from "./sanitize.ts"
import { absoluteUrl } from "./url.ts"

export interface Page {
  doc: ParsedDocument
  /** Base for relative URLs (`<base href>` resolved against the input URL). */
  base: string | null
  url: string | null
  structured: StructuredItems
  meta: MetaTags
  /** Where content extraction looks (the `rootSelector` element or the body). */
  scope: Element
  /** Text of the inline scripts that are not JSON-LD (removed by the sanitizer; read as data only). */
  scripts?: readonly string[]
}

export function loadPage(html: string, url: string | null): Page {
  const doc = parseHtml(repairMojibake(html))
  let base = url
  walk(doc.root, (el) => {
    if (el.tag === "base") {
      const href = absoluteUrl(el.attr("href"), url)
      if (href !== undefined) base = href
      return false
    }
    return el.tag !== "body"
  })
  const structured = collectStructured(doc.root)
  const scripts: string[] = []
  walk(doc.root, (el) => {
    if (el.tag !== "script") return
    const text = el.children.length === 1 ? el.children[0] : undefined
    if (typeof text === "string" && el.attrs?.src === undefined && !/ld\+json/i.test(el.attrs?.type ?? "")) scripts.push(text)
    return false
  })
  sanitizeTree(doc.root)
  dropPermalinkAnchors(doc.body)
  const meta = collectMeta(doc.root, doc.html)
  return { doc, base, url, structured, meta, scope: doc.body, scripts }
}

/** What a permalink anchor shows: a pilcrow, a section sign, a hash, a link or anchor emoji, or nothing (an icon). */
const PERMALINK_TEXT = /^(?:[¶§⁋#]|\u{1F517}|\u2693\uFE0F?|)$/u

/**
 * Removes the anchors documentation generators put in headings and definitions so that a reader
 * can link to them (`<a class="headerlink" href="#lists">¶</a>`): links to a place on the page
 * that show only a link glyph. Their glyph is not part of the heading ("5. Data Structures¶");
 * a link with words or numbers (a footnote, a table of contents) is kept.
 */
export function dropPermalinkAnchors(root: Element): void {
  walk(root, (el) => {
    const ch = el.children
    let w = 0
    for (const c of ch) {
      if (typeof c !== "string" && c.tag === "a" && c.attr("href")?.startsWith("#") && PERMALINK_TEXT.test(normalizeSpace(rawText(c))) && byTags(c, MEDIA).length === 0) {
        c.parent = null
        continue
      }
      ch[w++] = c
    }
    ch.length = w
  })
}

/** Media an anchor may hold: a gallery's `<a href="#"><img></a>` is content, not a permalink. */
const MEDIA = new Set(["img", "picture", "video", "audio", "iframe", "object", "embed"])

/** Structured nodes whose type is one of `types`, JSON-LD first, then microdata, then RDFa. */
export function nodesOfType(page: Page, types: ReadonlySet<string>): Array<{ node: JsonObject; source: "json-ld" | "microdata" | "rdfa" }> {
  const out: Array<{ node: JsonObject; source: "json-ld" | "microdata" | "rdfa" }> = []
  // type names are compared case-insensitively ("@type": "product" is common)
  const wanted = new Set([...types].map((t) => t.toLowerCase()))
  for (const [source, list] of [["json-ld", page.structured.jsonld], ["microdata", page.structured.microdata], ["rdfa", page.structured.rdfa]] as const) {
    for (const node of list) if (typesOf(node).some((t) => types.has(t) || wanted.has(t.toLowerCase()))) out.push({ node, source })
  }
  return out
}

/** Text of the first element with the tag below `root`. */
export function firstText(root: Element, tag: string): string | undefined {
  let found: string | undefined
  walk(root, (el) => {
    if (found !== undefined) return false
    if (el.tag === tag) {
      const t = normalizeSpace(rawText(el))
      if (t !== "") found = t
      return false
    }
    return
  })
  return found
}
