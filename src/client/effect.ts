import { Context, type Effect, Layer } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import { HttpApiClient } from "effect/http-api"
import { Api } from "../http/api.ts"

/** The one API definition the server is built from; the clients below are derived from it. */
export { Api }

/** The typed Effect client of Trawl: `client.jobs.create({ payload })`, failures typed per endpoint. */
export type TrawlClient = HttpApiClient.ForApi<typeof Api>

export interface TrawlClientOptions {
  /** The node's base URL, e.g. `http://127.0.0.1:8080`. */
  readonly baseUrl: string | URL
  /** Sent as `x-api-key` (public and super-admin planes). */
  readonly apiKey?: string | undefined
  /** Sent as `x-internal-token` (the control plane, `/internal/v1`). */
  readonly internalToken?: string | undefined
  /** Wraps the decoding of each response (HttpApiClient's option of that name). */
  readonly transformResponse?: ((decoding: Effect.Effect<unknown, unknown, unknown>) => Effect.Effect<unknown, unknown, unknown>) | undefined
}

/** The credentials as headers on every request; the server picks what each route accepts. */
const withCredentials = (options: TrawlClientOptions) => (client: HttpClient.HttpClient) =>
  client.pipe(HttpClient.mapRequest((request) => {
    let next = request
    if (options.apiKey !== undefined) next = HttpClientRequest.setHeader(next, "x-api-key", options.apiKey)
    if (options.internalToken !== undefined) next = HttpClientRequest.setHeader(next, "x-internal-token", options.internalToken)
    return next
  }))

/**
 * Builds the client over the `HttpClient` in context (provide `FetchHttpClient.layer`, or use
 * `layer` below). Failures come back as the endpoint's declared errors (one tagged class per
 * status, such as `NotFound` or `Conflict`, with the service's `status` and `code`), or `HttpClientError` / `SchemaError` for transport and decoding.
 */
export const make = (options: TrawlClientOptions): Effect.Effect<TrawlClient, never, HttpClient.HttpClient> =>
  HttpApiClient.make(Api, {
    // A trailing slash would double the one every path starts with.
    baseUrl: String(options.baseUrl).replace(/\/+$/, ""),
    transformClient: withCredentials(options),
    transformResponse: options.transformResponse
  })

/** The client as a service, for programs that take it from context. */
export class Trawl extends Context.Service<Trawl, TrawlClient>()("trawl/client/Trawl") {}

/** `Trawl` over the platform's `fetch`. */
export const layer = (options: TrawlClientOptions): Layer.Layer<Trawl> =>
  Layer.effect(Trawl, make(options)).pipe(Layer.provide(FetchHttpClient.layer))
