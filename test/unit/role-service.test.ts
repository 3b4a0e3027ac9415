/**
 * RoleService (src/iam/role-service.ts) on test layers: in-memory roles, keys and sessions, the
 * in-process Kv and a capturing audit log. The HTTP side is covered by test/roles.e2e.test.ts.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Config, configForTests } from "../../src/config.ts"
import { ApiKeyAuthenticator, ApiKeyAuthenticatorLive } from "../../src/iam/api-key-auth.ts"
import type { Principal } from "../../src/iam/principal.ts"
import { type PlainPrincipal, testPrincipal } from "../support/principal.ts"
import { RoleService, RoleServiceLive } from "../../src/iam/role-service.ts"
import { AttemptsLive } from "../../src/iam/attempts.ts"
import { AuthServiceLive } from "../../src/iam/auth-service.ts"
import { hashPassword } from "../../src/iam/passwords.ts"
import { SessionServiceLive } from "../../src/iam/session-service.ts"
import { MailerTest } from "../../src/mail/mailer.ts"
import { AuthTokenRepoTest } from "../../src/sql/auth-token-repo.ts"
import { makeIdentityRepoTest } from "../../src/sql/identity-repo.ts"
import { generateApiKey, hashApiKey } from "../../src/iam/secrets.ts"
import { SESSION_INVALIDATE_CHANNEL, SessionAuthenticatorLive } from "../../src/iam/session-auth.ts"
import { Kv, KvTest } from "../../src/kv/kv.ts"
import { ApiKeyRepo, makeApiKeyRepoTest } from "../../src/sql/api-key-repo.ts"
import { AuditEntries, AuditLogTest } from "../../src/sql/audit-log.ts"
import { makeRoleRepoTest, RoleRepo } from "../../src/sql/role-repo.ts"
import { makeSessionRepoTest } from "../../src/sql/session-repo.ts"

const config = configForTests()
const keysByRole = new Map<string, Array<string>>()
const roles = makeRoleRepoTest({
  roles: [
    { id: "role_owner", tenant_id: "ten_1", name: "owner", permissions: ["*:*:*"], is_system: true },
    { id: "role_ops", tenant_id: "ten_1", name: "ops", permissions: ["scraper:jobs:read", "scraper:jobs:write", "billing:*:read"] },
    { id: "role_held", tenant_id: "ten_1", name: "held", permissions: ["scraper:jobs:read"] },
    { id: "role_other", tenant_id: "ten_2", name: "other", permissions: ["scraper:jobs:read"] }
  ],
  sessionHolders: { role_ops: ["idt_ops"] },
  uses: { role_held: { invitations: 1 } },
  liveKeys: (roleId) => keysByRole.get(roleId) ?? []
})

const PASSWORD = "correct horse battery"
const servicesOver = (roles: Layer.Layer<RoleRepo>) => RoleServiceLive.pipe(
  Layer.provideMerge(AuthServiceLive),
  Layer.provideMerge(SessionServiceLive),
  Layer.provideMerge(Layer.mergeAll(ApiKeyAuthenticatorLive, SessionAuthenticatorLive, AttemptsLive)),
  Layer.provideMerge(makeApiKeyRepoTest({ byRole: keysByRole })),
  Layer.provideMerge(Layer.unwrap(Effect.map(hashPassword(PASSWORD), (hash) =>
    makeIdentityRepoTest([{ id: "idt_admin", tenantId: "ten_1", email: "admin@example.com", passwordHash: hash }])))),
  Layer.provideMerge(Layer.mergeAll(roles, makeSessionRepoTest(), AuthTokenRepoTest, MailerTest, AuditLogTest, KvTest, Layer.succeed(Config, config)))
)
const Roles = servicesOver(roles)

/**
 * Roles whose unlocked reads (`find`) still see `role_raced` all-powerful, as a read taken just
 * before another request narrowed it does; the locked update sees it as it is.
 */
