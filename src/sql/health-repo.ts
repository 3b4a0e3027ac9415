import { Context, Effect, Layer } from "effect"
import { SqlClient, SqlError } from "effect/sql"

/** The database as the readiness probe sees it. */
export interface HealthRepoShape {
  /** Succeeds when the database answers a trivial statement. */
  readonly ping: Effect.Effect<void, SqlError.SqlError>
}

export class HealthRepo extends Context.Service<HealthRepo, HealthRepoShape>()("trawl/HealthRepo") {}

export const HealthRepoLive = Layer.effect(
  HealthRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return HealthRepo.of({ ping: sql`SELECT 1`.pipe(Effect.asVoid) })
  })
)

/** A database that answers, or not (`HealthRepoTest(false)`), for unit tests of readiness. */
export const HealthRepoTest = (answers = true): Layer.Layer<HealthRepo> =>
  Layer.succeed(HealthRepo, HealthRepo.of({
    ping: answers ? Effect.void : Effect.fail(new SqlError.SqlError({ reason: new SqlError.UnknownError({ cause: new Error("the test database is down") }) }))
  }))
