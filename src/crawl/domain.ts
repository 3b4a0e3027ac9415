/**
 * Domain identity and URL normalisation (docs/crawling.md, "domainId and page history").
 */
import { isIP } from "node:net"
import { domainToASCII } from "node:url"
import { getDomain } from "tldts"

const toUrl = (input: string | URL): URL | null => {
  if (input instanceof URL) return input
  if (typeof input !== "string" || input.trim() === "") return null
  try {
    return new URL(input.trim())
  } catch {
    return null
  }
}

/**
 * Lower-case registrable domain ("eTLD+1") of the URL's host, using the full Public Suffix List
 * (ICANN and private sections, the browser notion of a "site"):
 * `news.example.co.uk` → `example.co.uk`, `alice.github.io` → `alice.github.io`.
 * An IP literal is itself (IPv6 without brackets), `localhost` and other single-label or
 * suffix-only hosts are the host itself. `null` when the input is not a URL with a host.
 */
export const domainIdOf = (input: string | URL): string | null => {
  const url = toUrl(input)
  if (!url || url.hostname === "") return null
  const host = url.hostname.toLowerCase().replace(/^\[|\]$/g, "").replace(/\.$/, "")
  if (host === "") return null
  if (isIP(host)) return host
  const domain = getDomain(host, { allowPrivateDomains: true, extractHostname: false })
  return (domain ?? host).toLowerCase()
}

/**
 * A `domainId` a client filters by, in the form stored: lower case, and an internationalized name
 * in its ASCII (punycode) form, as `domainIdOf` gives it (`例え.テスト` finds `xn--r8jz45g.xn--zckzah`).
 */
export const domainIdFilter = (given: string): string => {
  const lower = given.trim().toLowerCase().replace(/\.$/, "")
  const unbracketed = lower.replace(/^\[|\]$/g, "")
  // An IPv6 address in the form stored, whatever its spelling (`0:0:0:0:0:0:0:1` is `::1`).
  // One with a zone (`fe80::1%eth0`) is no URL's host: it names nothing stored, and is kept as given.
  if (isIP(unbracketed) === 6) return domainIdOf(`http://[${unbracketed}]/`) ?? unbracketed
  if (isIP(unbracketed)) return unbracketed
  return domainToASCII(lower) || lower
}

/** A host name as a client types it: dot-separated labels of letters (any script), digits, `-` and `_`. */
const UNICODE_LABELS = /^[\p{L}\p{N}\p{M}_-]+(?:\.[\p{L}\p{N}\p{M}_-]+)*$/u
/** A host name in ASCII: dot-separated labels of letters, digits, `-` and `_` (as some hosts have), 253 characters at most. */
const HOST_NAME = /^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*$/

/**
 * The `domainId` an extractor config is kept under, from the name a client gives, in the form
 * extractions have theirs (`Example.COM.` is `example.com`), or why it can be none: a config matches
 * an extraction's domainId exactly, so a name that is no host (`example.com/path`, `host:8080`) or a
 * host below its registrable domain (`shop.example.com`) would make a config that never applies.
 */
export const configDomainId = (given: string): { domainId: string } | { problem: string } => {
  const name = domainIdFilter(given)
  if (isIP(name)) return { domainId: name }
  // checked as given too: the ASCII conversion reads `example.com/shop` as a URL and keeps its host
  if (!UNICODE_LABELS.test(given.trim().replace(/\.$/, "")) || !HOST_NAME.test(name)) return { problem: "must be a host name such as example.com, or an IP address" }
  const site = domainIdOf(`http://${name}/`)
  return site === name ? { domainId: name } : { problem: `must be a registrable domain, as an extraction's domainId is: ${site} (match one host with urlPattern)` }
}

/**
 * Percent-escapes spelled one way (RFC 3986 §6.2.2): an escape of an unreserved character is that
 * character (`%7E` is `~`), and the others have upper-case hex (`%3a` is `%3A`). What each byte is
 * stays as it was: `%FF` stays `%FF`, and an encoded `;` or `=` stays encoded. A `%` that starts no
 * escape is itself, `%25`: left bare, a character decoded after it could make a new escape
 * (`%%34%31` would be `%41`, then `A`), so the key would change when worked out again.
 */
const canonicalEscapes = (text: string): string =>
  text.replace(/%([0-9a-fA-F]{2})?/g, (_, hex: string | undefined) => {
    if (hex === undefined) return "%25"
    const char = String.fromCharCode(parseInt(hex, 16))
    return /[A-Za-z0-9\-._~]/.test(char) ? char : `%${hex.toUpperCase()}`
  })

/** The WHATWG form of a URL without its fragment (never sent over HTTP); the input as it is when it is not a URL. */
export const withoutFragment = (href: string): string => {
  const url = toUrl(href) // a new URL of its own, for a string
  if (!url) return href
  url.hash = ""
  return url.href
}

/**
 * Canonical form of a URL for page history: lower-case scheme and host (WHATWG), default port
 * dropped, fragment dropped, query parameters sorted by name (stable for equal names, so
 * `a=2&a=1` keeps its order), empty query dropped, path kept as is.
 * The parameters are sorted as written, with their escapes spelled one way, never decoded and
 * encoded again: decoding would turn every escape that is not UTF-8 (`%FF`, a Latin-1 `%E9`) into
 * one replacement character, and form encoding would rewrite `;` and `=` in a value, giving
 * different pages one history.
 * Returns the input unchanged when it is not a URL.
 */
export const normalizeUrl = (input: string | URL): string => {
  const parsed = toUrl(input)
  if (!parsed) return typeof input === "string" ? input : String(input)
  const url = new URL(parsed.href)
  url.hash = ""
  if (url.hostname.endsWith(".") && url.hostname.length > 1 && !url.hostname.startsWith("[")) {
    url.hostname = url.hostname.slice(0, -1)
  }
  const nameOf = (param: string) => {
    const eq = param.indexOf("=")
    return eq < 0 ? param : param.slice(0, eq)
  }
  const params = url.search.slice(1).split("&").filter((p) => p !== "").map(canonicalEscapes)
  params.sort((a, b) => (nameOf(a) < nameOf(b) ? -1 : nameOf(a) > nameOf(b) ? 1 : 0))
  url.search = params.length === 0 ? "" : "?" + params.join("&")
  return url.href
}
