import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { Principal } from "../iam/principal.ts"
import { newId } from "../ids.ts"

export interface AuditLogShape {
  /** Records who did what to which tenant's resource; never fails the caller. */
  readonly record: (actor: Principal, action: string, targetId: string, data: Record<string, unknown>) => Effect.Effect<void>
}

export class AuditLog extends Context.Service<AuditLog, AuditLogShape>()("trawl/AuditLog") {}

export const AuditLogLive = Layer.effect(
  AuditLog,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return AuditLog.of({
      record: (actor, action, targetId, data) =>
        sql`INSERT INTO audit_log (id, tenant_id, actor_id, action, target_id, data)
            VALUES (${newId("aud")}, ${actor.tenantId}, ${actor.identityId}, ${action}, ${targetId}, ${JSON.stringify(data)}::jsonb)`.pipe(
          Effect.catchCause((cause) => Effect.logWarning("audit entry not written", cause))
        )
    })
  })
)
