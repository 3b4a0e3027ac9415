import { isIPv4, isIPv6 } from "node:net"
import { Schema } from "effect"

/**
 * An IPv4 address in dotted decimal, or an IPv6 address in any valid spelling (upper case, leading
 * zeros, uncompressed, dotted IPv4 tail), written canonically (RFC 5952: lower case, the longest run
 * of zero groups compressed, an IPv4-mapped one with its dotted tail). Undefined when it is neither:
 * IPv4 with leading zeros (octal to some parsers), shortened or numeric IPv4, a zone id, brackets.
 */
export const normalizeIp = (raw: string): string | undefined => {
  if (isIPv4(raw)) return raw
  if (!isIPv6(raw) || raw.includes("%")) return undefined
  // The URL parser writes an IPv6 host canonically, a dotted tail in hex.
  const host = new URL(`http://[${raw}]`).hostname.slice(1, -1)
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(host)
  if (!mapped) return host
  const hi = parseInt(mapped[1]!, 16)
  const lo = parseInt(mapped[2]!, 16)
  return `::ffff:${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`
}

/** The `ip` of a lookup: at most 64 characters (the longest IPv6 spelling is 45), IPv4 or IPv6. */
export const IpAddress = Schema.String.check(
  Schema.makeFilter((s: string) => (s.length <= 64 && normalizeIp(s) !== undefined) || "Expected an IPv4 address (dotted decimal) or an IPv6 address", {
    toJsonSchema: () => ({ maxLength: 64, anyOf: [{ type: "string", format: "ipv4" }, { type: "string", format: "ipv6" }] })
  })
).annotate({ description: "An IPv4 address in dotted decimal or an IPv6 address in any valid spelling", examples: ["8.8.8.8", "2001:4860:4860::8888"] })

export const IpLookupResult = Schema.Struct({
  /** The address looked up, written canonically. */
  ip: Schema.String,
  found: Schema.Boolean,
  /** ISO 3166-1 alpha-2 code. */
  country: Schema.NullOr(Schema.String),
  countryName: Schema.NullOr(Schema.String)
}).annotate({ identifier: "IpLookupResult" })
