import { Schema } from "effect"
import { CheckedByHandler, DateTime, Email, Name, NullableDateTime, Text } from "./common.ts"
import { PageQuery } from "./envelope.ts"
import { CurrentPassword, MailedToken, NewPassword, Secret, TotpCode } from "./auth.ts"

export const invitationStatuses = ["pending", "active", "declined", "revoked", "renounced"] as const
export type InvitationStatus = (typeof invitationStatuses)[number]

/** An invitation into a tenant's organization (docs/invitations.md). */
export const Invitation = Schema.Struct({
  id: Schema.String,
  tenantId: Schema.String,
  organizationId: Schema.String,
  userId: Schema.String.annotate({
    description: "The invitee: the tenant's identity with this address, or the id the identity registering with the invitation gets"
  }),
  email: Schema.String,
  roleId: Schema.String,
  status: Schema.Literals(invitationStatuses),
  invitedAt: DateTime,
  invitationExpiresAt: NullableDateTime
}).annotate({ identifier: "Invitation" })
export type Invitation = typeof Invitation.Type

export const CreateInvitationBody = Schema.Struct({
  email: Email,
  roleId: Text(1, 200),
  firstName: Schema.optional(Name(1, 80)),
  lastName: Schema.optional(Name(1, 80)),
  // Asked when the role carries *:*:* or cross_tenant:*:*, as for such a key (docs/identity.md, "Re-authentication").
  currentPassword: Schema.optionalKey(CurrentPassword),
  totpCode: Schema.optionalKey(TotpCode)
})

/** The list's query: a `status` it does not take is a 400 invalid_filter, read by the handler. */
export const InvitationListQuery = {
  ...PageQuery,
  status: Schema.optional(CheckedByHandler({ enum: [...invitationStatuses] }))
}

/** The token of an invitation mail, for an identity that already exists. */
export const InvitationTokenBody = Schema.Struct({ token: MailedToken })

export const RevokedInvitation = Schema.Struct({
  revoked: Schema.Boolean,
  revokedAt: DateTime,
  id: Schema.String
})

/**
 * Registration: only with the token of a pending invitation or delegation. A token of another
 * shape is a 400 at `invitationToken` (the shape is public); a well-formed one that is unknown,
 * used or for another address is refused as 403 registration_disabled, the reason not told.
 */
export const RegisterBody = Schema.Struct({
  // Any string: every token that is not a usable one, malformed included, is the same
  // 403 registration_disabled (docs/invitations.md); bounded, and never quoted back.
  invitationToken: Schema.optionalKey(Secret(0, 1024, "a token")),
  email: Email,
  // A usable token is checked before the password's rules (NewPassword): without one the answer is
  // 403 registration_disabled whatever the password (docs/invitations.md).
  password: NewPassword,
  firstName: Schema.optional(Name(1, 80)),
  lastName: Schema.optional(Name(1, 80))
})
