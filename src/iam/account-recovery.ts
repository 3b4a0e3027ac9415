import { Context, Effect, Layer, Scope, Semaphore } from "effect"
import { Kv } from "../kv/kv.ts"
import { Mailer } from "../mail/mailer.ts"
import type { AuditAction } from "../schema/audit.ts"
import { iso } from "../schema/common.ts"
import { type Conflict, fail, type Forbidden, type InvalidRequest, type TooManyRequests, type Unauthenticated, type Unavailable } from "../schema/errors.ts"
import { AuditLog } from "../sql/audit-log.ts"
import type { AuthTokenRow, TokenPurpose } from "../sql/auth-token-repo.ts"
import { IdentityEmailRepo } from "../sql/identity-email-repo.ts"
import { type IdentityAuthRow, IdentityRepo } from "../sql/identity-repo.ts"
import { Attempts } from "./attempts.ts"
import { AuthService } from "./auth-service.ts"
import { MailedTokens } from "./mailed-tokens.ts"
import { passwordProblem } from "./passwords.ts"
import type { Principal } from "./principal.ts"
import { type ClientContext, type OpenedSession, SessionService } from "./session-service.ts"

/**
 * Mails that one recipient can be sent per kind (reset, magic link, verification) within the
 * window: enough for a lost mail or two, too few to flood someone's inbox (docs/account-recovery.md).
 */
export const MAILS_PER_RECIPIENT = 3
export const MAIL_WINDOW_MS = 15 * 60_000

/**
 * Anonymous mail requests (reset, magic link) one client address can make within the window;
 * past it they are dropped unread, whatever address they name, so one client cannot mail many
 * people a few times each.
 */
export const MAIL_REQUESTS_PER_CLIENT = 100

/**
 * Background mail requests run a few at a time, and at most so many wait: past that a request is
 * dropped (and logged), whatever address it names, so a flood of requests cannot pile up work.
 */
export const MAIL_WORK_CONCURRENCY = 8
export const MAX_PENDING_MAIL_WORK = 1_000

/** The pages a mailed link opens, under PUBLIC_BASE_URL (docs/account-recovery.md, "Mailed tokens"). */
export const LINK_PATHS = {
  password_reset: "/reset-password",
  magic_link: "/magic-link",
  email_verify: "/verify-email"
} as const

export interface MagicLinkInput {
  readonly token: string
  readonly totpCode?: string | undefined
  readonly recoveryCode?: string | undefined
}

export interface AccountRecoveryShape {
  /** Mails a reset link if the address is a person's, in the background: the caller learns nothing. */
  readonly requestPasswordReset: (email: string, client: ClientContext) => Effect.Effect<void>
  /** Sets the password by a reset token and ends every session (resolves with when, as stored); a refused password leaves the token usable. */
  readonly resetPassword: (token: string, password: string, client: ClientContext) => Effect.Effect<Date, InvalidRequest>
  /** Mails a sign-in link if the address is a person's, in the background. */
  readonly requestMagicLink: (email: string, client: ClientContext) => Effect.Effect<void>
  /** Opens a session by a magic link; with TOTP on the second factor must pass before the link is used. */
  readonly verifyMagicLink: (input: MagicLinkInput, client: ClientContext) => Effect.Effect<OpenedSession, InvalidRequest | TooManyRequests | Unauthenticated>
  readonly verifyEmail: (token: string, client: ClientContext) => Effect.Effect<{ email: string; verifiedAt: string }, InvalidRequest>
  /** Mails a verification link for the caller's unverified primary address. */
  readonly sendEmailVerification: (me: Principal, client: ClientContext) => Effect.Effect<{ email: string; expiresAt: string }, Conflict | Forbidden | TooManyRequests | Unavailable>
}

export class AccountRecovery extends Context.Service<AccountRecovery, AccountRecoveryShape>()("trawl/AccountRecovery") {}

const invalidToken = () =>
  fail(400, "invalid_token", "the token is invalid or was used already", {
    details: [{ path: "token", code: "invalid", message: "unknown or already used" }]
  })

/** A mail carrying a one-time link, and the same token bare for an API client to send to `route`. */
interface LinkMail {
  readonly subject: string
  readonly intro: string
  readonly lifetime: string
  readonly route: string
  readonly outro: string
}

const mailText = (m: LinkMail, link: string, token: string) =>
  `${m.intro}\n\nOpen this link within ${m.lifetime}:\n${link}\n\nOr send this token to ${m.route}:\n${token}\n\nThe link works once. ${m.outro}\n`

