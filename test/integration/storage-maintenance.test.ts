import { Effect, Layer } from "effect"
import { MachineId, Snowflake, SqlMessageStorage } from "effect/cluster"
import { SqlClient } from "effect/sql"
import { describe, expect, it } from "vitest"
import { NodeCrypto } from "@effect/platform-node"
import { maintainStorage, MESSAGE_RETENTION_HOURS } from "../../src/actors/storage-maintenance.ts"
import { runMigrations } from "../../src/sql/migrate.ts"
import type { loadConfig } from "../../src/config.ts"
import { databaseLayer, testDatabases } from "../support/databases.ts"

const layerFor = (config: ReturnType<typeof loadConfig>) =>
  // The cluster's own tables, as a runner creates them at start.
  SqlMessageStorage.layerMigrations({}).pipe(
    Layer.provide(NodeCrypto.layerDigest),
    Layer.provideMerge(databaseLayer(config))
  )

const idAt = (ageHours: number, sequence: number) =>
  String(Snowflake.make({ timestamp: Date.now() - ageHours * 3_600_000, machineId: MachineId.make(1), sequence }))

describe.each(testDatabases)("storage maintenance ($name)", (db) => {
  it("deletes answered cluster messages older than the retention with their replies, and keeps the rest", async () => {
    const config = await db.config()
    await Effect.runPromise(Effect.gen(function*() {
      yield* runMigrations
      const sql = yield* SqlClient.SqlClient
      const message = (id: string, processed: boolean) => sql`
        INSERT INTO cluster_messages (id, shard_id, entity_type, entity_id, kind, tag, payload, headers, processed, request_id)
        VALUES (${id}::bigint, 'default:1', 'Job', ${`job_${id}`}, 0, 'Run', 'null', '{}', ${processed}, ${id}::bigint)`
      const reply = (id: string, requestId: string) => sql`
        INSERT INTO cluster_replies (id, kind, request_id, payload) VALUES (${id}::bigint, 0, ${requestId}::bigint, '{}')`
      const oldDone = idAt(MESSAGE_RETENTION_HOURS + 2, 1)
      const oldPending = idAt(MESSAGE_RETENTION_HOURS + 2, 2)
      const recentDone = idAt(1, 3)
      yield* message(oldDone, true)
      yield* reply(idAt(MESSAGE_RETENTION_HOURS + 2, 10), oldDone)
      yield* message(oldPending, false)
      yield* message(recentDone, true)
      yield* reply(idAt(1, 11), recentDone)

      yield* sql`INSERT INTO domain_leases (domain_id, held_until) VALUES ('old.test', now() - interval '2 hours'), ('busy.test', now() + interval '1 minute')`

      expect(yield* maintainStorage).toBe(1)
      // A domain's lease mark long past goes; a live one stays.
      expect((yield* sql<{ domain_id: string }>`SELECT domain_id FROM domain_leases`).map((r) => r.domain_id)).toEqual(["busy.test"])
      const left = yield* sql<{ id: string }>`SELECT id::text AS id FROM cluster_messages ORDER BY id`
      expect(left.map((r) => r.id).sort()).toEqual([oldPending, recentDone].sort())
      const replies = yield* sql<{ request_id: string }>`SELECT request_id::text AS request_id FROM cluster_replies`
      expect(replies.map((r) => r.request_id)).toEqual([recentDone])
      // The embedded database also got its statistics (PGlite runs no autovacuum).
      if (!config.databaseUrl) {
        const [jobs] = yield* sql<{ analyzed: boolean }>`SELECT reltuples >= 0 AS analyzed FROM pg_class WHERE relname = 'jobs'`
        expect(jobs!.analyzed).toBe(true)
      }
    }).pipe(Effect.provide(layerFor(config)), Effect.scoped))
  }, 60_000)
})
