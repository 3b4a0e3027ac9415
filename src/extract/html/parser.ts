/**
 * A small, fast HTML parser that builds a light tree (elements and text strings).
 *
 * It follows the HTML tokenizer closely (raw-text elements, character references,
 * attribute syntax, comments) and a simplified tree construction: void elements,
 * implied end tags (`p`, `li`, `dd`/`dt`, table parts, `option`, headings), and end tags
 * that close the nearest matching open element without crossing table or block
 * boundaries. Comments, doctypes and processing instructions are dropped.
 * One linear pass; no DOM API is emulated.
 */
import { decodeEntities } from "./entities.ts"

export type Node = Element | string

export class Element {
  readonly tag: string
  attrs: Record<string, string> | null
  children: Node[] = []
  parent: Element | null = null
  constructor(tag: string, attrs: Record<string, string> | null) {
    this.tag = tag
    this.attrs = attrs
  }
  attr(name: string): string | undefined {
    return this.attrs === null ? undefined : this.attrs[name]
  }
}

const VOID = new Set(["area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr", "keygen", "frame", "basefont", "bgsound", "image"])
/** Elements whose content is not markup. */
const RAW = new Set(["script", "style", "xmp", "iframe", "noembed", "noframes", "noscript", "plaintext"])
const RCDATA = new Set(["title", "textarea"])
/** Start tags that close an open `p`. */
const CLOSES_P = new Set([
  "address", "article", "aside", "blockquote", "center", "details", "dialog", "dir", "div", "dl", "fieldset",
  "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hgroup", "hr", "main",
  "menu", "nav", "ol", "p", "pre", "section", "summary", "table", "ul", "li", "dd", "dt", "listing", "xmp", "plaintext",
])
/** Elements an end tag search does not cross unless it names them (the HTML standard's default scope). */
const SCOPE = new Set(["table", "td", "th", "caption", "html", "template", "object", "marquee", "applet", "svg", "math"])
/** A `p` is closed only when it is open in button scope: a start tag inside a button leaves an outer `p` open. */
const BUTTON_SCOPE = new Set(["button"])
/** Inline elements: their end tags do not close block elements opened inside them. */
const INLINE = new Set([
  "a", "abbr", "b", "bdi", "bdo", "big", "cite", "code", "data", "del", "dfn", "em", "font", "i", "ins", "kbd",
  "label", "mark", "nobr", "q", "rp", "rt", "ruby", "s", "samp", "small", "span", "strike", "strong", "sub", "sup",
  "time", "tt", "u", "var",
])
const BLOCKISH = new Set([...CLOSES_P, "td", "th", "tr", "tbody", "thead", "tfoot", "body", "li"])
const HEADINGS = new Set(["h1", "h2", "h3", "h4", "h5", "h6"])

/**
 * Open elements at most, as Chromium's parser (512): an element opened deeper is attached where
 * it appears but does not open, so its content goes to the deepest open element. This keeps every
 * stack scan and every recursive walk of the tree bounded, however deep the input nests.
 */
export const MAX_OPEN_ELEMENTS = 512

const rawEndCache = new Map<string, RegExp>()
function rawEnd(tag: string): RegExp {
  let re = rawEndCache.get(tag)
  if (re === undefined) {
    re = new RegExp(`</${tag}[\\s/>]`, "gi")
    rawEndCache.set(tag, re)
  }
  return re
}

function isWs(c: number): boolean {
  return c === 32 || c === 10 || c === 9 || c === 13 || c === 12
}
function isAlpha(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90)
}

export interface ParsedDocument {
  /** Synthetic root (`#document`); its element children are usually just `html`. */
  root: Element
  html: Element
  head: Element | null
  body: Element
  /** Steps spent searching the open-element stack below the current element; at most 8 × the input length + 65 536. */
  searchSteps: number
}

