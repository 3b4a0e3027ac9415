import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  ChangePasswordBody,
  CsrfToken,
  LoggedOut,
  LoginBody,
  OpenedSession,
  PasswordChanged,
  Profile,
  ProofBody,
  RecoveryCodesRegenerated,
  SetupPasswordBody,
  TotpDisabled,
  TotpEnabled,
  TotpEnabling,
  TotpVerifyBody
} from "../schema/auth.ts"
import {
  EmailVerified,
  MagicLinkVerifyBody,
  MailAccepted,
  MailRequestBody,
  ResetPasswordBody,
  TokenBody,
  VerificationMailSent
} from "../schema/account-recovery.ts"
import { Success } from "../schema/envelope.ts"
import { Conflict, errors, Forbidden, InvalidRequest, NotFound, TooManyRequests, Unauthenticated, Unavailable } from "../schema/errors.ts"
import { Anonymous, ANY_KEY, ApiKeyAuth, requires, requiresUnlessOwnSession, SessionOnly } from "./security.ts"
import { Operations } from "./openapi.ts"

/**
 * Identity sessions and their second factor (docs/identity.md). Logging in needs no credential;
 * everything else acts on the caller's own identity: reading it needs any valid session or key,
 * changing its credentials the person's own session or a key with `iam:identities:write`.
 */
