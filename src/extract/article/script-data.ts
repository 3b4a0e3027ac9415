/**
 * The script-data reading: pages rendered by script (Next.js `__NEXT_DATA__`, React server
 * components, Apollo/Redux state) often ship their body as a string inside inline script data,
 * either as HTML (`"html":"<p>…</p>"`) or as plain prose. This reading finds such strings without
 * knowing any framework: string literals of at least `MIN_LITERAL` characters in inline scripts,
 * decoded as JSON strings (twice for JSON serialized inside a string), kept when they read as
 * markup with paragraphs or as prose, and returns the paragraphs of the largest one.
 * See docs/extraction.md ("Readings").
 */
import { normalizeSpace } from "../html/dom.ts"
import { htmlToText } from "../html/text.ts"

/** Shorter string literals are names, labels and ids, not bodies. */
const MIN_LITERAL = 300
/** Total characters of script text scanned (inputs are already cut at 2,000,000). */
const MAX_SCAN = 2_000_000
/** At most this many candidate strings are read as HTML (each is parsed). */
const MAX_CANDIDATES = 40
const LITERAL = /"((?:[^"\\\n]|\\.){300,})"/g
/** Serialized JSON: an object or array (a React server-component row has an `id:` prefix) with `"key": value` pairs. */
const JSON_START = /^\s*(\w{1,8}:)?\s*[[{]/
const JSON_PAIR = /"[A-Za-z_$][\w$]*"\s*:\s*["{[\dtfn-]/
const serialized = (s: string) => JSON_START.test(s) && JSON_PAIR.test(s)
const MARKUP_BLOCK = /<(p|h[1-6]|li|blockquote|pre|br)\b[^<>]*>/gi
/** What code, URLs, base64 or CSS look like, as opposed to words. */
const CODE_SHAPE = /function\s*\(|=>|\bvar |\bconst |\breturn\b.*;|[{};]\s*[{};]|https?:\/\/\S{60}/

export interface ScriptBody {
  paragraphs: string[]
  /** "html" when the string was markup, "text" for prose. */
  kind: "html" | "text"
}

/** The body found in inline script data, or undefined. */
export function readScriptData(scripts: readonly string[], title: string | undefined, description?: string): ScriptBody | undefined {
  const seen = new Set<string>()
  const candidates: string[] = []
  let scanned = 0
  const scan = (src: string, depth: number) => {
    LITERAL.lastIndex = 0
    const found: string[] = []
    for (let m = LITERAL.exec(src); m !== null; m = LITERAL.exec(src)) found.push(m[1]!)
    for (const lit of found) {
      let s: string
      try {
        s = JSON.parse(`"${lit}"`) as string
      } catch {
        continue
      }
      // JSON serialized inside a string (React server components, state blobs) is data: its own
      // strings are read one level down, the string itself is never a body
      if (serialized(s)) {
        if (depth === 0 && s.length >= 2 * MIN_LITERAL) scan(s, 1)
        continue
      }
      const k = s.slice(0, 200)
      if (seen.has(k)) continue
      seen.add(k)
      if (looksLikeBody(s)) candidates.push(s)
    }
  }
  for (const src of scripts) {
    if (scanned + src.length > MAX_SCAN) break
    scanned += src.length
    scan(src, 0)
  }
  if (candidates.length === 0) return undefined
  // the longest candidates first: the body is the biggest text the page ships
  candidates.sort((a, b) => b.length - a.length)
  let best: ScriptBody | undefined
  let bestSize = 0
  for (const s of candidates.slice(0, MAX_CANDIDATES)) {
    if (s.length < bestSize) break
    const read = readCandidate(s, title)
    if (!aboutThePage(read.paragraphs, `${title ?? ""} ${description ?? ""}`)) continue
    const size = read.paragraphs.reduce((a, p) => a + p.length, 0)
    if (size > bestSize) { best = read; bestSize = size }
  }
  return best
}

/**
 * A page ships many texts in its data (other products' descriptions, a featured post on a front
 * page): the body is the one that is about the page, holding most words of its title and description.
 */
export function aboutThePage(paragraphs: readonly string[], titleAndDescription: string): boolean {
  const want = new Set(titleAndDescription.toLowerCase().match(/\p{L}{4,}|\p{N}{2,}/gu) ?? [])
  // too few words to tell (a bare category name): such a page's data proves nothing
  if (want.size < 4) return false
  const have = new Set(paragraphs.join(" ").toLowerCase().match(/\p{L}{4,}|\p{N}{2,}/gu) ?? [])
  let hit = 0
  for (const w of want) if (have.has(w)) hit++
  return hit >= 0.6 * want.size
}

/** Markup with at least two paragraph-like blocks, or prose: words, sentences, no code. */
export function looksLikeBody(s: string): boolean {
  // serialized JSON is data, whatever markup its values hold
  if (serialized(s)) return false
  MARKUP_BLOCK.lastIndex = 0
  let blocks = 0
  while (MARKUP_BLOCK.exec(s) !== null) if (++blocks >= 2) return true
  if (s.includes("<") && /<\/?[a-z][^<>]*>/i.test(s)) return false
  if (CODE_SHAPE.test(s)) return false
  const words = s.match(/\p{L}{2,}/gu)?.length ?? 0
  const sentences = s.match(/\p{Ll}[.!?](\s|$)/gu)?.length ?? 0
  // most of the string is words separated by single spaces, and it has sentences
  return words >= 40 && sentences >= 2 && words * 7 >= s.length * 0.6 && (s.match(/\s/g)?.length ?? 0) >= words * 0.8
}

function readCandidate(s: string, title: string | undefined): ScriptBody {
  MARKUP_BLOCK.lastIndex = 0
  if (MARKUP_BLOCK.test(s)) {
    // the string is the body itself (no page chrome around it): every block is a paragraph, links included
    const t = title !== undefined ? normalizeSpace(title).toLowerCase() : ""
    return { kind: "html", paragraphs: htmlToText(s).split("\n").filter((p) => p !== "" && p.toLowerCase() !== t) }
  }
  const paragraphs = s.replace(/\r\n?/g, "\n").split(/\n\s*\n|\n/).map((p) => p.replace(/\s+/g, " ").trim()).filter((p) => p !== "")
  return { kind: "text", paragraphs }
}
