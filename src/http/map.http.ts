import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { SiteMapper } from "../actors/site-mapper.ts"
import { CurrentPrincipal } from "../iam/principal.ts"
import { Api } from "./api.ts"

export const MapHandlers = HttpApiBuilder.group(
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