export const AccountRecoveryLive = Layer.effect(
  AccountRecovery,
  Effect.gen(function*() {
    // Background mail work lives as long as the service, not as long as the request that asked for it.
    const scope = yield* Scope.Scope
    const identities = yield* IdentityRepo
    const emails = yield* IdentityEmailRepo
    const tokens = yield* MailedTokens
    const mailer = yield* Mailer
    const kv = yield* Kv
    const auth = yield* AuthService
    const sessions = yield* SessionService
    const attempts = yield* Attempts
    const audit = yield* AuditLog

    const mailWorkSlots = yield* Semaphore.make(MAIL_WORK_CONCURRENCY)
    let pendingMailWork = 0

    const admitMail = (purpose: TokenPurpose, recipient: string) =>
      kv.admitInWindow(`mail:${purpose}:${recipient.toLowerCase()}`, MAIL_WINDOW_MS, MAILS_PER_RECIPIENT)

    /**
     * Runs `work` after the response: whether the address has an account, and how long the SMTP
     * server takes, then cannot show in the answer or its timing.
     */
    const inBackground = (what: string, work: Effect.Effect<void>) =>
      Effect.suspend(() => {
        if (pendingMailWork >= MAX_PENDING_MAIL_WORK) {
          return Effect.logWarning(`${what}: dropped, ${MAX_PENDING_MAIL_WORK} mail requests are waiting already`)
        }
        pendingMailWork++
        return work.pipe(
          Semaphore.withPermits(mailWorkSlots, 1),
          Effect.catchCause((cause) => Effect.logWarning(`${what}: the background work failed`, cause)),
          Effect.ensuring(Effect.sync(() => void pendingMailWork--)),
          Effect.forkIn(scope),
          Effect.asVoid
        )
      })

    /** Retires the identity's older links of this kind, issues a new one and mails it; whether it was sent. */
    const mailLink = (
      purpose: "password_reset" | "magic_link" | "email_verify",
      identity: { id: string; tenant_id: string },
      recipient: string,
      mail: LinkMail
    ) =>
      Effect.gen(function*() {
        yield* tokens.retireForIdentity(identity.id, purpose)
        const issued = yield* tokens.issue({ purpose, tenantId: identity.tenant_id, identityId: identity.id, email: recipient })
        const text = mailText(mail, tokens.link(LINK_PATHS[purpose], issued.token), issued.token)
        const sent = yield* mailer.send({ to: recipient, subject: mail.subject, text }).pipe(
          Effect.as(true),
          Effect.catchTag("MailUnavailable", () => Effect.succeed(false))
        )
        return { sent, expiresAt: issued.expiresAt }
      })

    /** An anonymous mail request: only a known, active person's address gets a mail, at most so many per window. */
    const mailIfKnown = (
      purpose: "password_reset" | "magic_link",
      email: string,
      client: ClientContext,
      action: AuditAction,
      mail: LinkMail
    ) =>
      Effect.gen(function*() {
        // Counted before anything is read, so it costs the same for every address.
        if (client.ip !== null && !(yield* kv.admitInWindow(`mail:client:${client.ip}`, MAIL_WINDOW_MS, MAIL_REQUESTS_PER_CLIENT))) {
          return yield* Effect.logInfo(`${action}: dropped, the client made ${MAIL_REQUESTS_PER_CLIENT} mail requests in the last 15 minutes`)
        }
        yield* inBackground(
          action,
          Effect.gen(function*() {
            const identity = yield* identities.byEmail(email)
            if (!identity) return
            if (!(yield* admitMail(purpose, identity.email))) {
              yield* Effect.logInfo(`${action}: not mailed, the recipient had ${MAILS_PER_RECIPIENT} such mails in the last 15 minutes`)
              return
            }
            const { sent } = yield* mailLink(purpose, identity, identity.email, mail)
            yield* audit.write({ tenantId: identity.tenant_id, actorId: null, ip: client.ip, action, targetId: identity.id, data: { mailed: sent } })
          })
        )
      })

    /** The token's row while it is usable, without using it; else the error its redemption gives (expired or invalid). */
    const usable = (purpose: TokenPurpose, token: string) =>
      Effect.flatMap(tokens.peek(purpose, token), (row) => row ? Effect.succeed(row) : Effect.flatMap(tokens.redeem(purpose, token), () => invalidToken()))

    /** The active person the token was mailed to, while the address is still theirs. */
    const ownerOf = (row: AuthTokenRow) =>
      Effect.gen(function*() {
        const identity = row.email === null ? undefined : yield* identities.byEmail(row.email)
        if (!identity || identity.id !== row.identity_id) return yield* invalidToken()
        return identity
      })

    const checkNewPassword = (password: string, addresses: ReadonlyArray<string>) => {
      const problem = addresses.map((a) => passwordProblem(password, a)).find((p) => p !== undefined) ??
        passwordProblem(password, undefined)
      return problem === undefined
        ? Effect.void
        : fail(400, "validation_error", `the password ${problem}`, { details: [{ path: "password", code: "weak_password", message: problem }] })
    }

    const requiresPasswordSetup = (identity: IdentityAuthRow) => identity.requires_password_setup || identity.password_hash === null

    return AccountRecovery.of({
      requestPasswordReset: (email, client) =>
        mailIfKnown("password_reset", email, client, "password.reset_requested", {
          subject: "Reset your Trawl password",
          intro: "Someone asked to reset the password of the Trawl account of this address.",
          lifetime: "1 hour to choose a new password",
          route: "POST /v1/iam/auth/password/reset",
          outro: "If you did not ask for it, ignore this mail: your password stays as it is."
        }),
      resetPassword: (token, password, client) =>
        Effect.gen(function*() {
          const row = yield* usable("password_reset", token)
          const identity = yield* ownerOf(row)
          const primary = yield* identities.byId(identity.id)
          // Checked before the token is used: a refused password leaves the link working.
          yield* checkNewPassword(password, [identity.email, ...(primary ? [primary.email] : [])])
          yield* tokens.redeem("password_reset", token)
          const changedAt = yield* auth.resetPassword(identity.id, password, client)
          // The reset proved the mailbox; an outstanding sign-in link dies with the old password.
          yield* emails.markVerified(identity.id, identity.email)
          yield* tokens.retireForIdentity(identity.id, "magic_link")
          return changedAt
        }),
      requestMagicLink: (email, client) =>
        mailIfKnown("magic_link", email, client, "magic_link.requested", {
          subject: "Your Trawl sign-in link",
          intro: "Someone asked to sign in to the Trawl account of this address.",
          lifetime: "15 minutes to sign in",
          route: "POST /v1/iam/auth/magic-link/verify",
          outro: "If you did not ask for it, ignore this mail: nobody can sign in without it."
        }),
      verifyMagicLink: (input, client) =>
        Effect.gen(function*() {
          const row = yield* usable("magic_link", input.token)
          const identity = yield* ownerOf(row)
          const account = `email:${identity.email}`
          if (identity.totp_enabled_at !== null) {
            // The link stands for the password only: the second factor is still asked, and the link stays usable until it passes.
            if (input.totpCode === undefined && input.recoveryCode === undefined) {
              return yield* fail(401, "totp_required", "this account has TOTP on: send totpCode (or a recoveryCode) with the token")
            }
            yield* attempts.begin(account, client.ip)
            if ((yield* auth.secondFactor(identity, input, client)) === undefined) {
              yield* attempts.failed(client.ip)
              yield* audit.write({
                tenantId: identity.tenant_id,
                actorId: identity.id,
                ip: client.ip,
                action: "login.failure",
                data: { reason: "second_factor", method: "magic_link" }
              })
              return yield* fail(401, "unauthorized", "invalid, expired or already used TOTP or recovery code")
            }
          }
          yield* tokens.redeem("magic_link", input.token)
          yield* attempts.succeeded(account)
          yield* emails.markVerified(identity.id, identity.email)
          return yield* sessions.open(identity, client, requiresPasswordSetup(identity), { action: "login.success", data: { method: "magic_link" } })
        }),
      verifyEmail: (token, client) =>
        Effect.gen(function*() {
          const row = yield* tokens.redeem("email_verify", token)
          const marked = row.identity_id === null || row.email === null ? undefined : yield* emails.markVerified(row.identity_id, row.email)
          if (!marked) return yield* invalidToken()
          yield* audit.write({ tenantId: row.tenant_id, actorId: row.identity_id, ip: client.ip, action: "email.verified", targetId: row.identity_id, data: { email: marked.email } })
          return { email: marked.email, verifiedAt: iso(marked.verified_at)! }
        }),
      sendEmailVerification: (me, client) =>
        Effect.gen(function*() {
          const identity = yield* identities.byId(me.identityId)
          const primary = identity ? yield* emails.primary(identity.id) : undefined
          if (!identity || !primary) return yield* fail(403, "forbidden", "this operation is for a person's identity")
          if (primary.verified_at !== null) return yield* fail(409, "email_already_verified", "the primary e-mail address is verified already")
          if (!(yield* admitMail("email_verify", primary.email))) {
            return yield* fail(429, "rate_limited", `at most ${MAILS_PER_RECIPIENT} verification mails are sent per 15 minutes`, {
              retryAfter: MAIL_WINDOW_MS / 1000
            })
          }
          const { sent, expiresAt } = yield* mailLink("email_verify", identity, primary.email, {
            subject: "Verify your e-mail address for Trawl",
            intro: "Confirm that this address belongs to your Trawl account.",
            lifetime: "24 hours to verify it",
            route: "POST /v1/iam/auth/email/verify",
            outro: "If you do not have a Trawl account, ignore this mail."
          })
          if (!sent) return yield* fail(503, "dependency_unavailable", "the verification mail could not be sent; try again later", { retryAfter: 30 })
          yield* audit.record(me, "email.verification_requested", identity.id, {}, client)
          return { email: primary.email, expiresAt: expiresAt.toISOString() }
        })
    })
  })
)
