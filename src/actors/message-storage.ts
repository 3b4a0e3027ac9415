import { Effect, Layer } from "effect"
import { ClusterError, MessageStorage, Snowflake, SqlMessageStorage } from "effect/cluster"
import { SqlClient } from "effect/sql"

/**
 * The library's SQL message storage (tables `cluster_*`, its own migrations) with one change:
 * the final reply to a persisted request and the request's `processed` mark are written by one
 * statement instead of a transaction of four (BEGIN, UPDATE, INSERT, COMMIT). Every job ends with
 * such a reply, so this takes three round trips off each job. The rows written are the same.
 */
export const MessageStorageLive = Layer.effect(
  MessageStorage.MessageStorage,
  Effect.gen(function*() {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const library = yield* SqlMessageStorage.makeEncodedStorage()
    return yield* MessageStorage.makeEncoded({
      ...library,
      saveReply: (reply) =>
        reply._tag !== "WithExit"
          ? library.saveReply(reply)
          : sql`
            WITH request AS (
              UPDATE cluster_messages SET processed = TRUE, last_reply_id = ${reply.id} WHERE request_id = ${reply.requestId}
            )
            INSERT INTO cluster_replies (id, kind, request_id, payload, sequence)
            VALUES (${reply.id}, 0, ${reply.requestId}, ${JSON.stringify(reply.exit)}, NULL)`.pipe(
            Effect.asVoid,
            ClusterError.PersistenceError.refail
          )
    })
  })
).pipe(
  Layer.provide(SqlMessageStorage.layerMigrations({})),
  Layer.provide(Snowflake.layerGenerator)
)
