import { Effect, Layer, Option } from "effect"
import { ClusterError, MessageStorage, ShardId, Snowflake, SqlMessageStorage } from "effect/cluster"
import { SqlClient } from "effect/sql"
import { makeGroupCommit } from "./group-commit.ts"
import { OID, pgArray } from "./pg-array.ts"

type Encoded = MessageStorage.Encoded
type SaveEnvelope = Parameters<Encoded["saveEnvelope"]>[0]
type Reply = Parameters<Encoded["saveReply"]>[0]
type RequestEnvelope = SaveEnvelope & { readonly envelope: { readonly _tag: "Request" } }
type FinalReply = Reply & { readonly _tag: "WithExit" }

/** The most messages or replies one batched statement carries. */
const MAX_BATCH = 128

/**
 * The library's SQL message storage (tables `cluster_*`, its own migrations, the same rows) with
 * the two writes every persisted message makes batched: new requests without a primary key
 * (every job's `Run`, every webhook attempt) and final replies. Concurrent ones share one
 * statement (group commit), and a final reply and its request's `processed` mark are written by
 * one statement instead of a transaction of four. Everything else, and any write made inside a
 * transaction, goes to the library as is.
 *
 * The storage read that delivers persisted messages (also to local entities) names its clock
 * reading in the statement's text, so each read was a statement never seen before: parsed and
 * planned again, and pushed out of the prepared-statement cache. The reading is rounded down to
 * the second, so the statement repeats for a second; a message due later within that second is
 * delivered on the next read.
 */
export const MessageStorageLive = Layer.effect(
  MessageStorage.MessageStorage,
  Effect.gen(function*() {
    const client = yield* SqlClient.SqlClient
    const sql = client.withoutTransforms()
    const library = yield* SqlMessageStorage.makeEncodedStorage()
    const inTransaction = Effect.map(Effect.serviceOption(client.transactionService), Option.isSome)

    const saveRequests = (batch: ReadonlyArray<RequestEnvelope>) => {
      const col = (f: (e: RequestEnvelope["envelope"] & Record<string, any>, s: RequestEnvelope) => unknown) =>
        batch.map((s) => f(s.envelope as RequestEnvelope["envelope"] & Record<string, any>, s))
      return sql`
        INSERT INTO cluster_messages (id, shard_id, entity_type, entity_id, kind, tag, payload, headers, trace_id, span_id,
                                      sampled, request_id, deliver_at)
        SELECT id::bigint, shard_id, entity_type, entity_id, 0, tag, payload, headers, trace_id, span_id, sampled, id::bigint,
               deliver_at::bigint
        FROM unnest(
          ${pgArray(col((e) => e.requestId), OID.text)}, ${pgArray(col((e) => ShardId.toString(e.address.shardId)), OID.text)},
          ${pgArray(col((e) => e.address.entityType), OID.text)}, ${pgArray(col((e) => e.address.entityId), OID.text)},
          ${pgArray(col((e) => e.tag), OID.text)}, ${pgArray(col((e) => JSON.stringify(e.payload)), OID.text)},
          ${pgArray(col((e) => JSON.stringify(e.headers)), OID.text)}, ${pgArray(col((e) => e.traceId ?? null), OID.text)},
          ${pgArray(col((e) => e.spanId ?? null), OID.text)}, ${pgArray(col((e) => e.sampled ?? null), OID.bool)},
          ${pgArray(col((_, s) => (s.deliverAt === null ? null : String(s.deliverAt))), OID.text)}
        ) AS m(id, shard_id, entity_type, entity_id, tag, payload, headers, trace_id, span_id, sampled, deliver_at)`.pipe(
        Effect.as(batch.map(() => MessageStorage.SaveResultEncoded.Success())),
        ClusterError.PersistenceError.refail
      )
    }
    const saveRequest = yield* makeGroupCommit(saveRequests, { maxBatch: MAX_BATCH })

    const saveFinalReplies = (batch: ReadonlyArray<FinalReply>) => {
      const ids = pgArray(batch.map((r) => r.id), OID.text)
      const requestIds = pgArray(batch.map((r) => r.requestId), OID.text)
      return sql`
        WITH reply AS (
          SELECT id::bigint, request_id::bigint, payload FROM unnest(${ids}, ${requestIds}, ${pgArray(batch.map((r) => JSON.stringify(r.exit)), OID.text)})
            AS r(id, request_id, payload)
        ),
        request AS (
          UPDATE cluster_messages m SET processed = TRUE, last_reply_id = reply.id FROM reply WHERE m.request_id = reply.request_id
        )
        INSERT INTO cluster_replies (id, kind, request_id, payload, sequence)
        SELECT id, 0, request_id, payload, NULL FROM reply`.pipe(Effect.as(batch.map(() => undefined)), ClusterError.PersistenceError.refail)
    }
    const saveFinalReply = yield* makeGroupCommit(saveFinalReplies, { maxBatch: MAX_BATCH })

    return yield* MessageStorage.makeEncoded({
      ...library,
      unprocessedMessages: (shardIds, now, options) => library.unprocessedMessages(shardIds, now - (now % 1000), options),
      saveEnvelope: (save) =>
        save.envelope._tag !== "Request" || save.primaryKey !== null
          ? library.saveEnvelope(save)
          : inTransaction.pipe(Effect.flatMap((inside) => inside ? library.saveEnvelope(save) : saveRequest(save as RequestEnvelope))),
      saveReply: (reply) =>
        reply._tag !== "WithExit"
          ? library.saveReply(reply)
          : inTransaction.pipe(Effect.flatMap((inside) => inside ? library.saveReply(reply) : saveFinalReply(reply as FinalReply)))
    })
  })
).pipe(
  Layer.provide(SqlMessageStorage.layerMigrations({})),
  Layer.provide(Snowflake.layerGenerator)
)
