import { describe, expect, it } from "vitest"
import {
  checkUrl,
  classifyAddress,
  createSafeLookup,
  isUnsafeAddressError,
  parseTargetUrl,
  safeLookup,
  UnsafeAddressError
} from "../../src/crawl/ssrf.ts"
import { fakeLookup } from "./fixture.ts"

describe("classifyAddress", () => {
  const table: Array<[string, string]> = [
    // IPv4 public
    ["8.8.8.8", "public"],
    ["1.1.1.1", "public"],
    ["93.184.216.34", "public"],
    ["100.63.255.255", "public"],
    ["100.128.0.0", "public"],
    ["172.15.255.255", "public"],
    ["172.32.0.0", "public"],
    ["198.17.255.255", "public"],
    ["198.20.0.0", "public"],
    ["223.255.255.255", "public"],
    // IPv4 non-public
    ["0.0.0.0", "this_network"],
    ["0.1.2.3", "this_network"],
    ["10.0.0.1", "private"],
    ["10.255.255.255", "private"],
    ["100.64.0.1", "cgnat"],
    ["100.127.255.254", "cgnat"],
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["169.254.169.254", "link_local"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.0.0.8", "ietf_protocol"],
    ["192.0.2.1", "documentation"],
    ["192.88.99.1", "reserved"],
    ["192.168.1.1", "private"],
    ["198.18.0.1", "benchmarking"],
    ["198.19.255.255", "benchmarking"],
    ["198.51.100.7", "documentation"],
    ["203.0.113.9", "documentation"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["240.0.0.1", "reserved"],
    ["255.255.255.255", "broadcast"],
    // IPv6 public
    ["2606:4700:4700::1111", "public"],
    ["2001:4860:4860::8888", "public"],
    ["2a00:1450:4001:80b::200e", "public"],
    // IPv6 non-public
    ["::", "unspecified"],
    ["0:0:0:0:0:0:0:0", "unspecified"],
    ["::1", "loopback"],
    ["0:0:0:0:0:0:0:1", "loopback"],
    ["[::1]", "loopback"],
    ["fc00::1", "unique_local"],
    ["fd12:3456:789a::1", "unique_local"],
    ["fe80::1", "link_local"],
    ["fe80::1%eth0", "link_local"],
    ["febf::1", "link_local"],
    ["fec0::1", "site_local"],
    ["ff02::1", "multicast"],
    ["ff05::1:3", "multicast"],
    ["100::1", "discard"],
    ["100::ffff:ffff:ffff:ffff", "discard"],
    ["2001:db8::1", "documentation"],
    ["3fff::1", "documentation"],
    ["3fff:fff:ffff::1", "documentation"],
    // 3fff::/20 ends there: the rest of 3fff::/16 and of 3ff0::/12 is global unicast.
    ["3fff:1000::1", "public"],
    ["3ffe:1::1", "public"],
    ["3ff0::1", "public"],
    ["2001:2::1", "benchmarking"],
    ["2001::1", "teredo"],
    ["2001:0:4136:e378:8000:63bf:3fff:fdd2", "teredo"],
    ["2001:10::1", "ietf_protocol"],
    ["2001:20::1", "ietf_protocol"],
    ["64:ff9b:1::1", "reserved"],
    ["4000::1", "reserved"],
    ["::2", "this_network"],
    // IPv4-mapped / -compatible / -translated embedding
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:7f00:1", "loopback"],
    ["0:0:0:0:0:ffff:7f00:1", "loopback"],
    ["::FFFF:127.0.0.1", "loopback"],
    ["::ffff:10.0.0.1", "private"],
    ["::ffff:a9fe:a9fe", "link_local"],
    ["::ffff:169.254.169.254", "link_local"],
    ["::ffff:0.0.0.0", "this_network"],
    ["::ffff:8.8.8.8", "ipv4_mapped"],
    ["::ffff:0:127.0.0.1", "loopback"],
    ["::ffff:0:8.8.8.8", "ipv4_mapped"],
    ["::127.0.0.1", "loopback"],
    ["::8.8.8.8", "ipv4_compatible"],
    // NAT64 and 6to4 judged by the embedded IPv4 address
    ["64:ff9b::127.0.0.1", "loopback"],
    ["64:ff9b::a00:1", "private"],
    ["64:ff9b::192.168.0.1", "private"],
    ["64:ff9b::8.8.8.8", "public"],
    ["2002:7f00:1::", "loopback"],
    ["2002:c0a8:101::1", "private"],
    ["2002:a9fe:a9fe::1", "link_local"],
    ["2002:808:808::1", "public"],
    // not addresses
    ["", "invalid"],
    ["localhost", "invalid"],
    ["127.1", "invalid"],
    ["2130706433", "invalid"],
    ["0x7f.0.0.1", "invalid"],
    ["256.1.1.1", "invalid"],
    ["1:2:3:4:5:6:7:8:9", "invalid"]
  ]
  it.each(table)("%s → %s", (ip, expected) => {
    expect(classifyAddress(ip)).toBe(expected)
  })
})

describe("parseTargetUrl", () => {
  const refused: Array<[string, string]> = [
    ["ftp://example.com/", "scheme_not_allowed"],
    ["file:///etc/passwd", "scheme_not_allowed"],
    ["gopher://example.com:70/", "scheme_not_allowed"],
    ["javascript:alert(1)", "scheme_not_allowed"],
    ["data:text/html,hi", "scheme_not_allowed"],
    ["ws://example.com/", "scheme_not_allowed"],
    ["http://user:pass@example.com/", "credentials_in_url"],
    ["http://user@example.com/", "credentials_in_url"],
    ["http://@example.com/", "credentials_in_url"],
    ["http://example.com@127.0.0.1/", "credentials_in_url"],
    ["http://2130706433/", "obfuscated_ip"],
    ["http://0177.0.0.1/", "obfuscated_ip"],
    ["http://0x7f.1/", "obfuscated_ip"],
    ["http://0x7f000001/", "obfuscated_ip"],
    ["http://127.1/", "obfuscated_ip"],
    ["http://127.0.1/", "obfuscated_ip"],
    ["http://017700000001/", "obfuscated_ip"],
    ["http://%31%32%37.0.0.1/", "obfuscated_ip"],
    ["http://127.0.0.1./", "obfuscated_ip"],
    ["http://0/", "obfuscated_ip"],
    ["http:\\\\127.1\\", "obfuscated_ip"],
    ["http://[fe80::1%25eth0]/", "invalid_url"],
    ["http://localhost/", "internal_hostname"],
    ["http://LOCALHOST:3000/", "internal_hostname"],
    ["http://localhost./", "internal_hostname"],
    ["http://api.localhost/", "internal_hostname"],
    ["http://printer.local/", "internal_hostname"],
    ["http://metadata.google.internal/", "internal_hostname"],
    ["http://router.home.arpa/", "internal_hostname"],
    ["http://intranet/", "single_label_host"],
    ["not a url", "invalid_url"],
    ["/relative/path", "invalid_url"],
    ["", "invalid_url"],
    ["http://exa mple.com/", "invalid_url"],
    ["http://127.0.0.1\t/", "invalid_url"],
    ["http://127.0.\n0.1/", "invalid_url"],
    ["http://example.com:0/", "invalid_url"],
    ["https://example.com:00/x", "invalid_url"],
    ["http://a..b/", "invalid_url"],
    ["http://.example.com/", "invalid_url"],
    ["http://example.com../", "invalid_url"],
    ["http://./", "invalid_url"]
  ]
  it.each(refused)("refuses %j (%s)", (raw, reason) => {
    const r = parseTargetUrl(raw)
    expect(r.ok).toBe(false)
    if (!r.ok) expect(r.reason).toBe(reason)
  })

  const accepted: Array<[string, string]> = [
    ["http://example.com/", "http://example.com/"],
    ["https://Example.COM:443/a?b=1#frag", "https://example.com/a?b=1#frag"],
    ["  https://example.com/x  ", "https://example.com/x"],
    ["http://93.184.216.34/", "http://93.184.216.34/"],
    // syntax only: a canonical literal passes here and is classified by checkUrl
    ["http://127.0.0.1:8080/", "http://127.0.0.1:8080/"],
    ["http://[::1]/", "http://[::1]/"],
    ["http://[2606:4700:0:0:0:0:0:1111]:8443/x", "http://[2606:4700::1111]:8443/x"],
    ["https://xn--bcher-kva.example/", "https://xn--bcher-kva.example/"],
    ["http://example.com./", "http://example.com./"]
  ]
  it.each(accepted)("accepts %j", (raw, href) => {
    const r = parseTargetUrl(raw)
    expect(r.ok).toBe(true)
    if (r.ok) expect(r.url.href).toBe(href)
  })

  it("allows internal names and IPv6 literals only with allowPrivate", () => {
    expect(parseTargetUrl("http://localhost:3000/", { allowPrivate: true }).ok).toBe(true)
    expect(parseTargetUrl("http://[::1]:3000/", { allowPrivate: true }).ok).toBe(true)
    // obfuscated spellings, schemes and credentials are refused even then
    expect(parseTargetUrl("http://2130706433/", { allowPrivate: true }).ok).toBe(false)
    expect(parseTargetUrl("file:///etc/passwd", { allowPrivate: true }).ok).toBe(false)
    expect(parseTargetUrl("http://a:b@localhost/", { allowPrivate: true }).ok).toBe(false)
  })
})

describe("checkUrl", () => {
  const lookup = fakeLookup({
    "public.example": "8.8.8.8",
    "rebind.example": "127.0.0.1",
    "meta.example": "169.254.169.254",
    "v6.example": "::ffff:10.0.0.1"
  })

  it("accepts a name that resolves to public addresses only", async () => {
    const r = await checkUrl("https://public.example/x", { allowPrivate: false, lookup })
    expect(r).toMatchObject({ ok: true, addresses: ["8.8.8.8"] })
  })

  it.each([
    ["http://rebind.example/", "loopback"],
    ["http://meta.example/latest/meta-data", "link_local"],
    ["http://v6.example/", "private"],
    ["http://127.0.0.1/", "loopback"],
    ["http://10.1.2.3:8080/", "private"],
    ["http://0.0.0.0/", "this_network"],
    ["http://[::1]/", "loopback"],
    ["http://[0:0:0:0:0:0:0:1]:8080/", "loopback"],
    ["http://[::]/", "unspecified"],
    ["http://[::ffff:127.0.0.1]/", "loopback"],
    ["http://[::ffff:7f00:1]:8080/", "loopback"],
    ["http://[::ffff:8.8.8.8]/", "ipv4_mapped"],
    ["http://[fd00::1]/", "unique_local"],
    ["http://[fe80::1]/", "link_local"],
    ["http://[2001:db8::1]/", "documentation"]
  ])("refuses %s (%s)", async (url, cls) => {
    const r = await checkUrl(url, { allowPrivate: false, lookup })
    expect(r.ok).toBe(false)
    if (!r.ok) {
      expect(r.reason).toBe("non_public_address")
      expect(r.addressClass).toBe(cls)
    }
  })

  it("accepts a public IPv6 literal without asking DNS", async () => {
    const spy = fakeLookup({})
    const r = await checkUrl("https://[2606:4700::1111]/", { allowPrivate: false, lookup: spy })
    expect(r).toMatchObject({ ok: true, addresses: ["2606:4700::1111"] })
    expect(spy.calls).toEqual([])
  })

  it("refuses when any one of several addresses is not public", async () => {
    const multi = ((_h: string, _o: unknown, cb: Function) =>
      cb(null, [
        { address: "8.8.8.8", family: 4 },
        { address: "10.0.0.5", family: 4 }
      ])) as never
    const r = await checkUrl("http://mixed.example/", { allowPrivate: false, lookup: multi })
    expect(r).toMatchObject({ ok: false, reason: "non_public_address", address: "10.0.0.5" })
  })

  it("reports an unresolvable name as dns_error, not as unsafe", async () => {
    const r = await checkUrl("http://nxdomain.example/", { allowPrivate: false, lookup })
    expect(r).toMatchObject({ ok: false, reason: "dns_error" })
  })

  it("with allowPrivate: syntax only, no DNS", async () => {
    const spy = fakeLookup({})
    const r = await checkUrl("http://127.0.0.1:9/", { allowPrivate: true, lookup: spy })
    expect(r.ok).toBe(true)
    expect(spy.calls).toEqual([])
    expect((await checkUrl("http://0x7f.1/", { allowPrivate: true, lookup: spy })).ok).toBe(false)
  })

  it("with allowPrivate: loopback and private literals pass, link-local (the metadata address), multicast and the rest do not", async () => {
    const spy = fakeLookup({})
    for (const url of ["http://127.0.0.1/", "http://10.1.2.3/", "http://192.168.0.7/", "http://[::1]/", "http://[fd00::1]/", "http://100.64.0.1/", "http://8.8.8.8/"]) {
      expect((await checkUrl(url, { allowPrivate: true, lookup: spy })).ok, url).toBe(true)
    }
    for (const [url, c] of [
      ["http://169.254.169.254/latest/meta-data/", "link_local"], ["http://[fe80::1]/", "link_local"], ["http://224.0.0.1/", "multicast"],
      ["http://0.0.0.0/", "this_network"], ["http://255.255.255.255/", "broadcast"], ["http://240.0.0.1/", "reserved"]
    ] as const) {
      expect(await checkUrl(url, { allowPrivate: true, lookup: spy }), url).toMatchObject({ ok: false, reason: "non_public_address", addressClass: c })
    }
    expect(spy.calls).toEqual([])
  })
})

describe("safe lookup (connection-level guard)", () => {
  const call = (fn: ReturnType<typeof createSafeLookup>, host: string, options: object) =>
    new Promise<{ err: NodeJS.ErrnoException | null; address: unknown; family?: number }>((resolve) =>
      fn(host, options, (err, address, family) => resolve({ err, address, family }))
    )

  it("passes public answers through, in both single and `all` forms", async () => {
    const lookup = createSafeLookup({ allowPrivate: false, lookup: fakeLookup({ "ok.example": "8.8.8.8" }) })
    expect(await call(lookup, "ok.example", {})).toMatchObject({ err: null, address: "8.8.8.8", family: 4 })
    expect(await call(lookup, "ok.example", { all: true })).toMatchObject({ err: null, address: [{ address: "8.8.8.8", family: 4 }] })
  })

  it("refuses a name that resolves to a private address (DNS rebinding) before any connection", async () => {
    const lookup = createSafeLookup({ allowPrivate: false, lookup: fakeLookup({ "evil.example": "127.0.0.1" }) })
    const r = await call(lookup, "evil.example", {})
    expect(r.err).toBeInstanceOf(UnsafeAddressError)
    expect(r.err?.code).toBe("ERR_UNSAFE_ADDRESS")
    expect(isUnsafeAddressError({ message: "wrapped", cause: r.err })).toBe(true)
  })

  it("re-classifies on every call (a name that flips to private is refused)", async () => {
    let answer = "8.8.8.8"
    const flipping = ((_h: string, _o: unknown, cb: Function) => cb(null, [{ address: answer, family: 4 }])) as never
    const lookup = createSafeLookup({ allowPrivate: false, lookup: flipping })
    expect((await call(lookup, "flip.example", {})).err).toBeNull()
    answer = "192.168.0.10"
    expect((await call(lookup, "flip.example", {})).err).toBeInstanceOf(UnsafeAddressError)
  })

  it("passes private answers with allowPrivate and propagates resolver errors", async () => {
    const lookup = createSafeLookup({ allowPrivate: true, lookup: fakeLookup({ "dev.example": "127.0.0.1" }) })
    expect(await call(lookup, "dev.example", {})).toMatchObject({ err: null, address: "127.0.0.1" })
    expect((await call(lookup, "missing.example", {})).err?.code).toBe("ENOTFOUND")
    // a development node still refuses a name that resolves to the metadata address
    const meta = createSafeLookup({ allowPrivate: true, lookup: fakeLookup({ "meta.example": "169.254.169.254", "lan.example": "192.168.1.20" }) })
    expect((await call(meta, "meta.example", {})).err).toBeInstanceOf(UnsafeAddressError)
    expect(await call(meta, "lan.example", {})).toMatchObject({ err: null, address: "192.168.1.20" })
  })

  it("the exported safeLookup is strict: it refuses a loopback answer (an IP literal, so no query is made)", async () => {
    expect(safeLookup.length).toBe(3)
    const { err } = await call(safeLookup, "127.0.0.1", {})
    expect(err).toBeInstanceOf(UnsafeAddressError)
    expect(err?.code).toBe("ERR_UNSAFE_ADDRESS")
  })
})
