/**
 * How a site crawl judges the URLs it finds (src/crawl/frontier.ts, docs/site-crawls.md "How a
 * found URL is judged"), and the Crawl-delay read from robots.txt.
 */
import { describe, expect, it } from "vitest"
import { makeFrontier, pathPattern } from "../../src/crawl/frontier.ts"
import { CRAWL_PATTERN_CAP } from "../../src/schema/crawl.ts"
import { RobotsTxtFile } from "@crawlee/utils"
import { robotsFrom, ROBOTS_MAX_CRAWL_DELAY_MS, ROBOTS_MAX_RULES, ROBOTS_USER_AGENT, type Robots, ruleMatches } from "../../src/crawl/robots.ts"

const allowAll: Robots = { kind: "none", isAllowed: () => true, sitemaps: [] }
const rules = {
  seed: new URL("http://site.test/"),
  limit: 1000,
  maxDepth: 3,
  maxPagesPerPattern: CRAWL_PATTERN_CAP.default,
  includePaths: [],
  excludePaths: ["/skip/**"],
  allowSubdomains: false,
  allowExternal: false,
  ignoreQueryParameters: false,
  respectRobots: true
}
let n = 0
const deps = (over: Partial<{ robots: (u: URL) => Promise<Robots>; isSafe: (u: URL) => Promise<boolean> }> = {}) => ({
  robots: async () => allowAll,
  isSafe: async () => true,
  newJobId: () => `job_${++n}`,
  ...over
})
const none = async () => new Set<string>()
const at = (url: string, depth = 1) => ({ url, depth, parentUrl: null, parentJobId: null })

describe("crawl frontier", () => {
  it("names a URL's path pattern by its digit segments and query names", () => {
    expect(pathPattern(new URL("http://h.test/calendar/2026/11?view=month&a=1"))).toBe("h.test/calendar/*/*?a&view")
    expect(pathPattern(new URL("http://h.test/calendar/1999/01?view=week"))).toBe("h.test/calendar/*/*?view")
    expect(pathPattern(new URL("http://h.test/about"))).toBe("h.test/about")
  })

  it("judges each key once, by scope, globs, depth, limit, guard and robots, in that order", async () => {
    const { judge } = makeFrontier({ ...rules, limit: 2 }, deps({
      robots: async (u) => (u.pathname === "/no" ? { ...allowAll, isAllowed: () => false } : allowAll),
      isSafe: async (u) => u.hostname !== "private.site.test"
    }))
    const accepted = { total: 0, byPattern: new Map<string, number>() }
    const { rows, duplicates } = await judge([
      at("http://site.test/a?y=2&x=1#frag"),
      at("http://site.test/a?x=1&y=2"),
      at("mailto:x@site.test"),
      at("http://other.test/"),
      at("http://site.test/skip/me"),
      at("http://site.test/deep", 4),
      at("http://site.test/no"),
      at("http://site.test/b"),
      at("http://site.test/c")
    ], none, accepted)
    expect(duplicates).toBe(1)
    expect(rows.map((r) => [new URL(r.url).pathname + new URL(r.url).search, r.status, r.skipReason])).toEqual([
      ["/a?x=1&y=2", "queued", null],
      ["/", "skipped", "offsite"],
      ["/skip/me", "skipped", "filtered"],
      ["/deep", "skipped", "depth"],
      ["/no", "skipped", "robots"],
      ["/b", "queued", null],
      ["/c", "over_limit", null]
    ])
    expect(accepted.total).toBe(2)
    expect(rows.filter((r) => r.status === "queued").every((r) => r.jobId !== null)).toBe(true)
  })

  it("caps the pages of one path pattern, and treats known keys as duplicates", async () => {
    const { judge } = makeFrontier(rules, deps())
    const accepted = { total: 0, byPattern: new Map<string, number>() }
    const days = Array.from({ length: CRAWL_PATTERN_CAP.default + 5 }, (_, i) => at(`http://site.test/day/${i}`))
    const { rows } = await judge(days, none, accepted)
    expect(rows.filter((r) => r.status === "queued")).toHaveLength(CRAWL_PATTERN_CAP.default)
    expect(rows.filter((r) => r.skipReason === "pattern")).toHaveLength(5)
    const again = await judge([at("http://site.test/day/0")], async (keys) => new Set(keys), accepted)
    expect(again.rows[0]!.jobId).toBeNull()
    expect(accepted.total).toBe(CRAWL_PATTERN_CAP.default)
  })

  it("takes the cap a crawl asks for (maxPagesPerPattern)", async () => {
    const { judge } = makeFrontier({ ...rules, maxPagesPerPattern: 3 }, deps())
    const accepted = { total: 0, byPattern: new Map<string, number>() }
    const { rows } = await judge([1, 2, 3, 4].map((i) => at(`http://site.test/item/${i}`)), none, accepted)
    expect(rows.map((r) => r.skipReason)).toEqual([null, null, null, "pattern"])
  })

  it("reads Crawl-delay for TrawlBot, capped", () => {
    const r = robotsFrom("http://h.test/robots.txt", { status: 200, body: Buffer.from("User-agent: TrawlBot\nCrawl-delay: 2\nDisallow: /x\n") })
    expect(r.crawlDelayMs).toBe(2000)
    const star = robotsFrom("http://h.test/robots.txt", { status: 200, body: Buffer.from("User-agent: *\nCrawl-delay: 9999\n") })
    expect(star.crawlDelayMs).toBe(ROBOTS_MAX_CRAWL_DELAY_MS)
    expect(robotsFrom("http://h.test/robots.txt", { status: 200, body: Buffer.from("User-agent: *\nDisallow:\n") }).crawlDelayMs).toBe(0)
  })
})

