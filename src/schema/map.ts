import { Schema } from "effect"
import { AbsoluteUrl } from "./common.ts"
import { PathGlobs } from "./crawl.ts"


/** Bounds of a map (docs/api.md "Site map"). */
export const MAP_LIMIT_MAX = 5000
export const MAP_BUDGET_MS = { min: 1000, max: 60_000, default: 30_000 } as const

export const MapBody = Schema.Struct({
  url: AbsoluteUrl,
  limit: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: MAP_LIMIT_MAX }))),
  includePaths: Schema.optional(PathGlobs),
  excludePaths: Schema.optional(PathGlobs),
  allowSubdomains: Schema.optional(Schema.Boolean),
  ignoreQueryParameters: Schema.optional(Schema.Boolean),
  sitemap: Schema.optional(Schema.Literals(["include", "only", "skip"])),
  budgetMs: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: MAP_BUDGET_MS.min, maximum: MAP_BUDGET_MS.max })))
}).annotate({ identifier: "MapBody" })
export type MapBody = typeof MapBody.Type

export const SiteMap = Schema.Struct({
  /** The seed as it was keyed. */
  url: Schema.String,
  urls: Schema.Array(Schema.String),
  count: Schema.Int,
  /** `done`: everything reachable was looked at; `limit` or `budget`: the map stopped there. */
  stoppedBy: Schema.Literals(["done", "limit", "budget"]),
  pagesFetched: Schema.Int,
  sitemapsFetched: Schema.Int,
  skipped: Schema.Struct({
    robots: Schema.Int,
    filtered: Schema.Int,
    offsite: Schema.Int,
    unsafe: Schema.Int,
    duplicate: Schema.Int
  })
}).annotate({ identifier: "SiteMap" })
export type SiteMap = typeof SiteMap.Type
