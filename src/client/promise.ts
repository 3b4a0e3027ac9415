import { Cause, Effect, Exit } from "effect"
import { FetchHttpClient } from "effect/http"
import type { HttpApi, HttpApiClient, HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import type { Api } from "../http/api.ts"
import { make, type TrawlClientOptions } from "./effect.ts"

type Simplify<A> = { [K in keyof A]: A[K] } & {}

/** `headers` may be left out when every header is optional (`Idempotency-Key`, `Last-Event-ID`). */
type OptionalHeaders<Request> = Request extends { readonly headers: infer Headers }
  ? {} extends Headers ? Simplify<Omit<Request, "headers"> & { readonly headers?: Headers }> : Request
  : Request

/** One endpoint as a function returning a Promise of its decoded `data`. */
export type PromiseMethod<Endpoint extends HttpApiEndpoint.ConstraintRequest> = (
  request: OptionalHeaders<
    Simplify<HttpApiEndpoint.ClientRequest<Endpoint["~Params"], Endpoint["~Query"], Endpoint["~Payload"], Endpoint["~Headers"], "decoded-only">>
  >
) => Promise<HttpApiClient.SuccessType<Endpoint["~Success"]>>

type GroupsOf<A> = A extends HttpApi.HttpApi<infer _Id extends string, infer Groups> ? Groups : never

/** Every group and endpoint of the API, with the names of the Effect client. */
export type TrawlPromiseClient = {
  readonly [Group in GroupsOf<typeof Api> as HttpApiGroup.Identifier<Group>]: {
    readonly [Name in keyof Group["endpoints"]]: Group["endpoints"][Name] extends HttpApiEndpoint.ConstraintRequest ? PromiseMethod<Group["endpoints"][Name]>
      : never
  }
}

/**
 * The client for code that does not use Effect: the same groups and method names as the Effect
 * client, each returning a Promise. A refused request rejects with the service's error (an
 * `Error` with `status`, `code`, `message` and `details`); a transport failure with the
 * `HttpClientError`.
 */
export const createClient = (options: TrawlClientOptions): TrawlPromiseClient => {
  // Building the client only reads the definition: nothing is sent until a method is called.
  const client = Effect.runSync(make(options).pipe(Effect.provide(FetchHttpClient.layer)))
  const run = (effect: Effect.Effect<unknown, unknown>) =>
    Effect.runPromiseExit(effect).then((exit) => {
      if (Exit.isSuccess(exit)) return exit.value
      throw Cause.squash(exit.cause)
    })
  const groups: Record<string, Record<string, (request: unknown) => Promise<unknown>>> = {}
  for (const [group, methods] of Object.entries(client as unknown as Record<string, Record<string, (request: unknown) => Effect.Effect<unknown, unknown>>>)) {
    // An endpoint without a headers schema ignores `headers`; one whose headers are all optional needs an object.
    groups[group] = Object.fromEntries(
      Object.entries(methods).map(([name, method]) => [name, (request: unknown) => run(method({ headers: {}, ...(request as object | undefined) }))])
    )
  }
  return groups as unknown as TrawlPromiseClient
}
