import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { normalizeUrl } from "../crawl/domain.ts"
import { unifiedDiff } from "../crawl/text-diff.ts"
import { diffLines } from "../crawl/visible-text.ts"
import { CurrentPrincipal } from "../iam/principal.ts"
import { pageOf, storedContentHeaders } from "../schema/envelope.ts"
import { fail, notFound } from "../schema/errors.ts"
import { JobRepo } from "../sql/job-repo.ts"
import { Api } from "./api.ts"

export const PageHistoryHandlers = HttpApiBuilder.group(
  Api,
  "page-history",
  Effect.fn(function*(handlers) {
    const repo = yield* JobRepo
    return handlers
      .handle("timeline", ({ query }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const target = URL.canParse(query.url) ? new URL(query.url) : undefined
          if (!target || (target.protocol !== "http:" && target.protocol !== "https:")) {
            return yield* fail(400, "invalid_filter", "url must be an absolute http(s) URL", {
              details: [{ path: "url", code: "invalid_value", message: "not an absolute http(s) URL" }]
            })
          }
          const normalized = normalizeUrl(target)
          const offset = query.offset ?? 0
          const limit = query.limit ?? 50
          const page = yield* repo.timeline(me.tenantId, normalized, offset, limit)
          return pageOf(page.items, offset, limit, page.total)
        }))
      .handle("content", ({ params }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const version = yield* repo.version(me.tenantId, params.versionId)
          if (!version) return yield* notFound("page version")
          const body = yield* repo.versionContent(me.tenantId, version.contentHash)
          if (!body) return yield* notFound("content of this version")
          return HttpServerResponse.uint8Array(body, { contentType: version.contentType ?? "text/html; charset=utf-8", headers: storedContentHeaders })
        }))
      .handle("diff", ({ params }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const version = yield* repo.version(me.tenantId, params.versionId)
          if (!version) return yield* notFound("page version")
          const previous = yield* repo.previousVersion(me.tenantId, version)
          const now = yield* repo.versionContent(me.tenantId, version.contentHash)
          const before = previous ? yield* repo.versionContent(me.tenantId, previous.contentHash) : undefined
          const diff = unifiedDiff(
            before && previous ? diffLines(before.toString("utf8"), previous.contentType) : [],
            now ? diffLines(now.toString("utf8"), version.contentType) : [],
            { from: previous ? `${previous.id} ${previous.fetchedAt}` : "/dev/null", to: `${version.id} ${version.fetchedAt}` }
          )
          return { versionId: version.id, previousVersionId: previous?.id ?? null, changed: version.changed, diff }
        }))
  })
)
