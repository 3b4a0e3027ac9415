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
  /** Sets a new password hash, ending any pending password setup; resolves with when, as stored (what the answer reports). */
  readonly setPassword: (identityId: string, passwordHash: string) => Effect.Effect<Date>
  /** Stores a new, not yet active TOTP secret; false when TOTP is already on. */
  readonly stageTotp: (identityId: string, secretEnc: string) => Effect.Effect<boolean>
  /** Turns the staged secret on, with the step of the code that proved it: when, as stored; undefined when nothing was staged or it is on. */
  readonly activateTotp: (identityId: string, step: number) => Effect.Effect<Date | undefined>
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
        sql<{ password_changed_at: Date }>`
          UPDATE identities SET password_hash = ${passwordHash}, password_changed_at = now(),
                                requires_password_setup = false, updated_at = now()
          WHERE id = ${identityId} RETURNING password_changed_at`.pipe(
          Effect.orDie,
          Effect.map((rows) => new Date(rows[0]?.password_changed_at ?? Date.now()))
        ),
      stageTotp: (identityId, secretEnc) =>
        sql`
          UPDATE identities SET totp_secret_enc = ${secretEnc}, totp_last_step = NULL, updated_at = now()
          WHERE id = ${identityId} AND totp_enabled_at IS NULL RETURNING id`.pipe(Effect.orDie, Effect.map((rows) => rows.length > 0)),
      activateTotp: (identityId, step) =>
        sql<{ totp_enabled_at: Date }>`
          UPDATE identities SET totp_enabled_at = now(), totp_last_step = ${step}, updated_at = now()
          WHERE id = ${identityId} AND totp_enabled_at IS NULL AND totp_secret_enc IS NOT NULL RETURNING totp_enabled_at`.pipe(
          Effect.orDie,
          Effect.map((rows) => rows[0] && new Date(rows[0].totp_enabled_at))
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

/** A person for `makeIdentityRepoTest`. */
export interface TestIdentity {
  readonly id: string
  readonly tenantId: string
  readonly email: string
  readonly passwordHash: string | null
}

/**
 * People in memory, for unit tests of the services above: logins, passwords, TOTP and recovery
 * codes behave as the live repository's (the profile read is not offered: it is a join of
 * several tables, tested against the databases).
 */
export const makeIdentityRepoTest = (people: ReadonlyArray<TestIdentity>) =>
  Layer.sync(IdentityRepo, () => {
    type Person = {
      id: string
      tenant_id: string
      email: string
      password_hash: string | null
      requires_password_setup: boolean
      totp_secret_enc: string | null
      totp_enabled_at: Date | null
      totp_last_step: number | null
      first_name: string | null
      last_name: string | null
      avatar_url: string | null
    }
    const byId = new Map<string, Person>(people.map((p) => [p.id, {
      id: p.id,
      tenant_id: p.tenantId,
      email: p.email,
      password_hash: p.passwordHash,
      requires_password_setup: p.passwordHash === null,
      totp_secret_enc: null,
      totp_enabled_at: null,
      totp_last_step: null,
      first_name: null,
      last_name: null,
      avatar_url: null
    }]))
    const codes: Array<{ identityId: string; hash: string; used: boolean }> = []
    const auth = (p: Person | undefined): IdentityAuthRow | undefined =>
      p && {
        id: p.id,
        tenant_id: p.tenant_id,
        email: p.email,
        password_hash: p.password_hash,
        requires_password_setup: p.requires_password_setup,
        totp_secret_enc: p.totp_secret_enc,
        totp_enabled_at: p.totp_enabled_at
      }
    const person = (id: string) => byId.get(id)
    return IdentityRepo.of({
      byEmail: (email) => Effect.sync(() => auth([...byId.values()].find((p) => p.email.toLowerCase() === email.toLowerCase()))),
      byId: (id) => Effect.sync(() => auth(person(id))),
      profile: () => Effect.die("the profile read is tested against the databases"),
      updateProfile: (id, patch) =>
        Effect.sync(() => {
          const p = person(id)
          if (!p) return
          if (patch.firstName !== undefined) p.first_name = patch.firstName
          if (patch.lastName !== undefined) p.last_name = patch.lastName
          if (patch.avatarUrl !== undefined) p.avatar_url = patch.avatarUrl
        }),
      setPassword: (id, hash) =>
        Effect.sync(() => {
          const p = person(id)
          const at = new Date()
          if (p) Object.assign(p, { password_hash: hash, requires_password_setup: false, password_changed_at: at })
          return at
        }),
      stageTotp: (id, secretEnc) =>
        Effect.sync(() => {
          const p = person(id)
          if (!p || p.totp_enabled_at !== null) return false
          Object.assign(p, { totp_secret_enc: secretEnc, totp_last_step: null })
          return true
        }),
      activateTotp: (id, step) =>
        Effect.sync(() => {
          const p = person(id)
          if (!p || p.totp_enabled_at !== null || p.totp_secret_enc === null) return undefined
          const at = new Date()
          Object.assign(p, { totp_enabled_at: at, totp_last_step: step })
          return at
        }),
      useTotpStep: (id, step) =>
        Effect.sync(() => {
          const p = person(id)
          if (!p || (p.totp_last_step !== null && p.totp_last_step >= step)) return false
          p.totp_last_step = step
          return true
        }),
      disableTotp: (id) =>
        Effect.sync(() => {
          const p = person(id)
          if (p) Object.assign(p, { totp_secret_enc: null, totp_enabled_at: null, totp_last_step: null })
          for (let i = codes.length - 1; i >= 0; i--) if (codes[i]!.identityId === id) codes.splice(i, 1)
        }),
      replaceRecoveryCodes: (id, fresh) =>
        Effect.sync(() => {
          for (let i = codes.length - 1; i >= 0; i--) if (codes[i]!.identityId === id) codes.splice(i, 1)
          for (const c of fresh) codes.push({ identityId: id, hash: c.hash, used: false })
        }),
      useRecoveryCode: (id, hash) =>
        Effect.sync(() => {
          const code = codes.find((c) => c.identityId === id && c.hash === hash && !c.used)
          if (!code) return false
          code.used = true
          return true
        }),
      unusedRecoveryCodes: (id) => Effect.sync(() => codes.filter((c) => c.identityId === id && !c.used).length)
    })
  })
