import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer } from "effect"
import { TestClock } from "effect/testing"
import { type AppConfig, Config } from "../../src/config.ts"
import { ApiKeyAuthenticator, ApiKeyAuthenticatorLive } from "../../src/iam/api-key-auth.ts"
import type { Principal } from "../../src/iam/principal.ts"
import { type PlainPrincipal, testPrincipal } from "../support/principal.ts"
import { generateApiKey, hashApiKey } from "../../src/iam/secrets.ts"
import { Kv, KvUnavailable, makeMemoryKv } from "../../src/kv/kv.ts"
import { ApiKeyRepo } from "../../src/sql/api-key-repo.ts"

const secretKey = Buffer.alloc(32, 9)
const { raw } = generateApiKey()
const keyHash = hashApiKey(secretKey, raw)

/** An in-memory repository layer that counts lookups and records touches. */
const makeRepo = (principal: Principal | undefined, options: { failTouches?: number } = {}) => {
  const calls = { lookups: 0, touched: [] as Array<string> }
  let failTouches = options.failTouches ?? 0
  const layer = Layer.succeed(ApiKeyRepo, ApiKeyRepo.of({
    principalsByHash: (hashes) => Effect.sync(() => {
      calls.lookups++
      return new Map(principal && hashes.includes(keyHash) ? [[keyHash, principal]] : [])
    }),
    touch: (m) => failTouches-- > 0 ? Effect.die("database down") : Effect.sync(() => void calls.touched.push(...m.keys())),
    insert: () => Effect.die("unused"),
    listByIdentity: () => Effect.die("unused"),
    find: () => Effect.die("unused"),
    update: () => Effect.die("unused"),
    revoke: () => Effect.die("unused")
  }))
  return { calls, layer }
}

const principal = (over: Partial<PlainPrincipal> = {}): Principal => testPrincipal({
  kind: "api-key",
  credentialId: "key_1",
  actorId: "idt_1",
  tenantId: "ten_1",
  identityId: "idt_1",
  roleId: "role_1",
  permissions: ["*:*:read"],
  isInternalTenant: false,
  rateLimitPerMinute: 600,
  expiresAt: null,
  ...over
})

const authLayer = (repo: Layer.Layer<ApiKeyRepo>, kv = makeMemoryKv()) =>
  ApiKeyAuthenticatorLive.pipe(
    Layer.provide(repo),
    Layer.provide(Layer.succeed(Kv, kv)),
    Layer.provide(Layer.succeed(Config, { secretKey } as AppConfig))
  )

