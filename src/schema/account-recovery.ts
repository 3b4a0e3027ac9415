import { Schema } from "effect"
import { DateTime, Email } from "./common.ts"
import { MailedToken, NewPassword, RecoveryCode, TotpCode } from "./auth.ts"

/** `{email}` of a request that mails a link (reset, magic link): always answered 202. */
export const MailRequestBody = Schema.Struct({ email: Email })
/** The answer to a mail request, the same whether or not the address has an account. */
export const MailAccepted = Schema.Struct({ accepted: Schema.Boolean })

export const ResetPasswordBody = Schema.Struct({ token: MailedToken, password: NewPassword })
export const TokenBody = Schema.Struct({ token: MailedToken })

/** A magic link's token, with the second factor when the account has TOTP on (docs/account-recovery.md). */
export const MagicLinkVerifyBody = Schema.Struct({
  token: MailedToken,
  // optionalKey: an optional field's union message would quote the code back.
  totpCode: Schema.optionalKey(TotpCode),
  recoveryCode: Schema.optionalKey(RecoveryCode)
})

export const EmailVerified = Schema.Struct({ verified: Schema.Boolean, email: Schema.String, verifiedAt: DateTime })
export const VerificationMailSent = Schema.Struct({ accepted: Schema.Boolean, email: Schema.String, expiresAt: DateTime })
