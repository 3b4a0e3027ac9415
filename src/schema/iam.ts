import { Schema } from "effect"
import { isValidPermission, permissionCatalogue } from "./permission.ts"
import { CurrentPassword, TotpCode } from "./auth.ts"
import { DateTime, DateTimeInput, Name, NullableDateTime, Text, NonNegativeInt, WrittenWithin } from "./common.ts"

export const RateLimitPerMinute = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 5000 }))

export const ApiKey = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  description: Schema.NullOr(Schema.String),
  keyPrefix: Schema.String,
  roleId: Schema.String,
  scope: Schema.Literals(["read", "write", "admin"]),
  rateLimitPerMinute: RateLimitPerMinute,
  lastUsedAt: NullableDateTime,
  expiresAt: NullableDateTime,
  revokedAt: NullableDateTime,
  createdAt: DateTime
}).annotate({ identifier: "ApiKey" })
export type ApiKey = typeof ApiKey.Type

export const CreatedApiKey = Schema.Struct({
  ...ApiKey.fields,
  rawKey: Schema.String.annotate({ description: "The plaintext key; shown once" })
}).annotate({ identifier: "CreatedApiKey" })


export const CreateApiKeyBody = Schema.Struct({
  name: Name(1, 100),
  description: Schema.optional(Schema.NullOr(Text(0, 500))),
  roleId: Text(1, 200),
  rateLimitPerMinute: Schema.optional(RateLimitPerMinute),
  expiresAt: Schema.optional(Schema.NullOr(DateTimeInput)),
  // optionalKey: an optional field's null-or-string message would quote a mistyped password
  currentPassword: Schema.optionalKey(CurrentPassword),
  totpCode: Schema.optionalKey(TotpCode)
})

export const UpdateApiKeyBody = Schema.Struct({
  description: Schema.optional(Schema.NullOr(Text(0, 500))),
  rateLimitPerMinute: Schema.optional(RateLimitPerMinute),
  expiresAt: Schema.optional(Schema.NullOr(DateTimeInput)),
  // Asked when a longer life is given to a key whose role carries *:*:* or cross_tenant:*:* (docs/identity.md).
  currentPassword: Schema.optionalKey(CurrentPassword),
  totpCode: Schema.optionalKey(TotpCode)
})

export const RevokedApiKey = Schema.Struct({
  revoked: Schema.Boolean,
  revokedAt: DateTime,
  apiKeyId: Schema.String
})

/**
 * A quota with what the tenant uses of it (`window` and `resetAt` for a quota counted per day),
 * for the catalogue of config/plans.json (given by the API definition): the document lists its keys
 * with the default plan's limits (an answer is not checked against them).
 */
export const createQuota = (defaults: ReadonlyArray<readonly [key: string, limit: number]>, defaultPlan: string) => Schema.Struct({
  key: WrittenWithin(Schema.String, {
    enum: defaults.map(([key]) => key),
    description: `The quota catalogue, with the limits of the default plan (${defaultPlan}): ${defaults.map(([key, limit]) => `${key} ${limit}`).join(", ")}. A tenant's limits are its plan's, raised by add-ons and approved increase requests, or set by a super-admin's override. A daily quota over its limit is 429 quota_exceeded with Retry-After to the next UTC day; a concurrent one 429 concurrent_limit_exceeded.`
  }),
  limit: NonNegativeInt,
  used: NonNegativeInt,
  window: Schema.optional(Schema.Literal("day")),
  resetAt: Schema.optional(DateTime)
}).annotate({ identifier: "Quota" })

export const Role = Schema.Struct({
  id: Schema.String,
  tenantId: Schema.String,
  name: WrittenWithin(Schema.String, { minLength: 2, maxLength: 60 }),
  description: Schema.NullOr(WrittenWithin(Schema.String, { maxLength: 500 })),
  permissions: WrittenWithin(Schema.Array(Schema.String), { minItems: 1, maxItems: 200 }),
  isSystem: Schema.Boolean,
  createdAt: DateTime,
  updatedAt: DateTime
}).annotate({ identifier: "Role" })
export type Role = typeof Role.Type

/** A permission a role may hold: a known `<service>:<resource>:<action>`, wildcards allowed (docs/api.md, "Roles"). */
export const PermissionString = Schema.String.check(
  Schema.makeFilter((p: string) => isValidPermission(p), {
    expected: "a permission <service>:<resource>:<read|write|*> of the catalogue",
    toJsonSchema: () => ({ enum: [...permissionCatalogue()] })
  })
)

const RoleName = Name(2, 60)
const RoleDescription = Schema.NullOr(Text(0, 500))
const RolePermissions = Schema.Array(PermissionString).check(Schema.isMinLength(1), Schema.isMaxLength(200))

export const CreateRoleBody = Schema.Struct({
  name: RoleName,
  description: Schema.optional(RoleDescription),
  permissions: RolePermissions
})

export const UpdateRoleBody = Schema.Struct({
  name: Schema.optional(RoleName),
  description: Schema.optional(RoleDescription),
  permissions: Schema.optional(RolePermissions),
  // Asked when the change makes the role hold every permission (*:*:*, or cross_tenant): its keys
  // and people would gain that power without the proof a new key of it asks (docs/identity.md).
  currentPassword: Schema.optionalKey(CurrentPassword),
  totpCode: Schema.optionalKey(TotpCode)
})

export const DeletedRole = Schema.Struct({
  deleted: Schema.Boolean,
  deletedAt: DateTime,
  id: Schema.String
})
