import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { CurrentPrincipal } from "../iam/principal.ts"
import { auditActions, type AuditFilter, MAX_AUDIT_FILTER_LENGTH } from "../schema/audit.ts"
import { parseIsoDateTime } from "../schema/common.ts"
import { pageOf } from "../schema/envelope.ts"
import { notFound } from "../schema/errors.ts"
import { AuditLog, type AuditLogShape } from "../sql/audit-log.ts"
import { TenantRepo } from "../sql/tenant-repo.ts"
import { Api } from "./api.ts"
import { failListQuery, filterFault, type ListFault, queryLimit } from "./list-query.ts"

/**
 * An action filter is one of the actions the log records (`role.create`), or a prefix of dotted
 * lower-case words ending in `.*` (`session.*`), as the OpenAPI document states: a mistyped action
 * is refused rather than matching nothing.
 */
const knownActions: ReadonlySet<string> = new Set(auditActions)
const actionPrefixPattern = /^[a-z0-9_-]+(\.[a-z0-9_-]+)*\.\*$/
const isActionFilter = (action: string) => knownActions.has(action) || (action.length <= MAX_AUDIT_FILTER_LENGTH && actionPrefixPattern.test(action))

interface AuditQuery {
  readonly offset?: number | undefined
  readonly limit?: number | undefined
  readonly take?: number | undefined
  readonly identityId?: string | undefined
  readonly action?: string | undefined
  readonly from?: string | undefined
  readonly to?: string | undefined
}

/** The filter of an audit query, or a 400 naming every bad parameter. */
const readFilter = (query: AuditQuery) => {
  const faults: Array<ListFault> = []
  const filter: { -readonly [K in keyof AuditFilter]: AuditFilter[K] } = {}
  if (query.identityId !== undefined) {
    if (query.identityId.length < 1 || query.identityId.length > MAX_AUDIT_FILTER_LENGTH) {
      faults.push(filterFault("identityId", `must be 1 to ${MAX_AUDIT_FILTER_LENGTH} characters`))
    } else filter.identityId = query.identityId
  }
  if (query.action !== undefined) {
    if (!isActionFilter(query.action)) {
      faults.push(filterFault("action", "must be an action the audit log records, such as role.create, or a prefix ending in .* such as session.*"))
    } else {
      const prefix = query.action.endsWith(".*")
      filter.action = { value: prefix ? query.action.slice(0, -1) : query.action, prefix }
    }
  }
  const instant = (name: "from" | "to") => {
    const raw = query[name]
    if (raw === undefined) return undefined
    const ms = parseIsoDateTime(raw)
    if (ms === undefined) faults.push(filterFault(name, "must be an ISO 8601 date-time such as 2026-01-31T12:00:00Z"))
    return ms
  }
  const from = instant("from")
  const to = instant("to")
  if (from !== undefined) filter.from = new Date(from).toISOString()
  if (to !== undefined) filter.to = new Date(to).toISOString()
  if (from !== undefined && to !== undefined && from > to) faults.push(filterFault("to", "must not be before from"))
  return faults.length > 0 ? failListQuery(faults) : Effect.succeed(filter as AuditFilter)
}

const listOf = (audit: AuditLogShape, tenantId: string, query: AuditQuery) =>
  Effect.gen(function*() {
    const limit = yield* queryLimit(query)
    const filter = yield* readFilter(query)
    const offset = query.offset ?? 0
    const page = yield* audit.list(tenantId, filter, offset, limit)
    return pageOf(page.items, offset, limit, page.total)
  })

export const AuditHandlers = HttpApiBuilder.group(
  Api,
  "audit",
  Effect.fn(function*(handlers) {
    const audit = yield* AuditLog
    return handlers.handle("list", ({ query }) =>
      Effect.gen(function*() {
        const me = yield* CurrentPrincipal
        return yield* listOf(audit, me.tenantId, query)
      }))
  })
)

export const AdminAuditHandlers = HttpApiBuilder.group(
  Api,
  "adminAudit",
  Effect.fn(function*(handlers) {
    const audit = yield* AuditLog
    const tenants = yield* TenantRepo
    return handlers.handle("list", ({ params, query }) =>
      Effect.gen(function*() {
        if (!(yield* tenants.find(params.tenantId))) return yield* notFound("tenant")
        return yield* listOf(audit, params.tenantId, query)
      }))
  })
)
