import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { CurrentPrincipal } from "../iam/principal.ts"
import { RoleService } from "../iam/role-service.ts"
import { pageOf } from "../schema/envelope.ts"
import { Api } from "./api.ts"
import { clientContext } from "./client-context.ts"
import { queryLimit } from "./list-query.ts"

export const RolesHandlers = HttpApiBuilder.group(
  Api,
  "roles",
  Effect.fn(function*(handlers) {
    const roles = yield* RoleService
    return handlers
      .handle("create", ({ payload }) => Effect.flatMap(CurrentPrincipal, (me) => roles.create(me, payload)))
      .handle("list", ({ query }) =>
        Effect.gen(function*() {
          const limit = yield* queryLimit(query)
          const offset = query.offset ?? 0
          const page = yield* roles.list(yield* CurrentPrincipal, offset, limit)
          return pageOf(page.items, offset, limit, page.total)
        }))
      .handle("get", ({ params }) => Effect.flatMap(CurrentPrincipal, (me) => roles.get(me, params.id)))
      .handle("update", ({ params, payload }) =>
        Effect.gen(function*() {
          return yield* roles.update(yield* CurrentPrincipal, params.id, payload, yield* clientContext)
        }))
      .handle("remove", ({ params }) => Effect.flatMap(CurrentPrincipal, (me) => roles.remove(me, params.id)))
  })
)
