import { Context, Effect, Layer } from "effect"
import { Kv } from "../kv/kv.ts"
import { fail, type TooManyRequests } from "../schema/errors.ts"

/**
 * Limits on guessing (docs/identity.md, "Guessing"). An account's tries (logins, TOTP and
 * recovery codes, re-authentications) are counted before the secret is read, so that parallel
 * guesses count too; a success clears the count. A client address's failures are counted after
 * the fact. Past its allowance in 15 minutes a subject is locked, each time twice as long as the
 * time before (30 s, 1 min, 2 min ... up to 15 min), and a locked subject's tries are refused
 * unread with 429 too_many_attempts and Retry-After. When a lock lapses, one more try is read, so
 * a client that waits as Retry-After says is heard; its failure locks again, for twice as long.
 */
export const ATTEMPT_WINDOW_MS = 15 * 60_000
const FIRST_LOCK_MS = 30_000
const MAX_LOCK_MS = 15 * 60_000
/** Tries of one account, failures from one address (which may stand for many people behind a proxy). */
export const ACCOUNT_ALLOWANCE = 5
export const ADDRESS_ALLOWANCE = 30

export interface AttemptsShape {
  /** Counts a try of `account` from `address`; fails while either is locked or when this try goes past the allowance. */
  readonly begin: (account: string, address: string | null) => Effect.Effect<void, TooManyRequests>
  /** Counts a failure against the address. */
  readonly failed: (address: string | null) => Effect.Effect<void>
  /** Clears the account's count and lock. */
  readonly succeeded: (account: string) => Effect.Effect<void>
}

export class Attempts extends Context.Service<Attempts, AttemptsShape>()("trawl/Attempts") {}

const key = (kind: "account" | "address", id: string, part: "n" | "lock" | "locks") => `auth:${part}:${kind}:${id.toLowerCase()}`

const tooMany = (waitMs: number) => {
  const retryAfter = Math.max(1, Math.ceil(waitMs / 1000))
  return fail(429, "too_many_attempts", `too many failed attempts; try again in ${retryAfter} s`, { retryAfter })
}

export const AttemptsLive = Layer.effect(
  Attempts,
  Effect.gen(function*() {
    const kv = yield* Kv
    const lockedFor = (lockKey: string) => Effect.map(kv.get(lockKey), (until) => Number(until ?? 0) - Date.now())
    /**
     * Counts one more against the subject; from the `lockAt`-th on, each locks it. How long it must
     * wait, or 0. One lock at a time: tries that went past the allowance together (in parallel, on
     * several nodes) are all refused by the lock the first of them set, which is twice as long as
     * the one before it only when that one had lapsed (each try setting its own, a burst of twelve
     * locked an account for 15 minutes at once).
     */
    const count = (kind: "account" | "address", id: string, lockAt: number, countedBefore: boolean) =>
      Effect.gen(function*() {
        const n = yield* kv.incr(key(kind, id, "n"), ATTEMPT_WINDOW_MS)
        if (n < lockAt - 1) return 0
        // One short of the lock, the lock is read again: a try that passed the lock check just
        // before a parallel try (on another node) locked is counted after that try set the count
        // back (below), to one short, so its count alone would let it through; the lock stops it.
        if (n < lockAt) return Math.max(yield* lockedFor(key(kind, id, "lock")), 0)
        const locks = Number((yield* kv.get(key(kind, id, "locks"))) ?? 0)
        const lockMs = Math.min(FIRST_LOCK_MS * 2 ** locks, MAX_LOCK_MS)
        if (yield* kv.setIfAbsent(key(kind, id, "lock"), String(Date.now() + lockMs), lockMs)) {
          yield* kv.incr(key(kind, id, "locks"), ATTEMPT_WINDOW_MS)
          // One try past the lock is read: a count of tries made before reading stops one short of
          // the lock, a count of failures made after it stops at the failure that locks again.
          yield* kv.set(key(kind, id, "n"), String(lockAt - (countedBefore ? 2 : 1)), ATTEMPT_WINDOW_MS)
          return lockMs
        }
        // Another try's lock stands (or lapsed this instant: this try is past the allowance all the same).
        return Math.max(yield* lockedFor(key(kind, id, "lock")), 1000)
      })
    return Attempts.of({
      begin: (account, address) =>
        Effect.gen(function*() {
          // Both locks read at once: one round trip to Redis (its client pipelines commands of one tick).
          const [accountWait, addressWait] = yield* Effect.all(
            [lockedFor(key("account", account, "lock")), address ? lockedFor(key("address", address, "lock")) : Effect.succeed(0)],
            { concurrency: "unbounded" }
          )
          const wait = Math.max(accountWait, addressWait)
          if (wait > 0) return yield* tooMany(wait)
          // Counted before the secret is read: the try past the allowance is itself refused.
          const lockMs = yield* count("account", account, ACCOUNT_ALLOWANCE + 1, true)
          if (lockMs > 0) return yield* tooMany(lockMs)
        }),
      // Counted after the fact: the failure that uses the allowance up locks, so no try past it is read.
      failed: (address) => (address ? Effect.asVoid(count("address", address, ADDRESS_ALLOWANCE, false)) : Effect.void),
      succeeded: (account) => kv.del(key("account", account, "n"), key("account", account, "lock"), key("account", account, "locks"))
    })
  })
)
