import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient, type SqlError } from "effect/sql"

export interface EngineHistoryRow {
  readonly engine: string
  readonly ok: boolean
  readonly at: Date
}

/**
 * What the domain entity (actors/domain-entity.ts) keeps in SQL: the engines that recently worked
 * or were refused on a domain, and until when the entity may have politeness slots out (its lease
 * mark). Failures are left to the entity, which goes on without the table when it cannot reach it.
 */
export interface DomainRepoShape {
  readonly engineHistory: (domainId: string) => Effect.Effect<ReadonlyArray<EngineHistoryRow>, SqlError.SqlError>
  /** Records the latest outcome of `engine` on the domain, stamped with the database's now(). */
  readonly recordEngine: (domainId: string, engine: string, ok: boolean) => Effect.Effect<void, SqlError.SqlError>
  /** Until when the domain's entity may have slots out, if a mark is stored. */
  readonly leaseMark: (domainId: string) => Effect.Effect<Date | undefined, SqlError.SqlError>
  /** Marks slots out until `ms` from the database's now(). */
  readonly markLease: (domainId: string, ms: number) => Effect.Effect<void, SqlError.SqlError>
  readonly clearLease: (domainId: string) => Effect.Effect<void, SqlError.SqlError>
}

export class DomainRepo extends Context.Service<DomainRepo, DomainRepoShape>()("trawl/DomainRepo") {}

export const DomainRepoLive = Layer.effect(
  DomainRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return DomainRepo.of({
      engineHistory: (domainId) => sql<EngineHistoryRow>`SELECT engine, ok, at FROM domain_engine_history WHERE domain_id = ${domainId}`,
      recordEngine: (domainId, engine, ok) =>
        sql`
          INSERT INTO domain_engine_history (domain_id, engine, ok, at) VALUES (${domainId}, ${engine}, ${ok}, now())
          ON CONFLICT (domain_id, engine) DO UPDATE SET ok = EXCLUDED.ok, at = EXCLUDED.at`.pipe(Effect.asVoid),
      leaseMark: (domainId) =>
        sql<{ held_until: Date }>`SELECT held_until FROM domain_leases WHERE domain_id = ${domainId}`.pipe(
          Effect.map(([mark]) => (mark ? new Date(mark.held_until) : undefined))
        ),
      markLease: (domainId, ms) =>
        sql`INSERT INTO domain_leases (domain_id, held_until) VALUES (${domainId}, now() + ${ms} * interval '1 millisecond')
            ON CONFLICT (domain_id) DO UPDATE SET held_until = EXCLUDED.held_until`.pipe(Effect.asVoid),
      clearLease: (domainId) => sql`DELETE FROM domain_leases WHERE domain_id = ${domainId}`.pipe(Effect.asVoid)
    })
  })
)

/**
 * A domain's engine history and lease marks in memory, on Effect's Clock; one build can outlive
 * many entity starts (its state is what a restarted entity finds).
 */
export const DomainRepoTest: Layer.Layer<DomainRepo> = Layer.sync(DomainRepo, () => {
  const history = new Map<string, Map<string, EngineHistoryRow>>()
  const leases = new Map<string, Date>()
  return DomainRepo.of({
    engineHistory: (domainId) => Effect.sync(() => [...(history.get(domainId)?.values() ?? [])]),
    recordEngine: (domainId, engine, ok) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const engines = history.get(domainId) ?? new Map<string, EngineHistoryRow>()
        history.set(domainId, engines.set(engine, { engine, ok, at: new Date(now) }))
      }),
    leaseMark: (domainId) => Effect.sync(() => leases.get(domainId)),
    markLease: (domainId, ms) => Effect.map(Clock.currentTimeMillis, (now) => void leases.set(domainId, new Date(now + ms))),
    clearLease: (domainId) => Effect.sync(() => void leases.delete(domainId))
  })
})
