/**
 * A dependency lost while the node runs: requests that need it are answered
 * `503 dependency_unavailable` with `Retry-After`, in the envelope, not 500.
 * Redis, or PostgreSQL, is reached through a loopback proxy that the test cuts.
 */
import { createServer, type Server, type Socket, connect } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { client, createTestDatabase, INTERNAL_TOKEN, type RunningServer, startServer } from "./support/server-process.ts"

const redisUrl = process.env.REDIS_URL
const databaseUrl = process.env.DATABASE_URL

/** A TCP proxy on loopback to `host:port`; `cut` closes it and every connection through it. */
const startProxy = async (host: string, port: number) => {
  const sockets = new Set<Socket>()
  const server: Server = createServer((inbound) => {
    const outbound = connect(port, host)
    for (const s of [inbound, outbound]) {
      sockets.add(s)
      s.on("close", () => sockets.delete(s))
      s.on("error", () => s.destroy())
    }
    inbound.pipe(outbound).pipe(inbound)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    port: (server.address() as { port: number }).port,
    cut: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()))
      for (const s of sockets) s.destroy()
      await closed
    }
  }
}

describe.skipIf(!redisUrl)("a dependency lost while running (needs REDIS_URL)", () => {
  let server: RunningServer
  let proxy: Awaited<ReturnType<typeof startProxy>>

  beforeAll(async () => {
    const target = new URL(redisUrl!)
    proxy = await startProxy(target.hostname, Number(target.port || 6379))
    server = await startServer({ REDIS_URL: `redis://127.0.0.1:${proxy.port}` })
  }, 120_000)
  afterAll(async () => {
    await server?.stop()
  })

  it("answers 503 dependency_unavailable, with Retry-After, once Redis cannot be reached", async () => {
    const api = client(server.baseUrl)
    const tenant = (await api.call("POST", "/internal/v1/tenants", { token: INTERNAL_TOKEN, body: { name: "Outage", ownerEmail: `outage-${Date.now()}@example.com` } })).json.data
    expect((await api.get("/v1/scraper/jobs", tenant.apiKey)).status).toBe(200)

    await proxy.cut()
    // The key is still known (cached); counting the request against its rate limit needs Redis.
    const res = await api.get("/v1/scraper/jobs", tenant.apiKey)
    expect(res.status, res.text).toBe(503)
    expect(res.json).toMatchObject({ status: "error", code: "dependency_unavailable" })
    expect(res.json.error.requestId).toBe(res.headers.get("x-request-id"))
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0)
    expect(res.text).not.toMatch(/MaxRetriesPerRequest|at .*\.ts:/)
    // A route the router does not know stays a 404, its meter's failure aside.
    expect((await api.get("/v1/no-such-route", tenant.apiKey)).status).toBe(404)
  }, 60_000)
})

describe.skipIf(!databaseUrl)("the database lost while running (needs DATABASE_URL)", () => {
  let server: RunningServer
  let proxy: Awaited<ReturnType<typeof startProxy>>

  beforeAll(async () => {
    const own = new URL(await createTestDatabase(databaseUrl!))
    proxy = await startProxy(own.hostname, Number(own.port || 5432))
    own.hostname = "127.0.0.1"
    own.port = String(proxy.port)
    server = await startServer({ DATABASE_URL: own.href })
  }, 120_000)
  afterAll(async () => {
    await server?.stop("SIGKILL")
  })

  it("answers 503 dependency_unavailable, with Retry-After, once PostgreSQL cannot be reached", async () => {
    const api = client(server.baseUrl)
    const tenant = (await api.call("POST", "/internal/v1/tenants", { token: INTERNAL_TOKEN, body: { name: "Outage", ownerEmail: `outage-db-${Date.now()}@example.com` } })).json.data
    expect((await api.get("/v1/scraper/jobs", tenant.apiKey)).status).toBe(200)

    await proxy.cut()
    // The key is still known (cached); the list is read from the database.
    const res = await api.get("/v1/scraper/jobs", tenant.apiKey)
    expect(res.status, res.text).toBe(503)
    expect(res.json).toMatchObject({ status: "error", code: "dependency_unavailable" })
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0)
  }, 60_000)
})
