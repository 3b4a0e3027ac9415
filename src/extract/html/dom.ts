/** Tree helpers over the light tree of `parser.ts`. */
import { Element, type Node } from "./parser.ts"

export { Element, type Node }

/** Visits every element below `root` (not `root` itself) in document order; return false to skip a subtree. */
export function walk(root: Element, visit: (el: Element) => boolean | void): void {
  const stack: Element[] = []
  for (let i = root.children.length - 1; i >= 0; i--) {
    const c = root.children[i]!
    if (typeof c !== "string") stack.push(c)
  }
  while (stack.length > 0) {
    const el = stack.pop()!
    if (visit(el) === false) continue
    const ch = el.children
    for (let i = ch.length - 1; i >= 0; i--) {
      const c = ch[i]!
      if (typeof c !== "string") stack.push(c)
    }
  }
}

export function byTag(root: Element, tag: string): Element[] {
  const out: Element[] = []
  walk(root, (el) => {
    if (el.tag === tag) out.push(el)
  })
  return out
}

export function byTags(root: Element, tags: ReadonlySet<string>): Element[] {
  const out: Element[] = []
  walk(root, (el) => {
    if (tags.has(el.tag)) out.push(el)
  })
  return out
}

const SKIP_TEXT = new Set(["script", "style", "template", "noscript", "iframe", "svg", "math", "head", "select", "option", "textarea", "button"])

/** Concatenated raw text of an element (scripts, styles and the like excluded); reading stops once it is longer than `max`. */
export function rawText(el: Element, max = Infinity): string {
  let out = ""
  const rec = (e: Element) => {
    for (const c of e.children) {
      if (out.length > max) return
      if (typeof c === "string") out += c.length > max ? c.slice(0, max + 1) : c
      else if (!SKIP_TEXT.has(c.tag)) {
        if (c.tag === "br") out += "\n"
        else rec(c)
      }
    }
  }
  rec(el)
  return out
}

/** Collapses runs of white space (incl. NBSP, zero-width spaces and direction marks) into one space and trims. */
export function normalizeSpace(s: string): string {
  return s.replace(/[\s\u00a0\u200b\u200c\u200d\u200e\u200f\ufeff]+/g, " ").trim()
}

/** Visible text of an element on one line. */
export function textOf(el: Element): string {
  return normalizeSpace(rawText(el))
}

export function hasClassToken(el: Element, token: string): boolean {
  const c = el.attr("class")
  if (c === undefined) return false
  return (" " + c.replace(/\s+/g, " ") + " ").includes(" " + token + " ")
}

/** Nearest ancestor (or self) satisfying `pred`. */
export function closest(el: Element | null, pred: (e: Element) => boolean): Element | null {
  for (let e = el; e !== null; e = e.parent) if (pred(e)) return e
  return null
}

export function isDescendant(el: Element, ancestor: Element): boolean {
  for (let e: Element | null = el; e !== null; e = e.parent) if (e === ancestor) return true
  return false
}
