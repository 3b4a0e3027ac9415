import { Schema } from "effect"
import { CheckedByHandler, DateTime } from "./common.ts"
import { PageQuery } from "./envelope.ts"

/**
 * Every action the audit log records (docs/api.md "Audit log"): the writer takes only these
 * (sql/audit-log.ts), so the list cannot miss one, and the document lists them for the filter.
 */
export const auditActions = [
  "api_key.create", "api_key.update", "api_key.revoke",
  "credits.adjust",
  "delegation.create", "delegation.accept", "delegation.decline", "delegation.renounce", "delegation.revoke", "delegation.act",
  "email.verification_requested", "email.verified",
  "invitation.create", "invitation.revoke", "invitation.accept", "invitation.decline",
  "login.success", "login.failure",
  "magic_link.requested",
  "password.change", "password.setup", "password.reset_requested", "password.reset",
  "profile.update",
  "quota.override",
  "quota_request.create", "quota_request.withdraw", "quota_request.approve", "quota_request.reject",
  "reauthentication.failure",
  "registration",
  "role.create", "role.update", "role.delete",
  "session.refresh", "session.logout", "session.revoke", "session.revoke_others",
  "subscription.change",
  "totp.enable_started", "totp.enable", "totp.disable", "totp.recovery_code_used", "totp.recovery_codes_regenerated"
] as const
export type AuditAction = (typeof auditActions)[number]

/** One entry of a tenant's audit log. */
export const AuditEntry = Schema.Struct({
  id: Schema.String,
  tenantId: Schema.String,
  actorId: Schema.NullOr(Schema.String),
  onBehalfOf: Schema.NullOr(Schema.String),
  ip: Schema.NullOr(Schema.String),
  action: Schema.String,
  targetId: Schema.NullOr(Schema.String),
  data: Schema.Record(Schema.String, Schema.Unknown),
  createdAt: DateTime
}).annotate({ identifier: "AuditEntry" })
export type AuditEntry = typeof AuditEntry.Type

/** The longest `identityId` (and `action`) filter the audit list reads (audit.http.ts). */
export const MAX_AUDIT_FILTER_LENGTH = 200

/** The audit list's query: filters are read by the handler, which names every bad one (`invalid_filter`). */
export const AuditQuery = {
  ...PageQuery,
  identityId: Schema.optional(CheckedByHandler({ minLength: 1, maxLength: MAX_AUDIT_FILTER_LENGTH })),
  action: Schema.optional(Schema.String),
  from: Schema.optional(CheckedByHandler({ format: "date-time" })),
  to: Schema.optional(CheckedByHandler({ format: "date-time" }))
}

/** What the audit list is narrowed to, once checked. */
export interface AuditFilter {
  /** Entries this identity made, or that were made on its behalf. */
  readonly identityId?: string | undefined
  /** An exact action, or (`prefix`) every action that starts with it. */
  readonly action?: { readonly value: string; readonly prefix: boolean } | undefined
  /** From (inclusive) and to (exclusive), as UTC ISO strings. */
  readonly from?: string | undefined
  readonly to?: string | undefined
}
