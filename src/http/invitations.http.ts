import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Config } from "../config.ts"
import { InvitationService } from "../iam/invitation-service.ts"
import { CurrentPrincipal } from "../iam/principal.ts"
import { pageOf } from "../schema/envelope.ts"
import { invitationStatuses } from "../schema/invitation.ts"
import { Api } from "./api.ts"
import { clientContext } from "./client-context.ts"
import { queryLimit, statusFilter } from "./list-query.ts"
import { sessionCookieSetter } from "./session-cookie.ts"

export const InvitationsHandlers = HttpApiBuilder.group(
  Api,
  "invitations",
  Effect.fn(function*(handlers) {
    const invitations = yield* InvitationService
    return handlers
      .handle("create", ({ params, payload }) =>
        Effect.gen(function*() {
          return yield* invitations.create(yield* CurrentPrincipal, params.orgIdentityId, payload, yield* clientContext)
        }))
      .handle("list", ({ params, query }) =>
        Effect.gen(function*() {
          const limit = yield* queryLimit(query)
          const status = yield* statusFilter(query.status, invitationStatuses)
          const offset = query.offset ?? 0
          const { items, total } = yield* invitations.list(yield* CurrentPrincipal, params.orgIdentityId, status, offset, limit)
          return pageOf(items, offset, limit, total)
        }))
      .handle("revoke", ({ params }) =>
        Effect.gen(function*() {
          return yield* invitations.revoke(yield* CurrentPrincipal, params.orgIdentityId, params.invitationId, yield* clientContext)
        }))
      .handle("accept", ({ payload }) =>
        Effect.gen(function*() {
          return yield* invitations.respond(yield* CurrentPrincipal, payload.token, true, yield* clientContext)
        }))
      .handle("decline", ({ payload }) =>
        Effect.gen(function*() {
          return yield* invitations.respond(yield* CurrentPrincipal, payload.token, false, yield* clientContext)
        }))
  })
)

export const RegistrationHandlers = HttpApiBuilder.group(
  Api,
  "registration",
  Effect.fn(function*(handlers) {
    const invitations = yield* InvitationService
    const setCookie = sessionCookieSetter((yield* Config).publicBaseUrl)
    return handlers.handle("register", ({ payload }) =>
      Effect.gen(function*() {
        const { id: _id, ...session } = yield* invitations.register(payload, yield* clientContext)
        yield* setCookie(session)
        return session
      }))
  })
)
