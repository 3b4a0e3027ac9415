import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Page, PageQuery, Success } from "../schema/envelope.ts"
import { Conflict, errors, Forbidden, InvalidRequest, NotFound } from "../schema/errors.ts"
import { CreateRoleBody, DeletedRole, Role, UpdateRoleBody } from "../schema/iam.ts"
import { ApiKeyAuth, requires } from "./security.ts"
import { Operations } from "./openapi.ts"

const id = { id: Schema.String }

/** A tenant's roles: the system ones (read only) and its own (docs/api.md, "Roles"). */
export class RolesGroup extends HttpApiGroup.make("roles")
  .add(
    HttpApiEndpoint.post("create", "/roles", {
      payload: CreateRoleBody,
      success: Success(Role, 201),
      error: errors(InvalidRequest, Forbidden, Conflict)
    }).pipe(requires("iam:roles:write")),
    HttpApiEndpoint.get("list", "/roles", {
      query: PageQuery,
      success: Success(Page(Role)),
      error: errors(InvalidRequest)
    }).pipe(requires("iam:roles:read")),
    HttpApiEndpoint.get("get", "/roles/:id", {
      params: id,
      success: Success(Role),
      error: errors(NotFound)
    }).pipe(requires("iam:roles:read")),
    HttpApiEndpoint.patch("update", "/roles/:id", {
      params: id,
      payload: UpdateRoleBody,
      success: Success(Role),
      error: errors(InvalidRequest, Forbidden, NotFound, Conflict)
    }).pipe(requires("iam:roles:write")),
    HttpApiEndpoint.delete("remove", "/roles/:id", {
      params: id,
      success: Success(DeletedRole),
      error: errors(NotFound, Conflict)
    }).pipe(requires("iam:roles:write"))
  )
  .middleware(ApiKeyAuth)
  .prefix("/v1/iam")
  .annotate(OpenApi.Description, "Custom roles: named sets of permissions.")
  .annotate(Operations, {
    create: ["Create a role", "Creates a role from permissions the caller holds."],
    list: ["List roles", "The tenant's roles, system roles included, newest first."],
    get: ["Get a role", "One role of the tenant."],
    update: ["Update a role", "Changes a role's name, description or permissions; its keys follow at once. System roles cannot change."],
    remove: ["Delete a role", "Deletes a role nothing holds any more."]
  })
{}
