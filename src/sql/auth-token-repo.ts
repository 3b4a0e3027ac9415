import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"

/** What a mailed token is for; a token of one purpose is never accepted for another. */
export type TokenPurpose = "magic_link" | "password_reset" | "email_verify" | "invitation" | "delegation"

export interface AuthTokenRow {
  readonly id: string
  readonly purpose: TokenPurpose
  readonly tenant_id: string | null
  readonly identity_id: string | null
  readonly email: string | null
  readonly subject_id: string | null
  readonly expires_at: Date
  readonly used_at: Date | null
}

export interface NewAuthToken {
  readonly id: string
  readonly tokenHash: string
  readonly purpose: TokenPurpose
  readonly tenantId: string | null
  readonly identityId: string | null
  readonly email: string | null
  readonly subjectId: string | null
  readonly expiresAt: Date
}

export type Redemption =
  | { readonly outcome: "redeemed"; readonly token: AuthTokenRow }
  | { readonly outcome: "expired" }
  | { readonly outcome: "invalid" }

export interface AuthTokenRepoShape {
  readonly insert: (token: NewAuthToken) => Effect.Effect<void>
  /**
   * Marks the token used, once: of two concurrent redemptions one wins. An unknown or used token
   * is `invalid`; one past its expiry is `expired` (and stays unused).
   */
  readonly redeem: (purpose: TokenPurpose, tokenHash: string) => Effect.Effect<Redemption>
  /** The token of `purpose` with this hash, if unused and unexpired, without using it. */
  readonly peek: (purpose: TokenPurpose, tokenHash: string) => Effect.Effect<AuthTokenRow | undefined>
  /** Retires every unused token of the subject (an invitation revoked, a delegation ended). */
  readonly retireForSubject: (subjectId: string) => Effect.Effect<void>
  /** Retires every unused token of `purpose` for the identity (a new reset link replaces the old ones). */
  readonly retireForIdentity: (identityId: string, purpose: TokenPurpose) => Effect.Effect<void>
}

export class AuthTokenRepo extends Context.Service<AuthTokenRepo, AuthTokenRepoShape>()("trawl/AuthTokenRepo") {}

const columns = "id, purpose, tenant_id, identity_id, email, subject_id, expires_at, used_at"

export const AuthTokenRepoLive = Layer.effect(
  AuthTokenRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const cols = sql.literal(columns)
    return AuthTokenRepo.of({
      insert: (t) =>
        sql`
          INSERT INTO auth_tokens (id, token_hash, purpose, tenant_id, identity_id, email, subject_id, expires_at)
          VALUES (${t.id}, ${t.tokenHash}, ${t.purpose}, ${t.tenantId}, ${t.identityId}, ${t.email}, ${t.subjectId}, ${t.expiresAt})`.pipe(
          Effect.orDie,
          Effect.asVoid
        ),
      redeem: (purpose, tokenHash) =>
        Effect.gen(function*() {
          const [used] = yield* sql<AuthTokenRow>`
            UPDATE auth_tokens SET used_at = now()
            WHERE token_hash = ${tokenHash} AND purpose = ${purpose} AND used_at IS NULL AND expires_at > now()
            RETURNING ${cols}`
          if (used) return { outcome: "redeemed", token: used } as const
          const [expired] = yield* sql`
            SELECT 1 FROM auth_tokens WHERE token_hash = ${tokenHash} AND purpose = ${purpose} AND used_at IS NULL AND expires_at <= now()`
          return expired ? { outcome: "expired" } as const : { outcome: "invalid" } as const
        }).pipe(Effect.orDie),
      peek: (purpose, tokenHash) =>
        sql<AuthTokenRow>`
          SELECT ${cols} FROM auth_tokens
          WHERE token_hash = ${tokenHash} AND purpose = ${purpose} AND used_at IS NULL AND expires_at > now()`.pipe(
          Effect.orDie,
          Effect.map((rows) => rows[0])
        ),
      retireForSubject: (subjectId) =>
        sql`UPDATE auth_tokens SET used_at = now() WHERE subject_id = ${subjectId} AND used_at IS NULL`.pipe(Effect.orDie, Effect.asVoid),
      retireForIdentity: (identityId, purpose) =>
        sql`UPDATE auth_tokens SET used_at = now() WHERE identity_id = ${identityId} AND purpose = ${purpose} AND used_at IS NULL`.pipe(
          Effect.orDie,
          Effect.asVoid
        )
    })
  })
)

/** Mailed tokens in memory, for unit tests of the services above; `expire` ages one at once. */
export class AuthTokenClock extends Context.Service<AuthTokenClock, { readonly expireAll: Effect.Effect<void> }>()("trawl/AuthTokenClock") {}

export const AuthTokenRepoTest: Layer.Layer<AuthTokenRepo | AuthTokenClock> = Layer.unwrap(Effect.sync(() => {
  type Row = { -readonly [K in keyof AuthTokenRow]: AuthTokenRow[K] } & { token_hash: string }
  const rows: Array<Row> = []
  const usable = (r: Row) => r.used_at === null && r.expires_at.getTime() > Date.now()
  const view = ({ token_hash: _h, ...row }: Row): AuthTokenRow => row
  return Layer.mergeAll(
    Layer.succeed(AuthTokenRepo, AuthTokenRepo.of({
      insert: (t) =>
        Effect.sync(() =>
          void rows.push({
            id: t.id,
            token_hash: t.tokenHash,
            purpose: t.purpose,
            tenant_id: t.tenantId,
            identity_id: t.identityId,
            email: t.email,
            subject_id: t.subjectId,
            expires_at: t.expiresAt,
            used_at: null
          })
        ),
      redeem: (purpose, hash) =>
        Effect.sync((): Redemption => {
          const r = rows.find((x) => x.token_hash === hash && x.purpose === purpose)
          if (!r || r.used_at !== null) return { outcome: "invalid" }
          if (!usable(r)) return { outcome: "expired" }
          r.used_at = new Date()
          return { outcome: "redeemed", token: view(r) }
        }),
      peek: (purpose, hash) => Effect.sync(() => rows.filter((x) => x.token_hash === hash && x.purpose === purpose && usable(x)).map(view)[0]),
      retireForSubject: (subjectId) => Effect.sync(() => rows.filter((x) => x.subject_id === subjectId && x.used_at === null).forEach((x) => (x.used_at = new Date()))),
      retireForIdentity: (identityId, purpose) =>
        Effect.sync(() => rows.filter((x) => x.identity_id === identityId && x.purpose === purpose && x.used_at === null).forEach((x) => (x.used_at = new Date())))
    })),
    Layer.succeed(AuthTokenClock, AuthTokenClock.of({ expireAll: Effect.sync(() => rows.forEach((x) => (x.expires_at = new Date(Date.now() - 1)))) }))
  )
}))
