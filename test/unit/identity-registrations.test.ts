/**
 * The decision the tenant entity's RegisterIdentity makes (src/actors/tenant-identities.ts) on a real
 * database (the embedded one, and PostgreSQL with DATABASE_URL): concurrent registrations of one
 * tenant never pass `iam.identities.total`, a refused one leaves its token usable, and a used token
 * registers nobody. The entity path runs in test/unit/identity-registrations-entity.test.ts (on the
 * in-memory cluster and test repositories) and on two nodes over HTTP in test/invitations.e2e.test.ts.
 */
import { Effect, Layer } from "effect"
import { describe, it } from "vitest"
import { IdentityRegistrationsInProcess } from "../../src/actors/identity-registrations.ts"
import { Config, type loadConfig } from "../../src/config.ts"
import { AuthTokenRepoLive } from "../../src/sql/auth-token-repo.ts"
import { DatabaseLive } from "../../src/sql/database.ts"
import { InvitationRepoLive } from "../../src/sql/invitation-repo.ts"
import { MigrationsLive } from "../../src/sql/migrate.ts"
import { TenantRepo, TenantRepoLive } from "../../src/sql/tenant-repo.ts"
import { testDatabases } from "../support/databases.ts"
import { registrationRace } from "../support/registration-race.ts"

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
      yield* registrationRace(tenantId, { organizationId: boot.organizationId, roleId: boot.roleId, ownerId: boot.ownerIdentityId })
    }).pipe(Effect.provide(base(config))))
  }, 60_000)
})