/** Parses HTML text into a tree. Never throws. */
export function parseHtml(src: string): ParsedDocument {
  const root = new Element("#document", null)
  const stack: Element[] = [root]
  let cur = root
  let html: Element | null = null
  let head: Element | null = null
  let body: Element | null = null
  let foreign = 0 // depth of open svg/math
  const n = src.length
  let i = 0

  const appendText = (t: string) => {
    if (t.length === 0) return
    if ((cur === html || cur === head) && body === null && /\S/.test(t)) openImpliedBody()
    const ch = cur.children
    const last = ch.length - 1
    if (last >= 0 && typeof ch[last] === "string") ch[last] = (ch[last] as string) + t
    else ch.push(t)
  }
  const popTo = (idx: number) => {
    while (stack.length > idx) {
      const e = stack.pop()!
      if (e.tag === "svg" || e.tag === "math") foreign--
    }
    cur = stack[stack.length - 1]!
  }
  /**
   * Steps that searches down the open-element stack may take in all. Real pages stay far below it;
   * input built so that every tag searches a deep stack in vain would make parsing quadratic, so
   * once it is spent a search only looks at the current element.
   */
  const searchLimit = 8 * n + 65_536
  let searchBudget = searchLimit
  /** Whether a search that started at stack index `top` may look at index `k`. */
  const mayLook = (k: number, top: number) => k === top || --searchBudget >= 0
  /** Index of the nearest open `tag` not beyond a scope boundary, or -1. */
  const findOpen = (tag: string, stops: Set<string> | null): number => {
    for (let top = stack.length - 1, k = top; k > 0 && mayLook(k, top); k--) {
      const t = stack[k]!.tag
      if (t === tag) return k
      if (SCOPE.has(t) || (stops !== null && stops.has(t))) return -1
    }
    return -1
  }

  while (i < n) {
    const lt = src.indexOf("<", i)
    if (lt < 0) {
      appendText(decodeEntities(src.slice(i)))
      break
    }
    if (lt > i) appendText(decodeEntities(src.slice(i, lt)))
    i = lt
    const c1 = src.charCodeAt(i + 1)
    if (c1 === 33 /* ! */) {
      if (src.startsWith("<!--", i)) {
        const e = src.indexOf("-->", i + 4)
        i = e < 0 ? n : e + 3
      } else if (src.startsWith("<![CDATA[", i)) {
        const e = src.indexOf("]]>", i + 9)
        if (foreign > 0) appendText(src.slice(i + 9, e < 0 ? n : e))
        i = e < 0 ? n : e + 3
      } else {
        const e = src.indexOf(">", i + 2)
        i = e < 0 ? n : e + 1
      }
      continue
    }
    if (c1 === 63 /* ? */) {
      const e = src.indexOf(">", i + 2)
      i = e < 0 ? n : e + 1
      continue
    }
    if (c1 === 47 /* / */) {
      if (!isAlpha(src.charCodeAt(i + 2))) {
        const e = src.indexOf(">", i + 2)
        i = e < 0 ? n : e + 1
        continue
      }
      let j = i + 2
      while (j < n) {
        const c = src.charCodeAt(j)
        if (isWs(c) || c === 47 || c === 62) break
        j++
      }
      const tag = src.slice(i + 2, j).toLowerCase()
      const e = src.indexOf(">", j)
      i = e < 0 ? n : e + 1
      handleEnd(tag)
      continue
    }
    if (!isAlpha(c1)) {
      appendText("<")
      i++
      continue
    }
    // start tag
    let j = i + 1
    while (j < n) {
      const c = src.charCodeAt(j)
      if (isWs(c) || c === 47 || c === 62) break
      j++
    }
    const tag = src.slice(i + 1, j).toLowerCase()
    let attrs: Record<string, string> | null = null
    let selfClosing = false
    // attributes
    while (j < n) {
      let c = src.charCodeAt(j)
      while (isWs(c)) c = src.charCodeAt(++j)
      if (c === 62) { j++; break }
      if (c === 47) {
        j++
        if (src.charCodeAt(j) === 62) { selfClosing = true; j++; break }
        continue
      }
      if (j >= n) break
      const ns = j
      j++ // first char of a name may be anything, including '='
      while (j < n) {
        c = src.charCodeAt(j)
        if (isWs(c) || c === 47 || c === 62 || c === 61) break
        j++
      }
      const name = src.slice(ns, j).toLowerCase()
      c = src.charCodeAt(j)
      while (isWs(c)) c = src.charCodeAt(++j)
      let value = ""
      if (c === 61) {
        j++
        c = src.charCodeAt(j)
        while (isWs(c)) c = src.charCodeAt(++j)
        if (c === 34 || c === 39) {
          const q = src.indexOf(c === 34 ? "\"" : "'", j + 1)
          const end = q < 0 ? n : q
          value = src.slice(j + 1, end)
          j = q < 0 ? n : q + 1
        } else {
          const vs = j
          while (j < n) {
            c = src.charCodeAt(j)
            if (isWs(c) || c === 62) break
            j++
          }
          value = src.slice(vs, j)
        }
        if (value.indexOf("&") >= 0) value = decodeEntities(value, true)
      }
      if (attrs === null) attrs = {}
      if (!(name in attrs)) attrs[name] = value
    }
    i = j
    handleStart(tag, attrs, selfClosing)
    if (RAW.has(tag) || RCDATA.has(tag)) {
      if (VOID.has(tag)) continue
      const re = rawEnd(tag)
      re.lastIndex = i
      const m = re.exec(src)
      const end = m === null ? n : m.index
      const text = src.slice(i, end)
      if (text.length > 0) cur.children.push(RCDATA.has(tag) ? decodeEntities(text) : text)
      popTo(stack.length - 1)
      if (m === null) i = n
      else {
        const gt = src.indexOf(">", end)
        i = gt < 0 ? n : gt + 1
      }
    }
  }

  /**
   * Content outside the head before any `<body>` tag opens the body, as browsers do (a later
   * `<body>` tag only adds its attributes): pages that put their header between `</head>` and
   * `<body>` keep it in the body.
   */
  function openImpliedBody() {
    if (cur === head) popTo(stack.length - 1)
    handleStart("body", null, false)
  }

  function handleStart(tag: string, attrs: Record<string, string> | null, selfClosing: boolean) {
    if (tag === "html" || tag === "body" || tag === "head") {
      const existing = tag === "html" ? html : tag === "body" ? body : head
      if (existing !== null) {
        if (attrs !== null) existing.attrs = { ...attrs, ...(existing.attrs ?? {}) }
        return
      }
    }
    // a declarative shadow root is shown as part of its host: its content becomes the host's (its
    // `</template>` then finds no open template and is ignored)
    if (tag === "template" && attrs !== null && (attrs.shadowrootmode !== undefined || attrs.shadowroot !== undefined)) return
    if ((cur === html || cur === head) && html !== null && body === null && !HEAD_CONTENT.has(tag) && tag !== "body" && tag !== "head") openImpliedBody()
    if (foreign === 0) {
      if (CLOSES_P.has(tag)) {
        const p = findOpen("p", BUTTON_SCOPE)
        if (p > 0) popTo(p)
        if (HEADINGS.has(tag) && HEADINGS.has(cur.tag)) popTo(stack.length - 1)
        if (tag === "li") {
          const k = findOpen("li", LIST_STOPS)
          if (k > 0) popTo(k)
        } else if (tag === "dd" || tag === "dt") {
          for (let top = stack.length - 1, k = top; k > 0 && mayLook(k, top); k--) {
            const t = stack[k]!.tag
            if (t === "dd" || t === "dt") { popTo(k); break }
            if (t === "dl" || SCOPE.has(t)) break
          }
        }
      } else if (tag === "tr" || tag === "td" || tag === "th" || tag === "thead" || tag === "tbody" || tag === "tfoot") {
        for (let top = stack.length - 1, k = top; k > 0 && mayLook(k, top); k--) {
          const t = stack[k]!.tag
          if (t === "table") break
          if (t === "td" || t === "th" || (tag !== "td" && tag !== "th" && t === "tr") ||
              ((tag === "thead" || tag === "tbody" || tag === "tfoot") && (t === "thead" || t === "tbody" || t === "tfoot"))) {
            popTo(k)
          }
        }
      } else if (tag === "option" || tag === "optgroup") {
        if (cur.tag === "option") popTo(stack.length - 1)
      } else if (tag === "a") {
        const k = findOpen("a", BLOCKISH)
        if (k > 0) popTo(k)
      } else if (tag === "button") {
        // buttons do not nest: a second one closes the first (pages write `<button/>`, which opens one)
        const k = findOpen("button", null)
        if (k > 0) popTo(k)
      }
    }
    const el = new Element(tag, attrs)
    if (tag === "html") html = el
    else if (tag === "body") body = el
    else if (tag === "head") head = el
    el.parent = cur
    cur.children.push(el)
    if (VOID.has(tag) || (selfClosing && foreign > 0) || stack.length >= MAX_OPEN_ELEMENTS) return
    if (tag === "svg" || tag === "math") foreign++
    stack.push(el)
    cur = el
  }

  function handleEnd(tag: string) {
    if (tag === "br") {
      handleStart("br", null, true)
      return
    }
    if (tag === "html" || tag === "body" || tag === "head") {
      if (tag === "head") {
        for (let top = stack.length - 1, k = top; k > 0 && mayLook(k, top); k--) {
          if (stack[k] === head) { popTo(k); break }
        }
      }
      return
    }
    // `</li>` is looked for in list item scope and `</p>` in button scope: a stray one is ignored
    // instead of closing an item or paragraph outside the list or button it stands in
    const stops = tag === "li" ? LIST_STOPS : tag === "p" ? BUTTON_SCOPE : null
    for (let top = stack.length - 1, k = top; k > 0 && mayLook(k, top); k--) {
      const t = stack[k]!.tag
      if (t === tag) { popTo(k); return }
      if (foreign > 0) continue
      if (SCOPE.has(t) || (stops !== null && stops.has(t))) return
      if (INLINE.has(tag) && BLOCKISH.has(t)) return
    }
  }

  if (html === null) {
    html = new Element("html", null)
    html.parent = root
    html.children = root.children.splice(0)
    for (const c of html.children) if (typeof c !== "string") c.parent = html
    root.children.push(html)
  }
  if (body === null) body = html
  return { root, html, head, body, searchSteps: searchLimit - Math.max(0, searchBudget) }
}

const LIST_STOPS = new Set(["ol", "ul"])
/** Elements that belong in the head: they do not open the body when they come before it. */
const HEAD_CONTENT = new Set(["meta", "link", "script", "style", "title", "base", "template", "noscript", "noframes", "basefont", "bgsound"])
