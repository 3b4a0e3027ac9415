import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { Config } from "../config.ts"
import { IDEMPOTENCY_TTL_HOURS } from "../schema/common.ts"
import { newId } from "../ids.ts"
import { NODE_APPLICATION_NAME } from "./database.ts"

/**
 * A claimed key whose request has stored nothing after this long was left by a node that died
 * mid-request; the next request with the key runs. A request that is still working (a bulk
 * request waiting on slow name lookups, say) renews its claim meanwhile (every 15 s). A claim
 * whose node is known to be gone is free before that (see `holderGone`).
 */
export const ABANDONED_CLAIM_SECONDS = 60

/** A claim won: the seed the request derives its ids from, and whether an earlier try of the same request held it. */
export interface Claim {
  readonly seed: string
  readonly resumed: boolean
}

export interface StoredKey {
  readonly request_hash: string
  /** Null while the request has stored no response. */
  readonly status_code: number | null
  /** The stored response, sealed by the caller. */
  readonly response: string | null
  /** Nobody holds the claim (see `free` below). */
  readonly free: boolean
}

/** The rows of `idempotency_keys`: one per (tenant, key), claimed by one request at a time (see http/idempotency.ts). */
export interface IdempotencyRepoShape {
  readonly deleteExpired: Effect.Effect<void, SqlError.SqlError>
  /**
   * Claims the key for the request `hash` as holder `token`: a new claim, or a free one taken over.
   * The same request taking over keeps the key's seed, so it derives the ids an earlier try may
   * have written; another body gets a new seed. Undefined when someone else holds the key.
   */
  readonly claim: (tenantId: string, key: string, hash: string, token: string) => Effect.Effect<Claim | undefined>
  /** The key's row, unless it is past its 24 h. */
  readonly find: (tenantId: string, key: string) => Effect.Effect<StoredKey | undefined>
  /** Moves the claim's age back to now, while the holder's request runs. */
  readonly renewClaim: (tenantId: string, key: string, token: string) => Effect.Effect<void, SqlError.SqlError>
  /** Frees the claim (its request failed), keeping the seed. */
  readonly freeClaim: (tenantId: string, key: string, token: string) => Effect.Effect<void, SqlError.SqlError>
  readonly storeResponse: (tenantId: string, key: string, token: string, status: number, response: string) => Effect.Effect<void>
}

export class IdempotencyRepo extends Context.Service<IdempotencyRepo, IdempotencyRepoShape>()("trawl/IdempotencyRepo") {}

export const IdempotencyRepoLive = Layer.effect(
  IdempotencyRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { databaseUrl } = yield* Config

    /**
     * The claim's node is gone. On PostgreSQL: it has no database session left, which a node keeps
     * while it lives (its runner's lock session) and loses the moment its process dies, so a
     * retry after a crash is not kept waiting a minute. The embedded database serves one process,
     * so there a claim made by any other process was made by an earlier, ended one. A node wrongly
     * taken for gone (its sessions cut by a database failover) costs what a slow one does: its
     * successor resumes from the same seed.
     */
    const holderGone = databaseUrl === undefined
      ? sql`claim_node <> ${NODE_APPLICATION_NAME}`
      : sql`claim_node <> ${NODE_APPLICATION_NAME} AND NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = claim_node)`

    /**
     * A claim nobody holds: its request failed (and freed it, keeping the seed), its node is gone,
     * or it has not been renewed in time (its node died, or stalled). A claim with neither token
     * nor seed was made before these columns existed and is still held until it is that old.
     */
    const free = sql`((claim_token IS NULL AND id_seed IS NOT NULL) OR created_at < now() - ${ABANDONED_CLAIM_SECONDS} * interval '1 second' OR (claim_node IS NOT NULL AND ${holderGone}))`
    const held = (tenantId: string, key: string, token: string) => sql`tenant_id = ${tenantId} AND key = ${key} AND claim_token = ${token}`

    return IdempotencyRepo.of({
      deleteExpired: sql`DELETE FROM idempotency_keys WHERE created_at < now() - ${IDEMPOTENCY_TTL_HOURS} * interval '1 hour'`.pipe(Effect.asVoid),
      claim: (tenantId, key, hash, token) =>
        Effect.gen(function*() {
          yield* sql`DELETE FROM idempotency_keys WHERE tenant_id = ${tenantId} AND key = ${key}
                     AND created_at < now() - ${IDEMPOTENCY_TTL_HOURS} * interval '1 hour'`
          const seed = newId("seed")
          const inserted = yield* sql<{ id_seed: string }>`
            INSERT INTO idempotency_keys (tenant_id, key, request_hash, id_seed, claim_token, claim_node)
            VALUES (${tenantId}, ${key}, ${hash}, ${seed}, ${token}, ${NODE_APPLICATION_NAME})
            ON CONFLICT (tenant_id, key) DO NOTHING RETURNING id_seed`
          if (inserted.length > 0) return { seed, resumed: false } satisfies Claim
          const [takenOver] = yield* sql<{ id_seed: string; resumed: boolean }>`
            UPDATE idempotency_keys k SET created_at = now(), claim_token = ${token}, claim_node = ${NODE_APPLICATION_NAME},
              id_seed = CASE WHEN old.resumed THEN k.id_seed ELSE ${seed} END,
              request_hash = ${hash}
            FROM (SELECT request_hash = ${hash} AND id_seed IS NOT NULL AS resumed FROM idempotency_keys
                  WHERE tenant_id = ${tenantId} AND key = ${key} FOR UPDATE) old
            WHERE k.tenant_id = ${tenantId} AND k.key = ${key} AND k.status_code IS NULL AND ${free}
            RETURNING k.id_seed, old.resumed`
          return takenOver ? ({ seed: takenOver.id_seed, resumed: takenOver.resumed } satisfies Claim) : undefined
        }).pipe(Effect.orDie),
      find: (tenantId, key) =>
        sql<StoredKey>`
          SELECT request_hash, status_code, response, ${free} AS free FROM idempotency_keys WHERE tenant_id = ${tenantId} AND key = ${key}
            AND created_at >= now() - ${IDEMPOTENCY_TTL_HOURS} * interval '1 hour'`.pipe(
          Effect.orDie,
          Effect.map((rows) => rows[0])
        ),
      renewClaim: (tenantId, key, token) =>
        sql`UPDATE idempotency_keys SET created_at = now() WHERE ${held(tenantId, key, token)} AND status_code IS NULL`.pipe(Effect.asVoid),
      freeClaim: (tenantId, key, token) =>
        sql`UPDATE idempotency_keys SET claim_token = NULL WHERE ${held(tenantId, key, token)} AND status_code IS NULL`.pipe(Effect.asVoid),
      storeResponse: (tenantId, key, token, status, response) =>
        sql`UPDATE idempotency_keys SET status_code = ${status}, response = ${response} WHERE ${held(tenantId, key, token)}`.pipe(
          Effect.orDie,
          Effect.asVoid
        )
    })
  })
)

