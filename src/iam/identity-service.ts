import { Context, Effect, Layer } from "effect"
import { iso } from "../schema/common.ts"
import type { Profile } from "../schema/auth.ts"
import { notFound, type NotFound } from "../schema/errors.ts"
import { AuditLog } from "../sql/audit-log.ts"
import { IdentityRepo, type ProfileRow } from "../sql/identity-repo.ts"
import type { Principal } from "./principal.ts"
import type { ClientContext } from "./session-service.ts"

export interface IdentityServiceShape {
  /** The caller's profile: the identity it acts as, with the permissions it acts with. */
  readonly profile: (me: Principal) => Effect.Effect<Profile, NotFound>
  readonly updateProfile: (
    me: Principal,
    patch: { firstName?: string | null | undefined; lastName?: string | null | undefined; avatarUrl?: string | null | undefined },
    client: ClientContext
  ) => Effect.Effect<Profile, NotFound>
}

export class IdentityService extends Context.Service<IdentityService, IdentityServiceShape>()("trawl/IdentityService") {}

const toProfile = (row: ProfileRow, me: Principal): Profile => ({
  identityId: row.id,
  tenantId: row.tenant_id,
  type: row.type === "organization" ? "organization" : "user",
  displayName: [row.first_name, row.last_name].filter((n) => n).join(" ") || row.display_name,
  firstName: row.first_name,
  lastName: row.last_name,
  avatarUrl: row.avatar_url,
  status: row.status,
  passwordChangedAt: iso(row.password_changed_at),
  totpEnabledAt: iso(row.totp_enabled_at),
  defaultRoleId: row.default_role_id,
  emails: row.emails.map((e) => ({ id: e.id, email: e.email, isPrimary: e.is_primary, verifiedAt: iso(e.verified_at) })),
  // What this request may do: a key acts with its own role, not the identity's default one.
  permissions: me.permissions,
  isInternalAdmin: row.is_internal && me.permissions.includes("cross_tenant:*:*"),
  requiresPasswordSetup: row.type === "user" && (row.requires_password_setup || row.password_hash === null)
})

export const IdentityServiceLive = Layer.effect(
  IdentityService,
  Effect.gen(function*() {
    const repo = yield* IdentityRepo
    const audit = yield* AuditLog
    const profile = (me: Principal) =>
      repo.profile(me.tenantId, me.identityId).pipe(
        Effect.flatMap((row) => (row ? Effect.succeed(toProfile(row, me)) : notFound("identity")))
      )
    return IdentityService.of({
      profile,
      updateProfile: (me, patch, client) =>
        Effect.gen(function*() {
          yield* repo.updateProfile(me.identityId, patch)
          const fields = Object.keys(patch).filter((k) => patch[k as keyof typeof patch] !== undefined)
          yield* audit.record(me, "profile.update", me.identityId, { fields }, client)
          return yield* profile(me)
        })
    })
  })
)
