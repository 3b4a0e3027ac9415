import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { IdentityService } from "../iam/identity-service.ts"
import { CurrentPrincipal } from "../iam/principal.ts"
import { SessionService } from "../iam/session-service.ts"
import { pageOf } from "../schema/envelope.ts"
import { Api } from "./api.ts"
import { clientContext } from "./client-context.ts"
import { queryLimit } from "./list-query.ts"

export const UsersHandlers = HttpApiBuilder.group(
  Api,
  "users",
  Effect.fn(function*(handlers) {
    const sessions = yield* SessionService
    const identities = yield* IdentityService
    return handlers
      .handle("me", () => Effect.flatMap(CurrentPrincipal, identities.profile))
      .handle("updateMe", ({ payload }) =>
        Effect.gen(function*() {
          return yield* identities.updateProfile(yield* CurrentPrincipal, payload, yield* clientContext)
        }))
      .handle("listSessions", ({ query }) =>
        Effect.gen(function*() {
          const limit = yield* queryLimit(query)
          const offset = query.offset ?? 0
          const { items, total } = yield* sessions.list(yield* CurrentPrincipal, offset, limit)
          return pageOf(items, offset, limit, total)
        }))
      .handle("revokeOtherSessions", () =>
        Effect.gen(function*() {
          const revoked = yield* sessions.revokeOthers(yield* CurrentPrincipal, yield* clientContext)
          return { revoked, revokedAt: new Date().toISOString() }
        }))
      .handle("revokeSession", ({ params }) =>
        Effect.gen(function*() {
          return yield* sessions.revoke(yield* CurrentPrincipal, params.sessionId, yield* clientContext)
        }))
  })
)
