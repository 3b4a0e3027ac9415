import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { CreateDelegationBody, Delegation, DelegationListQuery } from "../schema/delegation.ts"
import { Page, Success } from "../schema/envelope.ts"
import { Conflict, errors, Forbidden, InvalidRequest, NotFound, TooManyRequests, Unavailable, Unprocessable } from "../schema/errors.ts"
import { ANY_KEY, ApiKeyAuth, requires } from "./security.ts"
import { Operations } from "./openapi.ts"

const id = { id: Schema.String }

/**
 * The caller's delegations, granted and received (docs/delegations.md). Answering a delegation
 * addressed to oneself (accept, decline, renounce) is open to any caller, as answering an
 * invitation is: a delegate registered by a delegation holds only the `read` role.
 */
export class DelegationsGroup extends HttpApiGroup.make("delegations")
  .add(
    HttpApiEndpoint.post("create", "/delegations", {
      payload: CreateDelegationBody,
      success: Success(Delegation, 201),
      error: errors(InvalidRequest, Forbidden, NotFound, Conflict, Unprocessable, Unavailable, TooManyRequests)
    }).pipe(requires("iam:delegations:write")),
    HttpApiEndpoint.get("granted", "/delegations/granted", {
      query: DelegationListQuery,
      success: Success(Page(Delegation)),
      error: errors(InvalidRequest)
    }).pipe(requires("iam:delegations:read")),
    HttpApiEndpoint.get("received", "/delegations/received", {
      query: DelegationListQuery,
      success: Success(Page(Delegation)),
      error: errors(InvalidRequest)
    }).pipe(requires("iam:delegations:read")),
    HttpApiEndpoint.post("accept", "/delegations/:id/accept", {
      params: id,
      success: Success(Delegation),
      error: errors(Forbidden, NotFound, Conflict)
    }).pipe(requires(ANY_KEY)),
    HttpApiEndpoint.post("decline", "/delegations/:id/decline", {
      params: id,
      success: Success(Delegation),
      error: errors(Forbidden, NotFound, Conflict)
    }).pipe(requires(ANY_KEY)),
    HttpApiEndpoint.post("renounce", "/delegations/:id/renounce", {
      params: id,
      success: Success(Delegation),
      error: errors(Forbidden, NotFound, Conflict)
    }).pipe(requires(ANY_KEY)),
    HttpApiEndpoint.delete("revoke", "/delegations/:id", {
      params: id,
      success: Success(Delegation),
      error: errors(Forbidden, NotFound, Conflict)
    }).pipe(requires("iam:delegations:write"))
  )
  .middleware(ApiKeyAuth)
  .prefix("/v1/iam/users/me")
  .annotate(OpenApi.Description, "Acting on behalf of another identity: grants, acceptance and revocation.")
  .annotate(Operations, {
    create: ["Grant a delegation", "Offers another identity of the tenant to act on the caller's behalf with its role, until it expires. Passing on a role with every permission needs re-authentication."],
    granted: ["List delegations I granted", "Delegations the caller offered, newest first; filter by status."],
    received: ["List delegations I received", "Delegations offered to the caller, newest first; filter by status."],
    accept: ["Accept a delegation", "Accepts a pending delegation offered to the caller."],
    decline: ["Decline a delegation", "Declines a pending delegation offered to the caller."],
    renounce: ["Renounce a delegation", "Gives up an accepted delegation the caller received."],
    revoke: ["Revoke a delegation", "Withdraws a delegation the caller granted."]
  })
{}
