/**
 * A super-admin's override of one of a tenant's quotas (`PUT /v1/admin/tenants/{id}/quotas/{key}`,
 * docs/api.md "Quotas"): written, audited in the admin's log and the tenant's own, and told to the
 * tenant's entity before it is answered, so that a lowered limit holds from the next request on.
 */
import { Context, Effect, Layer } from "effect"
import type { QuotaKey } from "../billing/plans.ts"
import type { Principal } from "../iam/principal.ts"
import { notFound, type NotFound } from "../schema/errors.ts"
import { AuditLog, entryForTenant } from "../sql/audit-log.ts"
import { TenantRepo } from "../sql/tenant-repo.ts"
import { TenantLimits } from "./tenant-entity.ts"

export interface QuotaOverridesShape {
  /** Sets (or with `null` removes) the override; the limit in force after it. */
  readonly set: (me: Principal, tenantId: string, quotaKey: QuotaKey, limit: number | null) => Effect.Effect<number, NotFound>
}

export class QuotaOverrides extends Context.Service<QuotaOverrides, QuotaOverridesShape>()("trawl/QuotaOverrides") {}

export const QuotaOverridesLive = Layer.effect(
  QuotaOverrides,
  Effect.gen(function*() {
    const tenants = yield* TenantRepo
    const audit = yield* AuditLog
    const limits = yield* TenantLimits
    return QuotaOverrides.of({
      set: (me, tenantId, quotaKey, limit) =>
        Effect.gen(function*() {
          const tenant = yield* tenants.find(tenantId)
          if (!tenant) return yield* notFound("tenant")
          yield* tenants.setQuota(tenantId, quotaKey, limit)
          yield* limits.reload(tenantId)
          const data = { quotaKey, limit }
          // Who changed a tenant's limits is in the admin's log and in the tenant's own, where its owner reads it.
          yield* audit.record(me, "quota.override", tenantId, data)
          yield* audit.write(entryForTenant(me, tenantId, "quota.override", tenantId, data))
          return yield* tenants.quotaLimit(tenantId, quotaKey)
        })
    })
  })
)
