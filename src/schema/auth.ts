import { Schema } from "effect"
import { AbsoluteUrl, DateTime, Email, Name, NullableDateTime } from "./common.ts"

/**
 * A secret the client sends (password, code, token): bounded in characters, and its failure is a
 * message of its own, so that an error never sends the secret back.
 */
/** A string whose type failure says only what was expected: the default message quotes the input (a password sent as a number). */
export const SecretString = (what: string) => Schema.String.annotate({ message: `Expected ${what} (a string)` })

export const Secret = (min: number, max: number, what: string, statedMin = min) =>
  // The bound is stated by the check itself, so the document says what is enforced (a larger
  // `statedMin` where the service refuses the shorter ones after decoding).
  SecretString(what).check(Schema.makeFilter((s: string) => {
    const n = [...s].length
    return (n >= min && n <= max) || `Expected ${what} of ${min} to ${max} characters`
  }, { toJsonSchema: () => ({ minLength: statedMin, maxLength: max, format: "password" }) }))

/** The current password, as the description bounds it: 1 to 1024 characters. */
export const CurrentPassword = Secret(1, 1024, "a password")
/**
 * A new password: 12 to 1024 characters, not the e-mail address (docs/identity.md, "Passwords").
 * Any of 1 to 1024 decodes; the rules are the service's, after any token of the request is found
 * usable, so that a short one is `400 weak_password` like the e-mail address (and a reset with a
 * dead token is `invalid_token` whatever its password). The document states the rule's bounds.
 */
export const NewPassword = Secret(1, 1024, "a password", 12).annotate({
  description: "12 to 1024 characters, not the e-mail address: else 400 weak_password at this field"
})
/** A TOTP code: six ASCII digits (not any Unicode digit). */
export const TOTP_CODE_PATTERN = "^[0-9]{6}$"
export const TotpCode = Schema.String.annotate({ message: "Expected a code of six digits (a string)" }).check(
  Schema.makeFilter((s: string) => new RegExp(TOTP_CODE_PATTERN).test(s) || "Expected a code of six digits", {
    toJsonSchema: () => ({ pattern: TOTP_CODE_PATTERN })
  })
)
export const RecoveryCode = Secret(8, 64, "a recovery code")
/** A mailed token: what the link carries, 43 base64url characters (32 random bytes, secrets.ts). */
export const MAILED_TOKEN_PATTERN = "^[A-Za-z0-9_-]{43}$"
export const MailedToken = SecretString("a token").check(
  Schema.makeFilter((s: string) => new RegExp(MAILED_TOKEN_PATTERN).test(s) || "Expected a token of 43 base64url characters", {
    toJsonSchema: () => ({ pattern: MAILED_TOKEN_PATTERN })
  })
)

/*
 * Secrets that may be left out are optionalKey, not optional: an optional field also takes null,
 * and the message of that union quotes the input, which for a secret must never come back.
 */
export const LoginBody = Schema.Struct({
  email: Email,
  password: CurrentPassword,
  totpCode: Schema.optionalKey(TotpCode),
  recoveryCode: Schema.optionalKey(RecoveryCode)
})

export const OpenedSession = Schema.Struct({
  sessionId: Schema.String.annotate({ description: "The session token: send it as Authorization: Bearer <sessionId>. Shown once." }),
  expiresAt: DateTime,
  csrfToken: Schema.String.annotate({ description: "Send as x-csrf-token with the trawl_session cookie on unsafe methods" }),
  requiresPasswordSetup: Schema.Boolean
}).annotate({ identifier: "OpenedSession" })

export const CsrfToken = Schema.Struct({ csrfToken: Schema.String })
export const LoggedOut = Schema.Struct({ loggedOut: Schema.Boolean })

export const ChangePasswordBody = Schema.Struct({ currentPassword: CurrentPassword, newPassword: NewPassword })
export const SetupPasswordBody = Schema.Struct({ password: NewPassword })
export const PasswordChanged = Schema.Struct({ changed: Schema.Boolean, changedAt: DateTime })

/** A proof of presence for a sensitive change: any one of them (docs/identity.md, "Re-authentication"). */
export const ProofBody = Schema.Struct({
  currentPassword: Schema.optionalKey(CurrentPassword),
  totpCode: Schema.optionalKey(TotpCode),
  recoveryCode: Schema.optionalKey(RecoveryCode)
})

export const TotpEnabling = Schema.Struct({
  otpauthUrl: Schema.String,
  secret: Schema.String,
  recoveryCodes: Schema.Array(Schema.String)
}).annotate({ identifier: "TotpEnabling" })
export const TotpVerifyBody = Schema.Struct({ code: TotpCode })
export const TotpEnabled = Schema.Struct({ enabled: Schema.Boolean, totpEnabledAt: DateTime })
export const TotpDisabled = Schema.Struct({ disabled: Schema.Boolean, disabledAt: DateTime })
export const RecoveryCodesRegenerated = Schema.Struct({
  regenerated: Schema.Boolean,
  regeneratedAt: DateTime,
  recoveryCodes: Schema.Array(Schema.String)
})

export const ProfileEmail = Schema.Struct({
  id: Schema.String,
  email: Schema.String,
  isPrimary: Schema.Boolean,
  verifiedAt: NullableDateTime
})

export const Profile = Schema.Struct({
  identityId: Schema.String,
  tenantId: Schema.String,
  type: Schema.Literals(["user", "organization"]),
  displayName: Schema.String,
  firstName: Schema.NullOr(Schema.String),
  lastName: Schema.NullOr(Schema.String),
  avatarUrl: Schema.NullOr(Schema.String),
  status: Schema.String,
  passwordChangedAt: NullableDateTime,
  totpEnabledAt: NullableDateTime,
  defaultRoleId: Schema.NullOr(Schema.String),
  emails: Schema.Array(ProfileEmail),
  permissions: Schema.Array(Schema.String),
  isInternalAdmin: Schema.Boolean,
  requiresPasswordSetup: Schema.Boolean
}).annotate({ identifier: "Profile" })
export type Profile = typeof Profile.Type

/** An avatar is an image to show: only an http(s) URL, never `javascript:`, `data:` or another scheme. */
const AvatarUrl = AbsoluteUrl.check(Schema.makeFilter((s: string) => /^\s*https?:\/\//i.test(s), { expected: "an http(s) URL", toJsonSchema: () => ({ pattern: "^\\s*[Hh][Tt][Tt][Pp][Ss]?://" }) }))

export const UpdateProfileBody = Schema.Struct({
  firstName: Schema.optional(Schema.NullOr(Name(1, 80))),
  lastName: Schema.optional(Schema.NullOr(Name(1, 80))),
  avatarUrl: Schema.optional(Schema.NullOr(AvatarUrl))
})

export const SessionItem = Schema.Struct({
  id: Schema.String,
  createdAt: DateTime,
  lastSeenAt: DateTime,
  expiresAt: DateTime,
  ip: Schema.NullOr(Schema.String),
  userAgent: Schema.NullOr(Schema.String),
  current: Schema.Boolean
}).annotate({ identifier: "Session" })

export const RevokedSession = Schema.Struct({ revoked: Schema.Boolean, revokedAt: DateTime, id: Schema.String })
export const RevokedSessions = Schema.Struct({ revoked: Schema.Int, revokedAt: DateTime })
