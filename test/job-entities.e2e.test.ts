/**
 * A job's entity leaves the node's memory soon after the job ends. A runner keeps at most 10 000
 * entities; if each stayed a minute after its job, a node would be capped at about 170 jobs a
 * second and jobs beyond the cap would wait in storage.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { RESOURCE_ENTITY_IDLE } from "../src/actors/cluster.ts"
import { type FixtureSite, loopbackOnlyEnv, startFixtureSite } from "./support/fixture-site.ts"
import { client, INTERNAL_TOKEN, type RunningServer, startServer } from "./support/server-process.ts"

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe("job entities on a node", () => {
  let server: RunningServer
  let site: FixtureSite
  let api: ReturnType<typeof client>
  beforeAll(async () => {
    site = await startFixtureSite({ hosts: ["127.0.0.1", "127.0.0.2", "127.0.0.3"] })
    server = await startServer({ ALLOW_PRIVATE_TARGETS: "true", ...loopbackOnlyEnv() })
    api = client(server.baseUrl)
  })
  afterAll(async () => {
    await server?.stop()
    await site?.close()
  })

  const activeEntities = async () =>
    (await api.call("GET", "/internal/v1/cluster", { token: INTERNAL_TOKEN })).json.data.entities.activeOnThisNode as number

  it(`are released within seconds of their jobs' end (idle time ${RESOURCE_ENTITY_IDLE})`, async () => {
    const t = await api.createTenant()
    const before = await activeEntities()
    const jobs = Array.from({ length: 30 }, (_, i) => ({ url: site.url(`/page?entity=${i}`, i % 3) }))
    const res = await api.post("/v1/scraper/jobs/bulk", { jobs }, t.apiKey)
    expect(res.status, res.text).toBe(201)
    const ids = (res.json.data.created as Array<{ id: string }>).map((j) => j.id)
    for (const id of ids) {
      for (let i = 0; (await api.get(`/v1/scraper/jobs/${id}`, t.apiKey)).json.data.status !== "done"; i++) {
        if (i > 200) throw new Error(`job ${id} did not end`)
        await sleep(100)
      }
    }
    const whenDone = await activeEntities()
    expect(whenDone).toBeGreaterThanOrEqual(before + 30)
    // Within 20 s (a minute's idle time would keep all 30) the job entities are gone again.
    let now = whenDone
    for (let i = 0; i < 40 && now > before + 5; i++) {
      await sleep(500)
      now = await activeEntities()
    }
    expect(now).toBeLessThanOrEqual(before + 5)
  }, 60_000)
})
