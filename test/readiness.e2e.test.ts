/**
 * Readiness with its database check failing (test/support/fault-server.ts, `database-unready`: the
 * HealthRepoTest(false) layer in place of the live ping): /readyz answers 503 naming the check,
 * with Retry-After, while liveness still answers. The ready case is in test/foundation.e2e.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { client, type RunningServer, startServer } from "./support/server-process.ts"

describe("readiness when the database does not answer its probe", () => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startServer({}, { fault: "database-unready" })
  }, 120_000)
  afterAll(async () => {
    await server?.stop()
  })

  it("is 503 dependency_unavailable with the failed check, and the node stays alive", async () => {
    const api = client(server.baseUrl)
    const ready = await api.get("/readyz")
    expect(ready.status).toBe(503)
    expect(ready.json).toMatchObject({
      status: "error",
      code: "dependency_unavailable",
      error: { message: "not ready", checks: { database: false, cluster: true, redis: "not_configured" } }
    })
    expect(ready.headers.get("retry-after")).toBe("5")
    expect((await api.get("/healthz")).status).toBe(200)
  })
})
