/**
 * How a site crawl judges the URLs it finds (docs/site-crawls.md, "Crawls"): each new key once,
 * against scope, path globs, depth, the per-pattern trap cap, the limit, robots.txt and the SSRF
 * guard, from the cheapest rule to the dearest. Pure apart from the robots.txt and guard lookups
 * it is given; the crawl entity writes what it answers.
 */
import { crawlKey, pathFilter, siteScope } from "./links.ts"
import type { Robots } from "./robots.ts"
import type { CrawlOptions } from "../schema/crawl.ts"

/** Links read from one page; the rest are ignored (a page of a million links is a trap of its own). */
export const CRAWL_MAX_LINKS_PER_PAGE = 1000
/** A URL key longer than this is not crawled (it is a filtered URL): real pages have shorter ones. */
export const CRAWL_MAX_KEY_LENGTH = 2048

/**
 * A URL's path pattern for the trap cap: every path segment with a digit in it is `*`, and the
 * query is reduced to its parameter names (sorted, each once). `/calendar/2026/11?view=month`
 * and `/calendar/1999/01?view=week` share `/calendar/*\/*?view`.
 */
export const pathPattern = (url: URL): string => {
  const path = url.pathname.split("/").map((seg) => (/\d/.test(seg) ? "*" : seg)).join("/")
  const names = [...new Set([...url.searchParams.keys()])].sort()
  return names.length === 0 ? `${url.host}${path}` : `${url.host}${path}?${names.join("&")}`
}

export interface Candidate {
  readonly url: string
  readonly depth: number
  readonly parentUrl: string | null
  readonly parentJobId: string | null
}

export interface Judged {
  /** The URL's key (docs/site-crawls.md, "URL keys and scope"). */
  readonly url: string
  /** The URL to fetch when it is not the key: as first found, query and all, when the key ignores the query. */
  readonly fetchUrl: string | null
  readonly depth: number
  readonly pattern: string
  readonly status: "queued" | "skipped" | "over_limit"
  readonly skipReason: "robots" | "filtered" | "depth" | "pattern" | "offsite" | "unsafe" | null
  readonly jobId: string | null
  readonly parentUrl: string | null
  readonly parentJobId: string | null
}

/** A crawl's options that judge found URLs (`maxPagesPerPattern` is the trap cap), and its seed. */
export type FrontierRules = Omit<CrawlOptions, "sitemap" | "page"> & { readonly seed: URL }

export interface FrontierDeps {
  readonly robots: (url: URL) => Promise<Robots>
  readonly isSafe: (url: URL) => Promise<boolean>
  readonly newJobId: () => string
}

/** What the crawl has accepted so far; `judge` counts what it accepts into it. */
export interface Accepted {
  total: number
  readonly byPattern: Map<string, number>
}

export const makeFrontier = (rules: FrontierRules, deps: FrontierDeps) => {
  const inScope = siteScope(rules.seed, { allowSubdomains: rules.allowSubdomains, allowExternal: rules.allowExternal })
  const passesPaths = pathFilter(rules.includePaths, rules.excludePaths)
  const keyOf = (u: string) => crawlKey(u, { ignoreQueryParameters: rules.ignoreQueryParameters })
  /** What is fetched for a URL found: its key, or with the query kept when the key drops it. */
  const fetchUrlOf = (u: string, key: string): string | null => {
    if (!rules.ignoreQueryParameters) return null
    const full = crawlKey(u, { ignoreQueryParameters: false })
    return full === null || full === key ? null : full
  }

  /**
   * Judges candidates: `known` are the keys the crawl has judged already (each is then only a
   * duplicate, handed back as a row that the store's unique key keeps from being written, so a
   * queued one can take a shorter depth, and counts it a duplicate); a key again among the
   * candidates is counted in `duplicates`. Candidates that are no http(s) URL are dropped.
   */
  const judge = async (
    candidates: ReadonlyArray<Candidate>,
    known: (keys: ReadonlyArray<string>) => Promise<ReadonlySet<string>>,
    accepted: Accepted
  ): Promise<{ readonly rows: ReadonlyArray<Judged>; readonly duplicates: number }> => {
    const byKey = new Map<string, Candidate>()
    let duplicates = 0
    for (const c of candidates) {
      const key = keyOf(c.url)
      if (key === null) continue
      if (byKey.has(key)) {
        duplicates++
        continue
      }
      byKey.set(key, c)
    }
    const seen = await known([...byKey.keys()])
    const rows: Array<Judged> = []
    for (const [key, c] of byKey) {
      const url = new URL(key)
      const pattern = pathPattern(url)
      const fetchUrl = fetchUrlOf(c.url, key)
      const row = (status: Judged["status"], skipReason: Judged["skipReason"], jobId: string | null = null): Judged => ({
        url: key,
        fetchUrl,
        depth: c.depth,
        pattern,
        status,
        skipReason,
        jobId,
        parentUrl: c.parentUrl,
        parentJobId: c.parentJobId
      })
      // Known: the store keeps what it has (a queued one may take this shorter depth).
      if (seen.has(key)) {
        rows.push(row("skipped", "filtered"))
        continue
      }
      if (!inScope(url)) rows.push(row("skipped", "offsite"))
      else if (key.length > CRAWL_MAX_KEY_LENGTH || !passesPaths(url)) rows.push(row("skipped", "filtered"))
      else if (c.depth > rules.maxDepth) rows.push(row("skipped", "depth"))
      else if ((accepted.byPattern.get(pattern) ?? 0) >= rules.maxPagesPerPattern) rows.push(row("skipped", "pattern"))
      else if (accepted.total >= rules.limit) rows.push(row("over_limit", null))
      // The guard before robots.txt: a private host's robots.txt is not even asked for.
      else if (!(await deps.isSafe(url))) rows.push(row("skipped", "unsafe"))
      else if (rules.respectRobots && !(await deps.robots(url)).isAllowed(fetchUrl ?? key)) rows.push(row("skipped", "robots"))
      else {
        accepted.total++
        accepted.byPattern.set(pattern, (accepted.byPattern.get(pattern) ?? 0) + 1)
        rows.push(row("queued", null, deps.newJobId()))
      }
    }
    return { rows, duplicates }
  }

  return { judge, keyOf, inScope }
}
