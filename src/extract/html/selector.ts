/**
 * CSS selectors over the light tree: type, universal, `#id`, `.class`, attribute selectors
 * (`[a]`, `=`, `~=`, `|=`, `^=`, `$=`, `*=`, optional ` i`), the combinators (descendant, `>`,
 * `+`, `~`), selector lists, and the pseudo-classes `:first-child`, `:last-child`,
 * `:only-child`, `:nth-child()`, `:nth-last-child()`, `:nth-of-type()`, `:first-of-type`,
 * `:last-of-type`, `:not()`, `:has()` (descendants), `:empty`, `:root`.
 * An invalid selector throws `SelectorError`.
 */
import { Element, walk } from "./dom.ts"

export class SelectorError extends Error {}

type AttrOp = "" | "=" | "~=" | "|=" | "^=" | "$=" | "*="
interface AttrTest { name: string; op: AttrOp; value: string; ci: boolean }
interface Pseudo { name: string; a?: number; b?: number; sub?: Selector[] }
interface Compound { tag: string | null; ids: string[]; classes: string[]; attrs: AttrTest[]; pseudos: Pseudo[] }
/** Right-to-left: parts[0] is the subject; combinators[i] links parts[i] to parts[i+1]. */
interface Selector { parts: Compound[]; combinators: string[] }

const cache = new Map<string, Selector[]>()

export function parseSelector(src: string): Selector[] {
  const hit = cache.get(src)
  if (hit !== undefined) return hit
  const p = new SelectorParser(src)
  const list = p.list()
  p.ws()
  if (!p.done()) throw new SelectorError(`unexpected '${src.slice(p.i)}' in selector '${src}'`)
  if (cache.size > 500) cache.clear()
  cache.set(src, list)
  return list
}

class SelectorParser {
  i = 0
  readonly s: string
  constructor(s: string) {
    this.s = s
  }
  done() { return this.i >= this.s.length }
  peek() { return this.s[this.i] ?? "" }
  ws() { while (/\s/.test(this.peek()) && !this.done()) this.i++ }
  ident(): string {
    const m = /^-?(?:[A-Za-z_\u00a0-\uffff]|\\.)(?:[\w\u00a0-\uffff-]|\\.)*/.exec(this.s.slice(this.i))
    if (m === null) throw new SelectorError(`identifier expected at ${this.i} in '${this.s}'`)
    this.i += m[0].length
    return m[0].replace(/\\(.)/g, "$1")
  }
  list(): Selector[] {
    const out: Selector[] = []
    for (;;) {
      this.ws()
      out.push(this.complex())
      this.ws()
      if (this.peek() === ",") { this.i++; continue }
      return out
    }
  }
  complex(): Selector {
    const parts: Compound[] = [this.compound()]
    const combinators: string[] = []
    for (;;) {
      const save = this.i
      this.ws()
      const c = this.peek()
      if (c === ">" || c === "+" || c === "~") {
        this.i++
        this.ws()
        combinators.push(c)
        parts.push(this.compound())
      } else if (this.i > save && !this.done() && c !== "," && c !== ")") {
        combinators.push(" ")
        parts.push(this.compound())
      } else {
        this.i = save
        break
      }
    }
    return { parts: parts.reverse(), combinators: combinators.reverse() }
  }
  compound(): Compound {
    const c: Compound = { tag: null, ids: [], classes: [], attrs: [], pseudos: [] }
    let any = false
    if (this.peek() === "*") { this.i++; any = true } else if (/[A-Za-z_]/.test(this.peek())) { c.tag = this.ident().toLowerCase(); any = true }
    for (;;) {
      const ch = this.peek()
      if (ch === "#") { this.i++; c.ids.push(this.ident()) }
      else if (ch === ".") { this.i++; c.classes.push(this.ident()) }
      else if (ch === "[") { this.i++; c.attrs.push(this.attr()) }
      else if (ch === ":") { this.i++; if (this.peek() === ":") throw new SelectorError("pseudo-elements are not supported"); c.pseudos.push(this.pseudo()) }
      else break
      any = true
    }
    if (!any) throw new SelectorError(`selector expected at ${this.i} in '${this.s}'`)
    return c
  }
  attr(): AttrTest {
    this.ws()
    const name = this.ident().toLowerCase()
    this.ws()
    let op: AttrOp = ""
    let value = ""
    let ci = false
    const m = /^(=|~=|\|=|\^=|\$=|\*=)/.exec(this.s.slice(this.i))
    if (m !== null) {
      op = m[1] as AttrOp
      this.i += op.length
      this.ws()
      const q = this.peek()
      if (q === "\"" || q === "'") {
        const end = this.s.indexOf(q, this.i + 1)
        if (end < 0) throw new SelectorError("unterminated string")
        value = this.s.slice(this.i + 1, end)
        this.i = end + 1
      } else value = this.ident()
      this.ws()
      if (/[iI]/.test(this.peek())) { ci = true; this.i++; this.ws() }
    }
    if (this.peek() !== "]") throw new SelectorError("']' expected")
    this.i++
    return { name, op, value, ci }
  }
  pseudo(): Pseudo {
    const name = this.ident().toLowerCase()
    if (this.peek() !== "(") {
      if (!["first-child", "last-child", "only-child", "first-of-type", "last-of-type", "empty", "root"].includes(name)) throw new SelectorError(`unsupported pseudo-class :${name}`)
      return { name }
    }
    this.i++
    const end = matchParen(this.s, this.i)
    const arg = this.s.slice(this.i, end).trim()
    this.i = end + 1
    if (name === "not" || name === "has" || name === "is" || name === "where") return { name, sub: parseSelector(arg) }
    if (name === "nth-child" || name === "nth-last-child" || name === "nth-of-type" || name === "nth-last-of-type") {
      const [a, b] = parseNth(arg)
      return { name, a, b }
    }
    throw new SelectorError(`unsupported pseudo-class :${name}()`)
  }
}

