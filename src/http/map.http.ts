import { Effect } from "effect"
import { SiteMapper } from "../actors/site-mapper.ts"
import { CurrentPrincipal } from "../iam/principal.ts"
import { Api } from "./api.ts"
import { handlerGroup } from "./handler-group.ts"

export const MapHandlers = handlerGroup(
  Api,
  "map",
  Effect.fn(function*(handlers) {
    const mapper = yield* SiteMapper
    return handlers.handle("map", ({ payload }) =>
      Effect.gen(function*() {
        const me = yield* CurrentPrincipal
        return yield* mapper.map(me.tenantId, payload)
      }))
  })
)
