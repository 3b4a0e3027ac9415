import { Clock, Effect, Schedule, type Scope } from "effect"

/** How long a node believes a credential lookup (docs/identity.md, "Revocation across nodes"). */
export const CREDENTIAL_CACHE_TTL_MS = 30_000
/** How often the credentials in use are read again, in bulk. */
export const REVALIDATE_EVERY_SECONDS = 10
const MAX_ENTRIES = 50_000
/** Hashes per statement of a revalidation round. */
const REVALIDATE_CHUNK = 500

export interface CredentialCache<V> {
  /** The cached value of a credential's hash, or one read now (and kept when found); undefined when unknown. */
  readonly get: (hash: string) => Effect.Effect<V | undefined>
  /** Drops one credential (revoked, changed, ended). */
  readonly forget: (hash: string) => void
  /** Drops every credential whose value matches (all sessions of one identity). */
  readonly forgetWhere: (matches: (value: V) => boolean) => void
  /** Drops one entry that ran out for its own reasons (an idle or expired session): nothing changed in the store. */
  readonly evict: (hash: string) => void
}

interface Entry<V> {
  value: V
  until: number
  /** Used since the last revalidation round. */
  used: boolean
}

/**
 * A node's cache of credential lookups (API keys, sessions) by the credential's hash. Changes are
 * broadcast and drop entries at once (`forget`); the cache is the safety net for a notice that was
 * lost (Redis down). Every 10 s the credentials used since the last round are read again in bulk
 * (one statement per 500), so a credential in steady use is never read on a request's path (with
 * one read per request whenever its entry expired, 1,500 sessions cost 1,500 statements every
 * 30 s) and a lost notice is healed within 10 s for it; an unused entry expires after 30 s.
 * A read that raced a drop of its credential is used once and not kept: it may have read the row
 * from before the change. Only that credential's reads are passed over (a round's other entries
 * are renewed), so drops elsewhere cannot hold the rounds up.
 */
export const makeCredentialCache = <Row, V>(options: {
  /** The live rows of these hashes, by hash; a hash without a row is unknown, revoked or ended. */
  readonly read: (hashes: ReadonlyArray<string>) => Effect.Effect<ReadonlyMap<string, Row>>
  /** The cached value of a row; `previous` is the value it replaces on revalidation. */
  readonly build: (row: Row, previous: V | undefined) => V
}): Effect.Effect<CredentialCache<V>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const entries = new Map<string, Entry<V>>()
    /** The read in flight for a hash that was not cached; a drop of the hash takes it away. */
    const missReads = new Map<string, object>()
    /** Drops by value (forgetWhere) cannot name their hashes: any of them passes over every read in flight. */
    let dropsByValue = 0

    const keep = (hash: string, value: V, now: number) => {
      if (entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value!)
      entries.set(hash, { value, until: now + CREDENTIAL_CACHE_TTL_MS, used: false })
    }

    // The times are the Effect clock's, so that tests can move it.
    const get = (hash: string): Effect.Effect<V | undefined> =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const entry = entries.get(hash)
        if (entry && entry.until > now) {
          entry.used = true
          return Effect.succeed(entry.value)
        }
        const marker = {}
        missReads.set(hash, marker)
        const dropsBefore = dropsByValue
        return Effect.map(options.read([hash]), (rows) => {
          const undropped = missReads.get(hash) === marker && dropsByValue === dropsBefore
          const row = rows.get(hash)
          if (row === undefined) {
            entries.delete(hash)
            return undefined
          }
          const value = options.build(row, entry?.value)
          if (undropped) keep(hash, value, now)
          return value
        }).pipe(Effect.ensuring(Effect.sync(() => {
          if (missReads.get(hash) === marker) missReads.delete(hash)
        })))
      })

    const revalidateChunk = (chunk: ReadonlyArray<readonly [string, Entry<V>]>) =>
      Effect.map(Effect.zip(options.read(chunk.map(([hash]) => hash)), Clock.currentTimeMillis), ([rows, now]) => {
        const until = now + CREDENTIAL_CACHE_TTL_MS
        for (const [hash, entry] of chunk) {
          // Dropped (or read again by a request) since the round began: what was read may predate the change.
          if (entries.get(hash) !== entry) continue
          const row = rows.get(hash)
          if (row === undefined) entries.delete(hash)
          else {
            entry.value = options.build(row, entry.value)
            entry.until = until
            entry.used = false
          }
        }
      })

    const revalidate = Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const inUse: Array<readonly [string, Entry<V>]> = []
      for (const [hash, entry] of entries) {
        if (entry.used) inUse.push([hash, entry])
        else if (entry.until <= now) entries.delete(hash)
      }
      const chunks = Array.from({ length: Math.ceil(inUse.length / REVALIDATE_CHUNK) }, (_, i) => inUse.slice(i * REVALIDATE_CHUNK, (i + 1) * REVALIDATE_CHUNK))
      // One statement after the other: the embedded database is a single session.
      return Effect.forEach(chunks, revalidateChunk, { discard: true })
    }).pipe(Effect.ignoreCause({ log: "Warn", message: "credential cache not revalidated" }))
    yield* revalidate.pipe(Effect.repeat(Schedule.spaced(`${REVALIDATE_EVERY_SECONDS} seconds`)), Effect.forkScoped)

    return {
      get,
      forget: (hash) => {
        missReads.delete(hash)
        entries.delete(hash)
      },
      forgetWhere: (matches) => {
        dropsByValue++
        for (const [hash, entry] of entries) if (matches(entry.value)) entries.delete(hash)
      },
      evict: (hash) => {
        entries.delete(hash)
      }
    }
  })
