/**
 * The links of a page, the key a site crawl deduplicates URLs by, and the rules that decide which
 * URLs belong to a crawl (docs/site-crawls.md, "Links", "Scope and filters").
 */
import { parseHTML } from "linkedom"
import { domainIdOf, normalizeUrl } from "./domain.ts"

/**
 * The absolute http(s) URLs a page links to, in document order, each once, without fragments.
 * Links are `<a href>` and `<area href>`, resolved against the first `<base href>` (itself resolved
 * against the page's URL) as a browser does. Not followed: links with `rel=nofollow`, every link of
 * a page whose `<meta name="robots">` says `nofollow` or `none`, and `mailto:`, `javascript:`,
 * `tel:`, `data:` and any other scheme than http(s). A link that is only a fragment of the page
 * itself (`#top`) is the page again, so it is left out too.
 */
export const extractLinks = (html: string, pageUrl: string): ReadonlyArray<string> => {
  let page: URL
  try {
    page = new URL(pageUrl)
  } catch {
    return []
  }
  const { document } = parseHTML(html)
  for (const meta of document.querySelectorAll("meta[name]")) {
    const name = (meta.getAttribute("name") ?? "").toLowerCase()
    const content = (meta.getAttribute("content") ?? "").toLowerCase()
    if (name === "robots" && /\b(nofollow|none)\b/.test(content)) return []
  }
  const baseHref = document.querySelector("base[href]")?.getAttribute("href")
  let base = page
  if (baseHref) {
    try {
      base = new URL(baseHref.trim(), page)
    } catch {
      // an unusable <base href> is ignored, as browsers do
    }
  }
  const seen = new Set<string>()
  const out: Array<string> = []
  for (const a of document.querySelectorAll("a[href], area[href]")) {
    const rel = (a.getAttribute("rel") ?? "").toLowerCase().split(/\s+/)
    if (rel.includes("nofollow")) continue
    const href = (a.getAttribute("href") ?? "").trim()
    if (href === "" || href.startsWith("#")) continue
    let url: URL
    try {
      url = new URL(href, base)
    } catch {
      continue
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") continue
    url.hash = ""
    if (seen.has(url.href)) continue
    seen.add(url.href)
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

const escapeRegExp = (s: string) => s.replace(/[.+^${}()|[\]\\]/g, "\\$&")

/**
 * A path glob as a regular expression over the whole path: `*` is any run of characters but `/`,
 * `**` any run including `/` (`/blog/**` is everything below /blog/), `?` one character but `/`.
 * Everything else is literal.
 */
export const globToRegExp = (glob: string): RegExp => {
  let re = ""
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!
    if (c === "*" && glob[i + 1] === "*") {
      re += ".*"
      i++
    } else if (c === "*") re += "[^/]*"
    else if (c === "?") re += "[^/]"
    else re += escapeRegExp(c)
  }
  return new RegExp(`^${re}$`)
}

/**
 * Whether a URL's path passes the include and exclude globs: it matches none of `exclude`, and one
 * of `include` when there are any. Globs match the decoded-as-written path (`url.pathname`) only,
 * never the query.
 */
export const pathFilter = (include: ReadonlyArray<string>, exclude: ReadonlyArray<string>) => {
  const inc = include.map(globToRegExp)
  const exc = exclude.map(globToRegExp)
  return (url: URL): boolean => {
    const path = url.pathname
    if (exc.some((r) => r.test(path))) return false
    return inc.length === 0 || inc.some((r) => r.test(path))
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
