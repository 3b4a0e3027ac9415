import { Context, Effect, Layer } from "effect"
import { Config } from "../config.ts"
import { newId } from "../ids.ts"
import { type Conflict, fail, type Forbidden, type InvalidRequest, type TooManyRequests, type Unauthenticated } from "../schema/errors.ts"
import { decryptSecret, encryptSecret } from "../webhooks/secret-box.ts"
import { AuditLog } from "../sql/audit-log.ts"
import { type IdentityAuthRow, IdentityRepo } from "../sql/identity-repo.ts"
import { Attempts } from "./attempts.ts"
import { hashPassword, refuseWeakPassword, verifyPassword } from "./passwords.ts"
import type { Principal } from "./principal.ts"
import { hashToken } from "./secrets.ts"
import { type ClientContext, type OpenedSession, SessionService } from "./session-service.ts"
import { newRecoveryCodes, newTotpSecret, normalizeRecoveryCode, otpauthUrl, totpStep } from "./totp.ts"

export interface LoginInput {
  readonly email: string
  readonly password: string
  readonly totpCode?: string | undefined
  readonly recoveryCode?: string | undefined
}

/**
 * The proofs a route that hands out all-powerful access takes (an API key, a role, an invitation, a
 * delegation): the password or a TOTP code, not a recovery code.
 */
export const GRANT_PROOFS: ReadonlyArray<keyof Proof> = ["currentPassword", "totpCode"]

/** 403 reauthentication_required, naming the proofs the operation takes. */
export const proofRequired = (accepted: ReadonlyArray<keyof Proof>) => {
  const names = accepted.length > 1 ? `${accepted.slice(0, -1).join(", ")} or ${accepted.at(-1)}` : accepted.join("")
  return fail(403, "reauthentication_required", `this operation needs ${names}`)
}

/** Proof of presence asked before a sensitive change (docs/identity.md, "Re-authentication"). */
export interface Proof {
  readonly currentPassword?: string | undefined
  readonly totpCode?: string | undefined
  readonly recoveryCode?: string | undefined
}

export interface AuthServiceShape {
  readonly login: (input: LoginInput, client: ClientContext) => Effect.Effect<OpenedSession, TooManyRequests | Unauthenticated>
  /**
   * Checks a proof of the identity's presence: its password, or a TOTP or recovery code when TOTP
   * is on. Guessing is limited like logins. Fails 403 reauthentication_required without a proof,
   * 403 reauthentication_failed for a wrong one.
   */
  readonly reauthenticate: (
    me: Principal,
    proof: Proof,
    client: ClientContext,
    /** The proof fields the caller's route takes, which the refusal names. */
    accepted?: ReadonlyArray<keyof Proof>
  ) => Effect.Effect<void, Forbidden | TooManyRequests>
  /**
   * The proof of presence of a route that hands out all-powerful access (GRANT_PROOFS): asked when
   * `needed`, and checked whenever one is sent, needed or not, so that a wrong password is never
   * taken in silence (docs/identity.md, "Re-authentication"). Resolves with whether one was checked.
   */
  readonly proveGrant: (me: Principal, proof: Proof, needed: boolean, client: ClientContext) => Effect.Effect<boolean, Forbidden | TooManyRequests>
  /** The password changes below resolve with when it was set, as stored. */
  readonly changePassword: (me: Principal, currentPassword: string, newPassword: string, client: ClientContext) => Effect.Effect<Date, Forbidden | InvalidRequest | TooManyRequests>
  readonly setupPassword: (me: Principal, password: string, client: ClientContext) => Effect.Effect<Date, Conflict | Forbidden | InvalidRequest>
  /** Sets a new password by a proven reset (the token is checked by the caller) and ends every session. */
  readonly resetPassword: (identityId: string, password: string, client: ClientContext) => Effect.Effect<Date, InvalidRequest>
  readonly requiresPasswordSetup: (identityId: string) => Effect.Effect<boolean>
  /**
   * Checks the second factor of an identity with TOTP on (a fresh TOTP code or an unused
   * recovery code, each used up by this check): what was used, or undefined when it fails.
   * Guessing limits are the caller's.
   */
  readonly secondFactor: (identity: IdentityAuthRow, proof: Proof, client: ClientContext) => Effect.Effect<"totp" | "recovery_code" | undefined>
  readonly enableTotp: (me: Principal, client: ClientContext) => Effect.Effect<{ otpauthUrl: string; secret: string; recoveryCodes: ReadonlyArray<string> }, Conflict | Forbidden>
  readonly verifyTotp: (me: Principal, code: string, client: ClientContext) => Effect.Effect<{ totpEnabledAt: string }, Conflict | Forbidden | InvalidRequest | TooManyRequests>
  readonly disableTotp: (me: Principal, proof: Proof, client: ClientContext) => Effect.Effect<void, Conflict | Forbidden | TooManyRequests>
  readonly regenerateRecoveryCodes: (me: Principal, proof: Proof, client: ClientContext) => Effect.Effect<ReadonlyArray<string>, Conflict | Forbidden | TooManyRequests>
}

