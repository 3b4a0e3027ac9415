import { Context, Effect, Layer } from "effect"
import { Config } from "../config.ts"
import { newId } from "../ids.ts"
import { iso } from "../schema/common.ts"
import { fail, notFound, type NotFound, type Unauthenticated } from "../schema/errors.ts"
import { AuditLog } from "../sql/audit-log.ts"
import { type SessionAudit, SessionRepo } from "../sql/session-repo.ts"
import type { Principal } from "./principal.ts"
import { generateToken, hashToken } from "./secrets.ts"
import { lastSeenLagSeconds, SessionAuthenticator } from "./session-auth.ts"

/** Where a request came from, for the session list and the audit log. */
export interface ClientContext {
  readonly ip: string | null
  readonly userAgent: string | null
}

/** What a client gets when a session opens: the token (sent as `sessionId`) is shown once. */
export interface OpenedSession {
  readonly sessionId: string
  readonly expiresAt: string
  readonly csrfToken: string
  readonly requiresPasswordSetup: boolean
  /** The session's public id (listed by GET /v1/iam/users/me/sessions). */
  readonly id: string
}

export interface SessionView {
  readonly id: string
  readonly createdAt: string
  readonly lastSeenAt: string
  readonly expiresAt: string
  readonly ip: string | null
  readonly userAgent: string | null
  readonly current: boolean
}

export interface SessionServiceShape {
  /** Opens a session; with `audit`, its audit entry is written in the same commit. */
  readonly open: (
    identity: { id: string; tenant_id: string },
    client: ClientContext,
    requiresPasswordSetup: boolean,
    audit?: SessionAudit
  ) => Effect.Effect<OpenedSession>
  /** The CSRF token of a session, by its public id: a keyed hash, so nothing is stored for it. */
  readonly csrfToken: (sessionPublicId: string) => string
  /** Replaces the caller's session by a new one (same absolute expiry); the old token stops working. */
  readonly refresh: (me: Principal, token: string, client: ClientContext, requiresPasswordSetup: boolean) => Effect.Effect<OpenedSession, Unauthenticated>
  /** Ends the caller's session (its routes are SessionOnly: an API key never gets here). */
  readonly logout: (me: Principal, client: ClientContext) => Effect.Effect<void>
  readonly list: (me: Principal, offset: number, limit: number) => Effect.Effect<{ items: ReadonlyArray<SessionView>; total: number }>
  readonly revoke: (me: Principal, sessionId: string, client: ClientContext) => Effect.Effect<{ revoked: true; revokedAt: string; id: string }, NotFound>
  /** Revokes every session of the caller's identity but the one it calls with; how many. */
  readonly revokeOthers: (me: Principal, client: ClientContext) => Effect.Effect<number>
  /** Revokes every session of the identity but `exceptId` (null: all of them); how many. */
  readonly revokeAll: (identityId: string, exceptId: string | null) => Effect.Effect<number>
}

export class SessionService extends Context.Service<SessionService, SessionServiceShape>()("trawl/SessionService") {}

export const SessionServiceLive = Layer.effect(
  SessionService,
  Effect.gen(function*() {
    const config = yield* Config
    const repo = yield* SessionRepo
    const auth = yield* SessionAuthenticator
    const audit = yield* AuditLog
    const csrfToken = (id: string) => hashToken(config.secretKey, "csrf", id)
    const opened = (row: { id: string; expires_at: Date }, token: string, requiresPasswordSetup: boolean): OpenedSession => ({
      sessionId: token,
      id: row.id,
      expiresAt: iso(row.expires_at)!,
      csrfToken: csrfToken(row.id),
      requiresPasswordSetup
    })
    const revokeAll = (identityId: string, exceptId: string | null) =>
      Effect.gen(function*() {
        const hashes = yield* repo.revokeAll(identityId, exceptId)
        if (hashes.length > 0) yield* auth.invalidate({ tokenHashes: hashes })
        return hashes.length
      })

    return SessionService.of({
      csrfToken,
      open: (identity, client, requiresPasswordSetup, audit) =>
        Effect.gen(function*() {
          const token = generateToken()
          const id = newId("ses")
          const expiresAt = new Date(Date.now() + config.sessionLifetimeSeconds * 1000)
          yield* repo.insert({
            id,
            tokenHash: auth.hash(token),
            tenantId: identity.tenant_id,
            identityId: identity.id,
            ip: client.ip,
            userAgent: client.userAgent,
            expiresAt
          }, audit)
          return opened({ id, expires_at: expiresAt }, token, requiresPasswordSetup)
        }),
      refresh: (me, token, client, requiresPasswordSetup) =>
        Effect.gen(function*() {
          const next = generateToken()
          const oldHash = auth.hash(token)
          const row = yield* repo.rotate(oldHash, { id: newId("ses"), tokenHash: auth.hash(next), ip: client.ip, userAgent: client.userAgent })
          if (!row) return yield* fail(401, "unauthorized", "the session is no longer valid")
          yield* auth.invalidate({ tokenHashes: [oldHash] })
          yield* audit.write({ tenantId: me.tenantId, actorId: me.actorId, ip: client.ip, action: "session.refresh", targetId: row.id, data: { previous: me.credentialId } })
          return opened(row, next, requiresPasswordSetup)
        }),
      logout: (me, client) =>
        Effect.gen(function*() {
          const { tokenHash } = yield* repo.revoke(me.identityId, me.credentialId)
          if (tokenHash) yield* auth.invalidate({ tokenHashes: [tokenHash] })
          yield* audit.write({ tenantId: me.tenantId, actorId: me.actorId, ip: client.ip, action: "session.logout", targetId: me.credentialId })
        }),
      list: (me, offset, limit) =>
        Effect.suspend(() => {
          // Sessions idle too long are dead though not revoked; the stored last-seen time lags, so allow for that.
          const seenSince = new Date(Date.now() - (config.sessionIdleSeconds + lastSeenLagSeconds(config.sessionIdleSeconds)) * 1000)
          return repo.listLive(me.identityId, seenSince, me.kind === "session" ? me.credentialId : null, offset, limit)
        }).pipe(Effect.map(({ items, total }) => ({
          total,
          items: items.map((s) => ({
            id: s.id,
            createdAt: iso(s.created_at)!,
            lastSeenAt: iso(s.last_seen_at)!,
            expiresAt: iso(s.expires_at)!,
            ip: s.ip,
            userAgent: s.user_agent,
            current: me.kind === "session" && me.credentialId === s.id
          }))
        }))),
      revoke: (me, sessionId, client) =>
        Effect.gen(function*() {
          const { found, tokenHash, revokedAt } = yield* repo.revoke(me.identityId, sessionId)
          if (!found) return yield* notFound("session")
          if (tokenHash) {
            yield* auth.invalidate({ tokenHashes: [tokenHash] })
            yield* audit.record(me, "session.revoke", sessionId, {}, client)
          }
          // Revoking again changes nothing: the answer keeps the first revocation's time.
          return { revoked: true as const, revokedAt: (revokedAt ?? new Date()).toISOString(), id: sessionId }
        }),
      revokeOthers: (me, client) =>
        Effect.gen(function*() {
          const revoked = yield* revokeAll(me.identityId, me.kind === "session" ? me.credentialId : null)
          yield* audit.record(me, "session.revoke_others", me.identityId, { revoked }, client)
          return revoked
        }),
      revokeAll
    })
  })
)
