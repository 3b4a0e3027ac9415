/**
 * SSRF guard for crawl targets (docs/crawling.md, "SSRF guard").
 *
 * Three layers, all pure except the DNS step:
 *  - `parseTargetUrl`  — syntax: scheme, credentials, obfuscated IP spellings, internal host names.
 *  - `classifyAddress` — is one IP address a public unicast address? (table in docs/crawling.md)
 *  - `checkUrl`        — parse + resolve every address of the host + classify each one.
 *  - `createSafeLookup`/`safeLookup` — a `dns.lookup`-compatible function that refuses non-public
 *    answers, used on the connection itself so the socket goes exactly to a checked address
 *    (no DNS rebinding between "check" and "connect").
 *
 * `allowPrivate` (ALLOW_PRIVATE_TARGETS) is always passed in; nothing here reads the environment.
 * It lets loopback and private addresses through (`DEV_TARGET_CLASSES`), never the others: a
 * development node still refuses link-local (the cloud metadata address), multicast, reserved...
 */
import dns from "node:dns"
import { isIP, isIPv4, isIPv6 } from "node:net"

// ---------------------------------------------------------------------------------------------
// Address classification
// ---------------------------------------------------------------------------------------------

export type AddressClass =
  | "public"
  | "invalid"
  | "unspecified"
  | "this_network"
  | "loopback"
  | "private"
  | "cgnat"
  | "link_local"
  | "multicast"
  | "broadcast"
  | "reserved"
  | "ietf_protocol"
  | "documentation"
  | "benchmarking"
  | "unique_local"
  | "site_local"
  | "discard"
  | "teredo"
  | "ipv4_mapped"
  | "ipv4_compatible"

export type NonPublicReason = Exclude<AddressClass, "public">

/** A classifier; injectable (tests) wherever the guard is used. */
export type AddressClassifier = (ip: string) => AddressClass

/** What ALLOW_PRIVATE_TARGETS lets a target be besides public: loopback and private networks (contract §1). */
export const DEV_TARGET_CLASSES: ReadonlySet<AddressClass> = new Set(["loopback", "private", "unique_local", "cgnat"])

/** Whether an address of this class may be a target. */
export const isPermittedTarget = (c: AddressClass, allowPrivate: boolean): boolean =>
  c === "public" || (allowPrivate && DEV_TARGET_CLASSES.has(c))

/** The class that keeps `address` from being a target, or undefined when it may be one. */
export const refusedClass = (address: string, allowPrivate: boolean, classify: AddressClassifier): NonPublicReason | undefined => {
  const c = classify(address)
  return isPermittedTarget(c, allowPrivate) ? undefined : (c as NonPublicReason)
}

/** A URL's host when it is an IP literal (without IPv6 brackets), else undefined: a literal never reaches a lookup. */
export const literalAddressOf = (url: URL): string | undefined => {
  const host = url.hostname.replace(/^\[|\]$/g, "")
  return isIP(host) ? host : undefined
}

const parseIPv4 = (ip: string): number | null => {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(ip)
  if (!m) return null
  let n = 0
  for (let i = 1; i <= 4; i++) {
    const part = Number(m[i])
    if (part > 255) return null
    n = n * 256 + part
  }
  return n >>> 0
}

const v4InCidr = (addr: number, base: string, bits: number): boolean => {
  const b = parseIPv4(base)!
  if (bits === 0) return true
  const mask = bits === 32 ? 0xffffffff : (~((1 << (32 - bits)) - 1)) >>> 0
  return ((addr & mask) >>> 0) === ((b & mask) >>> 0)
}

/** Special-purpose IPv4 blocks (IANA registry + RFC 6890), first match wins. */
const V4_TABLE: ReadonlyArray<readonly [string, number, NonPublicReason]> = [
  ["0.0.0.0", 8, "this_network"],
  ["10.0.0.0", 8, "private"],
  ["100.64.0.0", 10, "cgnat"],
  ["127.0.0.0", 8, "loopback"],
  ["169.254.0.0", 16, "link_local"],
  ["172.16.0.0", 12, "private"],
  ["192.0.0.0", 24, "ietf_protocol"],
  ["192.0.2.0", 24, "documentation"],
  ["192.31.196.0", 24, "reserved"], // AS112-v4
  ["192.52.193.0", 24, "reserved"], // AMT
  ["192.88.99.0", 24, "reserved"], // deprecated 6to4 relay anycast
  ["192.168.0.0", 16, "private"],
  ["192.175.48.0", 24, "reserved"], // AS112 direct delegation
  ["198.18.0.0", 15, "benchmarking"],
  ["198.51.100.0", 24, "documentation"],
  ["203.0.113.0", 24, "documentation"],
  ["224.0.0.0", 4, "multicast"],
  ["255.255.255.255", 32, "broadcast"],
  ["240.0.0.0", 4, "reserved"]
]

