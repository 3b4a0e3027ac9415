/**
 * The session authenticator's last-seen writes (docs/identity.md, "Sessions"): a session's stored
 * time is moved on only once it is a step (a tenth of the idle limit) behind, so a session in
 * steady use is not written on every batch; and a node that only knows the stored time ends an
 * idle session on time, never late.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Config, configForTests } from "../../src/config.ts"
import { generateToken } from "../../src/iam/secrets.ts"
import { lastSeenLagSeconds, SessionAuthenticator, SessionAuthenticatorLive } from "../../src/iam/session-auth.ts"
import { KvTest } from "../../src/kv/kv.ts"
import { makeSessionRepoTest, SessionRepo } from "../../src/sql/session-repo.ts"

/** The session repository of the tests, with every batch of last-seen times it is given. */
const recording = (touches: Array<ReadonlyMap<string, Date>>) =>
  Layer.effect(
    SessionRepo,
    Effect.gen(function*() {
      const repo = yield* SessionRepo
      return SessionRepo.of({ ...repo, touch: (batch) => Effect.andThen(Effect.sync(() => void touches.push(new Map(batch))), repo.touch(batch)) })
    })
  ).pipe(Layer.provide(makeSessionRepoTest()))

const node = (touches: Array<ReadonlyMap<string, Date>>, idleSeconds: number) =>
  SessionAuthenticatorLive.pipe(
    Layer.provideMerge(Layer.mergeAll(recording(touches), KvTest, Layer.succeed(Config, configForTests({ SESSION_IDLE_SECONDS: String(idleSeconds) }))))
  )

const openSession = Effect.gen(function*() {
  const repo = yield* SessionRepo
  const auth = yield* SessionAuthenticator
  const token = generateToken()
  const id = `ses_${token.slice(0, 8)}`
  yield* repo.insert({
    id,
    tokenHash: auth.hash(token),
    tenantId: "ten_1",
    identityId: "idt_ann",
    ip: null,
    userAgent: null,
    expiresAt: new Date(Date.now() + 3_600_000)
  })
  return { token, id }
})

describe("session last-seen writes", () => {
  it("writes a session's last-seen time once it is a step behind, not on every request", async () => {
    const touches: Array<ReadonlyMap<string, Date>> = []
    // Idle limit 2 s: a step of 200 ms. The batch is written when the node stops.
    const { id, lastRequest, queued } = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const auth = yield* SessionAuthenticator
      const { token, id } = yield* openSession
      // Just opened: its stored time is current, nothing to write.
      for (let i = 0; i < 5; i++) expect(yield* auth.authenticate(token)).toMatchObject({ credentialId: id })
      yield* Effect.sleep("250 millis")
      const queued = Date.now()
      expect(yield* auth.authenticate(token)).toBeDefined()
      // Within the next step: not queued again.
      yield* Effect.sleep("50 millis")
      const lastRequest = Date.now()
      expect(yield* auth.authenticate(token)).toBeDefined()
      return { id, lastRequest, queued }
    }).pipe(Effect.provide(node(touches, 2)))))
    expect(touches).toHaveLength(1)
    const written = touches[0]!.get(id)!.getTime()
    expect(written).toBeGreaterThanOrEqual(queued)
    expect(written).toBeLessThan(lastRequest)
    // The stored time lags the last request by less than the documented allowance.
    expect(lastRequest - written).toBeLessThan(lastSeenLagSeconds(2) * 1000)
  })

  it("writes a large batch in statements of at most 100 sessions", async () => {
    const touches: Array<ReadonlyMap<string, Date>> = []
    const ids = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const auth = yield* SessionAuthenticator
      const opened = yield* Effect.forEach(Array.from({ length: 250 }), () => openSession)
      yield* Effect.sleep("250 millis")
      for (const { token } of opened) expect(yield* auth.authenticate(token)).toBeDefined()
      return opened.map((o) => o.id)
    }).pipe(Effect.provide(node(touches, 2)))))
    expect(touches.map((t) => t.size)).toEqual([100, 100, 50])
    expect(new Set(touches.flatMap((t) => [...t.keys()]))).toEqual(new Set(ids))
  })

  it("still refuses a session idle past the limit", async () => {
    const touches: Array<ReadonlyMap<string, Date>> = []
    await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const auth = yield* SessionAuthenticator
      const { token } = yield* openSession
      expect(yield* auth.authenticate(token)).toBeDefined()
      yield* Effect.sleep("1100 millis")
      expect(yield* auth.authenticate(token)).toBeUndefined()
    }).pipe(Effect.provide(node(touches, 1)))))
  })
})
