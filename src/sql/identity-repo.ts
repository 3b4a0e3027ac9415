import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"

/** A person's identity as authentication reads it. */
export interface IdentityAuthRow {
  readonly id: string
  readonly tenant_id: string
  readonly email: string
  readonly password_hash: string | null
  readonly requires_password_setup: boolean
  readonly totp_secret_enc: string | null
  readonly totp_enabled_at: Date | null
}

export interface ProfileRow {
  readonly id: string
  readonly tenant_id: string
  readonly type: string
  readonly display_name: string
  readonly first_name: string | null
  readonly last_name: string | null
  readonly avatar_url: string | null
  readonly status: string
  readonly password_hash: string | null
  readonly requires_password_setup: boolean
  readonly password_changed_at: Date | null
  readonly totp_enabled_at: Date | null
  readonly default_role_id: string | null
  readonly permissions: ReadonlyArray<string> | null
  readonly is_internal: boolean
  readonly emails: ReadonlyArray<{ id: string; email: string; is_primary: boolean; verified_at: string | null }>
}

export interface IdentityRepoShape {
  /** The active person whose e-mail this is (any letter case), in an active tenant. */
  readonly byEmail: (email: string) => Effect.Effect<IdentityAuthRow | undefined>
  readonly byId: (identityId: string) => Effect.Effect<IdentityAuthRow | undefined>
  readonly profile: (tenantId: string, identityId: string) => Effect.Effect<ProfileRow | undefined>
  readonly updateProfile: (
    identityId: string,
    patch: { firstName?: string | null; lastName?: string | null; avatarUrl?: string | null }
  ) => Effect.Effect<void>
  /** Sets a new password hash, ending any pending password setup. */
  readonly setPassword: (identityId: string, passwordHash: string) => Effect.Effect<void>
  /** Stores a new, not yet active TOTP secret; false when TOTP is already on. */
  readonly stageTotp: (identityId: string, secretEnc: string) => Effect.Effect<boolean>
  /** Turns the staged secret on, with the step of the code that proved it; false when nothing was staged or it is on. */
  readonly activateTotp: (identityId: string, step: number) => Effect.Effect<boolean>
  /** Records `step` as used; false when it (or a later step) was used already: a replayed code. */
  readonly useTotpStep: (identityId: string, step: number) => Effect.Effect<boolean>
  /** Turns TOTP off and drops its secret and recovery codes. */
  readonly disableTotp: (identityId: string) => Effect.Effect<void>
  readonly replaceRecoveryCodes: (identityId: string, codes: ReadonlyArray<{ id: string; hash: string }>) => Effect.Effect<void>
  /** Marks the unused recovery code with this hash used; false when there is none. */
  readonly useRecoveryCode: (identityId: string, hash: string) => Effect.Effect<boolean>
  readonly unusedRecoveryCodes: (identityId: string) => Effect.Effect<number>
}

export class IdentityRepo extends Context.Service<IdentityRepo, IdentityRepoShape>()("trawl/IdentityRepo") {}

const authColumns = `i.id, i.tenant_id, e.email, i.password_hash, i.requires_password_setup, i.totp_secret_enc, i.totp_enabled_at`