const classifyV4Number = (n: number): AddressClass => {
  for (const [base, bits, reason] of V4_TABLE) if (v4InCidr(n, base, bits)) return reason
  return "public"
}

/** Parses an IPv6 address (optionally with a zone id) into eight 16-bit words. */
const parseIPv6 = (input: string): number[] | null => {
  let ip = input
  const pct = ip.indexOf("%")
  if (pct >= 0) ip = ip.slice(0, pct)
  if (!isIPv6(ip)) return null
  // embedded dotted IPv4 suffix ("::ffff:1.2.3.4") -> two hex words
  const lastColon = ip.lastIndexOf(":")
  const lastPart = ip.slice(lastColon + 1)
  if (lastPart.includes(".")) {
    const v4 = parseIPv4(lastPart)
    if (v4 === null) return null
    ip = ip.slice(0, lastColon + 1) + (v4 >>> 16).toString(16) + ":" + (v4 & 0xffff).toString(16)
  }
  const halves = ip.split("::")
  if (halves.length > 2) return null
  const toWords = (s: string) => (s === "" ? [] : s.split(":").map((h) => parseInt(h, 16)))
  const head = toWords(halves[0]!)
  const rest = halves.length === 2 ? toWords(halves[1]!) : []
  if (halves.length === 2) {
    const zeros = 8 - head.length - rest.length
    if (zeros < 0) return null
    return [...head, ...new Array<number>(zeros).fill(0), ...rest]
  }
  return head.length === 8 ? head : null
}

const v4FromWords = (hi: number, lo: number): number => ((hi << 16) | lo) >>> 0

/** Class of an embedded IPv4 address; for a public one, the given fallback. */
const embedded = (hi: number, lo: number, whenPublic: AddressClass): AddressClass => {
  const c = classifyV4Number(v4FromWords(hi, lo))
  return c === "public" ? whenPublic : c
}

const classifyV6Words = (w: number[]): AddressClass => {
  const [w0, w1, w2, w3, w4, w5, w6, w7] = w as [number, number, number, number, number, number, number, number]
  const zeroPrefix80 = w0 === 0 && w1 === 0 && w2 === 0 && w3 === 0 && w4 === 0
  if (zeroPrefix80 && w5 === 0 && w6 === 0 && w7 === 0) return "unspecified"
  if (zeroPrefix80 && w5 === 0 && w6 === 0 && w7 === 1) return "loopback"
  // ::ffff:a.b.c.d  IPv4-mapped — never a legitimate crawl target
  if (zeroPrefix80 && w5 === 0xffff) return embedded(w6, w7, "ipv4_mapped")
  // ::ffff:0:a.b.c.d  IPv4-translated (RFC 2765)
  if (w0 === 0 && w1 === 0 && w2 === 0 && w3 === 0 && w4 === 0xffff && w5 === 0) return embedded(w6, w7, "ipv4_mapped")
  // ::a.b.c.d  IPv4-compatible (deprecated)
  if (zeroPrefix80 && w5 === 0) return embedded(w6, w7, "ipv4_compatible")
  // 64:ff9b::/96 well-known NAT64 prefix: judged by the embedded IPv4 address
  if (w0 === 0x64 && w1 === 0xff9b && w2 === 0 && w3 === 0 && w4 === 0 && w5 === 0) return embedded(w6, w7, "public")
  // 64:ff9b:1::/48 local-use NAT64
  if (w0 === 0x64 && w1 === 0xff9b && w2 === 1) return "reserved"
  // 100::/64 discard-only
  if (w0 === 0x100 && w1 === 0 && w2 === 0 && w3 === 0) return "discard"
  if (w0 === 0x2001) {
    if (w1 === 0) return "teredo" // 2001::/32 Teredo
    if (w1 === 2 && w2 === 0) return "benchmarking" // 2001:2::/48
    if (w1 === 0xdb8) return "documentation" // 2001:db8::/32
    if (w1 < 0x200) return "ietf_protocol" // rest of 2001::/23 (ORCHID, AMT, AS112, ...)
  }
  if (w0 === 0x3fff && w1 < 0x1000) return "documentation" // 3fff::/20
  // 2002::/16 6to4: judged by the embedded IPv4 address
  if (w0 === 0x2002) return embedded(w1, w2, "public")
  if ((w0 & 0xfe00) === 0xfc00) return "unique_local" // fc00::/7
  if ((w0 & 0xffc0) === 0xfe80) return "link_local" // fe80::/10
  if ((w0 & 0xffc0) === 0xfec0) return "site_local" // fec0::/10 (deprecated)
  if ((w0 & 0xff00) === 0xff00) return "multicast" // ff00::/8
  // only 2000::/3 is allocated global unicast
  if ((w0 & 0xe000) !== 0x2000) return "reserved"
  return "public"
}

