import { Element, parseHtml } from "../extract/html/parser.ts"
import { normalizeSpace } from "../extract/html/dom.ts"

const HIDDEN = new Set(["script", "style", "template", "noscript", "iframe", "svg", "math", "head", "select", "option", "textarea"])
const BLOCK = new Set([
  "address", "article", "aside", "blockquote", "dd", "details", "div", "dl", "dt", "fieldset", "figcaption", "figure",
  "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li", "main", "nav", "ol", "p", "pre",
  "section", "summary", "table", "tbody", "thead", "tfoot", "td", "th", "tr", "ul", "br", "body", "html"
])

/** The text a reader sees on a page, one line per block, without markup, scripts or styles. */
export const visibleLines = (html: string): Array<string> => {
  const doc = parseHtml(html)
  const lines: Array<string> = []
  let current = ""
  const flush = () => {
    const line = normalizeSpace(current)
    if (line) lines.push(line)
    current = ""
  }
  /** All the visible text under `el`, as written (a `br` is a line break). */
  const rawText = (el: Element): string =>
    HIDDEN.has(el.tag) || el.attr("hidden") !== undefined ? ""
    : el.tag === "br" ? "\n"
    : el.children.map((c) => (typeof c === "string" ? c : rawText(c))).join("")
  const visit = (el: Element) => {
    if (HIDDEN.has(el.tag) || el.attr("hidden") !== undefined) return
    if (el.tag === "pre") {
      // Preformatted text keeps its lines (a log, code): a change in one is a change of that line.
      flush()
      for (const line of rawText(el).split(/\r?\n/)) if (line.trim()) lines.push(line.trimEnd())
      return
    }
    const block = BLOCK.has(el.tag)
    if (block) flush()
    for (const child of el.children) {
      if (typeof child === "string") current += child
      else visit(child)
    }
    if (block) flush()
  }
  const title = doc.head ? doc.head.children.find((c): c is Element => typeof c !== "string" && c.tag === "title") : undefined
  if (title) {
    for (const c of title.children) if (typeof c === "string") current += c
    flush()
  }
  visit(doc.body)
  flush()
  return lines
}

/**
 * The lines a page-history diff compares: the visible text of HTML (and of content without a
 * type, which crawls nearly always are), the lines of any other text as they are.
 */
export const diffLines = (text: string, contentType: string | null): { readonly lines: Array<string>; readonly cut: boolean } => {
  const cut = text.length > MAX_DIFF_INPUT_CHARS
  const html = contentType === null || /html/i.test(contentType)
  let head = cut ? text.slice(0, MAX_DIFF_INPUT_CHARS) : text
  // Markup cut inside a tag would leave the tag's start to be read as text: it ends at the tag. (A
  // "<" that starts no tag is text; and a tag is short, so a "<" far from the cut is not the one.)
  const lt = head.lastIndexOf("<")
  if (cut && html && lt > head.lastIndexOf(">") && head.length - lt <= MAX_CUT_TAG && /^<(?:[A-Za-z/!?]|$)/.test(head.slice(lt, lt + 2))) {
    head = head.slice(0, lt)
  }
  return { lines: html ? visibleLines(head) : textLines(head), cut }
}

/** The lines of plain text: a final line break ends the last line rather than starting an empty one. */
const textLines = (text: string): Array<string> => {
  const lines = text.split(/\r?\n/)
  if (lines.at(-1) === "") lines.pop()
  return lines
}

/**
 * A diff reads the first 2 MiB characters of each version: the work runs on the request's node
 * and a page may be 10 MiB of markup, so this bounds what one request costs.
 */
export const MAX_DIFF_INPUT_CHARS = 2 * 1024 * 1024
/** The longest tag start a cut may fall in and be dropped. */
const MAX_CUT_TAG = 8 * 1024