export const IdentityRepoLive = Layer.effect(
  IdentityRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const cols = sql.literal(authColumns)
    const first = <A>(rows: ReadonlyArray<A>) => rows[0]
    return IdentityRepo.of({
      byEmail: (email) =>
        sql<IdentityAuthRow>`
          SELECT ${cols} FROM identity_emails e
          JOIN identities i ON i.id = e.identity_id
          JOIN tenants t ON t.id = i.tenant_id
          WHERE lower(e.email) = lower(${email}) AND i.type = 'user' AND i.status = 'active' AND t.status = 'active'`.pipe(
          Effect.orDie,
          Effect.map(first)
        ),
      byId: (identityId) =>
        sql<IdentityAuthRow>`
          SELECT ${cols} FROM identities i
          LEFT JOIN identity_emails e ON e.identity_id = i.id AND e.is_primary
          WHERE i.id = ${identityId} AND i.type = 'user'`.pipe(Effect.orDie, Effect.map(first)),
      profile: (tenantId, identityId) =>
        sql<ProfileRow>`
          SELECT i.id, i.tenant_id, i.type, i.display_name, i.first_name, i.last_name, i.avatar_url, i.status,
                 i.password_hash, i.requires_password_setup, i.password_changed_at, i.totp_enabled_at, i.default_role_id,
                 r.permissions, t.is_internal,
                 COALESCE((SELECT jsonb_agg(jsonb_build_object('id', e.id, 'email', e.email, 'is_primary', e.is_primary,
                                                               'verified_at', e.verified_at) ORDER BY e.is_primary DESC, e.created_at)
                           FROM identity_emails e WHERE e.identity_id = i.id), '[]'::jsonb) AS emails
          FROM identities i
          JOIN tenants t ON t.id = i.tenant_id
          LEFT JOIN roles r ON r.id = i.default_role_id
          WHERE i.id = ${identityId} AND i.tenant_id = ${tenantId}`.pipe(Effect.orDie, Effect.map(first)),
      updateProfile: (identityId, patch) =>
        sql`
          UPDATE identities SET
            first_name = CASE WHEN ${patch.firstName !== undefined} THEN ${patch.firstName ?? null} ELSE first_name END,
            last_name = CASE WHEN ${patch.lastName !== undefined} THEN ${patch.lastName ?? null} ELSE last_name END,
            avatar_url = CASE WHEN ${patch.avatarUrl !== undefined} THEN ${patch.avatarUrl ?? null} ELSE avatar_url END,
            updated_at = now()
          WHERE id = ${identityId}`.pipe(Effect.orDie, Effect.asVoid),
      setPassword: (identityId, passwordHash) =>
        sql`
          UPDATE identities SET password_hash = ${passwordHash}, password_changed_at = now(),
                                requires_password_setup = false, updated_at = now()
          WHERE id = ${identityId}`.pipe(Effect.orDie, Effect.asVoid),
      stageTotp: (identityId, secretEnc) =>
        sql`
          UPDATE identities SET totp_secret_enc = ${secretEnc}, totp_last_step = NULL, updated_at = now()
          WHERE id = ${identityId} AND totp_enabled_at IS NULL RETURNING id`.pipe(Effect.orDie, Effect.map((rows) => rows.length > 0)),
      activateTotp: (identityId, step) =>
        sql`
          UPDATE identities SET totp_enabled_at = now(), totp_last_step = ${step}, updated_at = now()
          WHERE id = ${identityId} AND totp_enabled_at IS NULL AND totp_secret_enc IS NOT NULL RETURNING id`.pipe(
          Effect.orDie,
          Effect.map((rows) => rows.length > 0)
        ),
      useTotpStep: (identityId, step) =>
        sql`
          UPDATE identities SET totp_last_step = ${step}
          WHERE id = ${identityId} AND (totp_last_step IS NULL OR totp_last_step < ${step}) RETURNING id`.pipe(
          Effect.orDie,
          Effect.map((rows) => rows.length > 0)
        ),
      disableTotp: (identityId) =>
        sql.withTransaction(Effect.gen(function*() {
          yield* sql`
            UPDATE identities SET totp_secret_enc = NULL, totp_enabled_at = NULL, totp_last_step = NULL, updated_at = now()
            WHERE id = ${identityId}`
          yield* sql`DELETE FROM recovery_codes WHERE identity_id = ${identityId}`
        })).pipe(Effect.orDie),
      replaceRecoveryCodes: (identityId, codes) =>
        sql.withTransaction(Effect.gen(function*() {
          yield* sql`DELETE FROM recovery_codes WHERE identity_id = ${identityId}`
          for (const code of codes) {
            yield* sql`INSERT INTO recovery_codes (id, identity_id, code_hash) VALUES (${code.id}, ${identityId}, ${code.hash})`
          }
        })).pipe(Effect.orDie),
      useRecoveryCode: (identityId, hash) =>
        sql`
          UPDATE recovery_codes SET used_at = now()
          WHERE identity_id = ${identityId} AND code_hash = ${hash} AND used_at IS NULL RETURNING id`.pipe(
          Effect.orDie,
          Effect.map((rows) => rows.length > 0)
        ),
      unusedRecoveryCodes: (identityId) =>
        sql<{ n: string }>`SELECT count(*) AS n FROM recovery_codes WHERE identity_id = ${identityId} AND used_at IS NULL`.pipe(
          Effect.orDie,
          Effect.map((rows) => Number(rows[0]!.n))
        )
    })
  })
)
