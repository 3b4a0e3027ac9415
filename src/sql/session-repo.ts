import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { newId } from "../ids.ts"
import { OID, pgArray } from "./pg-array.ts"
import { pageOfRows } from "./memory-search.ts"
import type { IdentityId, TenantId } from "../schema/ids.ts"

export interface SessionRow {
  readonly id: string
  readonly tenant_id: string
  readonly identity_id: string
  readonly ip: string | null
  readonly user_agent: string | null
  readonly created_at: Date
  readonly last_seen_at: Date
  readonly expires_at: Date
}

/** What authenticating a session needs: the session, its identity's role and tenant. */
export interface SessionAuthRow {
  readonly id: string
  readonly token_hash: string
  /** Branded here: the session's row is where a principal's ids enter. */
  readonly tenant_id: TenantId
  readonly identity_id: IdentityId
  readonly role_id: string
  readonly permissions: ReadonlyArray<string>
  readonly is_internal: boolean
  readonly last_seen_at: Date
  readonly expires_at: Date
}

export interface NewSession {
  readonly id: string
  readonly tokenHash: string
  readonly tenantId: string
  readonly identityId: string
  readonly ip: string | null
  readonly userAgent: string | null
  readonly expiresAt: Date
}

/** The audit entry written with a new session. */
export interface SessionAudit {
  readonly action: string
  readonly data?: Record<string, unknown>
}

export interface SessionRepoShape {
  /**
   * Writes a new session, and with `audit` its audit entry (actor: the session's identity, target:
   * the session) in the same statement: opening a session is one commit (docs/identity.md, "Sessions").
   * Nothing is read back: the caller made every value the answer needs.
   */
  readonly insert: (session: NewSession, audit?: SessionAudit) => Effect.Effect<void>
  /**
   * The live (not revoked) sessions of active identities and tenants among these token hashes, by
   * hash (one statement: the authenticator's cache reads them in bulk); times are checked by the caller.
   */
  readonly authByHashes: (tokenHashes: ReadonlyArray<string>) => Effect.Effect<ReadonlyMap<string, SessionAuthRow>>
  /**
   * The identity's sessions that are neither revoked nor past their absolute lifetime nor unseen
   * since `seenSince` (idle; `currentId` is listed whatever its stored time), newest first.
   */
  readonly listLive: (
    identityId: string,
    seenSince: Date,
    currentId: string | null,
    offset: number,
    limit: number
  ) => Effect.Effect<{ items: ReadonlyArray<SessionRow>; total: number }>
  /** Revokes one session of the identity; the token hash of a session this call revoked, else undefined. */
  /** Revokes one session of the identity; its token hash when this call revoked it, and when it was revoked. */
  readonly revoke: (identityId: string, sessionId: string) => Effect.Effect<{ found: boolean; tokenHash: string | undefined; revokedAt: Date | undefined }>
  /** Revokes every live session of the identity but `exceptId`; their token hashes. */
  readonly revokeAll: (identityId: string, exceptId: string | null) => Effect.Effect<ReadonlyArray<string>>
  /**
   * Replaces a session by a new one with the same identity and absolute expiry (refresh): the
   * old one is revoked in the same transaction; undefined when the old one was no longer live.
   */
  readonly rotate: (oldTokenHash: string, next: { id: string; tokenHash: string; ip: string | null; userAgent: string | null }) => Effect.Effect<SessionRow | undefined>
  /** Records when sessions were last seen (batched by the authenticator). */
  readonly touch: (lastSeen: ReadonlyMap<string, Date>) => Effect.Effect<void>
}

export class SessionRepo extends Context.Service<SessionRepo, SessionRepoShape>()("trawl/SessionRepo") {}

const columns = "id, tenant_id, identity_id, ip, user_agent, created_at, last_seen_at, expires_at"

