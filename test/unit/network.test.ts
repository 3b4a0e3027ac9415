import { copyFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { describe, expect, it } from "vitest"
import { type AppConfig, Config, ConfigError, loadConfig, packagedGeoipDbPath, parseTrustProxy, type TrustedProxies } from "../../src/config.ts"
import { clientAddress } from "../../src/http/client-context.ts"
import { countryName, geolocatable, GeoIp, GeoIpLive, GeoIpTest, lookupWith, makeGeoIpLive } from "../../src/network/geoip.ts"
import { normalizeIp } from "../../src/schema/network.ts"

const lookupIn = (layer: Layer.Layer<GeoIp>, ip: string) =>
  Effect.runPromise(Effect.gen(function*() {
    return yield* (yield* GeoIp).lookup(ip)
  }).pipe(Effect.result, Effect.provide(layer)))

const liveAt = (geoipDbPath: string) => GeoIpLive.pipe(Layer.provide(Layer.succeed(Config, { geoipDbPath } as AppConfig)))

describe("GeoIp on the packaged database", () => {
  // One reader for the whole suite, opened as the node opens it.
  const live = Layer.fresh(liveAt(packagedGeoipDbPath()))
  const answers = (ips: ReadonlyArray<string>) =>
    Effect.runPromise(Effect.gen(function*() {
      const geoip = yield* GeoIp
      return yield* Effect.forEach(ips, (ip) => geoip.lookup(ip))
    }).pipe(Effect.provide(live)))

  it("answers the country of public IPv4 and IPv6 addresses the database maps", async () => {
    // Read from the file (these addresses are never contacted): large, stable allocations.
    expect(await answers(["8.8.8.8", "1.1.1.1", "193.0.6.139", "2001:4860:4860::8888", "2a00:1450:4001::1", "::ffff:8.8.8.8"])).toEqual([
      { ip: "8.8.8.8", found: true, country: "US", countryName: "United States" },
      { ip: "1.1.1.1", found: true, country: "AU", countryName: "Australia" },
      { ip: "193.0.6.139", found: true, country: "NL", countryName: "Netherlands" },
      { ip: "2001:4860:4860::8888", found: true, country: "US", countryName: "United States" },
      { ip: "2a00:1450:4001::1", found: true, country: "IE", countryName: "Ireland" },
      // An IPv4-mapped address is its IPv4 address (the file itself has nothing under ::ffff:0:0/96).
      { ip: "::ffff:8.8.8.8", found: true, country: "US", countryName: "United States" }
    ])
  })

  it("answers found false for addresses without a country, also where the file names one", async () => {
    // The file maps the documentation ranges 203.0.113.0/24 and 2001:db8::/32 to a country: the address class wins.
    for (const a of await answers(["10.0.0.1", "127.0.0.1", "203.0.113.1", "2001:db8::1", "fe80::1", "ff02::1", "240.0.0.1"])) {
      expect(a).toMatchObject({ found: false, country: null, countryName: null })
    }
  })
})

describe("GeoIp without its database", () => {
  it("opens, and answers GeoIpUnavailable with a Retry-After, when the file is missing or not an MMDB", async () => {
    const garbage = join(tmpdir(), `not-mmdb-${process.pid}.mmdb`)
    writeFileSync(garbage, "not an MMDB file at all")
    for (const path of [join(tmpdir(), `missing-${process.pid}.mmdb`), garbage]) {
      const result = await lookupIn(liveAt(path), "8.8.8.8")
      expect(result._tag).toBe("Failure")
      if (result._tag === "Failure") {
        expect(result.failure._tag).toBe("GeoIpUnavailable")
        expect(result.failure.retryAfter).toBeGreaterThan(0)
        expect(result.failure.reason).toContain("not available")
        // The reason goes to clients: no path, no OS error.
        expect(result.failure.reason).not.toContain(path)
        expect(result.failure.reason).not.toMatch(/ENOENT|mmdb/i)
      }
    }
  })

  it("reads a database put in place later, without a restart", async () => {
    const path = join(tmpdir(), `later-${process.pid}.mmdb`)
    rmSync(path, { force: true })
    const answers = await Effect.runPromise(Effect.gen(function*() {
      const geoip = yield* GeoIp
      const before = yield* Effect.result(geoip.lookup("8.8.8.8"))
      copyFileSync(packagedGeoipDbPath(), path)
      const after = yield* geoip.lookup("8.8.8.8")
      return { before, after }
    }).pipe(Effect.provide(makeGeoIpLive({ reopenSeconds: 0 }).pipe(Layer.provide(Layer.succeed(Config, { geoipDbPath: path } as AppConfig))))))
    expect(answers.before._tag).toBe("Failure")
    expect(answers.after).toMatchObject({ found: true, country: "US" })
    rmSync(path, { force: true })
  })

  it("has a test layer answering from a table, or unavailable", async () => {
    const table = GeoIpTest({ "8.8.8.8": "US", "10.0.0.1": "US" })
    expect(await lookupIn(table, "8.8.8.8")).toMatchObject({ success: { found: true, country: "US", countryName: "United States" } })
    // The address classes apply to the test layer as well.
    expect(await lookupIn(table, "10.0.0.1")).toMatchObject({ success: { found: false, country: null } })
    expect(await lookupIn(GeoIpTest({}, { unavailable: true }), "8.8.8.8")).toMatchObject({ _tag: "Failure" })
  })
})

describe("addresses without a country (the SSRF guard's classifier)", () => {
  it("geolocates public addresses only, and the IPv4 address inside an IPv4-mapped one", () => {
    const nonPublic = [
      "10.1.2.3", "172.16.0.1", "192.168.1.1", // private
      "127.0.0.1", "::1", // loopback
      "169.254.0.1", "fe80::1", // link-local
      "240.0.0.1", "0.0.0.0", "::", "255.255.255.255", // reserved, unspecified, broadcast
      "192.0.2.1", "198.51.100.1", "203.0.113.1", "2001:db8::1", // documentation
      "224.0.0.1", "ff02::1", // multicast
      "100.64.0.1", "fc00::1", "198.18.0.1", "::ffff:10.0.0.1", "2001::1" // cgnat, unique local, benchmarking, mapped private, teredo
    ]
    for (const ip of nonPublic) expect(geolocatable(normalizeIp(ip)!), ip).toBeUndefined()
    expect(geolocatable("8.8.8.8")).toBe("8.8.8.8")
    expect(geolocatable("2001:4860:4860::8888")).toBe("2001:4860:4860::8888")
    expect(geolocatable("::ffff:8.8.8.8")).toBe("8.8.8.8")
  })

  it("does not ask the database about them", () => {
    const asked: Array<string> = []
    const everywhere = (ip: string) => (asked.push(ip), "US")
    expect(lookupWith("192.168.0.1", everywhere)).toEqual({ ip: "192.168.0.1", found: false, country: null, countryName: null })
    expect(asked).toEqual([])
    expect(lookupWith("9.9.9.9", everywhere)).toMatchObject({ found: true, country: "US" })
    expect(asked).toEqual(["9.9.9.9"])
  })

  it("names countries in English from their ISO 3166 codes", () => {
    expect(countryName("DE")).toBe("Germany")
    expect(countryName("XK")).toBe("Kosovo")
    expect(countryName("AP")).toBeNull()
    expect(countryName("A1")).toBeNull()
  })
})

describe("normalizeIp", () => {
  it("writes any valid spelling canonically", () => {
    expect(normalizeIp("8.8.8.8")).toBe("8.8.8.8")
    expect(normalizeIp("2001:0DB8:0000:0000:0000:0000:0000:0001")).toBe("2001:db8::1")
    expect(normalizeIp("2001:db8:0:0:1:0:0:1")).toBe("2001:db8::1:0:0:1")
    expect(normalizeIp("0:0:0:0:0:0:0:1")).toBe("::1")
    expect(normalizeIp("::FFFF:0808:0808")).toBe("::ffff:8.8.8.8")
    expect(normalizeIp("::ffff:8.8.8.8")).toBe("::ffff:8.8.8.8")
    expect(normalizeIp("64:ff9b::1.2.3.4")).toBe("64:ff9b::102:304")
  })

  it("refuses what is not an address", () => {
    for (const bad of ["", "8.8.8", "8.8.8.8.8", "256.0.0.1", "08.8.8.8", "134744072", "0x8.8.8.8", "1.2.3.4/8", " 8.8.8.8", "fe80::1%eth0", "[::1]", "::g", "1:2:3:4:5:6:7:8:9", "example.com"]) {
      expect(normalizeIp(bad), bad).toBeUndefined()
    }
  })
})

describe("TRUST_PROXY", () => {
  const trusted = (raw: string) => parseTrustProxy(raw) as TrustedProxies

  it("parses addresses and CIDRs of both families, and refuses anything else", () => {
    const p = trusted(" 127.0.0.1 , 10.0.0.0/8,fd00::/8, ::1")
    expect(p.entries).toEqual(["127.0.0.1", "10.0.0.0/8", "fd00::/8", "::1"])
    for (const ip of ["127.0.0.1", "10.255.0.1", "fd12::1", "::1", "::ffff:10.1.1.1"]) expect(p.trusts(ip), ip).toBe(true)
    for (const ip of ["127.0.0.2", "11.0.0.1", "fe80::1", "8.8.8.8"]) expect(p.trusts(ip), ip).toBe(false)
    expect(parseTrustProxy(undefined)).toMatchObject({ entries: [] })
    expect(parseTrustProxy(" , ")).toMatchObject({ entries: [] })
    for (const bad of ["loopback", "10.0.0.0/33", "::/129", "10.0.0.0/8/1", "10.0.0.0/", "1.2.3", "fe80::1%eth0"]) {
      expect(parseTrustProxy(`127.0.0.1,${bad}`), bad).toEqual({ invalid: bad })
    }
    const dataDir = join(tmpdir(), `trawl-trust-${process.pid}`)
    expect(() => loadConfig({ DATA_DIR: dataDir, TRUST_PROXY: "10.0.0.0/40" })).toThrow(ConfigError)
    expect(loadConfig({ DATA_DIR: dataDir }).trustProxy.entries).toEqual([])
    expect(loadConfig({ DATA_DIR: dataDir }).geoipDbPath).toBe(packagedGeoipDbPath())
  })

  it("takes the right-most address that is not a trusted proxy", () => {
    const p = trusted("127.0.0.1,10.0.0.0/8")
    // Peer not trusted: the header is not read at all.
    expect(clientAddress("8.8.4.4", "1.1.1.1", p)).toBe("8.8.4.4")
    // No trusted proxies: never read.
    expect(clientAddress("127.0.0.1", "1.1.1.1", trusted(""))).toBe("127.0.0.1")
    // A spoofed left part is skipped: the first untrusted address from the right.
    expect(clientAddress("127.0.0.1", "6.6.6.6, 1.1.1.1, 10.0.0.2", p)).toBe("1.1.1.1")
    expect(clientAddress("::ffff:127.0.0.1", "2001:4860::1", p)).toBe("2001:4860::1")
    // All trusted: the left-most.
    expect(clientAddress("127.0.0.1", "10.0.0.3,10.0.0.2", p)).toBe("10.0.0.3")
    // Ports and brackets are allowed; an entry that is no address stops the walk at the proxy that sent it.
    expect(clientAddress("127.0.0.1", "1.1.1.1:4711", p)).toBe("1.1.1.1")
    expect(clientAddress("127.0.0.1", "[2001:db8::1]:443", p)).toBe("2001:db8::1")
    expect(clientAddress("127.0.0.1", "1.1.1.1, unknown", p)).toBe("127.0.0.1")
    expect(clientAddress("127.0.0.1", "1.1.1.1, junk, 10.0.0.2", p)).toBe("10.0.0.2")
    expect(clientAddress("127.0.0.1", undefined, p)).toBe("127.0.0.1")
    expect(clientAddress("::ffff:8.8.8.8", undefined, p)).toBe("8.8.8.8")
    expect(clientAddress(null, "1.1.1.1", p)).toBeNull()
  })
})
