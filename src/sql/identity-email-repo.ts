import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"

export interface IdentityEmailRow {
  readonly email: string
  readonly verified_at: Date | null
}

export interface IdentityEmailRepoShape {
  /** The identity's primary e-mail address and whether it is verified. */
  readonly primary: (identityId: string) => Effect.Effect<IdentityEmailRow | undefined>
  /**
   * Marks the identity's address `email` (any letter case) verified, keeping the first time it
   * was; the row, or undefined when the address is no longer the identity's.
   */
  readonly markVerified: (identityId: string, email: string) => Effect.Effect<IdentityEmailRow | undefined>
}

export class IdentityEmailRepo extends Context.Service<IdentityEmailRepo, IdentityEmailRepoShape>()("trawl/IdentityEmailRepo") {}

export const IdentityEmailRepoLive = Layer.effect(
  IdentityEmailRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return IdentityEmailRepo.of({
      primary: (identityId) =>
        sql<IdentityEmailRow>`
          SELECT email, verified_at FROM identity_emails WHERE identity_id = ${identityId} AND is_primary`.pipe(
          Effect.orDie,
          Effect.map((rows) => rows[0])
        ),
      markVerified: (identityId, email) =>
        sql<IdentityEmailRow>`
          UPDATE identity_emails SET verified_at = COALESCE(verified_at, now())
          WHERE identity_id = ${identityId} AND lower(email) = lower(${email})
          RETURNING email, verified_at`.pipe(Effect.orDie, Effect.map((rows) => rows[0]))
    })
  })
)

/** Primary addresses in memory (`identityId` → address), for unit tests; verification is stamped on Effect's Clock. */
export const makeIdentityEmailRepoTest = (primaries: Readonly<Record<string, string>>): Layer.Layer<IdentityEmailRepo> =>
  Layer.sync(IdentityEmailRepo, () => {
    const rows = new Map(Object.entries(primaries).map(([id, email]) => [id, { email, verified_at: null as Date | null }]))
    return IdentityEmailRepo.of({
      primary: (identityId) => Effect.sync(() => {
        const row = rows.get(identityId)
        return row && { ...row }
      }),
      markVerified: (identityId, email) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          const row = rows.get(identityId)
          if (!row || row.email.toLowerCase() !== email.toLowerCase()) return undefined
          row.verified_at ??= new Date(now)
          return { ...row }
        })
    })
  })