describe("robots.txt rules", () => {
  const robotsOf = (text: string) => robotsFrom("http://h.test/robots.txt", { status: 200, body: Buffer.from(text) })

  it("decide as robots-parser does: the longest match wins, an allow a tie, `*` and a final `$`, per group", () => {
    const text = [
      "User-agent: other", "Disallow: /",
      "User-agent: TrawlBot", "Disallow: /private", "Allow: /private/open", "Disallow: /*.pdf$", "Allow: /p$", "Disallow: /p", "Disallow: /a*b*c"
    ].join("\n")
    const r = robotsOf(text)
    const file = RobotsTxtFile.from("http://h.test/robots.txt", text)
    const paths = ["/", "/private", "/private/x", "/private/open/1", "/doc.pdf", "/doc.pdf?x=1", "/p", "/pq", "/axbyc", "/axcyb", "/a%2fb", "/%e2%82%acbc"]
    for (const path of paths) expect(r.isAllowed(`http://h.test${path}`), path).toBe(file.isAllowed(`http://h.test${path}`, ROBOTS_USER_AGENT) !== false)
    // another origin's URL is not this file's to refuse
    expect(r.isAllowed("https://h.test/private")).toBe(true)
    expect(r.isAllowed("http://h.test:8080/private")).toBe(true)
  })

  it("agree with robots-parser's matcher on random rules and paths", () => {
    let seed = 5
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
    const pick = (alphabet: ReadonlyArray<string>, max: number) => Array.from({ length: 1 + Math.floor(next() * max) }, () => alphabet[Math.floor(next() * alphabet.length)]).join("")
    for (let i = 0; i < 400; i++) {
      const rules = Array.from({ length: 1 + Math.floor(next() * 4) }, () => `${next() < 0.5 ? "Allow" : "Disallow"}: /${pick(["a", "b", "*", "/"], 5)}${next() < 0.2 ? "$" : ""}`)
      const text = `User-agent: *\n${rules.join("\n")}\n`
      const r = robotsOf(text)
      const file = RobotsTxtFile.from("http://h.test/robots.txt", text)
      for (let j = 0; j < 10; j++) {
        const url = `http://h.test/${pick(["a", "b", "/"], 7)}`
        expect(r.isAllowed(url), `${text} ${url}`).toBe(file.isAllowed(url, ROBOTS_USER_AGENT) !== false)
      }
    }
  })

  it("judge a hostile file in time linear in the path: 500 rules of 500 stars against a 2000-character path", () => {
    const rule = "Disallow: /" + "*a".repeat(500) + "b"
    const r = robotsOf(`User-agent: *\n${Array.from({ length: 500 }, () => rule).join("\n")}\n`)
    expect(r.isAllowed(`http://h.test/${"a".repeat(2000)}`)).toBe(true)
    expect(ruleMatches("/*a*b", "/xxaxxb")).toBe(true)
  })

  it("read at most ROBOTS_MAX_RULES rules of a group", () => {
    const r = robotsOf(`User-agent: *\n${Array.from({ length: ROBOTS_MAX_RULES }, (_, i) => `Disallow: /r${i}/`).join("\n")}\nDisallow: /late/\n`)
    expect([r.isAllowed("http://h.test/r0/x"), r.isAllowed("http://h.test/late/x")]).toEqual([false, true])
  })
})
