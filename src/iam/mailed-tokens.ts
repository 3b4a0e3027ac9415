import { Context, Effect, Layer } from "effect"
import { Config } from "../config.ts"
import { newId } from "../ids.ts"
import { fail, type InvalidRequest } from "../schema/errors.ts"
import { type AuthTokenRow, AuthTokenRepo, type TokenPurpose } from "../sql/auth-token-repo.ts"
import { generateToken, hashToken } from "./secrets.ts"

/** How long each kind of mailed token lives (docs/identity.md, "Mailed tokens"). */
export const TOKEN_LIFETIME_MS: Record<TokenPurpose, number> = {
  magic_link: 15 * 60_000,
  password_reset: 60 * 60_000,
  email_verify: 24 * 3600_000,
  invitation: 7 * 24 * 3600_000,
  delegation: 7 * 24 * 3600_000
}

export interface IssueInput {
  readonly purpose: TokenPurpose
  readonly tenantId: string | null
  readonly identityId: string | null
  readonly email: string | null
  /** The invitation or delegation the token stands for. */
  readonly subjectId?: string | null
  /** Overrides the purpose's lifetime (an invitation's own expiry). */
  readonly expiresAt?: Date
}

export interface MailedTokensShape {
  /** A new 256-bit token (the raw value goes into the mail); only its keyed hash is stored. */
  readonly issue: (input: IssueInput) => Effect.Effect<{ token: string; expiresAt: Date }>
  /**
   * Uses a token once. Fails 400 `token_expired` past its expiry and 400 `invalid_token` when it
   * is unknown, of another purpose or used already.
   */
  readonly redeem: (purpose: TokenPurpose, token: string) => Effect.Effect<AuthTokenRow, InvalidRequest>
  /** The token's row if it is usable now, without using it. */
  readonly peek: (purpose: TokenPurpose, token: string) => Effect.Effect<AuthTokenRow | undefined>
  /** The stored (keyed) hash of a token, for a redemption made elsewhere (a registration, by the tenant's entity). */
  readonly hashOf: (purpose: TokenPurpose, token: string) => string
  readonly retireForSubject: (subjectId: string) => Effect.Effect<void>
  readonly retireForIdentity: (identityId: string, purpose: TokenPurpose) => Effect.Effect<void>
  /** The link a mail carries: `PUBLIC_BASE_URL` + path, the token in the fragment-free query. */
  readonly link: (path: string, token: string) => string
}

export class MailedTokens extends Context.Service<MailedTokens, MailedTokensShape>()("trawl/MailedTokens") {}

const tokenHashFor = (secretKey: Buffer, purpose: TokenPurpose, token: string) => hashToken(secretKey, `mailed:${purpose}`, token)

export const MailedTokensLive = Layer.effect(
  MailedTokens,
  Effect.gen(function*() {
    const { secretKey, publicBaseUrl } = yield* Config
    const repo = yield* AuthTokenRepo
    return MailedTokens.of({
      issue: (input) =>
        Effect.gen(function*() {
          const token = generateToken()
          const expiresAt = input.expiresAt ?? new Date(Date.now() + TOKEN_LIFETIME_MS[input.purpose])
          yield* repo.insert({
            id: newId("tok"),
            tokenHash: tokenHashFor(secretKey, input.purpose, token),
            purpose: input.purpose,
            tenantId: input.tenantId,
            identityId: input.identityId,
            email: input.email,
            subjectId: input.subjectId ?? null,
            expiresAt
          })
          return { token, expiresAt }
        }),
      redeem: (purpose, token) =>
        Effect.flatMap(repo.redeem(purpose, tokenHashFor(secretKey, purpose, token)), (r) =>
          r.outcome === "redeemed" ? Effect.succeed(r.token)
            : r.outcome === "expired" ? fail(400, "token_expired", "the token has expired; ask for a new one", {
              details: [{ path: "token", code: "expired", message: "the token has expired" }]
            })
            : fail(400, "invalid_token", "the token is invalid or was used already", {
              details: [{ path: "token", code: "invalid", message: "unknown or already used" }]
            })),
      peek: (purpose, token) => repo.peek(purpose, tokenHashFor(secretKey, purpose, token)),
      hashOf: (purpose, token) => tokenHashFor(secretKey, purpose, token),
      retireForSubject: repo.retireForSubject,
      retireForIdentity: repo.retireForIdentity,
      link: (path, token) => `${publicBaseUrl.replace(/\/$/, "")}${path}?token=${token}`
    })
  })
)