export const SessionRepoLive = Layer.effect(
  SessionRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const cols = sql.literal(columns)
    /** The one INSERT of a session, used alone, before an audit entry, or with RETURNING. */
    const insertSession = (s: NewSession) =>
      sql`
        INSERT INTO sessions (id, token_hash, tenant_id, identity_id, ip, user_agent, expires_at)
        VALUES (${s.id}, ${s.tokenHash}, ${s.tenantId}, ${s.identityId}, ${s.ip}, ${s.userAgent}, ${s.expiresAt})`
    return SessionRepo.of({
      insert: (s, audit) =>
        (audit === undefined
          ? insertSession(s)
          : sql`
            WITH opened AS (${insertSession(s)})
            INSERT INTO audit_log (id, tenant_id, actor_id, ip, action, target_id, data)
            VALUES (${newId("aud")}, ${s.tenantId}, ${s.identityId}, ${s.ip}, ${audit.action}, ${s.id}, ${JSON.stringify(audit.data ?? {})}::jsonb)`
        ).pipe(Effect.asVoid, Effect.orDie),
      authByHashes: (tokenHashes) =>
        sql<SessionAuthRow>`
          SELECT s.id, s.token_hash, s.tenant_id, s.identity_id, i.default_role_id AS role_id, r.permissions, t.is_internal,
                 s.last_seen_at, s.expires_at
          FROM sessions s
          JOIN identities i ON i.id = s.identity_id
          JOIN roles r ON r.id = i.default_role_id
          JOIN tenants t ON t.id = s.tenant_id
          WHERE s.token_hash = ANY(${pgArray(tokenHashes, OID.text)}) AND s.revoked_at IS NULL
            AND i.status = 'active' AND t.status = 'active'`.pipe(
          Effect.orDie,
          Effect.map((rows) => new Map(rows.map((row) => [row.token_hash, row])))
        ),
      listLive: (identityId, seenSince, currentId, offset, limit) => {
        const live = sql`identity_id = ${identityId} AND revoked_at IS NULL AND expires_at > now()
          AND (last_seen_at > ${seenSince} OR id = ${currentId})`
        return Effect.all([
          sql<SessionRow>`
            SELECT ${cols} FROM sessions WHERE ${live}
            ORDER BY created_at DESC, id DESC OFFSET ${offset} LIMIT ${limit}`,
          sql<{ n: string }>`SELECT count(*) AS n FROM sessions WHERE ${live}`
        ]).pipe(Effect.orDie, Effect.map(([items, [count]]) => ({ items, total: Number(count!.n) })))
      },
      revoke: (identityId, sessionId) =>
        Effect.gen(function*() {
          const revoked = yield* sql<{ token_hash: string; revoked_at: Date }>`
            UPDATE sessions SET revoked_at = now()
            WHERE id = ${sessionId} AND identity_id = ${identityId} AND revoked_at IS NULL
            RETURNING token_hash, revoked_at`
          if (revoked[0]) return { found: true, tokenHash: revoked[0].token_hash, revokedAt: new Date(revoked[0].revoked_at) }
          // Revoked before: its first revocation time stands.
          const [earlier] = yield* sql<{ revoked_at: Date | null }>`SELECT revoked_at FROM sessions WHERE id = ${sessionId} AND identity_id = ${identityId}`
          return { found: earlier !== undefined, tokenHash: undefined, revokedAt: earlier?.revoked_at ? new Date(earlier.revoked_at) : undefined }
        }).pipe(Effect.orDie),
      revokeAll: (identityId, exceptId) =>
        sql<{ token_hash: string }>`
          UPDATE sessions SET revoked_at = now()
          WHERE identity_id = ${identityId} AND revoked_at IS NULL AND id IS DISTINCT FROM ${exceptId}
          RETURNING token_hash`.pipe(Effect.orDie, Effect.map((rows) => rows.map((r) => r.token_hash))),
      rotate: (oldTokenHash, next) =>
        sql.withTransaction(Effect.gen(function*() {
          const [old] = yield* sql<{ tenant_id: string; identity_id: string; expires_at: Date }>`
            UPDATE sessions SET revoked_at = now()
            WHERE token_hash = ${oldTokenHash} AND revoked_at IS NULL AND expires_at > now()
            RETURNING tenant_id, identity_id, expires_at`
          if (!old) return undefined
          const [row] = yield* sql<SessionRow>`${insertSession({
            id: next.id,
            tokenHash: next.tokenHash,
            tenantId: old.tenant_id,
            identityId: old.identity_id,
            ip: next.ip,
            userAgent: next.userAgent,
            expiresAt: old.expires_at
          })} RETURNING ${cols}`
          return row!
        })).pipe(Effect.orDie),
      touch: (lastSeen) => {
        if (lastSeen.size === 0) return Effect.void
        const rows = JSON.stringify([...lastSeen].map(([id, at]) => ({ id, at: at.toISOString() })))
        // GREATEST: another node may have written a later time meanwhile.
        return sql`
          UPDATE sessions s SET last_seen_at = GREATEST(s.last_seen_at, v.at)
          FROM (SELECT * FROM jsonb_to_recordset(${rows}::jsonb) AS x(id text, at timestamptz)) AS v
          WHERE s.id = v.id`.pipe(Effect.asVoid, Effect.catchCause((cause) => Effect.logWarning("session last-seen times not written", cause)))
      }
    })
  })
)

