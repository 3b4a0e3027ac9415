import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { CheckedByHandler, commaListPattern, IdempotencyKeyHeader } from "../schema/common.ts"
import { Crawl, CrawlListPage, CrawlPagePage, CrawlPageStatus, CrawlStatus, CreateCrawlBody, CreatedCrawl, crawlSortFields } from "../schema/crawl.ts"
import { PageQuery, SortQuery, Success } from "../schema/envelope.ts"
import { Conflict, errors, InvalidRequest, NotFound, PaymentRequired, TooManyRequests, Unavailable, Unprocessable } from "../schema/errors.ts"
import { Operations } from "./openapi.ts"
import { webhookSecretFaults } from "../schema/webhook.ts"
import { ApiKeyAuth, CrossFieldRules, requires, requiresToStop } from "./security.ts"

const id = { id: Schema.String }

export const ListCrawlsQuery = {
  ...PageQuery,
  sort: SortQuery(crawlSortFields),
  status: Schema.optional(CheckedByHandler({ pattern: commaListPattern(CrawlStatus.literals), description: "one status or a comma-separated list" }))
}

export const CrawlPagesQuery = {
  ...PageQuery,
  status: Schema.optional(CheckedByHandler({ pattern: commaListPattern(CrawlPageStatus.literals), description: "one page status or a comma-separated list" })),
  depth: Schema.optional(CheckedByHandler({ pattern: "^(0?[0-9]|1[0-9]|20)$", description: "only the pages at this depth (0 to 20)" })),
  parentJobId: Schema.optional(CheckedByHandler({ minLength: 1, maxLength: 64, description: "only the pages first found on the page of this job" }))
}

/**
 * Site crawls (docs/api.md "Site crawls", docs/site-crawls.md): every page is an ordinary job, so
 * starting and cancelling a crawl needs what creating and cancelling jobs needs
 * (`scraper:jobs:write`), and reading crawls and their pages what reading jobs needs (`scraper:jobs:read`).
 */
export class CrawlsGroup extends HttpApiGroup.make("crawls")
  .add(
    HttpApiEndpoint.post("create", "/crawls", {
      headers: { "idempotency-key": Schema.optional(IdempotencyKeyHeader) },
      payload: CreateCrawlBody,
      success: Success(CreatedCrawl, 201),
      error: errors(InvalidRequest, PaymentRequired, Conflict, Unprocessable, TooManyRequests, Unavailable)
    }).annotate(CrossFieldRules, webhookSecretFaults).pipe(requires("scraper:jobs:write")),
    HttpApiEndpoint.get("list", "/crawls", {
      query: ListCrawlsQuery,
      success: Success(CrawlListPage),
      error: errors(InvalidRequest)
    }).pipe(requires("scraper:jobs:read")),
    HttpApiEndpoint.get("get", "/crawls/:id", {
      params: id,
      success: Success(Crawl),
      error: errors(NotFound)
    }).pipe(requires("scraper:jobs:read")),
    HttpApiEndpoint.get("pages", "/crawls/:id/pages", {
      params: id,
      query: CrawlPagesQuery,
      success: Success(CrawlPagePage),
      error: errors(InvalidRequest, NotFound)
    }).pipe(requires("scraper:jobs:read")),
    HttpApiEndpoint.post("cancel", "/crawls/:id/cancel", {
      params: id,
      success: Success(Crawl),
      error: errors(NotFound, Conflict)
    }).pipe(requiresToStop("scraper:jobs:write"))
  )
  .middleware(ApiKeyAuth)
  .prefix("/v1/scraper")
  .annotate(OpenApi.Description, "Site crawls: follow a site's links and sitemaps from a seed URL within bounds; every page is a job.")
  .annotate(Operations, {
    create: [
      "Start a site crawl",
      "Crawls the seed's site: its sitemaps and the links of its pages, breadth first, within `limit` pages and `maxDepth`, honouring robots.txt (and its Crawl-delay), the path globs and the SSRF guard. Each page is an ordinary job, charged as one; webhookSecret goes with webhookUrl (400 otherwise). An Idempotency-Key makes a retry answer the first response."
    ],
    list: ["List site crawls", "The tenant's crawls, newest first by default; filter by status, sort by fields."],
    get: ["Get a site crawl", "One crawl with its counts: URLs discovered, pages queued, done and failed, URLs skipped by reason."],
    pages: ["List a crawl's pages", "The crawl's pages (their jobs) with their depth and the page that linked them, in crawl order; filter by status, depth or parent."],
    cancel: ["Cancel a site crawl", "Stops discovery and cancels the pages not fetched yet; pages already fetched are kept."]
  })
{}
