/** Visible text of HTML, one line per block (the LLM prompt, markup inside JSON values, script-data bodies). */
import { parseHtml } from "./parser.ts"
import { Element, normalizeSpace } from "./dom.ts"
import { sanitizeTree } from "../sanitize.ts"

/** Elements whose text stands on lines of its own: every reader that keeps line or word breaks uses this set. */
export const BLOCK_TAGS: ReadonlySet<string> = new Set(["p", "div", "li", "tr", "br", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article", "header", "footer", "ul", "ol", "dl", "table", "blockquote", "pre", "dt", "dd", "figure", "figcaption", "form", "main", "aside", "nav"])
/** Elements whose content is never shown as text. */
export const NO_TEXT_TAGS: ReadonlySet<string> = new Set(["script", "style", "template", "noscript", "svg", "math", "head", "title", "iframe", "object", "select", "option", "textarea"])

/** Visible text of an HTML fragment or page: sanitized, one line per block. */
export function htmlToText(html: string, maxChars = Infinity): string {
  const doc = parseHtml(html)
  sanitizeTree(doc.root)
  return shownLines(doc.root, () => false, maxChars).join("\n")
}

/**
 * The text shown below `root`, one line per block, until about `maxChars`: elements that are never
 * text, hidden ones and those `skip` names are left out.
 */
export function shownLines(root: Element, skip: (el: Element) => boolean, maxChars = Infinity): string[] {
  const lines: string[] = []
  let line = ""
  let size = 0
  const flush = () => {
    const t = normalizeSpace(line)
    if (t !== "") { lines.push(t); size += t.length + 1 }
    line = ""
  }
  const stack: Array<Element | string | null> = [root]
  while (stack.length > 0 && size < maxChars) {
    const n = stack.pop()!
    if (n === null) { flush(); continue }
    if (typeof n === "string") { line += n; continue }
    if (NO_TEXT_TAGS.has(n.tag)) continue
    const a = n.attrs
    if (a !== null && (a.hidden !== undefined || /display\s*:\s*none/i.test(a.style ?? ""))) continue
    if (skip(n)) continue
    const block = BLOCK_TAGS.has(n.tag)
    if (block) { flush(); stack.push(null) }
    for (let i = n.children.length - 1; i >= 0; i--) stack.push(n.children[i]!)
  }
  flush()
  return lines
}
