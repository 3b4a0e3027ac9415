import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { Principal } from "../iam/principal.ts"
import { newId } from "../ids.ts"

/** One security event: who (the actor), on behalf of whom, from which address, what, to what. */
export interface AuditEntry {
  readonly tenantId: string | null
  /** The identity that acted; null when nobody could be identified (a failed login of an unknown e-mail). */
  readonly actorId: string | null
  /** The delegator, when the actor acted on someone's behalf (docs/identity.md, "Delegations"). */
  readonly onBehalfOf?: string | null
  readonly ip?: string | null
  readonly action: string
  readonly targetId?: string | null
  readonly data?: Record<string, unknown>
}

export interface AuditLogShape {
  /** Appends an entry; never fails the caller (a lost entry is logged). */
  readonly write: (entry: AuditEntry) => Effect.Effect<void>
  /** Records what `actor` did to `targetId` (the actor's tenant). */
  readonly record: (actor: Principal, action: string, targetId: string, data: Record<string, unknown>) => Effect.Effect<void>
}

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
      record: (actor, action, targetId, data) => write({
        tenantId: actor.tenantId,
        actorId: actor.actorId,
        onBehalfOf: actor.actorId === actor.identityId ? null : actor.identityId,
        action,
        targetId,
        data
      })
    })
  })
)
