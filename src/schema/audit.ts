import { Schema } from "effect"
import { CheckedByHandler, DateTime } from "./common.ts"
import { PageQuery } from "./envelope.ts"

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

/** The audit list's query: filters are read by the handler, which names every bad one (`invalid_filter`). */
export const AuditQuery = {
  ...PageQuery,
  identityId: Schema.optional(Schema.String),
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
