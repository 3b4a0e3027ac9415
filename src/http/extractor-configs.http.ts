import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Config } from "../config.ts"
import { configDomainId } from "../crawl/domain.ts"
import { configPayloadProblems } from "../extract/config-check.ts"
import { CurrentPrincipal, isSuperAdmin } from "../iam/principal.ts"
import { newId } from "../ids.ts"
import { pageOf } from "../schema/envelope.ts"
import { fail, notFound } from "../schema/errors.ts"
import { type ConfigPayload, configSortFields } from "../schema/extraction.ts"
import { ExtractionRepo, toConfig } from "../sql/extraction-repo.ts"
import { withTieBreak } from "../sql/order-by.ts"
import { TenantRepo } from "../sql/tenant-repo.ts"
import { Api } from "./api.ts"
import { failListQuery, queryLimit, readSort } from "./list-query.ts"

/**
 * Refuses a config payload that would fail every extraction it applies to (see configPayloadProblems),
 * or that names an LLM model the operator does not offer (LLM_MODELS).
 */
const checkConfigPayload = (payload: ConfigPayload, models: ReadonlyArray<string> | undefined) => {
  const problems = configPayloadProblems(payload)
  const model = payload.llm?.model
  if (model !== undefined && models !== undefined && !models.includes(model)) {
    problems.push({ path: "payload.llm.model", code: "invalid_value", message: `is not a model this service offers (${models.join(", ")})` })
  }
  return problems.length === 0
    ? Effect.void
    : fail(400, "validation_error", "the config's payload would fail every extraction it applies to", { details: problems })
}

export const ExtractorConfigsHandlers = HttpApiBuilder.group(
  Api,
  "extractor-configs",
  Effect.fn(function*(handlers) {
    const repo = yield* ExtractionRepo
    const tenants = yield* TenantRepo
    const llmModels = (yield* Config).llmModels

    /** Global configs are the super-admin's; a tenant may only change its own. */
    const writable = (id: string) =>
      Effect.gen(function*() {
        const me = yield* CurrentPrincipal
        const row = yield* repo.configs.find(me.tenantId, id)
        if (!row) return yield* notFound("extractor config")
        if (row.scope === "global" && !isSuperAdmin(me)) return yield* fail(403, "forbidden", "global configs are changed by platform admins only")
        return row
      })

    /** A config's domainId in the form extractions have theirs (docs/api.md, "Extractor configs"); 400 for a name that is no host. */
    const storedDomainId = (given: string | null | undefined) => {
      if (given === undefined || given === null) return Effect.succeed(given)
      const kept = configDomainId(given)
      return "domainId" in kept ? Effect.succeed(kept.domainId) : fail(400, "validation_error", `domainId ${kept.problem}`, {
        details: [{ path: "domainId", code: "invalid_value", message: kept.problem }]
      })
    }

    return handlers
      .handle("create", ({ payload }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          if (payload.scope === "global" && !isSuperAdmin(me)) {
            return yield* fail(403, "forbidden", "only platform admins create global configs")
          }
          if (payload.scope === "global" && payload.tenantId != null) {
            return yield* fail(422, "invalid_tenant", "a global config applies to every tenant", {
              details: [{ path: "tenantId", code: "invalid_value", message: "must be null or omitted for a global config" }]
            })
          }
          if (payload.scope === "tenant" && payload.tenantId != null && payload.tenantId !== me.tenantId) {
            return yield* fail(422, "invalid_tenant", "tenantId is set from the caller for tenant configs", {
              details: [{ path: "tenantId", code: "invalid_value", message: "must be your tenant or omitted" }]
            })
          }
          if (payload.payload) yield* checkConfigPayload(payload.payload, llmModels)
          const domainId = yield* storedDomainId(payload.domainId)
          const limit = yield* tenants.quotaLimit(me.tenantId, "extractor.configs.total")
          const row = yield* repo.configs.insert({
            id: newId("cfg"),
            tenant_id: payload.scope === "global" ? null : me.tenantId,
            scope: payload.scope,
            type: payload.type ?? null,
            domain_id: domainId ?? null,
            url_pattern: payload.urlPattern ?? null,
            priority: payload.priority ?? 0,
            enabled: payload.enabled ?? true,
            payload: payload.payload ?? {},
            notes: payload.notes ?? null
          }, limit)
          if (!row) return yield* fail(429, "quota_exceeded", `the tenant already has ${limit} extractor configs (extractor.configs.total)`)
          return toConfig(row)
        }))
      .handle("list", ({ query }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const limit = yield* queryLimit(query)
          const { sort, faults } = readSort(query.sort, configSortFields, "createdAt:desc,id:desc")
          if (faults.length > 0) return yield* failListQuery(faults)
          const offset = query.offset ?? 0
          const p = yield* repo.configs.list(me.tenantId, sort, offset, limit)
          return { ...pageOf(p.items.map(toConfig), offset, limit, p.total), sort: [...withTieBreak(sort)] }
        }))
      .handle("get", ({ params }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const row = yield* repo.configs.find(me.tenantId, params.id)
          return row ? toConfig(row) : yield* notFound("extractor config")
        }))
      .handle("update", ({ params, payload }) =>
        Effect.gen(function*() {
          yield* writable(params.id)
          if (payload.payload) yield* checkConfigPayload(payload.payload, llmModels)
          const patch: Record<string, unknown> = {}
          if (payload.type !== undefined) patch.type = payload.type
          if (payload.domainId !== undefined) patch.domain_id = yield* storedDomainId(payload.domainId)
          if (payload.urlPattern !== undefined) patch.url_pattern = payload.urlPattern
          if (payload.priority !== undefined) patch.priority = payload.priority
          if (payload.enabled !== undefined) patch.enabled = payload.enabled
          if (payload.payload !== undefined) patch.payload = JSON.stringify(payload.payload)
          if (payload.notes !== undefined) patch.notes = payload.notes
          const row = yield* repo.configs.update(params.id, patch)
          return row ? toConfig(row) : yield* notFound("extractor config")
        }))
      .handle("remove", ({ params }) =>
        Effect.gen(function*() {
          yield* writable(params.id)
          yield* repo.configs.remove(params.id)
          return { deleted: true, deletedAt: new Date().toISOString(), id: params.id }
        }))
  })
)
