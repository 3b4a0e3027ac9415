/**
 * robots.txt for site crawls (docs/site-crawls.md, "robots.txt"): fetched once per origin and
 * kept for a while, parsed with Crawlee's `RobotsTxtFile`, read for Trawl's user agent token.
 */
import { RobotsTxtFile } from "@crawlee/utils"
import { wildcardMatches } from "../wildcard.ts"

/** The product token robots.txt groups are matched against (`User-agent: TrawlBot`), else `*`. */
export const ROBOTS_USER_AGENT = "TrawlBot"

/** Only this much of a robots.txt is read; the rest is ignored (Google reads 500 KiB too). */
export const ROBOTS_MAX_BYTES = 500 * 1024

/** How long a fetched robots.txt (or its 4xx, meaning no rules) is believed. */
export const ROBOTS_TTL_MS = 24 * 60 * 60 * 1000
/** How long a 5xx or unreachable robots.txt (everything disallowed) is believed before it is asked again. */
export const ROBOTS_FAILURE_TTL_MS = 5 * 60 * 1000

export interface Robots {
  /** What was found: rules, none (4xx: everything allowed), or an error (5xx, 429, unreachable: nothing allowed). */
  readonly kind: "rules" | "none" | "unavailable"
  readonly isAllowed: (url: string) => boolean
  /** The `Sitemap:` lines, as absolute http(s) URLs. */
  readonly sitemaps: ReadonlyArray<string>
  /** `Crawl-delay` of the group read (in ms, at most `ROBOTS_MAX_CRAWL_DELAY_MS`), or 0 when none is given. */
  readonly crawlDelayMs?: number
}

/** A `Crawl-delay` longer than this is taken as this (a site cannot stall a crawl for hours per page). */
export const ROBOTS_MAX_CRAWL_DELAY_MS = 60_000

/** What fetching `/robots.txt` gave: its final status and body, or null when no answer came. */
export type RobotsFetch = { readonly status: number; readonly body: Buffer | null } | null

/** The robots.txt URL of a page's origin. */
export const robotsUrlOf = (page: URL): string => `${page.protocol}//${page.host}/robots.txt`

/**
 * robots.txt as Google reads it: a 2xx body is parsed; any other 4xx than 429 means there are no
 * rules (everything allowed); 429, 5xx and no answer at all mean the site asked not to be crawled
 * now, so everything is disallowed.
 */
export const robotsFrom = (robotsUrl: string, fetched: RobotsFetch): Robots => {
  if (fetched === null || fetched.status === 429 || fetched.status >= 500) {
    return { kind: "unavailable", isAllowed: () => false, sitemaps: [] }
  }
  if (fetched.status >= 400) return { kind: "none", isAllowed: () => true, sitemaps: [] }
  if (fetched.status < 200 || fetched.status >= 300) return { kind: "none", isAllowed: () => true, sitemaps: [] }
  const text = (fetched.body ?? Buffer.alloc(0)).subarray(0, ROBOTS_MAX_BYTES).toString("utf8")
  const file = RobotsTxtFile.from(robotsUrl, text)
  const rules = groupRules(file)
  const origin = originOf(new URL(robotsUrl))
  return {
    kind: "rules",
    // A URL of another origin is not this file's to refuse.
    isAllowed: (url) => {
      const target = URL.canParse(url) ? new URL(url) : undefined
      return target === undefined || originOf(target) !== origin || allowedBy(rules, pathOf(target))
    },
    sitemaps: file.getSitemaps({ enqueueStrategy: "all" }),
    crawlDelayMs: crawlDelayOf(file)
  }
}

/** A rule of the group read: a path pattern (`*` any run, a final `$` the end) and whether it allows. */
interface RobotsRule {
  readonly pattern: string
  readonly allow: boolean
}

/** Rules of one group read at most: a file of 500 KiB could hold 50 000, each judged for every URL. */
export const ROBOTS_MAX_RULES = 2000

/**
 * The rules of the group for Trawl's token, else of `*`, as `robots-parser` (under Crawlee's class)
 * parsed them. Its own matcher is not used: it takes pattern × path steps per rule, and 500 rules
 * of 500 `*` held the event loop for seconds per URL.
 */