/** Keys in memory, for unit tests of the Idempotency service; ages are read on Effect's Clock. */
export const IdempotencyRepoTest: Layer.Layer<IdempotencyRepo> = Layer.sync(IdempotencyRepo, () => {
  interface Row {
    requestHash: string
    seed: string
    token: string | null
    createdAt: number
    statusCode: number | null
    response: string | null
  }
  const rows = new Map<string, Row>()
  const id = (tenantId: string, key: string) => `${tenantId}\u0000${key}`
  const now = Clock.currentTimeMillis
  const isFree = (r: Row, at: number) => r.token === null || r.createdAt < at - ABANDONED_CLAIM_SECONDS * 1000
  const expired = (r: Row, at: number) => r.createdAt < at - IDEMPOTENCY_TTL_HOURS * 3_600_000
  const held = (tenantId: string, key: string, token: string) => {
    const r = rows.get(id(tenantId, key))
    return r && r.token === token ? r : undefined
  }
  return IdempotencyRepo.of({
    deleteExpired: Effect.map(now, (at) => {
      for (const [k, r] of rows) if (expired(r, at)) rows.delete(k)
    }),
    claim: (tenantId, key, hash, token) =>
      Effect.map(now, (at): Claim | undefined => {
        const existing = rows.get(id(tenantId, key))
        if (!existing || expired(existing, at)) {
          const seed = newId("seed")
          rows.set(id(tenantId, key), { requestHash: hash, seed, token, createdAt: at, statusCode: null, response: null })
          return { seed, resumed: false }
        }
        if (existing.statusCode !== null || !isFree(existing, at)) return undefined
        const resumed = existing.requestHash === hash
        Object.assign(existing, { createdAt: at, token, requestHash: hash, seed: resumed ? existing.seed : newId("seed") })
        return { seed: existing.seed, resumed }
      }),
    find: (tenantId, key) =>
      Effect.map(now, (at) => {
        const r = rows.get(id(tenantId, key))
        return r && !expired(r, at) ? { request_hash: r.requestHash, status_code: r.statusCode, response: r.response, free: isFree(r, at) } : undefined
      }),
    renewClaim: (tenantId, key, token) =>
      Effect.map(now, (at) => {
        const r = held(tenantId, key, token)
        if (r && r.statusCode === null) r.createdAt = at
      }),
    freeClaim: (tenantId, key, token) =>
      Effect.sync(() => {
        const r = held(tenantId, key, token)
        if (r && r.statusCode === null) r.token = null
      }),
    storeResponse: (tenantId, key, token, status, response) =>
      Effect.sync(() => {
        const r = held(tenantId, key, token)
        if (r) Object.assign(r, { statusCode: status, response })
      })
  })
})
