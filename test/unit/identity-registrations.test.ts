/**
 * The decision the tenant entity's RegisterIdentity makes (src/actors/tenant-identities.ts) on a real
 * database (the embedded one, and PostgreSQL with DATABASE_URL): concurrent registrations of one
 * tenant never pass `iam.identities.total`, a refused one leaves its token usable, and a used token
 * registers nobody. The entity path runs in test/unit/identity-registrations-entity.test.ts (on the
 * in-memory cluster and test repositories) and on two nodes over HTTP in test/invitations.e2e.test.ts.
 */
import { Effect, Exit, Layer } from "effect"
import { describe, expect, it } from "vitest"
import { IdentityRegistrations, IdentityRegistrationsInProcess } from "../../src/actors/identity-registrations.ts"
import { Config, type loadConfig } from "../../src/config.ts"
import { AuthTokenRepo, AuthTokenRepoLive } from "../../src/sql/auth-token-repo.ts"
import { DatabaseLive } from "../../src/sql/database.ts"
import { InvitationRepo, InvitationRepoLive } from "../../src/sql/invitation-repo.ts"
import { MigrationsLive } from "../../src/sql/migrate.ts"
import { TenantRepo, TenantRepoLive } from "../../src/sql/tenant-repo.ts"
import { testDatabases } from "../support/databases.ts"

const repos = Layer.mergeAll(TenantRepoLive, InvitationRepoLive, AuthTokenRepoLive)

/** The repositories on the database of `config`, shared by the entity and the test's own setup. */
const base = (config: ReturnType<typeof loadConfig>) =>
  IdentityRegistrationsInProcess.pipe(Layer.provideMerge(repos), Layer.provideMerge(MigrationsLive), Layer.provideMerge(DatabaseLive), Layer.provideMerge(Layer.succeed(Config, config)))

const tenantId = "ten_identities"

describe.each(testDatabases)("RegisterIdentity's decision ($name)", (database) => {
  it("lets concurrent registrations take only the places iam.identities.total leaves; a refused token stays usable", async () => {
    const config = await database.config()
    await Effect.runPromise(Effect.gen(function*() {
      const tenants = yield* TenantRepo
      const registrations = yield* IdentityRegistrations
      const boot = yield* tenants.bootstrap({
        tenantId,
        name: "Identities Ltd",
        isInternal: false,
        plan: "free",
        credits: "0",
        email: "owner@identities.test",
        passwordHash: null,
        apiKey: { id: "key_identities", prefix: "trawl_idtest", hash: "unused-hash", rateLimitPerMinute: 60 }
      })
      const invitations = yield* InvitationRepo
      const tokens = yield* AuthTokenRepo
      // The owner is one person: one more fits.
      yield* tenants.setQuota(tenantId, "iam.identities.total", 2)
      const expiresAt = new Date(Date.now() + 3_600_000)
      const invitees = yield* Effect.forEach([0, 1, 2, 3], (i) =>
        Effect.gen(function*() {
          const email = `person${i}@identities.test`
          const invitation = yield* invitations.insert({
            tenantId,
            organizationId: boot.organizationId,
            email,
            roleId: boot.roleId,
            firstName: null,
            lastName: null,
            invitedBy: boot.ownerIdentityId,
            expiresAt
          })
          if (typeof invitation === "string") return yield* Effect.die(new Error(`invitation refused: ${invitation}`))
          const tokenHash = `hash-${i}`
          yield* tokens.insert({ id: `tok_${i}`, tokenHash, purpose: "invitation", tenantId, identityId: null, email, subjectId: invitation.id, expiresAt })
          return { email, tokenHash, invitationId: invitation.id }
        }))
      const register = (i: (typeof invitees)[number]) =>
        registrations.register(tenantId, {
          subject: { kind: "invitation", id: i.invitationId },
          tokenHash: i.tokenHash,
          email: i.email,
          passwordHash: "not-a-real-hash",
          firstName: null,
          lastName: null
        })
      const answers = yield* Effect.forEach(invitees, (i) => Effect.exit(register(i)), { concurrency: "unbounded" })
      expect(answers.filter(Exit.isSuccess)).toHaveLength(1)
      const refusals = answers.filter(Exit.isFailure).map((e) => JSON.stringify(e.cause))
      expect(refusals).toHaveLength(3)
      for (const r of refusals) expect(r).toContain("IdentityLimit")
      const refused = invitees[answers.findIndex(Exit.isFailure)]!
      const registered = invitees[answers.findIndex(Exit.isSuccess)]!

      // A limit raised applies to the next registration, with the token the refusal left usable.
      yield* tenants.setQuota(tenantId, "iam.identities.total", 3)
      const late = yield* register(refused)
      expect(late.roleId).toBe(boot.roleId)
      expect(late.organizationId).toBe(boot.organizationId)
      // A used token registers nobody, with or without room.
      yield* tenants.setQuota(tenantId, "iam.identities.total", 10)
      const again = yield* Effect.flip(register(registered))
      expect(again._tag).toBe("RegistrationRefused")
    }).pipe(Effect.provide(base(config))))
  }, 60_000)
})