const groupRules = (file: RobotsTxtFile): ReadonlyArray<RobotsRule> => {
  const parsed = (file as unknown as { robots?: { _rules?: Record<string, ReadonlyArray<RobotsRule>> } }).robots?._rules
  const group = parsed?.[ROBOTS_USER_AGENT.toLowerCase()] ?? parsed?.["*"] ?? []
  return group.slice(0, ROBOTS_MAX_RULES)
}

/** Scheme, host and port (the default one when none is given). */
const originOf = (u: URL): string => `${u.protocol}//${u.hostname}:${u.port || (u.protocol === "https:" ? "443" : "80")}`

/** Path and query as robots rules are compared with, its percent escapes in upper case. */
const pathOf = (u: URL): string => (u.pathname + u.search).replace(/%[0-9a-fA-F]{2}/g, (m) => m.toUpperCase())

/** RFC 9309: the longest pattern that matches decides, an allow winning a tie; no match allows. */
const allowedBy = (rules: ReadonlyArray<RobotsRule>, path: string): boolean => {
  let best: RobotsRule | undefined
  for (const rule of rules) {
    if (!ruleMatches(rule.pattern, path)) continue
    if (best === undefined || rule.pattern.length > best.pattern.length || (rule.pattern.length === best.pattern.length && rule.allow && !best.allow)) best = rule
  }
  return best === undefined || best.allow
}

/** Whether a rule's pattern matches the start of `path`, all of it with a final `$` (see `wildcardMatches`). */
export const ruleMatches = (pattern: string, path: string): boolean =>
  pattern.endsWith("$") ? wildcardMatches(pattern.slice(0, -1), path, true) : wildcardMatches(pattern, path, false)

/**
 * The `Crawl-delay` (seconds) of the group read for Trawl's token, in ms. Crawlee's class does not
 * expose it; the `robots-parser` instance it wraps does.
 */
const crawlDelayOf = (file: RobotsTxtFile): number => {
  const parser = (file as unknown as { robots?: { getCrawlDelay?: (ua: string) => number | undefined } }).robots
  const seconds = parser?.getCrawlDelay?.(ROBOTS_USER_AGENT)
  return typeof seconds === "number" && Number.isFinite(seconds) && seconds > 0 ? Math.min(seconds * 1000, ROBOTS_MAX_CRAWL_DELAY_MS) : 0
}

/**
 * robots.txt per origin, fetched at most once at a time and kept for `ROBOTS_TTL_MS`
 * (`ROBOTS_FAILURE_TTL_MS` for an unavailable one). In memory on each node: a node that has not
 * seen an origin asks it once.
 */
export class RobotsCache {
  private readonly entries = new Map<string, { readonly at: number; readonly robots: Promise<Robots> }>()
  private readonly fetchRobots: (robotsUrl: string) => Promise<RobotsFetch>
  private readonly maxEntries: number
  private readonly now: () => number
  constructor(fetchRobots: (robotsUrl: string) => Promise<RobotsFetch>, maxEntries = 10_000, now: () => number = Date.now) {
    this.fetchRobots = fetchRobots
    this.maxEntries = maxEntries
    this.now = now
  }

  get(page: URL): Promise<Robots> {
    const url = robotsUrlOf(page)
    const cached = this.entries.get(url)
    if (cached) {
      const ttl = (robots: Robots) => (robots.kind === "unavailable" ? ROBOTS_FAILURE_TTL_MS : ROBOTS_TTL_MS)
      const fresh = cached.robots.then((r) => this.now() - cached.at < ttl(r))
      return fresh.then((ok) => (ok ? cached.robots : this.load(url)))
    }
    return this.load(url)
  }

  private load(url: string): Promise<Robots> {
    const robots = this.fetchRobots(url).then((fetched) => robotsFrom(url, fetched), () => robotsFrom(url, null))
    // Oldest first out when full (a Map keeps insertion order).
    this.entries.delete(url)
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!)
    this.entries.set(url, { at: this.now(), robots })
    return robots
  }
}
