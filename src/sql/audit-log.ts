import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { Principal } from "../iam/principal.ts"
import { newId } from "../ids.ts"
import type { AuditAction, AuditEntry as AuditEntryView, AuditFilter } from "../schema/audit.ts"
import { iso } from "../schema/common.ts"
import { pageWithTotal } from "./page-with-total.ts"

/** One security event: who (the actor), on behalf of whom, from which address, what, to what. */
export interface AuditEntry {
  readonly tenantId: string | null
  /** The identity that acted; null when nobody could be identified (a failed login of an unknown e-mail). */
  readonly actorId: string | null
  /** The delegator, when the actor acted on someone's behalf (docs/identity.md, "Delegations"). */
  readonly onBehalfOf?: string | null
  readonly ip?: string | null
  readonly action: AuditAction
  readonly targetId?: string | null
  readonly data?: Record<string, unknown>
}

/**
 * A super-admin's act on another tenant, as that tenant's own log keeps it (where its owner reads
 * who changed its credit, plan or limits): the admin as actor, the deciding tenant in `data`.
 */
export const entryForTenant = (
  actor: Principal,
  tenantId: string,
  action: AuditAction,
  targetId: string,
  data: Record<string, unknown>
): AuditEntry => ({
  tenantId,
  actorId: actor.actorId,
  onBehalfOf: actor.actorId === actor.identityId ? null : actor.identityId,
  action,
  targetId,
  data: { ...data, deciderTenantId: actor.tenantId }
})

export interface AuditLogShape {
  /** Appends an entry; never fails the caller (a lost entry is logged). */
  readonly write: (entry: AuditEntry) => Effect.Effect<void>
  /** Records what `actor` did to `targetId` (the actor's tenant), from `client`'s address when given. */
  readonly record: (
    actor: Principal,
    action: AuditAction,
    targetId: string,
    data: Record<string, unknown>,
    client?: { readonly ip: string | null }
  ) => Effect.Effect<void>
  /** A page of one tenant's entries, newest (last written) first. */
  readonly list: (
    tenantId: string,
    filter: AuditFilter,
    offset: number,
    limit: number
  ) => Effect.Effect<{ readonly items: ReadonlyArray<AuditEntryView>; readonly total: number }>
}

interface AuditRow {
  readonly id: string
  readonly tenant_id: string
  readonly actor_id: string | null
  readonly on_behalf_of: string | null
  readonly ip: string | null
  readonly action: string
  readonly target_id: string | null
  readonly data: Record<string, unknown>
  readonly created_at: Date
}

const toView = (r: AuditRow): AuditEntryView => ({
  id: r.id,
  tenantId: r.tenant_id,
  actorId: r.actor_id,
  onBehalfOf: r.on_behalf_of,
  ip: r.ip,
  action: r.action,
  targetId: r.target_id,
  data: r.data,
  createdAt: iso(r.created_at)!
})

/**
 * The key an act went through (`data.apiKeyId`), when it went through one: a key acts as its
 * identity, and the log must tell the identity's own doing from a key's (docs/identity.md, "Audit").
 */
export const credentialData = (actor: Principal): { apiKeyId?: string } =>
  actor.kind === "api-key" ? { apiKeyId: actor.credentialId } : {}

/** What `actor` did: an entry in the actor's tenant, on behalf of its delegator when it acts for one. */
const actorEntry = (
  actor: Principal,
  action: AuditAction,
  targetId: string,
  data: Record<string, unknown>,
  client?: { readonly ip: string | null }
): AuditEntry => ({
  tenantId: actor.tenantId,
  actorId: actor.actorId,
  onBehalfOf: actor.actorId === actor.identityId ? null : actor.identityId,
  ...(client ? { ip: client.ip } : {}),
  action,
  targetId,
  data: { ...data, ...credentialData(actor) }
})

export class AuditLog extends Context.Service<AuditLog, AuditLogShape>()("trawl/AuditLog") {}

export const AuditLogLive = Layer.effect(
  AuditLog,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const write = (e: AuditEntry) =>
      sql`INSERT INTO audit_log (id, tenant_id, actor_id, on_behalf_of, ip, action, target_id, data)
          VALUES (${newId("aud")}, ${e.tenantId}, ${e.actorId}, ${e.onBehalfOf ?? null}, ${e.ip ?? null}, ${e.action},
                  ${e.targetId ?? null}, ${JSON.stringify(e.data ?? {})}::jsonb)`.pipe(
        Effect.asVoid,
        Effect.catchCause((cause) => Effect.logWarning("audit entry not written", cause))
      )
    return AuditLog.of({
      write,
      record: (actor, action, targetId, data, client) => write(actorEntry(actor, action, targetId, data, client)),
      list: (tenantId, filter, offset, limit) => {
        const where = sql.and([
          sql`tenant_id = ${tenantId}`,
          ...(filter.identityId !== undefined ? [sql`(actor_id = ${filter.identityId} OR on_behalf_of = ${filter.identityId})`] : []),
          // starts_with, not LIKE: `_` in an action is a character, not a wildcard.
          ...(filter.action === undefined ? [] : filter.action.prefix
            ? [sql`starts_with(action, ${filter.action.value})`]
            : [sql`action = ${filter.action.value}`]),
          ...(filter.from !== undefined ? [sql`created_at >= ${filter.from}::timestamptz`] : []),
          ...(filter.to !== undefined ? [sql`created_at < ${filter.to}::timestamptz`] : [])
        ])
        return pageWithTotal<AuditRow>(
          sql,
          // seq, not created_at: entries of one transaction share their time but not their order.
          sql`SELECT id, tenant_id, actor_id, on_behalf_of, ip, action, target_id, data, created_at
              FROM audit_log WHERE ${where} ORDER BY seq DESC OFFSET ${offset} LIMIT ${limit}`,
          sql`SELECT count(*) FROM audit_log WHERE ${where}`
        ).pipe(Effect.map((page) => ({ total: page.total, items: page.items.map(toView) })))
      }
    })
  })
)

/** The entries an `AuditLogTest` captured. */
export class AuditEntries extends Context.Service<AuditEntries, { readonly all: Effect.Effect<ReadonlyArray<AuditEntry>> }>()("trawl/AuditEntries") {}

/** An audit log for unit tests: entries are kept in memory and read through `AuditEntries`. */
export const AuditLogTest: Layer.Layer<AuditLog | AuditEntries> = Layer.unwrap(Effect.sync(() => {
  const entries: Array<AuditEntry> = []
  const write = (e: AuditEntry) => Effect.sync(() => void entries.push(e))
  return Layer.mergeAll(
    Layer.succeed(AuditLog, AuditLog.of({
      write,
      record: (actor, action, targetId, data, client) => write(actorEntry(actor, action, targetId, data, client)),
      list: () => Effect.die("listing is tested against the databases")
    })),
    Layer.succeed(AuditEntries, AuditEntries.of({ all: Effect.sync(() => entries.slice()) }))
  )
}))
