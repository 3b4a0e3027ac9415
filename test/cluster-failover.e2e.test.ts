import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { shardLockNamespace } from "../src/actors/cluster-info.ts"
import { query } from "./support/databases.ts"
import { client, createTestDatabase, freePort, INTERNAL_TOKEN, type RunningServer, startServer } from "./support/server-process.ts"

const baseUrl = process.env.DATABASE_URL

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/**
 * Runs `f` while a session on another database of the same server (another installation, another
 * test) holds advisory locks with the numbers of this cluster's 16 shard locks. Advisory locks
 * belong to their database, so they must not show in this cluster's view.
 */
const whileAnotherDatabaseHoldsShardLocks = <A>(f: () => Promise<A>) =>
  Effect.runPromise(
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const namespace = shardLockNamespace | 0 // pg_advisory_lock(int4, int4) takes it signed
      for (let shard = 1; shard <= 16; shard++) yield* sql.unsafe(`SELECT pg_advisory_lock(${namespace}, ${1_000_000 + shard})`)
      const result = yield* Effect.promise(f)
      yield* sql.unsafe("SELECT pg_advisory_unlock_all()")
      return result
    }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(baseUrl!), maxConnections: 1 })), Effect.scoped)
  )

// Two runners need a PostgreSQL server they can share; the embedded database serves one runner only.
describe.skipIf(!baseUrl)("two runners sharing one PostgreSQL", () => {
  let dbUrl: string
  let a: RunningServer
  let b: RunningServer
  let portA: number
  let portB: number

  beforeAll(async () => {
    dbUrl = await createTestDatabase(baseUrl!)
    portA = await freePort()
    portB = await freePort()
    a = await startServer({ DATABASE_URL: dbUrl, RUNNER_PORT: String(portA) })
    b = await startServer({ DATABASE_URL: dbUrl, RUNNER_PORT: String(portB) })
  }, 120_000)
  afterAll(async () => {
    await a?.stop()
    await b?.stop()
  })

  const probe = (server: RunningServer, entityId: string, probeId: string, durationMs: number) =>
    client(server.baseUrl).call("POST", "/internal/v1/cluster/probe", {
      token: INTERNAL_TOKEN,
      body: { entityId, probeId, durationMs }
    })

  it("routes between nodes, and moves a killed node's entities and durable messages to the survivor", async () => {
    const runnerB = `127.0.0.1:${portB}`
    // Shards are rebalanced when B joins; wait until some entity answers from B through A.
    const onB: Array<string> = []
    const deadline = Date.now() + 60_000
    while (onB.length < 2 && Date.now() < deadline) {
      for (let i = 0; i < 40 && onB.length < 2; i++) {
        const res = await probe(a, `probe-${i}`, `warm-${Date.now()}-${i}`, 0)
        expect(res.status).toBe(200)
        if (res.json.data.runner === runnerB && !onB.includes(`probe-${i}`)) onB.push(`probe-${i}`)
      }
      if (onB.length < 2) await sleep(1000)
    }
    expect(onB, "B never hosted two entities").toHaveLength(2)
    const [busyEntity, otherEntity] = onB as [string, string]

    // The cluster view from A: both runners healthy, the 16 shards split between A and B's session.
    const runnerA = `127.0.0.1:${portA}`
    const view = async () => (await client(a.baseUrl).call("GET", "/internal/v1/cluster", { token: INTERNAL_TOKEN })).json.data
    const before = await whileAnotherDatabaseHoldsShardLocks(view)
    expect(before.runners.filter((r: any) => r.healthy).map((r: any) => r.address).sort()).toEqual([runnerA, runnerB].sort())
    expect(before.shards.reduce((n: number, s: any) => n + s.count, 0)).toBe(16)
    expect(before.shards.find((s: any) => s.runner === runnerA)?.count).toBeGreaterThan(0)
    expect(before.shards.filter((s: any) => s.runner !== runnerA)).toHaveLength(1)

    // A durable message that B is working on when it dies.
    const slowId = `slow-${Date.now()}`
    const slow = probe(a, busyEntity, slowId, 6000)
    await sleep(1500)
    const runs = await query<{ runner: string }>(dbUrl, `SELECT runner FROM cluster_probe_runs WHERE probe_id = '${slowId}'`)
    expect(runs.map((r) => r.runner)).toEqual([runnerB])

    await b.stop("SIGKILL")
    const killedAt = Date.now()
    // While B's shards wait for a new holder, the view still accounts for all 16 (those of no
    // runner as `runner: null`).
    const during = await view()
    expect(during.shards.reduce((n: number, s: any) => n + s.count, 0), JSON.stringify(during.shards)).toBe(16)

    // Another entity of B's (not queued behind the slow message) is served by A within 10 s.
    let servedAfterMs: number | undefined
    for (let i = 0; i < 100 && servedAfterMs === undefined; i++) {
      const res = await probe(a, otherEntity, `after-${Date.now()}-${i}`, 0)
      if (res.status === 200 && res.json.data.runner !== runnerB) servedAfterMs = Date.now() - killedAt
    }
    console.log(`fail-over: B's entity served by A ${servedAfterMs} ms after SIGKILL`)
    expect(servedAfterMs).toBeDefined()
    expect(servedAfterMs!).toBeLessThanOrEqual(10_000)

    // The slow message is completed on A, and its effect is applied once.
    const done = await slow
    expect(done.status).toBe(200)
    expect(done.json.data.runner).not.toBe(runnerB)
    const effects = await query<{ runner: string }>(dbUrl, `SELECT runner FROM cluster_probe_effects WHERE probe_id = '${slowId}'`)
    expect(effects).toHaveLength(1)
    expect(effects[0]!.runner).toBe(done.json.data.runner)

    // A's view: B is no longer healthy, and A holds every shard.
    const after = await view()
    // B is listed unhealthy, or already gone from the runners' table; either way it is not healthy.
    const listedB = after.runners.find((r: any) => r.address === runnerB)
    expect(listedB === undefined || listedB.healthy === false, JSON.stringify(listedB)).toBe(true)
    expect(after.shards).toEqual([{ group: "default", runner: runnerA, count: 16 }])
  }, 120_000)
})
