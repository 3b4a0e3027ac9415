/**
 * The links of a page, the key a site crawl deduplicates URLs by, and the rules that decide which
 * URLs belong to a crawl (docs/site-crawls.md, "Links", "Scope and filters").
 */
import { walk } from "../extract/html/dom.ts"
import { type Element, parseHtml } from "../extract/html/parser.ts"
import { domainIdOf, normalizeUrl } from "./domain.ts"

/** The links read of one page, the first in document order; a crawl judges each, robots.txt and all. */
export const MAX_PAGE_LINKS = 10_000

/**
 * The absolute http(s) URLs a page links to, in document order, without fragments, every link
 * as often as the page has it: a crawl judges each sighting, and a repeat (`/x` twice, or `/x`
 * beside `/x#part`) counts as `skipped.duplicate` as a repeat spelled otherwise does.
 * Links are `<a href>` and `<area href>`, resolved against the first `<base href>` (itself resolved
 * against the page's URL) as a browser does. Not followed: links with `rel=nofollow`, every link of
 * a page whose `<meta name="robots">` says `nofollow` or `none`, and `mailto:`, `javascript:`,
 * `tel:`, `data:` and any other scheme than http(s). A link that is only a fragment of the page
 * itself (`#top`) is the page again, so it is left out too. At most `MAX_PAGE_LINKS` are read.
 */
export const extractLinks = (html: string, pageUrl: string): ReadonlyArray<string> => {
  let page: URL
  try {
    page = new URL(pageUrl)
  } catch {
    return []
  }
  // The extractor's parser: one pass, and no deeper than a browser's open elements (linkedom's
  // DOM took minutes of the event loop over 400 000 nested elements).
  const anchors: Array<Element> = []
  let nofollow = false
  let baseHref: string | undefined
  walk(parseHtml(html).root, (el) => {
    if (el.tag === "meta" && (el.attr("name") ?? "").toLowerCase() === "robots" && /\b(nofollow|none)\b/.test((el.attr("content") ?? "").toLowerCase())) nofollow = true
    else if (el.tag === "base" && baseHref === undefined && el.attr("href") !== undefined) baseHref = el.attr("href")
    else if ((el.tag === "a" || el.tag === "area") && el.attr("href") !== undefined && anchors.length < MAX_PAGE_LINKS) anchors.push(el)
  })
  if (nofollow) return []
  let base = page
  if (baseHref) {
    try {
      base = new URL(baseHref.trim(), page)
    } catch {
      // an unusable <base href> is ignored, as browsers do
    }
  }
  const out: Array<string> = []
  for (const a of anchors) {
    const rel = (a.attr("rel") ?? "").toLowerCase().split(/\s+/)
    if (rel.includes("nofollow")) continue
    const href = (a.attr("href") ?? "").trim()
    if (href === "" || href.startsWith("#")) continue
    let url: URL
    try {
      url = new URL(href, base)
    } catch {
      continue
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") continue
    url.hash = ""
    out.push(url.href)
  }
  return out
}

/**
 * The key a crawl deduplicates a URL by: page history's (`normalizeUrl`: lower-case scheme and
 * host, default port and fragment dropped, query parameters sorted), and with
 * `ignoreQueryParameters` no query at all. Null when it is not an http(s) URL.
 */
export const crawlKey = (input: string, options: { readonly ignoreQueryParameters?: boolean } = {}): string | null => {
  let url: URL
  try {
    url = new URL(normalizeUrl(input))
  } catch {
    return null
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return null
  if (options.ignoreQueryParameters) url.search = ""
  return url.href
}

/** One step of a path glob: a literal character, `?`, `*` or `**`. */
type GlobToken = { readonly kind: "char"; readonly char: string } | { readonly kind: "one" | "segment" | "any" }

/**
 * A path glob as a matcher of the whole path: `*` is any run of characters but `/`, `**` any run
 * including `/` (`/blog/**` is everything below /blog/), `?` one character but `/`; everything else
 * is literal. It walks the path once, keeping the set of glob positions reached (time = path ×
 * glob length), never backtracking: a glob such as `/*a*a*a*a*b` on a long path made a regular
 * expression run for minutes on the event loop.
 */
export const pathGlobMatcher = (glob: string): ((path: string) => boolean) => {
  const tokens: Array<GlobToken> = []
  // By code points, as the path is read: `?` is one character, whatever its UTF-16 length.
  const chars = [...glob]
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i]!
    if (c === "*" && chars[i + 1] === "*") {
      tokens.push({ kind: "any" })
      i++
    } else if (c === "*") tokens.push({ kind: "segment" })
    else if (c === "?") tokens.push({ kind: "one" })
    else tokens.push({ kind: "char", char: c })
  }
  const n = tokens.length
  // A star may match nothing: reaching it reaches what follows it too.
  const close = (reached: Uint8Array) => {
    for (let i = 0; i < n; i++) if (reached[i] === 1 && tokens[i]!.kind !== "char" && tokens[i]!.kind !== "one") reached[i + 1] = 1
  }
  return (path: string) => {
    let reached = new Uint8Array(n + 1)
    let next = new Uint8Array(n + 1)
    reached[0] = 1
    close(reached)
    for (const c of path) {
      next.fill(0)
      let any = false
      for (let i = 0; i < n; i++) {
        if (reached[i] === 0) continue
        const t = tokens[i]!
        if (t.kind === "char" ? t.char === c : t.kind === "one" ? c !== "/" : false) { next[i + 1] = 1; any = true }
        else if (t.kind === "any" || (t.kind === "segment" && c !== "/")) { next[i] = 1; any = true }
      }
      if (!any) return false
      close(next)
      ;[reached, next] = [next, reached]
    }
    return reached[n] === 1
  }
}

/**
 * Whether a URL's path passes the include and exclude globs: it matches none of `exclude`, and one
 * of `include` when there are any. Globs match the decoded-as-written path (`url.pathname`) only,
 * never the query.
 */
export const pathFilter = (include: ReadonlyArray<string>, exclude: ReadonlyArray<string>) => {
  const inc = include.map(pathGlobMatcher)
  const exc = exclude.map(pathGlobMatcher)
  return (url: URL): boolean => {
    const path = url.pathname
    if (exc.some((matches) => matches(path))) return false
    return inc.length === 0 || inc.some((matches) => matches(path))
  }
}

/**
 * Whether a URL is on the crawl's site: the seed's host name (any scheme and port), and with
 * `allowSubdomains` any host of the seed's registrable domain (`docs.example.com` for a seed on
 * `example.com` or `www.example.com`). With `allowExternal` every host is in scope.
 */
export const siteScope = (seed: URL, options: { readonly allowSubdomains?: boolean; readonly allowExternal?: boolean }) => {
  const host = seed.hostname.toLowerCase()
  const site = domainIdOf(seed)
  return (url: URL): boolean => {
    if (options.allowExternal) return true
    const other = url.hostname.toLowerCase()
    if (other === host) return true
    if (!options.allowSubdomains || site === null) return false
    return domainIdOf(url) === site
  }
}
