import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Profile, RevokedSession, RevokedSessions, SessionItem, UpdateProfileBody } from "../schema/auth.ts"
import { Page, PageQuery, Success } from "../schema/envelope.ts"
import { errors, InvalidRequest, NotFound } from "../schema/errors.ts"
import { ANY_KEY, ApiKeyAuth, requires, requiresUnlessOwnSession } from "./security.ts"
import { Operations } from "./openapi.ts"

/** The caller's own profile and sessions (docs/identity.md). */
export class UsersGroup extends HttpApiGroup.make("users")
  .add(
    HttpApiEndpoint.get("me", "/me", {
      success: Success(Profile),
      error: errors(NotFound)
    }).pipe(requires(ANY_KEY)),
    HttpApiEndpoint.patch("updateMe", "/me", {
      payload: UpdateProfileBody,
      success: Success(Profile),
      error: errors(InvalidRequest, NotFound)
    }).pipe(requiresUnlessOwnSession("iam:identities:write")),
    HttpApiEndpoint.get("listSessions", "/me/sessions", {
      query: PageQuery,
      success: Success(Page(SessionItem)),
      error: errors(InvalidRequest)
    }).pipe(requiresUnlessOwnSession("iam:sessions:read")),
    HttpApiEndpoint.delete("revokeOtherSessions", "/me/sessions", {
      success: Success(RevokedSessions)
    }).pipe(requiresUnlessOwnSession("iam:sessions:write")),
    HttpApiEndpoint.delete("revokeSession", "/me/sessions/:sessionId", {
      params: { sessionId: Schema.String },
      success: Success(RevokedSession),
      error: errors(NotFound)
    }).pipe(requiresUnlessOwnSession("iam:sessions:write"))
  )
  .middleware(ApiKeyAuth)
  .prefix("/v1/iam/users")
  .annotate(OpenApi.Description, "The caller's profile and sessions.")
  .annotate(Operations, {
    me: ["Get my profile", "The caller's profile."],
    updateMe: ["Update my profile", "Changes first name, last name or avatar URL; null clears a field."],
    listSessions: ["List my sessions", "The caller's open sessions, newest first."],
    revokeOtherSessions: ["End my other sessions", "Ends every session of the caller except the current one."],
    revokeSession: ["End one session", "Ends one of the caller's sessions."]
  })
{}