/**
 * Sessions in memory, for unit tests of the services above: the same answers as the live
 * repository for a single caller (no identity or tenant status is checked: every identity is
 * active with the role given when the test layer is made).
 */
export const makeSessionRepoTest = (roles: { roleId: string; permissions: ReadonlyArray<string> } = { roleId: "role_test", permissions: ["*:*:*"] }) =>
  Layer.sync(SessionRepo, () => {
    type Row = { -readonly [K in keyof SessionRow]: SessionRow[K] } & { token_hash: string; revoked_at: Date | null }
    const rows = new Map<string, Row>()
    const live = (r: { revoked_at: Date | null; expires_at: Date }) => r.revoked_at === null && r.expires_at.getTime() > Date.now()
    const view = ({ token_hash: _h, revoked_at: _r, ...row }: Row): SessionRow => row
    const insert = (s: NewSession): SessionRow => {
      const now = new Date()
      const row: Row = {
        id: s.id,
        token_hash: s.tokenHash,
        tenant_id: s.tenantId,
        identity_id: s.identityId,
        ip: s.ip,
        user_agent: s.userAgent,
        created_at: now,
        last_seen_at: now,
        expires_at: s.expiresAt,
        revoked_at: null
      }
      rows.set(s.id, row)
      return view(row)
    }
    const byHash = (hash: string) => [...rows.values()].find((r) => r.token_hash === hash)
    return SessionRepo.of({
      // The audit entry written with a session is a join of the live tables, tested against the databases.
      insert: (s) => Effect.sync(() => void insert(s)),
      authByHashes: (hashes) =>
        Effect.sync(() => {
          const found = new Map<string, SessionAuthRow>()
          for (const hash of hashes) {
            const r = byHash(hash)
            if (!r || r.revoked_at !== null) continue
            found.set(hash, {
              id: r.id,
              token_hash: hash,
              tenant_id: r.tenant_id as TenantId,
              identity_id: r.identity_id as IdentityId,
              role_id: roles.roleId,
              permissions: roles.permissions,
              is_internal: false,
              last_seen_at: r.last_seen_at,
              expires_at: r.expires_at
            })
          }
          return found
        }),
      listLive: (identityId, seenSince, currentId, offset, limit) =>
        Effect.sync(() => {
          const all = [...rows.values()]
            .filter((r) => r.identity_id === identityId && live(r) && (r.last_seen_at > seenSince || r.id === currentId))
            .reverse()
          return pageOfRows(all, offset, limit, view)
        }),
      revoke: (identityId, sessionId) =>
        Effect.sync(() => {
          const r = rows.get(sessionId)
          if (!r || r.identity_id !== identityId) return { found: false, tokenHash: undefined, revokedAt: undefined }
          if (r.revoked_at !== null) return { found: true, tokenHash: undefined, revokedAt: r.revoked_at }
          r.revoked_at = new Date()
          return { found: true, tokenHash: r.token_hash, revokedAt: r.revoked_at }
        }),
      revokeAll: (identityId, exceptId) =>
        Effect.sync(() =>
          [...rows.values()].filter((r) => r.identity_id === identityId && r.revoked_at === null && r.id !== exceptId).map((r) => {
            r.revoked_at = new Date()
            return r.token_hash
          })
        ),
      rotate: (oldHash, next) =>
        Effect.sync(() => {
          const old = byHash(oldHash)
          if (!old || !live(old)) return undefined
          old.revoked_at = new Date()
          return insert({ ...next, tenantId: old.tenant_id, identityId: old.identity_id, expiresAt: old.expires_at })
        }),
      touch: (lastSeen) =>
        Effect.sync(() => {
          for (const [id, at] of lastSeen) {
            const r = rows.get(id)
            if (r && r.last_seen_at < at) r.last_seen_at = at
          }
        })
    })
  })
