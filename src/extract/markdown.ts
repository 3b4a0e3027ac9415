/**
 * Markdown and plain text → paragraphs. Markdown syntax (headings, emphasis, links, images,
 * lists, block quotes, code fences, tables, inline HTML) is reduced to its text; images are
 * collected; the first heading is the title.
 */
import { decodeEntities } from "./html/entities.ts"

export interface TextDocument {
  title?: string
  paragraphs: string[]
  images: Array<{ url: string; alt?: string }>
  links: string[]
}

function inline(s: string, images: TextDocument["images"]): string {
  let t = s
  t = t.replace(/<(script|style|iframe|noscript|template)\b[\s\S]*?<\/\1\s*>/gi, "")
  t = t.replace(/<img\b[^>]*>/gi, (tag) => {
    const src = /\bsrc\s*=\s*["']?([^"'\s>]+)/i.exec(tag)?.[1]
    const alt = /\balt\s*=\s*["']([^"']*)/i.exec(tag)?.[1]
    if (src !== undefined) images.push(alt ? { url: src, alt } : { url: src })
    return ""
  })
  t = t.replace(/<\/?[A-Za-z][^>]*>/g, "")
  t = t.replace(/!\[([^\]]*)\]\(\s*<?([^)\s>]+)>?(?:\s+["'][^)]*["'])?\s*\)/g, (_m, alt: string, src: string) => {
    images.push(alt ? { url: src, alt } : { url: src })
    return ""
  })
  t = t.replace(/\[([^\]]*)\]\(\s*[^)]*\)/g, "$1") // links
  t = t.replace(/\[([^\]]+)\]\[[^\]]*\]/g, "$1") // reference links
  t = t.replace(/<(https?:[^>\s]+)>/g, "$1") // autolinks
  t = t.replace(/(`+)([^`]*?)\1/g, "$2") // code spans
  t = t.replace(/(\*\*|__)(?=\S)([\s\S]*?\S)\1/g, "$2")
  t = t.replace(/(^|[^\w*])([*_])(?=\S)([\s\S]*?\S)\2(?![\w*])/g, "$1$3")
  t = t.replace(/~~(?=\S)([\s\S]*?\S)~~/g, "$1")
  t = t.replace(/\\([\\`*_{}\[\]()#+\-.!>|~])/g, "$1")
  return decodeEntities(t).replace(/[ \t]+/g, " ").trim()
}

/** Converts Markdown to paragraphs. */
export function markdownToText(md: string): TextDocument {
  const images: TextDocument["images"] = []
  const paragraphs: string[] = []
  let title: string | undefined
  let para: string[] = []
  const lines = md.replace(/\r\n?/g, "\n").split("\n")
  const flush = () => {
    if (para.length === 0) return
    const text = inline(para.join(" "), images)
    if (text !== "") paragraphs.push(text)
    para = []
  }
  const push = (text: string) => {
    flush()
    const t = inline(text, images)
    if (t !== "") paragraphs.push(t)
  }
  // skip front matter
  let i = 0
  if (lines[0]?.trim() === "---") {
    const end = lines.indexOf("---", 1)
    if (end > 0) i = end + 1
  }
  for (; i < lines.length; i++) {
    const line = lines[i]!
    const fence = /^\s*(```|~~~)/.exec(line)
    if (fence !== null) {
      flush()
      const code: string[] = []
      for (i++; i < lines.length && !lines[i]!.trim().startsWith(fence[1]!); i++) code.push(lines[i]!)
      if (code.join("").trim() !== "") paragraphs.push(code.join("\n").trim())
      continue
    }
    if (line.trim() === "") { flush(); continue }
    const h = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line)
    if (h !== null) {
      const t = inline(h[2]!, images)
      if (title === undefined && t !== "") { flush(); title = t; continue }
      push(h[2]!)
      continue
    }
    const next = lines[i + 1]
    if (next !== undefined && para.length === 0 && /^\s{0,3}(=+|-+)\s*$/.test(next) && line.trim() !== "") {
      const t = inline(line, images)
      if (title === undefined && t !== "") title = t
      else push(line)
      i++
      continue
    }
    if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) { flush(); continue } // thematic break
    if (/^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$/.test(line)) continue // table delimiter row
    const li = /^\s*(?:[-*+]|\d{1,9}[.)])\s+(.*)$/.exec(line)
    if (li !== null) { push(li[1]!.replace(/^\[[ xX]\]\s+/, "")); continue }
    const bq = /^\s*>\s?(.*)$/.exec(line)
    if (bq !== null) { para.push(bq[1]!); continue }
    if (line.includes("|") && /^\s*\|.*\|\s*$/.test(line)) {
      push(line.trim().replace(/^\||\|$/g, "").split("|").map((c) => c.trim()).join(" "))
      continue
    }
    para.push(line.trim())
  }
  flush()
  return { ...(title !== undefined ? { title } : {}), paragraphs, images, links: [] }
}

/** Plain text: paragraphs are separated by blank lines; a short first line is the title. */
export function plainText(text: string): TextDocument {
  const blocks = text.replace(/\r\n?/g, "\n").split(/\n\s*\n/).map((b) => b.split("\n").map((l) => l.replace(/[ \t\u00a0]+/g, " ").trim()).filter((l) => l !== "").join("\n")).filter((b) => b !== "")
  let title: string | undefined
  const first = blocks[0]
  if (first !== undefined) {
    const firstLine = first.split("\n")[0]!
    if (firstLine.length <= 150 && !/[.!?,;:]$/.test(firstLine) && (blocks.length > 1 || first.includes("\n"))) {
      title = firstLine
      const rest = first.split("\n").slice(1).join("\n")
      if (rest === "") blocks.shift()
      else blocks[0] = rest
    }
  }
  return { ...(title !== undefined ? { title } : {}), paragraphs: blocks, images: [], links: [] }
}
