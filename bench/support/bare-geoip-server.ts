/**
 * The baseline of `npm run bench:network`: a bare `node:http` server that answers every GET with
 * the MMDB lookup of its `ip` query parameter, with the same reader, file and cache as Trawl's
 * GeoIp service (`maxmind.open`, 10 000 entries) and the same country names, serialised with
 * JSON.stringify. Nothing else: no routing, validation, authentication, rate limit or debit.
 *
 * Env: BARE_PORT (listening port on 127.0.0.1), GEOIP_DB_PATH (the database; default the packaged one).
 * Prints `bare listening on <port>` once ready; exits when its stdin closes (parent gone).
 */
import { createServer } from "node:http"
import maxmind from "maxmind"
import { packagedGeoipDbPath } from "../../src/config.ts"
import { exitWithParent } from "./processes.ts"

const reader = await maxmind.open<any>(process.env.GEOIP_DB_PATH || packagedGeoipDbPath(), { cache: { max: 10_000 } })
const names = new Intl.DisplayNames(["en"], { type: "region" })

const server = createServer((req, res) => {
  const ip = new URL(req.url ?? "/", "http://bare").searchParams.get("ip") ?? ""
  let country: string | null = null
  try {
    country = reader.get(ip)?.country_code ?? null
  } catch {
    // not an address
  }
  const body = JSON.stringify({ ip, found: country !== null, country, countryName: country === null ? null : names.of(country) ?? null })
  res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
  res.end(body)
})
server.keepAliveTimeout = 65_000
server.listen(Number(process.env.BARE_PORT), "127.0.0.1", () => console.log(`bare listening on ${process.env.BARE_PORT}`))
exitWithParent(() => new Promise<void>((resolve) => server.close(() => resolve())))
