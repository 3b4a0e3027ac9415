import { Schema } from "effect"
import { CheckedByHandler, DateTime, Email, NullableDateTime, Text } from "./common.ts"
import { PageQuery } from "./envelope.ts"
import { MailedToken, Secret, SecretString } from "./auth.ts"

export const invitationStatuses = ["pending", "active", "declined", "revoked", "renounced"] as const
export type InvitationStatus = (typeof invitationStatuses)[number]

/** An invitation into a tenant's organization (docs/invitations.md). */
export const Invitation = Schema.Struct({
  id: Schema.String,
  tenantId: Schema.String,
  organizationId: Schema.String,
  userId: Schema.NullOr(Schema.String),
  email: Schema.String,
  roleId: Schema.String,
  status: Schema.Literals(invitationStatuses),
  invitedAt: DateTime,
  invitationExpiresAt: NullableDateTime
}).annotate({ identifier: "Invitation" })
export type Invitation = typeof Invitation.Type

export const CreateInvitationBody = Schema.Struct({
  email: Email,
  roleId: Schema.String.check(Schema.isMinLength(1)),
  firstName: Schema.optional(Text(1, 80)),
  lastName: Schema.optional(Text(1, 80))
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
 * Registration: only with the token of a pending invitation or delegation. The token is any string
 * here: a malformed one is refused like an unknown one (403 registration_disabled), not told apart.
 */
export const RegisterBody = Schema.Struct({
  // optionalKey, and secrets' own messages: no validation error quotes a token or a password back.
  invitationToken: Schema.optionalKey(Secret(0, 255, "a token")),
  email: Email,
  // Its bounds are checked with the other rules of a new password (400 at `password`, docs/identity.md).
  password: SecretString("a password").annotate({ format: "password" }),
  firstName: Schema.optional(Text(1, 80)),
  lastName: Schema.optional(Text(1, 80))
})
