/**
 * IP geolocation through the real HTTP interface, on the database shipped as a package: public
 * IPv4 and IPv6 addresses, the address classes that have no country, malformed input, the debit
 * of each lookup and 402 without the credit, `ip/me` with TRUST_PROXY off and on, and 503 when
 * GEOIP_DB_PATH names no database (docs/api.md "Network"). No traffic leaves loopback: the
 * addresses are only looked up in the file.
 */
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { backends, client, type RunningServer, startServer } from "./support/server-process.ts"

describe.each(backends())("IP geolocation over HTTP ($name)", (backend) => {
  let server: RunningServer
  let api: ReturnType<typeof client>
  let key: string
  let price: string

  beforeAll(async () => {
    server = await startServer(await backend.env())
    api = client(server.baseUrl)
    key = (await api.createTenant({ credits: "10.00" })).apiKey
    const pricing = await api.get("/v1/billing/pricing", key)
    price = pricing.json.data.items.find((i: any) => i.serviceKey === "network.ip" && i.item === "lookup")?.price
  })
  afterAll(async () => {
    await server?.stop()
  })

  const lookup = (ip: string, k = key) => api.get(`/v1/network/ip/lookup?ip=${encodeURIComponent(ip)}`, k)
  const ledger = async (k: string) => {
    const res = await api.get("/v1/billing/me/transactions?serviceKey=network.ip&limit=100", k)
    expect(res.status).toBe(200)
    return res.json.data.items as Array<any>
  }

  it("lists the lookup's price", () => {
    expect(price).toMatch(/^\d+\.\d+$/)
    expect(Number(price)).toBeGreaterThan(0)
  })

  it("answers the country of public IPv4 and IPv6 addresses, in any spelling", async () => {
    for (const [ip, normalized, country, countryName] of [
      ["8.8.8.8", "8.8.8.8", "US", "United States"],
      ["193.0.6.139", "193.0.6.139", "NL", "Netherlands"],
      ["2001:4860:4860::8888", "2001:4860:4860::8888", "US", "United States"],
      ["2A00:1450:4001:0000:0000:0000:0000:0001", "2a00:1450:4001::1", "IE", "Ireland"],
      ["::ffff:1.1.1.1", "::ffff:1.1.1.1", "AU", "Australia"]
    ] as const) {
      const res = await lookup(ip)
      expect(res.status, `${ip}: ${res.text}`).toBe(200)
      expect(res.json.data).toEqual({ ip: normalized, found: true, country, countryName })
    }
  })

  it("answers found false for private, loopback, link-local, reserved, documentation and multicast addresses", async () => {
    // 203.0.113.1 and 2001:db8::1 have a country in the database itself: the address class decides.
    for (const ip of ["10.1.2.3", "192.168.0.1", "127.0.0.1", "::1", "169.254.1.1", "fe80::1", "240.0.0.1", "203.0.113.1", "2001:db8::1", "224.0.0.1", "ff02::1", "fc00::1", "100.64.0.1", "0.0.0.0"]) {
      const res = await lookup(ip)
      expect(res.status, ip).toBe(200)
      expect(res.json.data, ip).toEqual({ ip, found: false, country: null, countryName: null })
    }
  })

  it("refuses a malformed or missing ip with 400 naming the path ip, and debits nothing", async () => {
    const t = await api.createTenant({ credits: "1.00" })
    for (const ip of ["8.8.8", "256.1.1.1", "08.8.8.8", "134744072", "0x8.8.8.8", "example.com", "2001:db8::g", "fe80::1%eth0", "[::1]", " 8.8.8.8", "1.2.3.4/24", "", "a".repeat(100)]) {
      const res = await lookup(ip, t.apiKey)
      expect(res.status, `${JSON.stringify(ip)}: ${res.text}`).toBe(400)
      expect(res.json.code).toBe("validation_error")
      expect(res.json.error.details.map((d: any) => d.path)).toEqual(["ip"])
    }
    const missing = await api.get("/v1/network/ip/lookup", t.apiKey)
    expect(missing.status).toBe(400)
    expect(missing.json.error.details.map((d: any) => d.path)).toEqual(["ip"])
    expect(await ledger(t.apiKey)).toEqual([])
  })

  it("needs an API key", async () => {
    expect((await api.get("/v1/network/ip/lookup?ip=8.8.8.8")).status).toBe(401)
    expect((await api.get("/v1/network/ip/me")).status).toBe(401)
  })

  it("writes one ledger entry per lookup, chained, and moves the balance by the price", async () => {
    const t = await api.createTenant({ credits: "1.00" })
    const ips = ["8.8.8.8", "10.0.0.1", "2001:4860:4860::8888"]
    for (const ip of ips) expect((await lookup(ip, t.apiKey)).status).toBe(200)
    const entries = (await ledger(t.apiKey)).reverse()
    expect(entries.map((e) => e.resourceId)).toEqual(ips)
    let before = 1
    for (const e of entries) {
      expect(e).toMatchObject({ type: "debit", serviceKey: "network.ip", resourceType: "ip_lookup", amount: `-${price}` })
      expect(Number(e.balanceAfter)).toBeCloseTo(before - Number(price), 6)
      before = Number(e.balanceAfter)
    }
    const balance = await api.get("/v1/billing/me/balance", t.apiKey)
    expect(Number(balance.json.data.balance)).toBeCloseTo(1 - 3 * Number(price), 6)
  })

  it("answers 402 at a zero balance and debits nothing", async () => {
    const t = await api.createTenant({ credits: "0.00" })
    for (const path of ["/v1/network/ip/lookup?ip=8.8.8.8", "/v1/network/ip/me"]) {
      const res = await api.get(path, t.apiKey)
      expect(res.status, res.text).toBe(402)
      expect(res.json.code).toBe("insufficient_credit")
    }
    expect(await ledger(t.apiKey)).toEqual([])
    expect((await api.get("/v1/billing/me/balance", t.apiKey)).json.data.balance).toBe("0.00")
  })

  it("answers exactly as many concurrent lookups as each tenant's balance covers, and never goes below zero", async () => {
    // Two tenants at once: their debits share statements, each against its own balance.
    const covered = [7, 3]
    const tenants = await Promise.all(covered.map((n) => api.createTenant({ credits: (n * Number(price)).toFixed(4) })))
    const answers = await Promise.all(tenants.map((t) => Promise.all(Array.from({ length: 25 }, (_, i) => lookup(i % 2 ? "8.8.8.8" : "2001:4860:4860::8888", t.apiKey)))))
    for (const [i, t] of tenants.entries()) {
      const statuses = answers[i]!.map((a) => a.status)
      expect(statuses.filter((s) => s === 200)).toHaveLength(covered[i]!)
      expect(statuses.filter((s) => s === 402)).toHaveLength(25 - covered[i]!)
      const entries = (await ledger(t.apiKey)).reverse()
      expect(entries).toHaveLength(covered[i]!)
      expect(Number(entries.at(-1).balanceAfter)).toBe(0)
      expect(Number((await api.get("/v1/billing/me/balance", t.apiKey)).json.data.balance)).toBe(0)
    }
  })

  it("ip/me answers the TCP peer and ignores X-Forwarded-For without TRUST_PROXY", async () => {
    const res = await api.call("GET", "/v1/network/ip/me", { key, headers: { "x-forwarded-for": "8.8.8.8" } })
    expect(res.status).toBe(200)
    expect(res.json.data).toEqual({ ip: "127.0.0.1", found: false, country: null, countryName: null })
  })
})

