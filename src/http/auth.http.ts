import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { Config } from "../config.ts"
import { AccountRecovery } from "../iam/account-recovery.ts"
import { AuthService } from "../iam/auth-service.ts"
import { CurrentPrincipal } from "../iam/principal.ts"
import { type OpenedSession, SessionService } from "../iam/session-service.ts"
import { IdentityService } from "../iam/identity-service.ts"
import { Api } from "./api.ts"
import { clientContext } from "./client-context.ts"
import { presentedSession } from "./security.ts"
import { sessionCookieSetter } from "./session-cookie.ts"

/** The session token the caller authenticated with. */
const presentedSessionToken = Effect.map(
  HttpServerRequest.HttpServerRequest,
  (request) => presentedSession(request.headers, request.cookies)?.token ?? ""
)

export const AuthHandlers = HttpApiBuilder.group(
  Api,
  "auth",
  Effect.fn(function*(handlers) {
    const auth = yield* AuthService
    const sessions = yield* SessionService
    const identities = yield* IdentityService
    const recovery = yield* AccountRecovery
    const { publicBaseUrl } = yield* Config
    const setCookie = sessionCookieSetter(publicBaseUrl)
    const answer = ({ id: _id, ...session }: OpenedSession) => Effect.as(setCookie(session), session)

    return handlers
      .handle("login", ({ payload }) =>
        Effect.gen(function*() {
          const session = yield* auth.login(payload, yield* clientContext)
          return yield* answer(session)
        }))
      .handle("csrf", () =>
        Effect.gen(function*() {
          // A session's own route (SessionOnly): ApiKeyAuth has refused an API key already.
          const me = yield* CurrentPrincipal
          return { csrfToken: sessions.csrfToken(me.credentialId) }
        }))
      .handle("refresh", () =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const client = yield* clientContext
          const session = yield* sessions.refresh(me, yield* presentedSessionToken, client, yield* auth.requiresPasswordSetup(me.identityId))
          return yield* answer(session)
        }))
      .handle("logout", () =>
        Effect.gen(function*() {
          yield* sessions.logout(yield* CurrentPrincipal, yield* clientContext)
          yield* setCookie(undefined)
          return { loggedOut: true }
        }))
      .handle("me", () => Effect.flatMap(CurrentPrincipal, identities.profile))
      .handle("changePassword", ({ payload }) =>
        Effect.gen(function*() {
          const changedAt = yield* auth.changePassword(yield* CurrentPrincipal, payload.currentPassword, payload.newPassword, yield* clientContext)
          return { changed: true, changedAt: changedAt.toISOString() }
        }))
      .handle("setupPassword", ({ payload }) =>
        Effect.gen(function*() {
          const changedAt = yield* auth.setupPassword(yield* CurrentPrincipal, payload.password, yield* clientContext)
          return { changed: true, changedAt: changedAt.toISOString() }
        }))
      .handle("enableTotp", () =>
        Effect.gen(function*() {
          return yield* auth.enableTotp(yield* CurrentPrincipal, yield* clientContext)
        }))
      .handle("verifyTotp", ({ payload }) =>
        Effect.gen(function*() {
          const { totpEnabledAt } = yield* auth.verifyTotp(yield* CurrentPrincipal, payload.code, yield* clientContext)
          return { enabled: true, totpEnabledAt }
        }))
      .handle("disableTotp", ({ payload }) =>
        Effect.gen(function*() {
          yield* auth.disableTotp(yield* CurrentPrincipal, payload, yield* clientContext)
          return { disabled: true, disabledAt: new Date().toISOString() }
        }))
      .handle("regenerateRecoveryCodes", ({ payload }) =>
        Effect.gen(function*() {
          const recoveryCodes = yield* auth.regenerateRecoveryCodes(yield* CurrentPrincipal, payload, yield* clientContext)
          return { regenerated: true, regeneratedAt: new Date().toISOString(), recoveryCodes }
        }))
      .handle("forgotPassword", ({ payload }) =>
        Effect.as(Effect.flatMap(clientContext, (client) => recovery.requestPasswordReset(payload.email, client)), { accepted: true }))
      .handle("resetPassword", ({ payload }) =>
        Effect.gen(function*() {
          const changedAt = yield* recovery.resetPassword(payload.token, payload.password, yield* clientContext)
          return { changed: true, changedAt: changedAt.toISOString() }
        }))
      .handle("verifyEmail", ({ payload }) =>
        Effect.gen(function*() {
          return { verified: true, ...(yield* recovery.verifyEmail(payload.token, yield* clientContext)) }
        }))
      .handle("sendEmailVerification", () =>
        Effect.gen(function*() {
          return { accepted: true, ...(yield* recovery.sendEmailVerification(yield* CurrentPrincipal, yield* clientContext)) }
        }))
      .handle("requestMagicLink", ({ payload }) =>
        Effect.as(Effect.flatMap(clientContext, (client) => recovery.requestMagicLink(payload.email, client)), { accepted: true }))
      .handle("verifyMagicLink", ({ payload }) =>
        Effect.gen(function*() {
          return yield* answer(yield* recovery.verifyMagicLink(payload, yield* clientContext))
        }))
  })
)
