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

describe("a bulk whose webhook URL cannot be registered for a passing reason", () => {
  let server: RunningServer

  beforeAll(async () => {
    server = await startServer({ ALLOW_PRIVATE_TARGETS: "true" }, { fault: "webhook-endpoint-outage" })
  }, 120_000)
  afterAll(async () => {
    await server?.stop()
  })

  it("fails whole with 503 (nothing created, nothing kept under its Idempotency-Key), where a quota refusal is per item", async () => {
    const api = client(server.baseUrl)
    const t = await api.createTenant()
    // Loopback port 9 (discard): the jobs that are created fail fast; the test reads only the answers.
    const body = { jobs: [{ url: "http://127.0.0.1:9/a" }, { url: "http://127.0.0.1:9/b", webhookUrl: "http://127.0.0.1:9/hooks/outage" }] }
    const send = (b: unknown) => api.call("POST", "/v1/scraper/jobs/bulk", { key: t.apiKey, body: b, headers: { "idempotency-key": "outage-bulk" } })
    const first = await send(body)
    expect(first.status, first.text).toBe(503)
    expect(first.json).toMatchObject({ status: "error", code: "dependency_unavailable" })
    expect(Number(first.headers.get("retry-after"))).toBeGreaterThan(0)
    expect((await api.get("/v1/scraper/jobs", t.apiKey)).json.data.pagination.total).toBe(0)
    // The failure was not stored as the key's answer: the same request runs again (and fails again
    // while the outage lasts), and the key is free for another body.
    expect((await send(body)).status).toBe(503)
    const other = await send({ jobs: [{ url: "http://127.0.0.1:9/a" }] })
    expect(other.status, other.text).toBe(201)
    expect((await api.get("/v1/scraper/jobs", t.apiKey)).json.data.pagination.total).toBe(1)
  }, 60_000)
})
