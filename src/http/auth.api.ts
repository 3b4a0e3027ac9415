import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
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
import { Anonymous, ANY_KEY, ApiKeyAuth, requires } from "./security.ts"

/**
 * Identity sessions and their second factor (docs/identity.md). Logging in needs no credential;
 * everything else acts on the caller's own identity, so any valid session or key may call it.
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
    }).pipe(requires(ANY_KEY)).middleware(ApiKeyAuth),
    HttpApiEndpoint.post("refresh", "/refresh", {
      success: Success(OpenedSession),
      error: errors(InvalidRequest)
    }).pipe(requires(ANY_KEY)).middleware(ApiKeyAuth),
    HttpApiEndpoint.post("logout", "/logout", {
      success: Success(LoggedOut)
    }).pipe(requires(ANY_KEY)).middleware(ApiKeyAuth),
    HttpApiEndpoint.get("me", "/me", {
      success: Success(Profile),
      error: errors(NotFound)
    }).pipe(requires(ANY_KEY)).middleware(ApiKeyAuth),
    HttpApiEndpoint.post("changePassword", "/password/change", {
      payload: ChangePasswordBody,
      success: Success(PasswordChanged),
      error: errors(InvalidRequest, Forbidden, TooManyRequests)
    }).pipe(requires(ANY_KEY)).middleware(ApiKeyAuth),
    HttpApiEndpoint.post("setupPassword", "/password/setup", {
      payload: SetupPasswordBody,
      success: Success(PasswordChanged),
      error: errors(InvalidRequest, Conflict)
    }).pipe(requires(ANY_KEY)).middleware(ApiKeyAuth),
    HttpApiEndpoint.post("enableTotp", "/totp/enable", {
      success: Success(TotpEnabling),
      error: errors(Forbidden, Conflict)
    }).pipe(requires(ANY_KEY)).middleware(ApiKeyAuth),
    HttpApiEndpoint.post("verifyTotp", "/totp/verify", {
      payload: TotpVerifyBody,
      success: Success(TotpEnabled),
      error: errors(InvalidRequest, Forbidden, Conflict, TooManyRequests)
    }).pipe(requires(ANY_KEY)).middleware(ApiKeyAuth),
    HttpApiEndpoint.post("disableTotp", "/totp/disable", {
      payload: ProofBody,
      success: Success(TotpDisabled),
      error: errors(InvalidRequest, Forbidden, Conflict, TooManyRequests)
    }).pipe(requires(ANY_KEY)).middleware(ApiKeyAuth),
    HttpApiEndpoint.post("regenerateRecoveryCodes", "/totp/recovery-codes/regenerate", {
      payload: ProofBody,
      success: Success(RecoveryCodesRegenerated),
      error: errors(InvalidRequest, Forbidden, Conflict, TooManyRequests)
    }).pipe(requires(ANY_KEY)).middleware(ApiKeyAuth),
    // Mailed-token flows (docs/account-recovery.md): the token, not a key, is the credential.
    HttpApiEndpoint.post("forgotPassword", "/password/forgot", {
      payload: MailRequestBody,
      success: Success(MailAccepted, 202)
    }).middleware(Anonymous),
    HttpApiEndpoint.post("resetPassword", "/password/reset", {
      payload: ResetPasswordBody,
      success: Success(PasswordChanged),
      error: errors(InvalidRequest, Forbidden, TooManyRequests)
    }).middleware(Anonymous),
    HttpApiEndpoint.post("verifyEmail", "/email/verify", {
      payload: TokenBody,
      success: Success(EmailVerified),
      error: errors(InvalidRequest)
    }).middleware(Anonymous),
    HttpApiEndpoint.post("sendEmailVerification", "/email/verify/send", {
      success: Success(VerificationMailSent, 202),
      error: errors(Forbidden, Conflict, TooManyRequests, Unavailable)
    }).pipe(requires(ANY_KEY)).middleware(ApiKeyAuth),
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
{}
