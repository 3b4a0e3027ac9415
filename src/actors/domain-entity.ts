import { Effect, Schema } from "effect"
import { Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { SqlClient } from "effect/sql"
import { CrawlService } from "../crawl/crawl-service.ts"

const HistoryEntry = Schema.Struct({ engine: Schema.String, ok: Schema.Boolean, at: Schema.Number })

/**
 * One entity per registrable domain, cluster-wide. It owns the domain's politeness
 * slots (at most N fetches at once across all nodes) and remembers which engines
 * recently worked or were blocked there.
 */
export const DomainEntity = Entity.make("Domain", [
  /** Waits for a fetch slot; the slot expires after `ttlMs` in case its holder dies. */
  Rpc.make("Acquire", { payload: Schema.Struct({ holder: Schema.String, ttlMs: Schema.Int }) }),
  Rpc.make("Release", { payload: Schema.Struct({ holder: Schema.String }) }),
  Rpc.make("Record", { payload: Schema.Struct({ engine: Schema.String, ok: Schema.Boolean }) }),
  Rpc.make("History", { success: Schema.Array(HistoryEntry) })
])

export const DomainEntityLive = DomainEntity.toLayer(
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const crawl = yield* CrawlService
    const domainId = (yield* Entity.CurrentAddress).entityId
    const limit = crawl.perDomainConcurrency
    const slots = new Map<string, number>()
    const waiters: Array<() => void> = []

    const rows = yield* sql<{ engine: string; ok: boolean; at: Date }>`
      SELECT engine, ok, at FROM domain_engine_history WHERE domain_id = ${domainId}`.pipe(Effect.orElseSucceed(() => []))
    const history = new Map(rows.map((r) => [r.engine, { engine: r.engine, ok: r.ok, at: new Date(r.at).getTime() }]))

    const purge = () => {
      const now = Date.now()
      for (const [holder, until] of slots) if (until <= now) slots.delete(holder)
    }
    const wake = () => {
      for (const w of waiters.splice(0)) w()
    }
    const tryTake = (holder: string, ttlMs: number) => {
      purge()
      if (slots.has(holder) || slots.size < limit) {
        slots.set(holder, Date.now() + ttlMs)
        return true
      }
      return false
    }
    const waitForSlot = (holder: string, ttlMs: number) =>
      new Promise<void>((resolve) => {
        const attempt = () => {
          if (tryTake(holder, ttlMs)) return resolve()
          waiters.push(attempt)
          // Expired slots free themselves; look again now and then.
          setTimeout(() => {
            const i = waiters.indexOf(attempt)
            if (i >= 0) {
              waiters.splice(i, 1)
              attempt()
            }
          }, 1000)
        }
        attempt()
      })

    return DomainEntity.of({
      Acquire: ({ payload }) => Effect.promise(() => waitForSlot(payload.holder, payload.ttlMs)).pipe(Rpc.fork),
      Release: ({ payload }) =>
        Effect.sync(() => {
          slots.delete(payload.holder)
          wake()
        }).pipe(Rpc.fork),
      Record: ({ payload }) =>
        Effect.gen(function*() {
          const previous = history.get(payload.engine)
          const now = Date.now()
          history.set(payload.engine, { engine: payload.engine, ok: payload.ok, at: now })
          // The table only needs to follow changes (and stay fresh within the learning window).
          if (previous && previous.ok === payload.ok && now - previous.at < 60_000) return
          yield* sql`
            INSERT INTO domain_engine_history (domain_id, engine, ok, at) VALUES (${domainId}, ${payload.engine}, ${payload.ok}, now())
            ON CONFLICT (domain_id, engine) DO UPDATE SET ok = EXCLUDED.ok, at = EXCLUDED.at`.pipe(Effect.ignore)
        }).pipe(Rpc.fork),
      History: () => Effect.sync(() => [...history.values()]).pipe(Rpc.fork)
    })
  }),
  { maxIdleTime: "10 minutes" }
)
