/**
 * PlanGate (src/billing/plan-gate.ts) on the in-memory SubscriptionRepo: what it answers from a
 * tenant's subscription, and that a change shows once the gate forgets what it read. The refusal
 * rules themselves are tested in test/unit/subscriptions.test.ts, over HTTP in subscriptions.e2e.
 */
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { PlanGate, PlanGateLive } from "../../src/billing/plan-gate.ts"
import { Kv, KvTest } from "../../src/kv/kv.ts"
import type { Principal } from "../../src/iam/principal.ts"
import { type PlainPrincipal, testPrincipal } from "../support/principal.ts"
import { makeSubscriptionRepoTest, SubscriptionRepo } from "../../src/sql/subscription-repo.ts"

const principal = (tenantId: string, over: Partial<PlainPrincipal> = {}): Principal => testPrincipal({
  kind: "api-key",
  credentialId: "key_1",
  tenantId,
  identityId: "idt_1",
  actorId: "idt_1",
  roleId: "role_1",
  permissions: ["*:*:*"],
  isInternalTenant: false,
  rateLimitPerMinute: 600,
  expiresAt: null,
  ...over
})

const period = { anchorAt: 0, index: 0, start: 0, end: 30 * 86_400_000 }
const Gate = PlanGateLive.pipe(Layer.provideMerge(Layer.mergeAll(makeSubscriptionRepoTest(), KvTest)))

const refusal = (effect: Effect.Effect<void, { readonly code: string }>) =>
  Effect.match(effect, { onSuccess: () => undefined, onFailure: (e) => e.code })

layer(Gate)("PlanGate", (it) => {
  it.effect("answers from the tenant's plan: a service it lacks is refused, a tenant without a subscription is not", () =>
    Effect.gen(function*() {
      const gate = yield* PlanGate
      yield* (yield* SubscriptionRepo).open("ten_free", "free", period)
      expect(yield* refusal(gate.check(principal("ten_free"), "scraper:jobs:write"))).toBeUndefined()
      expect(yield* refusal(gate.check(principal("ten_free"), "extractor:extractions:write"))).toBe("service_disabled_on_plan")
      expect(yield* refusal(gate.check(principal("ten_free"), "network:ip:read"))).toBe("service_disabled_on_plan")
      // Not a plan's service: never the gate's to refuse.
      expect(yield* refusal(gate.check(principal("ten_free"), "iam:roles:write"))).toBeUndefined()
      expect(yield* refusal(gate.check(principal("ten_none"), "extractor:extractions:write"))).toBeUndefined()
    }))

  it.effect("a past-due subscription refuses paid work only; the change shows once the gate forgets the tenant; the internal tenant is never refused", () =>
    Effect.gen(function*() {
      const gate = yield* PlanGate
      const repo = yield* SubscriptionRepo
      yield* repo.open("ten_late", "starter", period)
      expect(yield* refusal(gate.check(principal("ten_late"), "scraper:jobs:write"))).toBeUndefined()
      expect(yield* repo.markPastDue("ten_late", period.end)).toBe(true)
      // Read a moment ago and kept (a node trusts its read for 2 s) until the change is announced.
      expect(yield* refusal(gate.check(principal("ten_late"), "scraper:jobs:write"))).toBeUndefined()
      yield* gate.invalidate("ten_late")
      expect(yield* refusal(gate.check(principal("ten_late"), "scraper:jobs:write"))).toBe("no_active_plan")
      expect(yield* refusal(gate.check(principal("ten_late"), "scraper:jobs:read"))).toBeUndefined()
      expect(yield* refusal(gate.check(principal("ten_late", { isInternalTenant: true }), "scraper:jobs:write"))).toBeUndefined()
    }))

  it.effect("a change one node announces is forgotten by every node's gate at once, not after its 2 s", () =>
    Effect.scoped(Effect.gen(function*() {
      const gate = yield* PlanGate
      const repo = yield* SubscriptionRepo
      // A second node's gate: its own cache, the same database and Kv (Redis's pub/sub in production).
      const shared = Layer.mergeAll(Layer.succeed(SubscriptionRepo, repo), Layer.succeed(Kv, yield* Kv))
      const otherNode = Context.get(yield* Layer.build(PlanGateLive.pipe(Layer.provide(shared))), PlanGate)
      yield* repo.open("ten_moved", "starter", period)
      expect(yield* refusal(otherNode.check(principal("ten_moved"), "network:ip:read"))).toBeUndefined()
      yield* repo.change("ten_moved", { plan: "free", addOns: [], status: "active", periodPaidUnits: 0 })
      yield* gate.invalidate("ten_moved")
      expect(yield* refusal(otherNode.check(principal("ten_moved"), "network:ip:read"))).toBe("service_disabled_on_plan")
    })))
})
