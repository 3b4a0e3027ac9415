import { Effect, Schema } from "effect"
import { ClusterSchema, Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { TenantRepo } from "../sql/tenant-repo.ts"
import { Transaction } from "../schema/tenant.ts"

const BootstrapPayload = Schema.Struct({
  name: Schema.String,
  isInternal: Schema.Boolean,
  plan: Schema.String,
  credits: Schema.String,
  email: Schema.String,
  passwordHash: Schema.NullOr(Schema.String),
  apiKey: Schema.Struct({
    id: Schema.String,
    prefix: Schema.String,
    hash: Schema.String,
    rateLimitPerMinute: Schema.Int
  })
})

export const BootstrapResult = Schema.Struct({
  tenantId: Schema.String,
  organizationId: Schema.String,
  ownerIdentityId: Schema.String,
  roleId: Schema.String,
  apiKeyId: Schema.String
})

export class EmailInUse extends Schema.TaggedError<EmailInUse>()("EmailInUse", {}) {}
export class TenantMissing extends Schema.TaggedError<TenantMissing>()("TenantMissing", {}) {}
export class InsufficientCredit extends Schema.TaggedError<InsufficientCredit>()("InsufficientCredit", {
  balance: Schema.String
}) {}

/**
 * One entity per tenant. It owns the tenant's credits (and, as the product grows,
 * its quotas and concurrency slots): every change to them is a message here, so
 * concurrent requests on several nodes are serialized in one place.
 */
export const TenantEntity = Entity.make("Tenant", [
  /** Creates the tenant; persisted and idempotent (a re-delivered message returns the first result). */
  Rpc.make("Bootstrap", { payload: BootstrapPayload, success: BootstrapResult, error: EmailInUse })
    .annotate(ClusterSchema.Persisted, true),
  Rpc.make("GetBalance", { success: Schema.String, error: TenantMissing }),
  /** Appends a ledger entry; idempotent by `entryId`. */
  Rpc.make("AdjustCredits", {
    payload: Schema.Struct({
      entryId: Schema.String,
      type: Schema.String,
      amount: Schema.String,
      note: Schema.NullOr(Schema.String),
      serviceKey: Schema.NullOr(Schema.String),
      resourceId: Schema.NullOr(Schema.String),
      resourceType: Schema.NullOr(Schema.String)
    }),
    success: Transaction,
    error: Schema.Union([TenantMissing, InsufficientCredit])
  }).annotate(ClusterSchema.Persisted, true)
])

export const TenantEntityLive = TenantEntity.toLayer(
  Effect.gen(function*() {
    const repo = yield* TenantRepo
    const address = yield* Entity.CurrentAddress
    const tenantId = address.entityId
    return TenantEntity.of({
      Bootstrap: ({ payload }) =>
        Effect.gen(function*() {
          const earlier = yield* repo.bootstrapResult(tenantId)
          if (earlier) return earlier
          return yield* repo.bootstrap({ ...payload, tenantId }).pipe(Effect.mapError(() => new EmailInUse()))
        }),
      GetBalance: () =>
        repo.balance(tenantId).pipe(
          Effect.flatMap((b) => b === undefined ? Effect.fail(new TenantMissing()) : Effect.succeed(b))
        ),
      AdjustCredits: ({ payload }) =>
        Effect.gen(function*() {
          if ((yield* repo.find(tenantId)) === undefined) return yield* new TenantMissing()
          const result = yield* repo.adjust({
            id: payload.entryId,
            tenantId,
            type: payload.type,
            amount: payload.amount,
            note: payload.note,
            serviceKey: payload.serviceKey,
            resourceId: payload.resourceId,
            resourceType: payload.resourceType
          })
          if (!result.ok) return yield* new InsufficientCredit({ balance: result.balance })
          return result.transaction
        })
    })
  }),
  { maxIdleTime: "5 minutes" }
)
