import { Context, Effect, Layer, Schedule } from "effect"
import { Config } from "../config.ts"
import { Kv } from "../kv/kv.ts"
import { SessionRepo, type SessionAuthRow } from "../sql/session-repo.ts"
import { makeCredentialCache } from "./credential-cache.ts"
import type { Principal } from "./principal.ts"
import { hashToken } from "./secrets.ts"

/** Requests a session may make per minute: sessions are for people at a screen, not for bulk work. */
export const SESSION_RATE_LIMIT_PER_MINUTE = 600

/** How often a node writes the last-seen times of the sessions it served. */
export const TOUCH_EVERY_SECONDS = 15
const TOUCH_EVERY = `${TOUCH_EVERY_SECONDS} seconds` as const
/**
 * A session's stored last-seen time is moved on only once it is this far behind (a tenth of the
 * idle timeout, at most a minute), so a session in steady use costs a row write a minute rather
 * than one every 15 s (docs/identity.md, "Sessions").
 */
const writeStepMs = (idleSeconds: number) => Math.min(60_000, idleSeconds * 100)
/** How far the stored last-seen time of a session in use may lag behind its last request. */
export const lastSeenLagSeconds = (idleSeconds: number) => TOUCH_EVERY_SECONDS + writeStepMs(idleSeconds) / 1000
const TOUCH_CHUNK = 100
export const SESSION_INVALIDATE_CHANNEL = "trawl:session-invalidate"

/** Session tokens are 43 base64url characters (256 bits). */
const tokenPattern = /^[A-Za-z0-9_-]{43}$/

export interface SessionAuthenticatorShape {
  /** The principal of a live session token, or undefined for a malformed, unknown, revoked, idle or expired one. */
  readonly authenticate: (token: string) => Effect.Effect<Principal | undefined>
  readonly hash: (token: string) => string
  /** Drops sessions from the cache of every node: by token hash, or all of one identity. */
  readonly invalidate: (target: { tokenHashes: ReadonlyArray<string> } | { identityId: string }) => Effect.Effect<void>
}

export class SessionAuthenticator extends Context.Service<SessionAuthenticator, SessionAuthenticatorShape>()(
  "trawl/SessionAuthenticator"
) {}

interface Cached {
  readonly principal: Principal
  /** When the session was last seen by any node, as far as this node knows. */
  lastSeen: number
  /** The last-seen time stored (or queued to be), which is moved on by steps. */
  stored: number
}

/**
 * Session lookups are cached per node as API keys are (credential-cache.ts); revocation publishes
 * the token hash (or the identity) and every node drops it at once, so a revoked session stops
 * working everywhere within the time of a Redis publish. Idle time is measured from the last
 * request any node saw (written in batches every 15 s).
 */
export const SessionAuthenticatorLive = Layer.effect(
  SessionAuthenticator,
  Effect.gen(function*() {
    const { secretKey, sessionIdleSeconds } = yield* Config
    const repo = yield* SessionRepo
    const kv = yield* Kv
    const idleMs = sessionIdleSeconds * 1000
    const writeStep = writeStepMs(sessionIdleSeconds)
    const lastSeen = new Map<string, Date>()
    // Written in statements of TOUCH_CHUNK sessions, one after the other: the embedded database is
    // a single session, and one statement of thousands of rows would hold every request up meanwhile.
    const flush = Effect.suspend(() => {
      if (lastSeen.size === 0) return Effect.void
      const entries = [...lastSeen]
      lastSeen.clear()
      const chunks = Array.from({ length: Math.ceil(entries.length / TOUCH_CHUNK) }, (_, i) => new Map(entries.slice(i * TOUCH_CHUNK, (i + 1) * TOUCH_CHUNK)))
      return Effect.forEach(chunks, repo.touch, { discard: true })
    })
    // A failed write (database down) loses that batch, not the loop: later batches are written.
    yield* flush.pipe(
      Effect.ignoreCause({ log: "Warn", message: "sessions' last-seen times not written" }),
      Effect.repeat(Schedule.spaced(TOUCH_EVERY)),
      Effect.forkScoped
    )
    yield* Effect.addFinalizer(() => flush)

    const hash = (token: string) => hashToken(secretKey, "session", token)

    const cache = yield* makeCredentialCache({
      read: repo.authByHashes,
      build: (row: SessionAuthRow, previous: Cached | undefined): Cached => {
        // The stored time lags up to TOUCH_EVERY behind this node's own: a session in use here must not look idle.
        const queued = lastSeen.get(row.id)?.getTime() ?? 0
        const stored = Math.max(new Date(row.last_seen_at).getTime(), queued, previous?.stored ?? 0)
        return {
          principal: {
            kind: "session",
            credentialId: row.id,
            tenantId: row.tenant_id,
            identityId: row.identity_id,
            actorId: row.identity_id,
            roleId: row.role_id,
            permissions: row.permissions,
            isInternalTenant: row.is_internal,
            rateLimitPerMinute: SESSION_RATE_LIMIT_PER_MINUTE,
            expiresAt: new Date(row.expires_at).getTime()
          },
          lastSeen: Math.max(stored, previous?.lastSeen ?? 0),
          stored
        }
      }
    })
    const forget = (message: string) => {
      if (message.startsWith("t:")) cache.forget(message.slice(2))
      else if (message.startsWith("i:")) {
        const identityId = message.slice(2)
        cache.forgetWhere((entry) => entry.principal.identityId === identityId)
      }
    }
    yield* kv.subscribe(SESSION_INVALIDATE_CHANNEL, forget)

    return SessionAuthenticator.of({
      hash,
      authenticate: (token) => {
        if (!tokenPattern.test(token)) return Effect.succeed(undefined)
        const tokenHash = hash(token)
        return Effect.map(cache.get(tokenHash), (entry) => {
          if (!entry) return undefined
          const now = Date.now()
          if (entry.principal.expiresAt! <= now || entry.lastSeen + idleMs <= now) {
            cache.evict(tokenHash)
            return undefined
          }
          entry.lastSeen = now
          if (now - entry.stored >= writeStep) {
            entry.stored = now
            lastSeen.set(entry.principal.credentialId, new Date(now))
          }
          return entry.principal
        })
      },
      invalidate: (target) => {
        const messages = "identityId" in target ? [`i:${target.identityId}`] : target.tokenHashes.map((h) => `t:${h}`)
        return Effect.forEach(messages, (message) =>
          Effect.sync(() => forget(message)).pipe(
            Effect.andThen(kv.publish(SESSION_INVALIDATE_CHANNEL, message)),
            Effect.ignoreCause({ log: "Warn", message: "session invalidation not published" })
          ), { discard: true })
      }
    })
  })
)