const narrowedMeanwhile = Layer.effect(RoleRepo, Effect.map(RoleRepo, (repo) =>
  RoleRepo.of({
    ...repo,
    find: (tenantId, id) => Effect.map(repo.find(tenantId, id), (row) => (row && id === "role_raced" ? { ...row, permissions: ["*:*:*"] } : row))
  }))).pipe(Layer.provide(makeRoleRepoTest({ roles: [{ id: "role_raced", tenant_id: "ten_1", name: "raced", permissions: ["scraper:jobs:read"] }] })))

const admin = (over: Partial<PlainPrincipal> = {}): Principal => testPrincipal({
  kind: "session",
  credentialId: "ses_1",
  tenantId: "ten_1",
  identityId: "idt_admin",
  actorId: "idt_admin",
  roleId: "role_admin",
  permissions: ["iam:roles:write", "iam:roles:read", "scraper:*:*"],
  isInternalTenant: false,
  rateLimitPerMinute: 600,
  expiresAt: null,
  ...over
})

const client = { ip: "192.0.2.7", userAgent: "unit" }

const failure = <A, E extends { readonly status: number; readonly code: string }>(effect: Effect.Effect<A, E>) =>
  Effect.map(Effect.flip(effect), (e) => ({ status: e.status, code: e.code, e }))

