import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Text } from "../schema/common.ts"
import { Page, PageQuery, Success } from "../schema/envelope.ts"
import { errors, InvalidRequest, NotFound, Unavailable } from "../schema/errors.ts"
import { PageDiff, PageVersion } from "../schema/job.ts"
import { ApiKeyAuth, requires } from "./security.ts"
import { Operations } from "./openapi.ts"

/** A page's history is asked for by its absolute http(s) URL (normalized as the crawl stores it). */
const PAGE_URL = /^[hH][tT][tT][pP][sS]?:\/\//
const PageUrlQuery = Text(1, 2048).check(Schema.isPattern(PAGE_URL, { expected: "an absolute http(s) URL", toJsonSchema: () => ({ pattern: PAGE_URL.source }) }))

export class PageHistoryGroup extends HttpApiGroup.make("page-history")
  .add(
    HttpApiEndpoint.get("timeline", "/", {
      query: { ...PageQuery, url: PageUrlQuery },
      success: Success(Page(PageVersion)),
      error: errors(InvalidRequest)
    }).pipe(requires("page-history:pages:read")),
    HttpApiEndpoint.get("content", "/:versionId/content", {
      params: { versionId: Schema.String },
      success: Schema.Uint8Array.pipe(HttpApiSchema.asUint8Array({ contentType: "text/html" })),
      error: errors(NotFound)
    }).pipe(requires("page-history:pages:read")),
    HttpApiEndpoint.get("diff", "/:versionId/diff", {
      params: { versionId: Schema.String },
      success: Success(PageDiff),
      // 503 when the diff cannot be worked out in time (see docs/api.md).
      error: errors(NotFound, Unavailable)
    }).pipe(requires("page-history:pages:read"))
  )
  .middleware(ApiKeyAuth)
  .prefix("/v1/page-history")
  .annotate(OpenApi.Description, "Versions of a page over time, as crawls saw them.")
  .annotate(Operations, {
    timeline: ["A page's timeline", "The stored versions of one URL, newest first."],
    content: ["A version's content", "The stored content of one page version."],
    diff: ["Diff with the previous version", "What changed between a version and the version of the same page before it."]
  })
{}
