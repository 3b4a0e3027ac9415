import { Context, Effect, Layer, Schedule } from "effect"
import { Config } from "../config.ts"
import { Kv } from "../kv/kv.ts"
import { ApiKeyRepo } from "../sql/api-key-repo.ts"
import { makeCredentialCache } from "./credential-cache.ts"
import type { Principal } from "./principal.ts"
import { apiKeyPattern, hashApiKey } from "./secrets.ts"

const NEGATIVE_TTL_MS = 5_000
/** Unknown keys remembered at most, apart from the known ones: a flood of made-up keys cannot push real keys out. */
const MAX_UNKNOWN = 10_000
const TOUCH_EVERY = "15 seconds"
export const INVALIDATE_CHANNEL = "trawl:api-key-invalidate"

export interface ApiKeyAuthenticatorShape {
  /** The principal of a valid key, or undefined for a malformed, unknown, revoked or expired one. */
  readonly authenticate: (raw: string) => Effect.Effect<Principal | undefined>
  /** Drops a key from the cache of every node (revocation, role or limit change). */
  readonly invalidate: (keyHash: string) => Effect.Effect<void>
  readonly hash: (raw: string) => string
}

export class ApiKeyAuthenticator extends Context.Service<ApiKeyAuthenticator, ApiKeyAuthenticatorShape>()(
  "trawl/ApiKeyAuthenticator"
) {}

/**
 * Key lookups are cached per node (credential-cache.ts), so a request costs no database round
 * trip; revocation publishes the key's hash and every node drops it at once.
 * `lastUsedAt` is collected in memory and written in one batch every 15 s.
 */
export const ApiKeyAuthenticatorLive = Layer.effect(
  ApiKeyAuthenticator,
  Effect.gen(function*() {
    const { secretKey } = yield* Config
    const repo = yield* ApiKeyRepo
    const kv = yield* Kv
    const cache = yield* makeCredentialCache({ read: repo.principalsByHash, build: (principal: Principal) => principal })
    // Hashes of keys that are not (or no longer) valid, and until when that is believed.
    const unknown = new Map<string, number>()
    // Counts the keys dropped: a lookup that was under way meanwhile may have read the row from
    // before the change (a tenant reactivated), so its "unknown" is not remembered.
    let forgets = 0
    const forget = (keyHash: string) => {
      forgets++
      cache.forget(keyHash)
      unknown.delete(keyHash)
    }
    const lastUsed = new Map<string, number>()

    yield* kv.subscribe(INVALIDATE_CHANNEL, forget)

    const flush = Effect.suspend(() => {
      if (lastUsed.size === 0) return Effect.void
      const batch = new Map([...lastUsed].map(([id, at]) => [id, new Date(at)]))
      lastUsed.clear()
      return repo.touch(batch)
    })
    // A failed write (database down) loses that batch, not the loop: later batches are written.
    yield* flush.pipe(
      Effect.ignoreCause({ log: "Warn", message: "API keys' last use not written" }),
      Effect.repeat(Schedule.spaced(TOUCH_EVERY)),
      Effect.forkScoped
    )
    yield* Effect.addFinalizer(() => flush)

    const hash = (raw: string) => hashApiKey(secretKey, raw)

    // Suspended: the cache is read when the effect runs, so one effect can be run again later.
    const authenticate = (raw: string): Effect.Effect<Principal | undefined> => Effect.suspend(() => {
      if (!apiKeyPattern.test(raw)) return Effect.succeed(undefined)
      const keyHash = hash(raw)
      const now = Date.now()
      const forgetsBefore = forgets
      const lookup = (unknown.get(keyHash) ?? 0) > now
        ? Effect.succeed(undefined)
        : Effect.map(cache.get(keyHash), (principal) => {
          if (!principal && forgets === forgetsBefore) {
            if (unknown.size >= MAX_UNKNOWN) unknown.delete(unknown.keys().next().value!)
            unknown.set(keyHash, Date.now() + NEGATIVE_TTL_MS)
          }
          return principal
        })
      return Effect.map(lookup, (principal) => {
        if (!principal) return undefined
        if (principal.expiresAt !== null && principal.expiresAt <= Date.now()) return undefined
        lastUsed.set(principal.credentialId, Date.now())
        return principal
      })
    })

    return ApiKeyAuthenticator.of({
      authenticate,
      hash,
      invalidate: (keyHash) =>
        Effect.sync(() => forget(keyHash)).pipe(
          // The change is written already: a lost notice leaves other nodes' caches at most 30 s behind (credential-cache.ts).
          Effect.andThen(kv.publish(INVALIDATE_CHANNEL, keyHash).pipe(Effect.ignoreCause({ log: "Warn", message: "key invalidation not published" })))
        )
    })
  })
)
