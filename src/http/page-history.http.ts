import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { servedContentType } from "../crawl/content-type.ts"
import { normalizeUrl } from "../crawl/domain.ts"
import { pageDiff } from "../crawl/page-diff.ts"
import { CurrentPrincipal } from "../iam/principal.ts"
import { pageOf, storedContentHeaders } from "../schema/envelope.ts"
import { fail, notFound } from "../schema/errors.ts"
import { JobRepo } from "../sql/job-repo.ts"
import { Api } from "./api.ts"
import { queryLimit } from "./list-query.ts"

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
          if (!target) {
            return yield* fail(400, "invalid_filter", "url must be an absolute http(s) URL", {
              details: [{ path: "url", code: "invalid_value", message: "not an absolute http(s) URL" }]
            })
          }
          const normalized = normalizeUrl(target)
          const offset = query.offset ?? 0
          const limit = yield* queryLimit(query)
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
          return HttpServerResponse.uint8Array(body, { contentType: servedContentType(version.contentType, body), headers: storedContentHeaders })
        }))
      .handle("diff", ({ params }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const version = yield* repo.version(me.tenantId, params.versionId)
          if (!version) return yield* notFound("page version")
          const previous = yield* repo.previousVersion(me.tenantId, version)
          const now = yield* repo.versionContent(me.tenantId, version.contentHash)
          if (!now) return yield* notFound("content of this version")
          const before = previous ? yield* repo.versionContent(me.tenantId, previous.contentHash) : undefined
          const result = yield* Effect.tryPromise(() =>
            pageDiff({
              before: before && previous ? { body: before, contentType: previous.contentType, label: `${previous.id} ${previous.fetchedAt}` } : null,
              now: { body: now, contentType: version.contentType, label: `${version.id} ${version.fetchedAt}` }
            }, me.tenantId)
          ).pipe(Effect.catch((e) => fail(503, "dependency_unavailable", `the diff could not be worked out: ${e.cause instanceof Error ? e.cause.message : "failed"}`, { retryAfter: 5 })))
          return { versionId: version.id, previousVersionId: previous?.id ?? null, changed: version.changed, ...result }
        }))
  })
)