export class AuthGroup extends HttpApiGroup.make("auth")
  .add(
    HttpApiEndpoint.post("login", "/login", {
      payload: LoginBody,
      success: Success(OpenedSession),
      error: errors(InvalidRequest, Unauthenticated, TooManyRequests)
    }).middleware(Anonymous),
    HttpApiEndpoint.get("csrf", "/csrf", {
      success: Success(CsrfToken),
      error: errors(InvalidRequest)
    }).annotate(SessionOnly, true).pipe(requires(ANY_KEY)).middleware(ApiKeyAuth),
    HttpApiEndpoint.post("refresh", "/refresh", {
      success: Success(OpenedSession),
      error: errors(InvalidRequest)
    }).annotate(SessionOnly, true).pipe(requires(ANY_KEY)).middleware(ApiKeyAuth),
    HttpApiEndpoint.post("logout", "/logout", {
      success: Success(LoggedOut),
      error: errors(InvalidRequest)
    }).annotate(SessionOnly, true).pipe(requires(ANY_KEY)).middleware(ApiKeyAuth),
    HttpApiEndpoint.get("me", "/me", {
      success: Success(Profile),
      error: errors(NotFound)
    }).pipe(requires(ANY_KEY)).middleware(ApiKeyAuth),
    HttpApiEndpoint.post("changePassword", "/password/change", {
      payload: ChangePasswordBody,
      success: Success(PasswordChanged),
      error: errors(InvalidRequest, Forbidden, TooManyRequests)
    }).pipe(requiresUnlessOwnSession("iam:identities:write")).middleware(ApiKeyAuth),
    HttpApiEndpoint.post("setupPassword", "/password/setup", {
      payload: SetupPasswordBody,
      success: Success(PasswordChanged),
      error: errors(InvalidRequest, Conflict)
    }).pipe(requiresUnlessOwnSession("iam:identities:write")).middleware(ApiKeyAuth),
    HttpApiEndpoint.post("enableTotp", "/totp/enable", {
      success: Success(TotpEnabling),
      error: errors(Forbidden, Conflict)
    }).pipe(requiresUnlessOwnSession("iam:identities:write")).middleware(ApiKeyAuth),
    HttpApiEndpoint.post("verifyTotp", "/totp/verify", {
      payload: TotpVerifyBody,
      success: Success(TotpEnabled),
      error: errors(InvalidRequest, Forbidden, Conflict, TooManyRequests)
    }).pipe(requiresUnlessOwnSession("iam:identities:write")).middleware(ApiKeyAuth),
    HttpApiEndpoint.post("disableTotp", "/totp/disable", {
      payload: ProofBody,
      success: Success(TotpDisabled),
      error: errors(InvalidRequest, Forbidden, Conflict, TooManyRequests)
    }).pipe(requiresUnlessOwnSession("iam:identities:write")).middleware(ApiKeyAuth),
    HttpApiEndpoint.post("regenerateRecoveryCodes", "/totp/recovery-codes/regenerate", {
      payload: ProofBody,
      success: Success(RecoveryCodesRegenerated),
      error: errors(InvalidRequest, Forbidden, Conflict, TooManyRequests)
    }).pipe(requiresUnlessOwnSession("iam:identities:write")).middleware(ApiKeyAuth),
    // Mailed-token flows (docs/account-recovery.md): the token, not a key, is the credential.
    HttpApiEndpoint.post("forgotPassword", "/password/forgot", {
      payload: MailRequestBody,
      success: Success(MailAccepted, 202)
    }).middleware(Anonymous),
    HttpApiEndpoint.post("resetPassword", "/password/reset", {
      payload: ResetPasswordBody,
      success: Success(PasswordChanged),
      error: errors(InvalidRequest)
    }).middleware(Anonymous),
    HttpApiEndpoint.post("verifyEmail", "/email/verify", {
      payload: TokenBody,
      success: Success(EmailVerified),
      error: errors(InvalidRequest)
    }).middleware(Anonymous),
    HttpApiEndpoint.post("sendEmailVerification", "/email/verify/send", {
      success: Success(VerificationMailSent, 202),
      error: errors(Forbidden, Conflict, TooManyRequests, Unavailable)
    }).pipe(requiresUnlessOwnSession("iam:identities:write")).middleware(ApiKeyAuth),
    HttpApiEndpoint.post("requestMagicLink", "/magic-link", {
      payload: MailRequestBody,
      success: Success(MailAccepted, 202)
    }).middleware(Anonymous),
    HttpApiEndpoint.post("verifyMagicLink", "/magic-link/verify", {
      payload: MagicLinkVerifyBody,
      success: Success(OpenedSession),
      error: errors(InvalidRequest, Unauthenticated, TooManyRequests)
    }).middleware(Anonymous)
  )
  .prefix("/v1/iam/auth")
  .annotate(OpenApi.Description, "Sessions of people: password and magic-link sign-in, CSRF, password changes and recovery, TOTP, e-mail verification.")
  .annotate(Operations, {
    login: ["Sign in with a password", "Opens a session for an e-mail and password (and a TOTP or recovery code when TOTP is on). Failed attempts are limited per address and per identity."],
    csrf: ["Get the CSRF token", "The CSRF token of the current cookie session, to send as x-csrf-token with unsafe requests."],
    refresh: ["Refresh the session", "Renews the current session within its lifetime."],
    logout: ["Sign out", "Ends the current session."],
    me: ["Current profile", "The profile of the identity the request acts as."],
    changePassword: ["Change the password", "Changes the caller's password given the current one; other sessions are ended."],
    setupPassword: ["Set a first password", "Sets the password of an identity that has none yet (an invited or magic-link account)."],
    enableTotp: ["Start enabling TOTP", "Creates a TOTP secret and recovery codes; TOTP is on once a code is verified."],
    verifyTotp: ["Confirm TOTP", "Verifies a code of the new TOTP secret and turns TOTP on."],
    disableTotp: ["Disable TOTP", "Turns TOTP off after re-authentication."],
    regenerateRecoveryCodes: ["Regenerate recovery codes", "Replaces the TOTP recovery codes; the old ones stop working."],
    forgotPassword: ["Request a password reset", "Mails a reset link when the address belongs to an identity; the answer is the same either way."],
    resetPassword: ["Reset the password", "Sets a new password with the token of a reset link; every session of the identity ends."],
    verifyEmail: ["Verify an e-mail address", "Marks the address verified with the token of a verification link."],
    sendEmailVerification: ["Send a verification mail", "Mails a verification link to the caller's address."],
    requestMagicLink: ["Request a sign-in link", "Mails a one-time sign-in link when the address belongs to an identity; the answer is the same either way."],
    verifyMagicLink: ["Sign in with a link", "Opens a session with the token of a sign-in link."]
  })
{}
