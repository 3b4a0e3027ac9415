import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { OpenedSession } from "../schema/auth.ts"
import { Page, Success } from "../schema/envelope.ts"
import { Conflict, errors, Forbidden, InvalidRequest, NotFound, TooManyRequests, Unavailable, Unprocessable } from "../schema/errors.ts"
import { CreateInvitationBody, Invitation, InvitationListQuery, InvitationTokenBody, RegisterBody, RevokedInvitation } from "../schema/invitation.ts"
import { Anonymous, ANY_KEY, ApiKeyAuth, requires } from "./security.ts"
import { Operations } from "./openapi.ts"

const org = { orgIdentityId: Schema.String }

/** Invitations into a tenant's organization, and the invitee's answer (docs/invitations.md). */
export class InvitationsGroup extends HttpApiGroup.make("invitations")
  .add(
    HttpApiEndpoint.post("create", "/organizations/:orgIdentityId/invitations", {
      params: org,
      payload: CreateInvitationBody,
      success: Success(Invitation, 201),
      error: errors(InvalidRequest, Forbidden, NotFound, Conflict, Unprocessable, Unavailable, TooManyRequests)
    }).pipe(requires("iam:invitations:write")),
    HttpApiEndpoint.get("list", "/organizations/:orgIdentityId/invitations", {
      params: org,
      query: InvitationListQuery,
      success: Success(Page(Invitation)),
      error: errors(InvalidRequest, NotFound)
    }).pipe(requires("iam:invitations:read")),
    HttpApiEndpoint.delete("revoke", "/organizations/:orgIdentityId/invitations/:invitationId", {
      params: { ...org, invitationId: Schema.String },
      success: Success(RevokedInvitation),
      error: errors(NotFound, Conflict)
    }).pipe(requires("iam:invitations:write")),
    HttpApiEndpoint.post("accept", "/invitations/accept", {
      payload: InvitationTokenBody,
      success: Success(Invitation),
      error: errors(InvalidRequest, Forbidden, Conflict)
    }).pipe(requires(ANY_KEY)),
    HttpApiEndpoint.post("decline", "/invitations/decline", {
      payload: InvitationTokenBody,
      success: Success(Invitation),
      error: errors(InvalidRequest, Forbidden, Conflict)
    }).pipe(requires(ANY_KEY))
  )
  .middleware(ApiKeyAuth)
  .prefix("/v1/iam")
  .annotate(OpenApi.Description, "Invitations of people into an organization.")
  .annotate(Operations, {
    create: ["Invite someone", "Mails an invitation to join the organization with a role. Roles with every permission need re-authentication."],
    list: ["List invitations", "The organization's invitations, newest first; filter by status."],
    revoke: ["Revoke an invitation", "Withdraws a pending invitation."],
    accept: ["Accept an invitation", "Accepts an invitation with its token, as the invited person."],
    decline: ["Decline an invitation", "Declines an invitation with its token."]
  })
{}

/** Registration: open only to the holder of a pending invitation's or delegation's token. */
export class RegistrationGroup extends HttpApiGroup.make("registration")
  .add(
    HttpApiEndpoint.post("register", "/register", {
      payload: RegisterBody,
      success: Success(OpenedSession, 201),
      error: errors(InvalidRequest, Forbidden, Conflict, TooManyRequests, Unavailable)
    }).middleware(Anonymous)
  )
  .prefix("/v1/iam/auth")
  .annotate(OpenApi.Description, "Self-service sign-up.")
  .annotate(Operations, {
    register: ["Register", "Creates an identity with a password in the tenant of the pending invitation or delegation whose mailed token it sends, with that invitation's role, and opens a session; without a usable token for this address, 403 registration_disabled."]
  })
{}
