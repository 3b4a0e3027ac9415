import { Context, Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"

/**
 * `HttpApiBuilder.group`, whose routes keep no copy of the node's services.
 *
 * HttpApiBuilder gives every request of a group the whole context the group was built in
 * (`Effect.provideContext` per request), which on a node is every service it runs (~80): two
 * copies of that map per request, more CPU than the rest of Effect's request path. The request
 * fiber already has those services (the server runs in the same context), and the security
 * middlewares are looked up when the routes are built, so the group is built here in an empty
 * context and only its `build` function (which takes its services once, at start) sees the full one.
 */
export const handlerGroup: typeof HttpApiBuilder.group = ((api: any, groupIdentifier: any, build: (handlers: any) => any) =>
  Layer.effectContext(Effect.gen(function*() {
    const full = yield* Effect.context<never>()
    const scope = yield* Effect.scope
    const group = HttpApiBuilder.group(api, groupIdentifier, (handlers: any) => {
      const result = build(handlers)
      return Effect.isEffect(result) ? Effect.provideContext(result as Effect.Effect<unknown>, full) : result
    })
    return yield* Layer.buildWithScope(group as Layer.Layer<unknown>, scope).pipe(Effect.updateContext(() => Context.empty()))
  }))) as any
