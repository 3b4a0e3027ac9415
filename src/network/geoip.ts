import { isIPv4 } from "node:net"
import { Context, Effect, Layer, Schema } from "effect"
import maxmind, { type Reader } from "maxmind"
import { Config } from "../config.ts"
import { type AddressClass, classifyAddress } from "../crawl/ssrf.ts"

/** The answer of an IP lookup (docs/api.md "Network"). */
export interface IpLookup {
  readonly ip: string
  readonly found: boolean
  /** ISO 3166-1 alpha-2 code. */
  readonly country: string | null
  /** The country's English name. */
  readonly countryName: string | null
}

/** The country database could not be opened at start; `retryAfter` seconds until it is tried again. */
export class GeoIpUnavailable extends Schema.TaggedError<GeoIpUnavailable>()("GeoIpUnavailable", {
  reason: Schema.String,
  retryAfter: Schema.Int
}) {}

export class GeoIp extends Context.Service<GeoIp, {
  /** Country of `ip`, which must be normalized already (`normalizeIp`). */
  readonly lookup: (ip: string) => Effect.Effect<IpLookup, GeoIpUnavailable>
}>()("trawl/GeoIp") {}

const regionNames = new Intl.DisplayNames(["en"], { type: "region" })

const names = new Map<string, string | null>()

/** The English name of an ISO 3166-1 alpha-2 code, or null for a code the ICU data does not name. */
export const countryName = (code: string): string | null => {
  let name = names.get(code)
  if (name !== undefined) return name
  try {
    const found = regionNames.of(code)
    name = found === undefined || found === code ? null : found
  } catch {
    name = null
  }
  // At most 676 two-letter codes: the cache stays small.
  if (/^[A-Z]{2}$/.test(code)) names.set(code, name)
  return name
}

/**
 * The address whose country is asked for, or undefined when it has none: private, loopback,
 * link-local, reserved, documentation, multicast and every other non-public class of the SSRF
 * guard's table (docs/crawling.md). An IPv4-mapped IPv6 address is its IPv4 address (a dual-stack
 * socket shows IPv4 clients that way).
 */
export const geolocatable = (ip: string, classify: (ip: string) => AddressClass = classifyAddress): string | undefined => {
  const kind = classify(ip)
  if (kind === "public") return ip
  if (kind === "ipv4_mapped" && ip.startsWith("::ffff:") && isIPv4(ip.slice(7))) return ip.slice(7)
  return undefined
}

/** A database record: `country_code` (the @ip-location-db family) or `country.iso_code` (MaxMind's own layout). */
interface CountryRecord {
  readonly country_code?: unknown
  readonly country?: { readonly iso_code?: unknown }
  readonly registered_country?: { readonly iso_code?: unknown }
}

const codeOf = (record: CountryRecord | null | undefined): string | null => {
  const code = record?.country_code ?? record?.country?.iso_code ?? record?.registered_country?.iso_code
  // ZZ is "unknown" in ISO 3166 user-assigned use: no country.
  return typeof code === "string" && /^[A-Z]{2}$/.test(code) && code !== "ZZ" ? code : null
}

/** Looks `ip` (normalized) up through `countryOf`, after the address classes that have no country. */
export const lookupWith = (ip: string, countryOf: (ip: string) => string | null): IpLookup => {
  const target = geolocatable(ip)
  const country = target === undefined ? null : countryOf(target)
  return { ip, found: country !== null, country, countryName: country === null ? null : countryName(country) }
}

/** How often a missing database is tried again, at most: what a caller is told to wait. */
export const REOPEN_SECONDS = 60

const openReader = (path: string) =>
  Effect.tryPromise({
    try: () => maxmind.open(path, { cache: { max: 10_000 } }),
    catch: (e) => (e instanceof Error ? e.message : String(e))
  })

/**
 * The database at GEOIP_DB_PATH, opened once at start. A database missing or unreadable does not
 * stop the node: lookups answer 503 and the file is tried again at most every `reopenSeconds`, so
 * an operator who puts it in place need not restart.
 */
export const makeGeoIpLive = (options: { readonly reopenSeconds: number }) =>
  Layer.effect(
    GeoIp,
    Effect.gen(function*() {
      const { geoipDbPath } = yield* Config
      let reader: Reader<any> | undefined
      let triedAt = 0
      const open = Effect.gen(function*() {
        triedAt = Date.now()
        const opened = yield* Effect.result(openReader(geoipDbPath))
        if (opened._tag === "Success") {
          reader = opened.success
          yield* Effect.logInfo(`GeoIP database ${geoipDbPath} opened (${reader.metadata.databaseType}, built ${reader.metadata.buildEpoch.toISOString()})`)
        } else {
          yield* Effect.logWarning(`GeoIP database ${geoipDbPath} cannot be opened: IP lookups answer 503 until it can (${opened.failure})`)
        }
      })
      yield* open
      // Answers by address: the reader never changes once open, and an answer is small. Bounded
      // like the reader's own cache; a full one starts over.
      const answers = new Map<string, IpLookup>()
      const cached = (ip: string, r: Reader<any>) => {
        let found = answers.get(ip)
        if (found === undefined) {
          found = lookupWith(ip, (target) => codeOf(r.get(target)))
          if (answers.size >= 10_000) answers.clear()
          answers.set(ip, found)
        }
        return found
      }
      const answer = (ip: string) =>
        reader !== undefined
          ? Effect.succeed(cached(ip, reader))
          : Effect.fail(new GeoIpUnavailable({
            // The cause (a path, an OS error) is the operator's, in the node's log: not the client's.
            reason: "the IP geolocation database is not available on this node; try again later",
            retryAfter: Math.max(1, Math.ceil((triedAt + options.reopenSeconds * 1000 - Date.now()) / 1000))
          }))
      return GeoIp.of({
        lookup: (ip) =>
          Effect.suspend(() =>
            reader === undefined && Date.now() - triedAt >= options.reopenSeconds * 1000
              ? open.pipe(Effect.andThen(Effect.suspend(() => answer(ip))))
              : answer(ip)
          )
      })
    })
  )

export const GeoIpLive = makeGeoIpLive({ reopenSeconds: REOPEN_SECONDS })

/**
 * For tests of code above the service: countries by address (after the same address classes),
 * or, with `unavailable`, the answer of a node whose database is missing.
 */
export const GeoIpTest = (countries: Readonly<Record<string, string>>, options: { readonly unavailable?: boolean } = {}) =>
  Layer.succeed(
    GeoIp,
    GeoIp.of({
      lookup: (ip) =>
        options.unavailable
          ? Effect.fail(new GeoIpUnavailable({ reason: "test: no database", retryAfter: REOPEN_SECONDS }))
          : Effect.succeed(lookupWith(ip, (target) => countries[target] ?? null))
    })
  )