function matchParen(s: string, from: number): number {
  let depth = 1
  for (let i = from; i < s.length; i++) {
    if (s[i] === "(") depth++
    else if (s[i] === ")" && --depth === 0) return i
  }
  throw new SelectorError("')' expected")
}

function parseNth(arg: string): [number, number] {
  const s = arg.replace(/\s+/g, "").toLowerCase()
  if (s === "odd") return [2, 1]
  if (s === "even") return [2, 0]
  const m = /^([+-]?\d*)n([+-]\d+)?$/.exec(s)
  if (m !== null) {
    const a = m[1] === "" || m[1] === "+" ? 1 : m[1] === "-" ? -1 : parseInt(m[1]!, 10)
    return [a, m[2] ? parseInt(m[2], 10) : 0]
  }
  if (/^[+-]?\d+$/.test(s)) return [0, parseInt(s, 10)]
  throw new SelectorError(`bad nth expression '${arg}'`)
}

function elementSiblings(el: Element): Element[] {
  const p = el.parent
  if (p === null) return [el]
  return p.children.filter((c): c is Element => typeof c !== "string")
}

function nthMatch(a: number, b: number, pos: number): boolean {
  if (a === 0) return pos === b
  const k = (pos - b) / a
  return Number.isInteger(k) && k >= 0
}

function matchCompound(el: Element, c: Compound): boolean {
  if (c.tag !== null && el.tag !== c.tag) return false
  for (const id of c.ids) if (el.attr("id") !== id) return false
  if (c.classes.length > 0) {
    const cls = el.attr("class")
    if (cls === undefined) return false
    const tokens = cls.split(/\s+/)
    for (const k of c.classes) if (!tokens.includes(k)) return false
  }
  for (const t of c.attrs) {
    let v = el.attr(t.name)
    if (v === undefined) return false
    let want = t.value
    if (t.ci) { v = v.toLowerCase(); want = want.toLowerCase() }
    switch (t.op) {
      case "": break
      case "=": if (v !== want) return false; break
      case "~=": if (!v.split(/\s+/).includes(want)) return false; break
      case "|=": if (v !== want && !v.startsWith(want + "-")) return false; break
      case "^=": if (want === "" || !v.startsWith(want)) return false; break
      case "$=": if (want === "" || !v.endsWith(want)) return false; break
      case "*=": if (want === "" || !v.includes(want)) return false; break
    }
  }
  for (const p of c.pseudos) {
    switch (p.name) {
      case "root": if (el.parent === null || el.parent.tag !== "#document") return false; break
      case "empty": if (el.children.some((x) => typeof x !== "string" || x.trim() !== "")) return false; break
      case "not": if (p.sub!.some((s) => matchSelector(el, s))) return false; break
      case "is": case "where": if (!p.sub!.some((s) => matchSelector(el, s))) return false; break
      case "has": {
        let found = false
        walk(el, (d) => {
          if (found) return false
          if (p.sub!.some((s) => matchSelector(d, s))) found = true
          return !found
        })
        if (!found) return false
        break
      }
      default: {
        const ofType = p.name.includes("of-type")
        const sibs = elementSiblings(el).filter((s) => !ofType || s.tag === el.tag)
        const idx = sibs.indexOf(el)
        const fromEnd = p.name.includes("last")
        const pos = fromEnd ? sibs.length - idx : idx + 1
        if (p.name === "only-child") { if (sibs.length !== 1) return false }
        else if (p.name === "first-child" || p.name === "first-of-type" || p.name === "last-child" || p.name === "last-of-type") { if (pos !== 1) return false }
        else if (!nthMatch(p.a!, p.b!, pos)) return false
      }
    }
  }
  return true
}

function matchFrom(el: Element, sel: Selector, k: number): boolean {
  if (!matchCompound(el, sel.parts[k]!)) return false
  if (k === sel.parts.length - 1) return true
  const comb = sel.combinators[k]!
  if (comb === ">") return el.parent !== null && el.parent.tag !== "#document" && matchFrom(el.parent, sel, k + 1)
  if (comb === " ") {
    for (let a = el.parent; a !== null && a.tag !== "#document"; a = a.parent) if (matchFrom(a, sel, k + 1)) return true
    return false
  }
  const sibs = elementSiblings(el)
  const idx = sibs.indexOf(el)
  if (comb === "+") return idx > 0 && matchFrom(sibs[idx - 1]!, sel, k + 1)
  for (let i = idx - 1; i >= 0; i--) if (matchFrom(sibs[i]!, sel, k + 1)) return true
  return false
}

function matchSelector(el: Element, sel: Selector): boolean {
  return matchFrom(el, sel, 0)
}

/** True when `el` matches the selector list. */
export function matches(el: Element, selector: string): boolean {
  return parseSelector(selector).some((s) => matchSelector(el, s))
}

/** All elements below `root` matching the selector, in document order. */
export function querySelectorAll(root: Element, selector: string): Element[] {
  const list = parseSelector(selector)
  const out: Element[] = []
  walk(root, (el) => {
    if (list.some((s) => matchSelector(el, s))) out.push(el)
  })
  return out
}

export function querySelector(root: Element, selector: string): Element | null {
  const list = parseSelector(selector)
  let found: Element | null = null
  walk(root, (el) => {
    if (found !== null) return false
    if (list.some((s) => matchSelector(el, s))) found = el
    return found === null
  })
  return found
}