/**
 * Classifies one IP address (IPv4 dotted-quad or IPv6, zone id allowed).
 * Returns `"public"` only for globally routable unicast addresses; anything else is a reason.
 */
export const classifyAddress = (ip: string): AddressClass => {
  const s = ip.trim().replace(/^\[|\]$/g, "")
  if (isIPv4(s)) {
    const n = parseIPv4(s)
    return n === null ? "invalid" : classifyV4Number(n)
  }
  const words = parseIPv6(s)
  return words === null ? "invalid" : classifyV6Words(words)
}

// ---------------------------------------------------------------------------------------------
// URL syntax
// ---------------------------------------------------------------------------------------------

export type UrlRefusal =
  | "invalid_url"
  | "scheme_not_allowed"
  | "credentials_in_url"
  | "empty_host"
  | "obfuscated_ip"
  | "internal_hostname"
  | "single_label_host"

export type ParseResult = { ok: true; url: URL } | { ok: false; reason: UrlRefusal; detail: string }

/** Suffixes that never name a public host (RFC 6761/6762/8375, ICANN ".internal"). */
const INTERNAL_SUFFIXES = ["localhost", "local", "internal", "localdomain", "home.arpa", "invalid", "arpa"]

/** The host part exactly as written in the input (before WHATWG normalisation), lower-cased. */
const rawHostOf = (raw: string): string | null => {
  const m = /^[a-z][a-z0-9+.-]*:[\\/]*([^\\/?#]*)/i.exec(raw)
  if (!m) return null
  let authority = m[1]!
  const at = authority.lastIndexOf("@")
  if (at >= 0) authority = authority.slice(at + 1)
  if (authority.startsWith("[")) {
    const end = authority.indexOf("]")
    return (end >= 0 ? authority.slice(0, end + 1) : authority).toLowerCase()
  }
  const colon = authority.lastIndexOf(":")
  return (colon >= 0 ? authority.slice(0, colon) : authority).toLowerCase()
}

/**
 * Syntax-level refusal of crawl targets. No DNS.
 *  - only `http:`/`https:`; no user/password in the URL
 *  - IPv4 hosts only in canonical dotted-decimal form (decimal `2130706433`, octal `0177.0.0.1`,
 *    hex `0x7f.1`, short `127.1`, percent-encoded, trailing-dot spellings are refused as obfuscated)
 *  - `localhost`, `*.localhost`, `*.local`, `*.internal`, `*.home.arpa`, ... and single-label
 *    names are refused unless `allowPrivate` (development only).
 * A canonical IPv4 literal and any IPv6 literal pass here; `checkUrl` then classifies them.
 */
export const parseTargetUrl = (raw: string, opts: { allowPrivate?: boolean } = {}): ParseResult => {
  if (typeof raw !== "string") return { ok: false, reason: "invalid_url", detail: "not a string" }
  const input = raw.trim()
  // WHATWG silently drops tabs/newlines inside URLs; refuse any control character or space instead.
  if (input.length === 0 || input.length > 8192 || /[\u0000-\u0020\u007f]/.test(input)) {
    return { ok: false, reason: "invalid_url", detail: "empty, too long, or contains whitespace/control characters" }
  }
  let url: URL
  try {
    url = new URL(input)
  } catch {
    return { ok: false, reason: "invalid_url", detail: "not an absolute URL" }
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return { ok: false, reason: "scheme_not_allowed", detail: `scheme ${url.protocol} is not allowed` }
  }
  // Sockets read port 0 as "the default port": the fetch would go somewhere the URL does not say.
  if (url.port === "0") return { ok: false, reason: "invalid_url", detail: "port 0 is not a port" }
  // "http://@host/" parses with an empty username: refuse any userinfo marker in the authority too
  const authority = /^[a-z][a-z0-9+.-]*:[\\/]*([^\\/?#]*)/i.exec(input)?.[1] ?? ""
  if (url.username !== "" || url.password !== "" || authority.includes("@")) {
    return { ok: false, reason: "credentials_in_url", detail: "credentials in the URL are not allowed" }
  }
  const hostname = url.hostname
  if (hostname === "") return { ok: false, reason: "empty_host", detail: "no host" }
  // An IPv6 literal has one spelling once parsed (no zone ids, no numeric tricks); like an IPv4
  // literal it passes here and is classified by checkUrl and at every hop.
  if (hostname.startsWith("[")) return { ok: true, url }
  // "a..b" and ".a" parse, but name no host (a trailing dot, the root, is fine).
  if (hostname.replace(/\.$/, "").split(".").some((label) => label === "")) {
    return { ok: false, reason: "invalid_url", detail: `${hostname} has an empty label` }
  }
  if (isIPv4(hostname)) {
    if (rawHostOf(input) !== hostname) {
      return { ok: false, reason: "obfuscated_ip", detail: `non-canonical IPv4 spelling of ${hostname}` }
    }
    return { ok: true, url }
  }
  if (!opts.allowPrivate) {
    const h = hostname.replace(/\.$/, "")
    if (INTERNAL_SUFFIXES.some((s) => h === s || h.endsWith("." + s))) {
      return { ok: false, reason: "internal_hostname", detail: `${hostname} is an internal name` }
    }
    if (!h.includes(".")) {
      return { ok: false, reason: "single_label_host", detail: `${hostname} is not a fully qualified name` }
    }
  }
  return { ok: true, url }
}

// ---------------------------------------------------------------------------------------------
// DNS: resolve + classify, and the connection-level lookup
// ---------------------------------------------------------------------------------------------

/** `dns.lookup`-compatible function type (the callback form with options). */
export type LookupFunction = (
  hostname: string,
  options: dns.LookupOptions,
  callback: (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void
) => void

export interface GuardOptions {
  /** ALLOW_PRIVATE_TARGETS: loopback and private addresses are targets too (development/tests only). */
  allowPrivate: boolean
  /** Resolver to use; default `dns.lookup`. Tests inject a fake one. */
  lookup?: LookupFunction
  /** Classifier to use; default `classifyAddress`. Tests may inject one. */
  classify?: AddressClassifier
}

export const UNSAFE_ADDRESS_CODE = "ERR_UNSAFE_ADDRESS"

export class UnsafeAddressError extends Error {
  readonly code = UNSAFE_ADDRESS_CODE
  readonly hostname: string
  readonly address: string
  readonly addressClass: NonPublicReason
  constructor(hostname: string, address: string, addressClass: NonPublicReason) {
    super(`refused ${hostname}: ${address} is ${addressClass}`)
    this.name = "UnsafeAddressError"
    this.hostname = hostname
    this.address = address
    this.addressClass = addressClass
  }
}

const defaultLookup: LookupFunction = dns.lookup as unknown as LookupFunction

/** Resolves every address of a host name. */
export const resolveAll = (hostname: string, lookup: LookupFunction = defaultLookup, timeoutMs = 10_000) =>
  new Promise<dns.LookupAddress[]>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(Object.assign(new Error(`DNS lookup of ${hostname} timed out`), { code: "EAI_AGAIN" })),
      timeoutMs
    )
    lookup(hostname, { all: true, verbatim: true }, (err, addresses) => {
      clearTimeout(timer)
      if (err) return reject(err)
      const list = Array.isArray(addresses) ? addresses : [{ address: addresses, family: isIP(addresses) }]
      if (list.length === 0) return reject(Object.assign(new Error(`no address for ${hostname}`), { code: "ENOTFOUND" }))
      resolve(list)
    })
  })

/**
 * A `dns.lookup`-compatible function that resolves with the given resolver and refuses the whole
 * answer when any address is not public (unless `allowPrivate`). Pass it as the connection's
 * lookup (`http.Agent({ lookup })`, undici `connect: { lookup }`, got `dnsLookup`): the socket is
 * then opened to exactly the address that was classified. Honors `options.all` (Node's
 * happy-eyeballs calls lookup with `all: true`) and `options.family`.
 */
export const createSafeLookup = (opts: GuardOptions): LookupFunction => {
  const lookup = opts.lookup ?? defaultLookup
  const classify = opts.classify ?? classifyAddress
  const safe = (hostname: string, options: dns.LookupOptions | number | Function, callback?: Function): void => {
    let cb = callback as Parameters<LookupFunction>[2]
    let o: dns.LookupOptions = {}
    if (typeof options === "function") cb = options as Parameters<LookupFunction>[2]
    else if (typeof options === "number") o = { family: options }
    else if (options) o = options
    const wantAll = o.all === true
    lookup(hostname, { ...o, all: true }, (err, addresses) => {
      if (err) return cb(err, wantAll ? [] : "")
      const list = (Array.isArray(addresses) ? addresses : [{ address: addresses, family: isIP(addresses) }]).filter(
        (a) => a.address
      )
      if (list.length === 0) {
        return cb(Object.assign(new Error(`no address for ${hostname}`), { code: "ENOTFOUND", hostname }), wantAll ? [] : "")
      }
      for (const a of list) {
        const c = refusedClass(a.address, opts.allowPrivate, classify)
        if (c) return cb(new UnsafeAddressError(hostname, a.address, c), wantAll ? [] : "")
      }
      if (wantAll) return cb(null, list)
      cb(null, list[0]!.address, list[0]!.family)
    })
  }
  return safe as unknown as LookupFunction
}

/** The strict lookup (no private targets, system resolver). */
export const safeLookup: LookupFunction = createSafeLookup({ allowPrivate: false })

export type CheckRefusal = UrlRefusal | "non_public_address" | "dns_error"

export type CheckResult =
  | { ok: true; url: URL; addresses: string[] }
  | {
      ok: false
      /** `dns_error` is not a safety refusal: the name simply did not resolve. */
      reason: CheckRefusal
      detail: string
      /** For `dns_error`: the resolver's error code (`ENOTFOUND`, `EAI_AGAIN`, ...). */
      code?: string
      address?: string
      addressClass?: NonPublicReason
    }

/**
 * Full pre-flight check of a target URL: syntax, then every resolved address classified.
 * With `allowPrivate` only the syntax rules that are not about private targets apply, an address
 * written in the URL is checked against DEV_TARGET_CLASSES, and no DNS query is made (the
 * connection's lookup classifies what a name resolves to).
 */
export const checkUrl = async (
  input: string | URL,
  opts: GuardOptions & { timeoutMs?: number }
): Promise<CheckResult> => {
  const parsed = parseTargetUrl(typeof input === "string" ? input : input.href, { allowPrivate: opts.allowPrivate })
  if (!parsed.ok) return parsed
  const url = parsed.url
  const classify = opts.classify ?? classifyAddress
  const literal = literalAddressOf(url)
  if (literal !== undefined) {
    const c = refusedClass(literal, opts.allowPrivate, classify)
    if (c) return { ok: false, reason: "non_public_address", detail: `${literal} is ${c}`, address: literal, addressClass: c }
    return { ok: true, url, addresses: [literal] }
  }
  if (opts.allowPrivate) return { ok: true, url, addresses: [] }
  const host = url.hostname
  let addresses: dns.LookupAddress[]
  try {
    addresses = await resolveAll(host, opts.lookup, opts.timeoutMs)
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? "EDNS"
    return { ok: false, reason: "dns_error", detail: `${host}: ${code}`, code }
  }
  for (const a of addresses) {
    const c = refusedClass(a.address, false, classify)
    if (c) {
      return {
        ok: false,
        reason: "non_public_address",
        detail: `${host} resolves to ${a.address} (${c})`,
        address: a.address,
        addressClass: c
      }
    }
  }
  return { ok: true, url, addresses: addresses.map((a) => a.address) }
}

/** True when an error (possibly wrapped, e.g. by got) comes from the guard. */
export const isUnsafeAddressError = (e: unknown): e is UnsafeAddressError => {
  let cur: unknown = e
  for (let i = 0; i < 5 && cur; i++) {
    if ((cur as { code?: unknown }).code === UNSAFE_ADDRESS_CODE) return true
    cur = (cur as { cause?: unknown }).cause
  }
  return false
}