describe("ApiKeyAuthenticator (mocked repository)", () => {
  it.effect("caches a lookup so repeated requests cost no database round trip", () => {
    const repo = makeRepo(principal())
    return Effect.gen(function*() {
      const auth = yield* ApiKeyAuthenticator
      for (let i = 0; i < 50; i++) expect((yield* auth.authenticate(raw))?.tenantId).toBe("ten_1")
      expect(repo.calls.lookups).toBe(1)
    }).pipe(Effect.provide(authLayer(repo.layer)))
  })

  it.effect("drops a key on invalidation so the next request sees the database again", () => {
    const repo = makeRepo(principal())
    return Effect.gen(function*() {
      const auth = yield* ApiKeyAuthenticator
      yield* auth.authenticate(raw)
      yield* auth.invalidate(keyHash)
      yield* Effect.yieldNow
      yield* auth.authenticate(raw)
      expect(repo.calls.lookups).toBe(2)
    }).pipe(Effect.provide(authLayer(repo.layer)))
  })

  it.effect("does not cache what a lookup read before an invalidation that came while it ran (a revocation racing a request)", () => {
    let revoked = false
    let lookups = 0
    const gate = Effect.runSync(Deferred.make<void>())
    const repo = Layer.succeed(ApiKeyRepo, ApiKeyRepo.of({
      // The first lookup reads the row from before the revocation, then is held until after it.
      principalsByHash: () => {
        lookups++
        const found = new Map(revoked ? [] : [[keyHash, principal()]])
        return lookups === 1 ? Deferred.await(gate).pipe(Effect.as(found)) : Effect.succeed(found)
      },
      touch: () => Effect.void,
      insert: () => Effect.die("unused"),
      listByIdentity: () => Effect.die("unused"),
      find: () => Effect.die("unused"),
      update: () => Effect.die("unused"),
      revoke: () => Effect.die("unused")
    }))
    return Effect.gen(function*() {
      const auth = yield* ApiKeyAuthenticator
      const racing = yield* Effect.forkChild(auth.authenticate(raw))
      yield* Effect.yieldNow
      revoked = true
      yield* auth.invalidate(keyHash)
      yield* Deferred.succeed(gate, undefined)
      // The racing request itself was under way before the revocation answered: it may pass.
      expect((yield* Fiber.join(racing))?.tenantId).toBe("ten_1")
      // Every later one reads the database again and is refused.
      expect(yield* auth.authenticate(raw)).toBeUndefined()
      expect(lookups).toBe(2)
    }).pipe(Effect.provide(authLayer(repo)))
  })

  it.effect("drops a key on invalidation even when the notice to other nodes cannot be sent (Redis out of reach)", () => {
    const repo = makeRepo(principal())
    const unreachable = { ...makeMemoryKv(), publish: () => Effect.die(new KvUnavailable("Redis cannot be reached")) }
    return Effect.gen(function*() {
      const auth = yield* ApiKeyAuthenticator
      yield* auth.authenticate(raw)
      // The key was revoked already: the revocation's answer must not turn into a failure.
      yield* auth.invalidate(keyHash)
      yield* auth.authenticate(raw)
      expect(repo.calls.lookups).toBe(2)
    }).pipe(Effect.provide(authLayer(repo.layer, unreachable)))
  })

  it.effect("keeps a known key cached through a flood of made-up keys, which are remembered apart", () => {
    const repo = makeRepo(principal())
    return Effect.gen(function*() {
      const auth = yield* ApiKeyAuthenticator
      yield* auth.authenticate(raw)
      // More unknown keys than the whole cache holds: they had pushed the real key out.
      const madeUp = Array.from({ length: 50_001 }, () => generateApiKey().raw)
      for (const k of madeUp) expect(yield* auth.authenticate(k)).toBeUndefined()
      expect(repo.calls.lookups).toBe(1 + madeUp.length)
      expect((yield* auth.authenticate(raw))?.tenantId).toBe("ten_1")
      expect(repo.calls.lookups).toBe(1 + madeUp.length)
      // A recent unknown key is answered from memory too.
      expect(yield* auth.authenticate(madeUp.at(-1)!)).toBeUndefined()
      expect(repo.calls.lookups).toBe(1 + madeUp.length)
    }).pipe(Effect.provide(authLayer(repo.layer)))
  }, 60_000)

  it.effect("refuses malformed keys without a lookup, and expired keys even when cached", () => {
    const repo = makeRepo(principal({ expiresAt: Date.now() + 100 }))
    return Effect.gen(function*() {
      const auth = yield* ApiKeyAuthenticator
      expect(yield* auth.authenticate("not-a-key")).toBeUndefined()
      expect(repo.calls.lookups).toBe(0)
      expect((yield* auth.authenticate(raw))?.credentialId).toBe("key_1")
      // The key expires while its lookup is still cached (real time: the expiry is a wall-clock instant).
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 150)))
      expect(yield* auth.authenticate(raw)).toBeUndefined()
      expect(repo.calls.lookups).toBe(1)
    }).pipe(Effect.provide(authLayer(repo.layer)))
  })

  it.effect("goes on writing lastUsedAt after a write failed (the database was down for a round)", () => {
    const repo = makeRepo(principal(), { failTouches: 1 })
    return Effect.gen(function*() {
      const auth = yield* ApiKeyAuthenticator
      yield* auth.authenticate(raw)
      yield* TestClock.adjust("15 seconds")
      yield* auth.authenticate(raw)
      yield* TestClock.adjust("15 seconds")
      expect(repo.calls.touched).toEqual(["key_1"])
    }).pipe(Effect.provide(authLayer(repo.layer)))
  })

  it.effect("writes lastUsedAt in one batch when the service stops, not per request", () => {
    const repo = makeRepo(principal())
    return Effect.gen(function*() {
      yield* Effect.gen(function*() {
        const auth = yield* ApiKeyAuthenticator
        for (let i = 0; i < 20; i++) yield* auth.authenticate(raw)
        expect(repo.calls.touched).toEqual([])
      }).pipe(Effect.provide(authLayer(repo.layer)))
      expect(repo.calls.touched).toEqual(["key_1"])
    })
  })
})