export class AuthService extends Context.Service<AuthService, AuthServiceShape>()("trawl/AuthService") {}

const invalidCredentials = () => fail(401, "unauthorized", "invalid e-mail or password")

export const AuthServiceLive = Layer.effect(
  AuthService,
  Effect.gen(function*() {
    const { secretKey } = yield* Config
    const identities = yield* IdentityRepo
    const attempts = yield* Attempts
    const sessions = yield* SessionService
    const audit = yield* AuditLog

    /** The TOTP secret is encrypted with the identity's id as associated data: a box moved to another row does not open. */
    const sealTotp = (identityId: string, secret: string) => encryptSecret(secretKey, secret, `totp:${identityId}`)
    const openTotp = (identity: IdentityAuthRow) => decryptSecret(secretKey, identity.totp_secret_enc!, `totp:${identity.id}`)
    const recoveryHash = (identityId: string, code: string) => hashToken(secretKey, `recovery:${identityId}`, normalizeRecoveryCode(code))


    const identityOf = (me: Principal) =>
      identities.byId(me.identityId).pipe(
        Effect.flatMap((row) => row ? Effect.succeed(row) : fail(403, "forbidden", "this operation is for a person's identity"))
      )

    /**
     * A second factor for an identity with TOTP on: a fresh code (each step is accepted once) or
     * an unused recovery code (each used once). Returns what was used, or undefined when it fails.
     */
    const secondFactor = (identity: IdentityAuthRow, proof: Proof, client: ClientContext) =>
      Effect.gen(function*() {
        if (proof.totpCode !== undefined) {
          const step = totpStep(openTotp(identity), proof.totpCode)
          if (step !== undefined && (yield* identities.useTotpStep(identity.id, step))) return "totp" as const
          return undefined
        }
        if (proof.recoveryCode !== undefined) {
          if (yield* identities.useRecoveryCode(identity.id, recoveryHash(identity.id, proof.recoveryCode))) {
            const left = yield* identities.unusedRecoveryCodes(identity.id)
            yield* audit.write({ tenantId: identity.tenant_id, actorId: identity.id, ip: client.ip, action: "totp.recovery_code_used", targetId: identity.id, data: { left } })
            return "recovery_code" as const
          }
        }
        return undefined
      })

    const reauthenticate: AuthServiceShape["reauthenticate"] = (me, proof, client, accepted = ["currentPassword", "totpCode", "recoveryCode"]) =>
      Effect.gen(function*() {
        if (proof.currentPassword === undefined && proof.totpCode === undefined && proof.recoveryCode === undefined) {
          return yield* proofRequired(accepted)
        }
        const identity = yield* identityOf(me)
        const account = `id:${identity.id}`
        yield* attempts.begin(account, client.ip)
        let ok = true
        if (proof.currentPassword !== undefined) ok = yield* verifyPassword(proof.currentPassword, identity.password_hash)
        if (ok && (proof.totpCode !== undefined || proof.recoveryCode !== undefined)) {
          ok = identity.totp_enabled_at !== null && (yield* secondFactor(identity, proof, client)) !== undefined
        }
        if (!ok) {
          yield* attempts.failed(client.ip)
          yield* audit.record(me, "reauthentication.failure", identity.id, {}, client)
          return yield* fail(403, "reauthentication_failed", "re-authentication failed")
        }
        yield* attempts.succeeded(account)
      })

    const checkNewPassword = refuseWeakPassword

    return AuthService.of({
      reauthenticate,
      proveGrant: (me, proof, needed, client) =>
        needed || proof.currentPassword !== undefined || proof.totpCode !== undefined
          ? Effect.as(reauthenticate(me, { currentPassword: proof.currentPassword, totpCode: proof.totpCode }, client, GRANT_PROOFS), true)
          : Effect.succeed(false),
      secondFactor,
      requiresPasswordSetup: (identityId) =>
        identities.byId(identityId).pipe(Effect.map((row) => row !== undefined && (row.requires_password_setup || row.password_hash === null))),
      login: (input, client) =>
        Effect.gen(function*() {
          const account = `email:${input.email.trim()}`
          yield* attempts.begin(account, client.ip)
          const identity = yield* identities.byEmail(input.email.trim())
          // An unknown e-mail spends the time of a password check too, and answers the same.
          const passwordOk = yield* verifyPassword(input.password, identity?.password_hash ?? null)
          if (!identity || !passwordOk) {
            yield* attempts.failed(client.ip)
            yield* audit.write({
              tenantId: identity?.tenant_id ?? null,
              actorId: identity?.id ?? null,
              ip: client.ip,
              action: "login.failure",
              data: { reason: "password", ...(identity ? {} : { email: input.email.slice(0, 255) }) }
            })
            return yield* invalidCredentials()
          }
          if (identity.totp_enabled_at !== null) {
            if (input.totpCode === undefined && input.recoveryCode === undefined) {
              return yield* fail(401, "totp_required", "this account has TOTP on: send totpCode (or a recoveryCode)")
            }
            const used = yield* secondFactor(identity, input, client)
            if (used === undefined) {
              yield* attempts.failed(client.ip)
              yield* audit.write({ tenantId: identity.tenant_id, actorId: identity.id, ip: client.ip, action: "login.failure", data: { reason: "second_factor" } })
              return yield* fail(401, "unauthorized", "invalid, expired or already used TOTP or recovery code")
            }
          }
          yield* attempts.succeeded(account)
          return yield* sessions.open(identity, client, identity.requires_password_setup || identity.password_hash === null, { action: "login.success" })
        }),
      changePassword: (me, currentPassword, newPassword, client) =>
        Effect.gen(function*() {
          const identity = yield* identityOf(me)
          yield* checkNewPassword(newPassword, identity.email, "newPassword")
          // a change that keeps the password would still end the other sessions, and change nothing
          if (newPassword === currentPassword) {
            return yield* fail(400, "validation_error", "the new password must differ from the current one", {
              details: [{ path: "newPassword", code: "weak_password", message: "must differ from the current password" }]
            })
          }
          yield* reauthenticate(me, { currentPassword }, client)
          const changedAt = yield* identities.setPassword(identity.id, yield* hashPassword(newPassword))
          const ended = yield* sessions.revokeAll(identity.id, me.kind === "session" ? me.credentialId : null)
          yield* audit.record(me, "password.change", identity.id, { sessionsRevoked: ended }, client)
          return changedAt
        }),
      setupPassword: (me, password, client) =>
        Effect.gen(function*() {
          const identity = yield* identityOf(me)
          if (!identity.requires_password_setup && identity.password_hash !== null) {
            return yield* fail(409, "password_already_set", "this identity has a password; change it with /v1/iam/auth/password/change")
          }
          yield* checkNewPassword(password, identity.email, "password")
          const changedAt = yield* identities.setPassword(identity.id, yield* hashPassword(password))
          yield* audit.record(me, "password.setup", identity.id, {}, client)
          return changedAt
        }),
      resetPassword: (identityId, password, client) =>
        Effect.gen(function*() {
          const identity = yield* identities.byId(identityId)
          if (!identity) return yield* fail(400, "invalid_token", "the token is invalid or was used already")
          yield* checkNewPassword(password, identity.email, "password")
          const changedAt = yield* identities.setPassword(identity.id, yield* hashPassword(password))
          const ended = yield* sessions.revokeAll(identity.id, null)
          yield* attempts.succeeded(`email:${identity.email}`)
          yield* audit.write({ tenantId: identity.tenant_id, actorId: identity.id, ip: client.ip, action: "password.reset", targetId: identity.id, data: { sessionsRevoked: ended } })
          return changedAt
        }),
      enableTotp: (me, client) =>
        Effect.gen(function*() {
          const identity = yield* identityOf(me)
          if (identity.totp_enabled_at !== null) return yield* fail(409, "totp_already_enabled", "TOTP is already on; disable it first")
          const secret = newTotpSecret()
          if (!(yield* identities.stageTotp(identity.id, sealTotp(identity.id, secret)))) {
            return yield* fail(409, "totp_already_enabled", "TOTP is already on; disable it first")
          }
          const recoveryCodes = newRecoveryCodes()
          yield* identities.replaceRecoveryCodes(identity.id, recoveryCodes.map((code) => ({ id: newId("rcv"), hash: recoveryHash(identity.id, code) })))
          yield* audit.record(me, "totp.enable_started", identity.id, {}, client)
          return { otpauthUrl: otpauthUrl(secret, identity.email), secret, recoveryCodes }
        }),
      verifyTotp: (me, code, client) =>
        Effect.gen(function*() {
          const identity = yield* identityOf(me)
          if (identity.totp_enabled_at !== null) return yield* fail(409, "totp_already_enabled", "TOTP is already on")
          if (identity.totp_secret_enc === null) return yield* fail(409, "totp_not_started", "call /v1/iam/auth/totp/enable first")
          const account = `id:${identity.id}`
          yield* attempts.begin(account, client.ip)
          const step = totpStep(openTotp(identity), code)
          if (step === undefined) {
            yield* attempts.failed(client.ip)
            return yield* fail(400, "invalid_totp_code", "the code does not match; check the device's clock", {
              details: [{ path: "code", code: "invalid_value", message: "does not match the current code" }]
            })
          }
          const enabledAt = yield* identities.activateTotp(identity.id, step)
          if (enabledAt === undefined) return yield* fail(409, "totp_already_enabled", "TOTP is already on")
          yield* attempts.succeeded(account)
          yield* audit.record(me, "totp.enable", identity.id, {}, client)
          return { totpEnabledAt: enabledAt.toISOString() }
        }),
      disableTotp: (me, proof, client) =>
        Effect.gen(function*() {
          const identity = yield* identityOf(me)
          if (identity.totp_enabled_at === null) return yield* fail(409, "totp_not_enabled", "TOTP is not on")
          yield* reauthenticate(me, proof, client)
          yield* identities.disableTotp(identity.id)
          yield* audit.record(me, "totp.disable", identity.id, {}, client)
        }),
      regenerateRecoveryCodes: (me, proof, client) =>
        Effect.gen(function*() {
          const identity = yield* identityOf(me)
          if (identity.totp_enabled_at === null) return yield* fail(409, "totp_not_enabled", "recovery codes exist only while TOTP is on")
          yield* reauthenticate(me, proof, client)
          const codes = newRecoveryCodes()
          yield* identities.replaceRecoveryCodes(identity.id, codes.map((code) => ({ id: newId("rcv"), hash: recoveryHash(identity.id, code) })))
          yield* audit.record(me, "totp.recovery_codes_regenerated", identity.id, {}, client)
          return codes
        })
    })
  })
)
