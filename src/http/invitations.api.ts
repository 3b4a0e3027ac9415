import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { OpenedSession } from "../schema/auth.ts"
import { Page, Success } from "../schema/envelope.ts"
import { Conflict, errors, Forbidden, InvalidRequest, NotFound, TooManyRequests, Unavailable, Unprocessable } from "../schema/errors.ts"
import { CreateInvitationBody, Invitation, InvitationListQuery, InvitationTokenBody, RegisterBody, RevokedInvitation } from "../schema/invitation.ts"
import { Anonymous, ANY_KEY, ApiKeyAuth, requires } from "./security.ts"

const org = { orgIdentityId: Schema.String }

/** Invitations into a tenant's organization, and the invitee's answer (docs/invitations.md). */
export class InvitationsGroup extends HttpApiGroup.make("invitations")
  .add(
    HttpApiEndpoint.post("create", "/organizations/:orgIdentityId/invitations", {
      params: org,
      payload: CreateInvitationBody,
      success: Success(Invitation, 201),
      error: errors(InvalidRequest, Forbidden, NotFound, Conflict, Unprocessable, Unavailable)
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
{}

/** Registration: open only to the holder of a pending invitation's or delegation's token. */
export class RegistrationGroup extends HttpApiGroup.make("registration")
  .add(
    HttpApiEndpoint.post("register", "/register", {
      payload: RegisterBody,
      success: Success(OpenedSession, 201),
      error: errors(InvalidRequest, Forbidden, Conflict, TooManyRequests)
    }).middleware(Anonymous)
  )
  .prefix("/v1/iam/auth")
{}
