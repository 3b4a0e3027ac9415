import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { type DelegationMove, DelegationService } from "../iam/delegation-service.ts"
import { CurrentPrincipal } from "../iam/principal.ts"
import type { Party } from "../sql/delegation-repo.ts"
import { delegationStatuses } from "../schema/delegation.ts"
import { pageOf } from "../schema/envelope.ts"
import { Api } from "./api.ts"
import { clientContext } from "./client-context.ts"
import { queryLimit, statusFilter } from "./list-query.ts"

export const DelegationsHandlers = HttpApiBuilder.group(
  Api,
  "delegations",
  Effect.fn(function*(handlers) {
    const delegations = yield* DelegationService
    const list = (party: Party, query: { offset?: number | undefined; limit?: number | undefined; take?: number | undefined; status?: string | undefined }) =>
      Effect.gen(function*() {
        const limit = yield* queryLimit(query)
        const status = yield* statusFilter(query.status, delegationStatuses)
        const offset = query.offset ?? 0
        const { items, total } = yield* delegations.list(yield* CurrentPrincipal, party, status, offset, limit)
        return pageOf(items, offset, limit, total)
      })
    const move = (id: string, what: DelegationMove) =>
      Effect.gen(function*() {
        return yield* delegations.move(yield* CurrentPrincipal, id, what, yield* clientContext)
      })
    return handlers
      .handle("create", ({ payload }) =>
        Effect.gen(function*() {
          return yield* delegations.create(yield* CurrentPrincipal, payload, yield* clientContext)
        }))
      .handle("granted", ({ query }) => list("delegator", query))
      .handle("received", ({ query }) => list("delegate", query))
      .handle("accept", ({ params }) => move(params.id, "accept"))
      .handle("decline", ({ params }) => move(params.id, "decline"))
      .handle("renounce", ({ params }) => move(params.id, "renounce"))
      .handle("revoke", ({ params }) => move(params.id, "revoke"))
  })
)
