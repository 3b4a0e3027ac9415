import { describe, expect, it } from "vitest"
import { configDomainId, domainIdFilter, domainIdOf, normalizeUrl } from "../../src/crawl/domain.ts"

describe("domainIdOf", () => {
  it.each([
    ["https://news.example.co.uk/a", "example.co.uk"],
    ["https://example.co.uk/", "example.co.uk"],
    ["https://WWW.Example.COM/Path", "example.com"],
    ["http://a.b.c.example.com:8080/", "example.com"],
    ["https://shop.example.com.au/", "example.com.au"],
    ["https://foo.bar.example.jp/", "example.jp"],
    ["https://alice.github.io/blog", "alice.github.io"],
    ["https://example.com./", "example.com"],
    ["http://127.0.0.1:8080/", "127.0.0.1"],
    ["http://93.184.216.34/", "93.184.216.34"],
    ["http://[2606:4700::1111]/", "2606:4700::1111"],
    ["http://localhost:3000/", "localhost"],
    ["http://intranet/", "intranet"],
    ["https://xn--bcher-kva.example.de/", "example.de"],
    ["https://münchen.example.de/", "example.de"]
  ])("%s → %s", (url, expected) => {
    expect(domainIdOf(url)).toBe(expected)
  })

  it("accepts URL objects and returns null without a URL", () => {
    expect(domainIdOf(new URL("https://sub.example.org/"))).toBe("example.org")
    expect(domainIdOf("")).toBeNull()
    expect(domainIdOf("not a url")).toBeNull()
    expect(domainIdOf("mailto:a@example.com")).toBeNull()
  })
})

describe("normalizeUrl", () => {
  it.each([
    ["HTTP://Example.COM:80/a/b?z=1&a=2#frag", "http://example.com/a/b?a=2&z=1"],
    ["https://example.com:443/", "https://example.com/"],
    ["https://example.com:8443/x", "https://example.com:8443/x"],
    ["https://example.com/Path/Keep?b=2&a=1&a=0", "https://example.com/Path/Keep?a=1&a=0&b=2"],
    ["https://example.com/x?", "https://example.com/x"],
    ["https://example.com/x#only-fragment", "https://example.com/x"],
    ["https://example.com./x", "https://example.com/x"],
    ["https://example.com", "https://example.com/"],
    // Parameters are sorted as written: never decoded and encoded again, so different pages keep different keys.
    ["http://h.test/x?q=%FF", "http://h.test/x?q=%FF"],
    ["http://h.test/x?name=Fran%E7ois", "http://h.test/x?name=Fran%E7ois"],
    ["http://h.test/x?a=1;b=2", "http://h.test/x?a=1;b=2"],
    ["http://h.test/x?a=1%3Bb%3D2", "http://h.test/x?a=1%3Bb%3D2"],
    ["http://h.test/x?t=a:b/c,d~e", "http://h.test/x?t=a:b/c,d~e"],
    ["http://h.test/x?b&&a=", "http://h.test/x?a=&b"],
    // Escapes spelled one way (RFC 3986 §6.2.2): unreserved characters decoded, upper-case hex otherwise.
    ["http://h.test/x?q=%7E&r=%7e&s=~", "http://h.test/x?q=~&r=~&s=~"],
    ["http://h.test/x?q=a%3ab", "http://h.test/x?q=a%3Ab"],
    ["http://h.test/x?q=%41%2d%ff", "http://h.test/x?q=A-%FF"]
  ])("%s → %s", (input, expected) => {
    expect(normalizeUrl(input)).toBe(expected)
  })

  it("gives a key that is its own key, for any query of escapes, stray percent signs and letters", () => {
    // A small seeded generator: the same inputs on every run.
    let seed = 7
    const next = (n: number) => (seed = (seed * 1103515245 + 12345) % 2147483648) % n
    const alphabet = "%%%%%234567adefADEFxz=&~"
    for (let i = 0; i < 20_000; i++) {
      const query = Array.from({ length: 1 + next(12) }, () => alphabet[next(alphabet.length)]).join("")
      const once = normalizeUrl(`http://h.test/x?${query}`)
      expect(normalizeUrl(once), query).toBe(once)
    }
    expect(normalizeUrl("http://h.test/x?q=%%34%31")).toBe("http://h.test/x?q=%2541")
    expect(normalizeUrl("http://h.test/x?q=%2%41")).not.toBe(normalizeUrl("http://h.test/x?q=%2A"))
  })

  it("is idempotent", () => {
    for (const url of ["https://Example.com:443/a?c=3&b=2#x", "http://h.test/x?q=%7e%3a%ff&a=%C3%A9;b"]) {
      const once = normalizeUrl(url)
      expect(normalizeUrl(once)).toBe(once)
    }
  })
})

describe("domainIdFilter", () => {
  it("gives the stored form of a domainId a client filters by: lower case, punycode, no brackets or final dot", () => {
    expect(domainIdFilter("例え.テスト")).toBe(domainIdOf("http://例え.テスト/")!)
    expect(domainIdFilter("Example.COM.")).toBe("example.com")
    expect(domainIdFilter("127.0.0.1")).toBe("127.0.0.1")
    expect(domainIdFilter("[::1]")).toBe(domainIdOf("http://[::1]:8080/")!)
    expect(domainIdFilter("0:0:0:0:0:0:0:1")).toBe(domainIdOf("http://[::1]/")!)
    expect(domainIdFilter("::FFFF:127.0.0.2")).toBe(domainIdOf("http://[::ffff:7f00:2]/")!)
    // A zone id is no URL host's: kept as given (it matches nothing), never an error.
    expect(domainIdFilter("fe80::1%eth0")).toBe("fe80::1%eth0")
    expect(domainIdFilter("[::1%1]")).toBe("::1%1")
  })
})

describe("configDomainId", () => {
  it.each([
    ["Example.COM.", "example.com"],
    ["  example.co.uk ", "example.co.uk"],
    ["BÜCHER.de", "xn--bcher-kva.de"],
    ["alice.github.io", "alice.github.io"],
    ["localhost", "localhost"],
    ["127.0.0.2", "127.0.0.2"],
    ["[0:0:0:0:0:0:0:1]", "::1"]
  ])("keeps %s as an extraction's domainId would be: %s", (given, kept) => {
    expect(configDomainId(given)).toEqual({ domainId: kept })
    expect(domainIdOf(`http://${given.trim()}/`)).toBe(kept)
  })

  it.each(["example.com/shop", "example.com:8080", "user@example.com", "not a domain!!", "%%%", "a..b", "-bad-.com", ""])(
    "refuses %j, which is no host name", (given) => {
      expect(configDomainId(given)).toEqual({ problem: expect.stringContaining("host name") })
    })

  it("refuses a host below its registrable domain, naming that domain", () => {
    expect(configDomainId("shop.Example.co.uk")).toEqual({ problem: expect.stringContaining("example.co.uk") })
    expect(configDomainId("www.example.com")).toEqual({ problem: expect.stringContaining(": example.com") })
  })
})
