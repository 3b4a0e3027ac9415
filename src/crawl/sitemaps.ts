/**
 * Sitemaps for site crawls (docs/site-crawls.md, "Sitemaps"): the `Sitemap:` lines of robots.txt
 * and `/sitemap.xml`, sitemap indexes followed, gzip unpacked, every step bounded.
 */
import { gunzipSync } from "node:zlib"

/** Bounds of one crawl's sitemap reading. */
export interface SitemapBounds {
  /** Sitemap files fetched (indexes included). */
  readonly maxFiles: number
  /** Bytes of one sitemap once unpacked (the protocol's own limit is 50 MB). */
  readonly maxBytes: number
  /** How deep indexes may nest: 1 means an index may list sitemaps but not further indexes. */
  readonly maxIndexDepth: number
}

export const DEFAULT_SITEMAP_BOUNDS: SitemapBounds = { maxFiles: 50, maxBytes: 10 * 1024 * 1024, maxIndexDepth: 2 }

export interface ParsedSitemap {
  readonly kind: "urlset" | "index" | "invalid"
  /** The `<loc>`s in document order: pages of a urlset, sitemaps of an index. */
  readonly locs: ReadonlyArray<string>
}

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: "\"", apos: "'" }

const decodeXmlText = (raw: string): string => {
  const cdata = /^\s*<!\[CDATA\[([\s\S]*?)\]\]>\s*$/.exec(raw)
  if (cdata) return cdata[1]!.trim()
  return raw
    .replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, name: string) => {
      if (name[0] === "#") {
        const code = name[1] === "x" || name[1] === "X" ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10)
        return Number.isFinite(code) && code <= 0x10ffff ? String.fromCodePoint(code) : whole
      }
      return ENTITIES[name.toLowerCase()] ?? whole
    })
    .trim()
}

/**
 * A sitemap's `<loc>`s. The root element decides what they are: `<sitemapindex>` lists sitemaps,
 * `<urlset>` lists pages; anything else is not a sitemap. Namespace prefixes are allowed
 * (`<sm:loc>`). A plain-text sitemap (one URL a line, as the protocol allows) is a urlset.
 */
export const parseSitemap = (text: string): ParsedSitemap => {
  const body = withoutComments(text.replace(/^\uFEFF/, ""))
  const root = /<(?:[\w-]+:)?(urlset|sitemapindex)\b/i.exec(body)
  if (!root) {
    const lines = body.split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== "")
    if (lines.length > 0 && lines.every((l) => /^https?:\/\/\S+$/i.test(l))) return { kind: "urlset", locs: lines }
    return { kind: "invalid", locs: [] }
  }
  return { kind: root[1]!.toLowerCase() === "sitemapindex" ? "index" : "urlset", locs: locsOf(body) }
}

/*
 * The scans below search forward only and never read a stretch twice: a regular expression such
 * as `<loc[^>]*>([\s\S]*?)</loc>` rescans the rest of the text from every `<loc` that is never
 * closed, and 1 MB of them held the event loop for minutes.
 */

/** The text without its `<!-- -->` comments; an unclosed one runs to the end. */
const withoutComments = (text: string): string => {
  let out = ""
  let at = 0
  for (;;) {
    const start = text.indexOf("<!--", at)
    if (start < 0) return out + text.slice(at)
    out += text.slice(at, start)
    const end = text.indexOf("-->", start + 4)
    if (end < 0) return out
    at = end + 3
  }
}

const LOC_OPEN = /<(?:[\w-]+:)?loc\b/gi
const LOC_CLOSE = /<\/(?:[\w-]+:)?loc\s*>/gi

/** The text of every `<loc>` (any namespace prefix) in order; one never closed ends the reading. */
const locsOf = (body: string): Array<string> => {
  const locs: Array<string> = []
  const open = new RegExp(LOC_OPEN)
  const close = new RegExp(LOC_CLOSE)
  while (open.exec(body) !== null) {
    const gt = body.indexOf(">", open.lastIndex)
    if (gt < 0) break
    close.lastIndex = gt + 1
    const end = close.exec(body)
    if (end === null) break
    const loc = decodeXmlText(body.slice(gt + 1, end.index))
    if (loc !== "") locs.push(loc)
    open.lastIndex = close.lastIndex
  }
  return locs
}

/**
 * A fetched sitemap's text: gzip (by its magic bytes, whatever the name or type says) is unpacked
 * up to `maxBytes`; null when it is larger or not valid gzip.
 */
export const sitemapText = (body: Buffer, maxBytes: number): string | null => {
  if (body.length >= 2 && body[0] === 0x1f && body[1] === 0x8b) {
    try {
      return gunzipSync(body, { maxOutputLength: maxBytes }).toString("utf8")
    } catch {
      return null
    }
  }
  return body.length > maxBytes ? null : body.toString("utf8")
}

export interface SitemapWalk {
  /** Sitemap files fetched. */
  readonly fetched: number
  /** Sitemaps not read: over a bound, unreachable, or not a sitemap. */
  readonly skipped: number
}

/**
 * Reads sitemaps from `roots` breadth first, following indexes. `fetch` answers a sitemap's body
 * (null when it could not be fetched); `accept` says whether a child sitemap may be read; each page
 * URL is handed to `onPage` (awaited) as it is read, not deduplicated; `wantMore` says whether more
 * pages are wanted at all (the crawl's limit or budget). Each sitemap URL is fetched at most once.
 */
export const walkSitemaps = async (
  roots: ReadonlyArray<string>,
  fetch: (url: string) => Promise<Buffer | null>,
  options: {
    readonly bounds?: SitemapBounds
    readonly accept: (url: string) => boolean
    readonly onPage: (url: string) => void | Promise<void>
    readonly wantMore: () => boolean
  }
): Promise<SitemapWalk> => {
  const bounds = options.bounds ?? DEFAULT_SITEMAP_BOUNDS
  const seen = new Set<string>()
  let queue: Array<{ url: string; depth: number }> = []
  const enqueue = (url: string, depth: number) => {
    if (seen.has(url) || !options.accept(url)) return
    seen.add(url)
    queue.push({ url, depth })
  }
  for (const r of roots) enqueue(r, 0)
  let fetched = 0
  let skipped = 0
  while (queue.length > 0 && options.wantMore()) {
    const { url, depth } = queue.shift()!
    if (fetched >= bounds.maxFiles) {
      skipped += queue.length + 1
      queue = []
      break
    }
    fetched++
    const body = await fetch(url)
    const text = body === null ? null : sitemapText(body, bounds.maxBytes)
    const parsed = text === null ? null : parseSitemap(text)
    if (parsed === null || parsed.kind === "invalid") {
      skipped++
      continue
    }
    if (parsed.kind === "index") {
      if (depth >= bounds.maxIndexDepth) {
        skipped++
        continue
      }
      for (const loc of parsed.locs) enqueue(loc, depth + 1)
      continue
    }
    for (const loc of parsed.locs) {
      if (!options.wantMore()) break
      await options.onPage(loc)
    }
  }
  return { fetched, skipped }
}
