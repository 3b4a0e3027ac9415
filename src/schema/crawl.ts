import { Schema } from "effect"
import { AbsoluteUrl, NullableDateTime, DateTime, Text, WebhookSecret } from "./common.ts"
import { Page } from "./envelope.ts"
import { EscalationEntry, ScreenshotOptions } from "./job.ts"

/** A path glob of `includePaths` / `excludePaths` (docs/site-crawls.md, "URL keys and scope"): 1 to 200 characters from `/`. */
const PathGlob = Text(1, 200).check(
  Schema.makeFilter((s: string) => s.startsWith("/") || "Expected a path glob starting with /", { toJsonSchema: () => ({ pattern: "^/" }) })
)
/** A crawl's or a map's `includePaths` / `excludePaths`: at most 50 globs. */
export const PathGlobs = Schema.Array(PathGlob).check(Schema.isMaxLength(50))

/** Bounds of a crawl (docs/api.md "Site crawls"). */
export const CRAWL_LIMIT = { min: 1, max: 10_000, default: 100 } as const
export const CRAWL_MAX_DEPTH = { min: 0, max: 20, default: 3 } as const
/** Pages per path pattern per crawl, the trap cap (docs/site-crawls.md, "How a found URL is judged"). */
export const CRAWL_PATTERN_CAP = { min: 1, max: 10_000, default: 200 } as const

/** How every page job of a crawl is run (the single-job body's fields of the same names). */
export const CrawlPageOptions = Schema.Struct({
  escalation: Schema.optional(Schema.Array(EscalationEntry).check(Schema.isBetweenLength(1, 8))),
  screenshot: Schema.optional(Schema.Union([Schema.Boolean, ScreenshotOptions])),
  timeoutMs: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 15_000, maximum: 300_000 }))),
  priority: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: -1000, maximum: 10 })))
}).annotate({ identifier: "CrawlPageOptions" })

export const CreateCrawlBody = Schema.Struct({
  url: AbsoluteUrl,
  limit: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: CRAWL_LIMIT.min, maximum: CRAWL_LIMIT.max }))),
  maxDepth: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: CRAWL_MAX_DEPTH.min, maximum: CRAWL_MAX_DEPTH.max }))),
  maxPagesPerPattern: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: CRAWL_PATTERN_CAP.min, maximum: CRAWL_PATTERN_CAP.max }))),
  includePaths: Schema.optional(PathGlobs),
  excludePaths: Schema.optional(PathGlobs),
  allowSubdomains: Schema.optional(Schema.Boolean),
  allowExternal: Schema.optional(Schema.Boolean),
  sitemap: Schema.optional(Schema.Literals(["include", "only", "skip"])),
  ignoreQueryParameters: Schema.optional(Schema.Boolean),
  respectRobots: Schema.optional(Schema.Boolean),
  page: Schema.optional(CrawlPageOptions),
  webhookUrl: Schema.optional(AbsoluteUrl),
  webhookSecret: Schema.optional(WebhookSecret)
}).annotate({ identifier: "CreateCrawlBody" })
export type CreateCrawlBody = typeof CreateCrawlBody.Type

/** The options a crawl runs with, every default filled in (stored with the crawl). */
export interface CrawlOptions {
  readonly limit: number
  readonly maxDepth: number
  readonly maxPagesPerPattern: number
  readonly includePaths: ReadonlyArray<string>
  readonly excludePaths: ReadonlyArray<string>
  readonly allowSubdomains: boolean
  readonly allowExternal: boolean
  readonly sitemap: "include" | "only" | "skip"
  readonly ignoreQueryParameters: boolean
  readonly respectRobots: boolean
  readonly page: typeof CrawlPageOptions.Type
}

