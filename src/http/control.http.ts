import { Duration, Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { entityCall } from "../actors/entity-call.ts"
import { TenantEntity } from "../actors/tenant-entity.ts"
import { defaultPlan, planNames } from "../billing/plans.ts"
import { ApiKeyAuthenticator } from "../iam/api-key-auth.ts"
import { hashPassword, refuseWeakPassword } from "../iam/passwords.ts"
import { generateApiKey } from "../iam/secrets.ts"
import { newId } from "../ids.ts"
import { pageOf } from "../schema/envelope.ts"
import { fail } from "../schema/errors.ts"
import { MailOutboxRepo } from "../sql/mail-outbox-repo.ts"
import { EmailTaken, TenantRepo } from "../sql/tenant-repo.ts"
import { Api } from "./api.ts"
import { queryLimit } from "./list-query.ts"
import { ClusterInfo } from "../actors/cluster-info.ts"
import { ProbeEntity } from "../actors/probe-entity.ts"

export const ControlHandlers = HttpApiBuilder.group(
  Api,
  "control",
  Effect.fn(function*(handlers) {
    const outbox = yield* MailOutboxRepo
    const tenants = yield* TenantRepo
    const tenantClient = yield* TenantEntity.client
    const authenticator = yield* ApiKeyAuthenticator
    const clusterInfo = yield* ClusterInfo
    const probeClient = yield* ProbeEntity.client

    const emailInUse = () => fail(409, "email_in_use", "an identity with this e-mail already exists")

    const newKey = (rateLimitPerMinute: number) => {
      const key = generateApiKey()
      return { raw: key.raw, spec: { id: newId("key"), prefix: key.prefix, hash: authenticator.hash(key.raw), rateLimitPerMinute } }
    }

    return handlers
      .handle("createTenant", ({ payload }) =>
        Effect.gen(function*() {
          const plan = payload.plan ?? defaultPlan
          if (!planNames.includes(plan) || plan === "internal") {
            return yield* fail(422, "invalid_plan", `unknown plan "${plan}"`, {
              details: [{ path: "plan", code: "invalid_value", message: `must be one of ${planNames.filter((p) => p !== "internal").join(", ")}` }]
            })
          }
          const key = newKey(5000)
          if (payload.ownerPassword !== undefined) yield* refuseWeakPassword(payload.ownerPassword, payload.ownerEmail, "ownerPassword")
          const passwordHash = payload.ownerPassword ? yield* hashPassword(payload.ownerPassword!) : null
          const tenantId = newId("ten")
          // The raw key never enters the durable message: only its hash does.
          const created = yield* entityCall(tenantClient(tenantId).Bootstrap({
            name: payload.name,
            isInternal: false,
            plan,
            credits: payload.credits ?? "10.00",
            email: payload.ownerEmail,
            passwordHash,
            apiKey: key.spec
          })).pipe(Effect.catchTag("EmailInUse", emailInUse))
          return { ...created, apiKey: key.raw }
        }))
      .handle("createInternalAdmin", ({ payload }) =>
        Effect.gen(function*() {
          const tenantId = yield* tenants.ensureInternalTenant
          const key = newKey(5000)
          if (payload.password !== undefined) yield* refuseWeakPassword(payload.password, payload.email, "password")
          const passwordHash = payload.password ? yield* hashPassword(payload.password!) : null
          const created = yield* tenants.addInternalAdmin({ tenantId, email: payload.email, passwordHash, apiKey: key.spec }).pipe(
            Effect.catch((e) => e instanceof EmailTaken ? emailInUse() : Effect.die(e))
          )
          return { ...created, apiKey: key.raw }
        }))
      .handle("cluster", () => clusterInfo.snapshot)
      .handle("probe", ({ payload }) =>
        // A probe works for up to a minute, and may be handed to another node on the way.
        entityCall(probeClient(payload.entityId).Work({ probeId: payload.probeId, durationMs: payload.durationMs }), {
          timeout: Duration.millis(payload.durationMs + 120_000)
        }))
      .handle("outbox", ({ query }) =>
        Effect.gen(function*() {
          const offset = query.offset ?? 0
          const limit = yield* queryLimit(query)
          const page = yield* outbox.listByRecipient(query.to, offset, limit)
          return pageOf(page.items, offset, limit, page.total)
        }))
  })
)
