/**
 * The Effect floor of `npm run bench:network`: the smallest Effect HttpApi server (the same
 * effect and @effect/platform-node versions as Trawl) with one GET endpoint doing the same MMDB
 * lookup as bench/support/bare-geoip-server.ts. It has a query schema and a success schema, like
 * Trawl's endpoint, and nothing of Trawl's: no envelope, global middleware, authentication, rate
 * limit, metrics or debit. Its throughput against the bare `node:http` server is what Effect's
 * own request pipeline (router, HttpApi decoding and encoding, fibers) leaves; Trawl cannot beat it.
 *
 * Env: BARE_PORT (listening port on 127.0.0.1), GEOIP_DB_PATH (the database; default the packaged one).
 * Prints `bare listening on <port>` once ready; exits when its stdin closes (parent gone).
 */
import { createServer } from "node:http"
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Effect, Layer, Schema } from "effect"
import { HttpRouter } from "effect/http"
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import maxmind from "maxmind"
import { packagedGeoipDbPath } from "../../src/config.ts"
import { exitWithParent } from "./processes.ts"

const reader = await maxmind.open<any>(process.env.GEOIP_DB_PATH || packagedGeoipDbPath(), { cache: { max: 10_000 } })
const names = new Intl.DisplayNames(["en"], { type: "region" })

const Lookup = Schema.Struct({
  ip: Schema.String,
  found: Schema.Boolean,
  country: Schema.NullOr(Schema.String),
  countryName: Schema.NullOr(Schema.String)
})

class Network extends HttpApiGroup.make("network")
  .add(HttpApiEndpoint.get("lookup", "/ip/lookup", { query: { ip: Schema.String }, success: Lookup }))
  .prefix("/v1/network")
{}
const Api = HttpApi.make("floor").add(Network)

const NetworkLive = HttpApiBuilder.group(Api, "network", (handlers) =>
  handlers.handle("lookup", ({ query }) =>
    Effect.sync(() => {
      let country: string | null = null
      try {
        country = reader.get(query.ip)?.country_code ?? null
      } catch {
        // not an address
      }
      return { ip: query.ip, found: country !== null, country, countryName: country === null ? null : names.of(country) ?? null }
    })))

const port = Number(process.env.BARE_PORT)
const Served = HttpRouter.serve(HttpApiBuilder.layer(Api).pipe(Layer.provide(NetworkLive)), { disableLogger: true }).pipe(
  Layer.provide(NodeHttpServer.layer(() => createServer({ keepAliveTimeout: 65_000 }), { port, host: "127.0.0.1" }))
)

const announce = Layer.effectDiscard(Effect.sync(() => console.log(`bare listening on ${port}`)))
// No spans are exported here, as in Trawl with tracing off.
Layer.launch(announce.pipe(Layer.provide(Served))).pipe(Effect.withTracerEnabled(false), NodeRuntime.runMain)
exitWithParent(() => process.exit(0))