export const crawlOptionsOf = (b: CreateCrawlBody): CrawlOptions => ({
  limit: b.limit ?? CRAWL_LIMIT.default,
  maxDepth: b.maxDepth ?? CRAWL_MAX_DEPTH.default,
  maxPagesPerPattern: b.maxPagesPerPattern ?? CRAWL_PATTERN_CAP.default,
  includePaths: b.includePaths ?? [],
  excludePaths: b.excludePaths ?? [],
  allowSubdomains: b.allowSubdomains ?? false,
  allowExternal: b.allowExternal ?? false,
  sitemap: b.sitemap ?? "include",
  ignoreQueryParameters: b.ignoreQueryParameters ?? false,
  respectRobots: b.respectRobots ?? true,
  page: b.page ?? {}
})

export const CrawlStatus = Schema.Literals(["queued", "running", "done", "failed", "cancelled"])
export type CrawlStatus = typeof CrawlStatus.Type
export const crawlTerminalStatuses: ReadonlyArray<CrawlStatus> = ["done", "failed", "cancelled"]
export const crawlSortFields = ["createdAt", "id", "status"] as const

export const CrawlCounts = Schema.Struct({
  /** Distinct URLs found (by key), whatever became of them; a URL seen again is a `duplicate`, not counted twice. */
  discovered: Schema.Int,
  /** Pages accepted that have not ended yet (waiting for their turn or being fetched). */
  queued: Schema.Int,
  done: Schema.Int,
  failed: Schema.Int,
  skipped: Schema.Struct({
    robots: Schema.Int,
    filtered: Schema.Int,
    duplicate: Schema.Int,
    offsite: Schema.Int,
    unsafe: Schema.Int
  })
}).annotate({ identifier: "CrawlCounts" })
export type CrawlCounts = typeof CrawlCounts.Type

export const Crawl = Schema.Struct({
  id: Schema.String,
  url: Schema.String,
  status: CrawlStatus,
  /** Why a running crawl is not progressing now (paused on the daily quota or the credit), else null. */
  statusReason: Schema.NullOr(Schema.String),
  limit: Schema.Int,
  maxDepth: Schema.Int,
  /** The options it runs with, as given or defaulted (the request's fields of the same names). */
  maxPagesPerPattern: Schema.Int,
  includePaths: Schema.Array(Schema.String),
  excludePaths: Schema.Array(Schema.String),
  allowSubdomains: Schema.Boolean,
  allowExternal: Schema.Boolean,
  sitemap: Schema.Literals(["include", "only", "skip"]),
  ignoreQueryParameters: Schema.Boolean,
  respectRobots: Schema.Boolean,
  page: CrawlPageOptions,
  webhookUrl: Schema.NullOr(Schema.String),
  counts: CrawlCounts,
  createdAt: DateTime,
  finishedAt: NullableDateTime
}).annotate({ identifier: "Crawl" })
export type Crawl = typeof Crawl.Type

export const CreatedCrawl = Schema.Struct({
  ...Crawl.fields,
  webhookSecret: Schema.optional(Schema.String.annotate({ description: "The generated webhook secret; shown once" }))
}).annotate({ identifier: "CreatedCrawl" })

export const CrawlPageStatus = Schema.Literals(["queued", "running", "done", "failed", "cancelled"])
export type CrawlPageStatus = typeof CrawlPageStatus.Type

export const CrawlPage = Schema.Struct({
  jobId: Schema.NullOr(Schema.String).annotate({
    description: "The page's job (GET /v1/scraper/jobs/{id}); null until it is made: while the page waits for its turn, or when the crawl ended before it"
  }),
  url: Schema.String,
  status: CrawlPageStatus,
  /** Shortest link distance from the seed (a sitemap's URL is at depth 1). */
  depth: Schema.Int,
  /** The page whose link found this URL first at its depth; null for the seed and sitemap URLs. */
  parentUrl: Schema.NullOr(Schema.String),
  parentJobId: Schema.NullOr(Schema.String),
  createdAt: DateTime,
  finishedAt: NullableDateTime
}).annotate({ identifier: "CrawlPage" })
export type CrawlPage = typeof CrawlPage.Type

export const CrawlPagePage = Page(CrawlPage).annotate({ identifier: "CrawlPagePage" })
export const CrawlListPage = Page(Crawl).annotate({ identifier: "CrawlList" })