layer(Roles)("RoleService", (it) => {
  it.effect("creates a role with each permission once and audits it; a second role of that name is a 409", () =>
    Effect.gen(function*() {
      const service = yield* RoleService
      const role = yield* service.create(admin(), { name: "readers", permissions: ["scraper:jobs:read", "scraper:jobs:read", "scraper:pages:read"] })
      expect(role).toMatchObject({ tenantId: "ten_1", name: "readers", permissions: ["scraper:jobs:read", "scraper:pages:read"], isSystem: false })
      const audit = (yield* (yield* AuditEntries).all).filter((e) => e.action === "role.create")
      expect(audit.map((e) => e.targetId)).toContain(role.id)
      const taken = yield* failure(service.create(admin(), { name: "readers", permissions: [] }))
      expect([taken.status, taken.code]).toEqual([409, "role_name_taken"])
    }))

  it.effect("refuses a role granting what the caller does not hold, naming each such permission; cross_tenant only in the internal tenant", () =>
    Effect.gen(function*() {
      const service = yield* RoleService
      const wider = yield* failure(service.create(admin(), { name: "wider", permissions: ["scraper:jobs:read", "billing:*:write", "iam:keys:write"] }))
      expect([wider.status, wider.code]).toEqual([403, "forbidden"])
      expect(wider.e.details?.map((d) => d.path)).toEqual(["permissions.1", "permissions.2"])
      const reserved = yield* failure(service.create(admin({ permissions: ["*:*:*"] }), { name: "super", permissions: ["cross_tenant:*:*"] }))
      expect(reserved.e.details?.map((d) => d.code)).toEqual(["reserved"])
      expect((yield* service.list(admin(), 0, 100)).items.map((r) => r.name)).not.toContain("wider")
    }))

  it.effect("narrows a role the caller could not widen, and its keys and sessions act with the new permissions at once", () =>
    Effect.gen(function*() {
      const service = yield* RoleService
      const keys = yield* ApiKeyAuthenticator
      const { raw, prefix } = generateApiKey()
      yield* (yield* ApiKeyRepo).insert({
        id: "key_ops", tenantId: "ten_1", identityId: "idt_ops", roleId: "role_ops", name: "ops key", description: null,
        keyPrefix: prefix, keyHash: hashApiKey(config.secretKey, raw), rateLimitPerMinute: 600, expiresAt: null
      }, 10)
      // Cached now: without the role change dropping it, the key would keep its old permissions for 30 s.
      expect((yield* keys.authenticate(raw))?.permissions).toContain("billing:*:read")
      const sessionNotices: Array<string> = []
      yield* (yield* Kv).subscribe(SESSION_INVALIDATE_CHANNEL, (m) => sessionNotices.push(m))
      // The caller does not hold billing:*:read, but removing it is a narrowing.
      const narrowed = yield* service.update(admin(), "role_ops", { permissions: ["scraper:jobs:read"] }, client)
      expect(narrowed.permissions).toEqual(["scraper:jobs:read"])
      expect((yield* keys.authenticate(raw))?.permissions).toEqual(["scraper:jobs:read"])
      yield* Effect.yieldNow.pipe(Effect.repeat({ times: 10 }))
      expect(sessionNotices).toEqual(["i:idt_ops"])
      const update = (yield* (yield* AuditEntries).all).find((e) => e.action === "role.update" && e.targetId === "role_ops")
      expect(update?.data).toMatchObject({ before: { permissions: ["scraper:jobs:read", "scraper:jobs:write", "billing:*:read"] }, after: { permissions: ["scraper:jobs:read"] } })
      // Widening it back is not the caller's to do.
      expect((yield* failure(service.update(admin(), "role_ops", { permissions: ["billing:*:read"] }, client))).status).toBe(403)
    }).pipe(Effect.scoped))

  it.effect("asks for the caller's proof before a change makes a role all-powerful (its keys and people would gain it at once)", () =>
    Effect.gen(function*() {
      const service = yield* RoleService
      const owner = admin({ permissions: ["*:*:*"] })
      const all = { permissions: ["*:*:*"] }
      expect((yield* failure(service.update(owner, "role_held", all, client))).code).toBe("reauthentication_required")
      expect((yield* failure(service.update(owner, "role_held", { ...all, currentPassword: "not the password" }, client))).code).toBe("reauthentication_failed")
      // *:*:read with *:*:write amounts to it
      expect((yield* failure(service.update(owner, "role_held", { permissions: ["*:*:read", "*:*:write"] }, client))).code).toBe("reauthentication_required")
      const raised = yield* service.update(owner, "role_held", { ...all, currentPassword: PASSWORD }, client)
      expect(raised.permissions).toEqual(["*:*:*"])
      // Already all-powerful, or a narrowing: no proof asked.
      expect((yield* service.update(owner, "role_held", { name: "held too", permissions: ["*:*:*"] }, client)).name).toBe("held too")
      expect((yield* service.update(owner, "role_held", { permissions: ["scraper:jobs:read"] }, client)).permissions).toEqual(["scraper:jobs:read"])
    }))

  it.effect("keeps system roles, roles in use and other tenants' roles: 409, 409 with the uses, 404", () =>
    Effect.gen(function*() {
      const service = yield* RoleService
      expect((yield* failure(service.update(admin(), "role_owner", { name: "boss" }, client))).code).toBe("system_role_immutable")
      expect((yield* failure(service.remove(admin(), "role_owner"))).code).toBe("system_role_immutable")
      const held = yield* failure(service.remove(admin(), "role_held"))
      expect([held.status, held.code]).toEqual([409, "role_in_use"])
      expect(held.e.extra).toMatchObject({ uses: { invitations: 1, apiKeys: 0 } })
      expect((yield* failure(service.get(admin(), "role_other"))).status).toBe(404)
      expect((yield* failure(service.remove(admin(), "role_other"))).status).toBe(404)
      const spare = yield* service.create(admin(), { name: "spare", permissions: ["scraper:jobs:read"] })
      const removed = yield* service.remove(admin(), spare.id)
      expect(removed).toMatchObject({ deleted: true, id: spare.id })
      expect((yield* failure(service.get(admin(), spare.id))).status).toBe(404)
    }))
})

layer(servicesOver(narrowedMeanwhile))("RoleService, with a role narrowed between its read and its lock", (it) => {
  it.effect("asks for the proof the role's locked state needs, not the one its earlier read suggested", () =>
    Effect.gen(function*() {
      const service = yield* RoleService
      const owner = admin({ permissions: ["*:*:*"] })
      const all = { permissions: ["*:*:*"] }
      // The unlocked read sees it all-powerful already; under the lock it is narrow, so raising it needs the proof.
      expect((yield* failure(service.update(owner, "role_raced", all, client))).code).toBe("reauthentication_required")
      expect((yield* service.get(owner, "role_raced")).permissions).toEqual(["*:*:*"])
      expect((yield* failure(service.update(owner, "role_raced", { ...all, currentPassword: "not the password" }, client))).code).toBe("reauthentication_failed")
      expect((yield* service.update(owner, "role_raced", { ...all, currentPassword: PASSWORD }, client)).permissions).toEqual(["*:*:*"])
    }))
})