describe.each(backends())("IP geolocation behind a trusted proxy, and without a database ($name)", (backend) => {
  let proxied: RunningServer
  let missing: RunningServer

  beforeAll(async () => {
    proxied = await startServer({ ...(await backend.env()), TRUST_PROXY: "127.0.0.1, 10.0.0.0/8" })
    missing = await startServer({ ...(await backend.env()), GEOIP_DB_PATH: join(tmpdir(), `no-such-file-${process.pid}.mmdb`) })
  })
  afterAll(async () => {
    await proxied?.stop()
    await missing?.stop()
  })

  it("believes X-Forwarded-For from a trusted peer, right-most untrusted address first", async () => {
    const api = client(proxied.baseUrl)
    const { apiKey } = await api.createTenant({ credits: "1.00" })
    const me = (forwardedFor?: string) =>
      api.call("GET", "/v1/network/ip/me", { key: apiKey, headers: forwardedFor === undefined ? {} : { "x-forwarded-for": forwardedFor } })
    // The client spoofs 9.9.9.9; the trusted proxies (10.1.1.1, then the peer) add what they saw.
    expect((await me("9.9.9.9, 8.8.8.8, 10.1.1.1")).json.data).toEqual({ ip: "8.8.8.8", found: true, country: "US", countryName: "United States" })
    expect((await me("2001:4860:4860::8888")).json.data).toMatchObject({ ip: "2001:4860:4860::8888", found: true, country: "US" })
    // Every hop trusted: the left-most one.
    expect((await me("10.2.2.2, 10.1.1.1")).json.data).toMatchObject({ ip: "10.2.2.2", found: false })
    // A hop that is not an address is not believed, nor anything left of it: the proxy that sent it is the client.
    expect((await me("8.8.8.8, not-an-ip")).json.data).toMatchObject({ ip: "127.0.0.1", found: false })
    expect((await me()).json.data).toMatchObject({ ip: "127.0.0.1", found: false })
  })

  it("records the same client address on sessions", async () => {
    const api = client(proxied.baseUrl)
    const email = `proxied-${Date.now()}@example.com`
    await api.createTenant({ ownerEmail: email })
    const login = await api.call("POST", "/v1/iam/auth/login", {
      body: { email, password: "correct horse battery" },
      headers: { "x-forwarded-for": "6.6.6.6, 2a00:1450:4001::1" }
    })
    expect(login.status, login.text).toBe(200)
    const sessions = await api.call("GET", "/v1/iam/users/me/sessions", { headers: { authorization: `Bearer ${login.json.data.sessionId}` } })
    expect(sessions.status, sessions.text).toBe(200)
    expect(sessions.json.data.items.map((i: any) => i.ip)).toEqual(["2a00:1450:4001::1"])
  })

  it("starts without its database and answers 503 dependency_unavailable with Retry-After, debiting nothing", async () => {
    const api = client(missing.baseUrl)
    const { apiKey } = await api.createTenant({ credits: "1.00" })
    for (const path of ["/v1/network/ip/lookup?ip=8.8.8.8", "/v1/network/ip/me"]) {
      const res = await api.get(path, apiKey)
      expect(res.status, res.text).toBe(503)
      expect(res.json.code).toBe("dependency_unavailable")
      expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0)
      // The operator's details (the file's path, the OS error) stay in the log.
      expect(res.json.error.message).not.toMatch(/ENOENT|\.mmdb|\//)
    }
    // Malformed input is still 400: the query is checked first.
    expect((await api.get("/v1/network/ip/lookup?ip=nope", apiKey)).status).toBe(400)
    expect((await api.get("/v1/billing/me/transactions?serviceKey=network.ip", apiKey)).json.data.items).toEqual([])
    // Other routes are served.
    expect((await api.get("/v1/billing/me/balance", apiKey)).status).toBe(200)
  })
})
