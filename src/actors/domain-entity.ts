import { Effect, Fiber, Schema } from "effect"
import { ClusterSchema, Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { CrawlService } from "../crawl/crawl-service.ts"
import { DomainRepo } from "../sql/domain-repo.ts"

const HistoryEntry = Schema.Struct({ engine: Schema.String, ok: Schema.Boolean, at: Schema.Number })
export type HistoryEntry = typeof HistoryEntry.Type
const Outcome = Schema.Struct({ engine: Schema.String, ok: Schema.Boolean })
export type Outcome = typeof Outcome.Type

/**
 * One entity per registrable domain, cluster-wide. It owns the domain's politeness
 * slots (at most N fetches at once across all nodes) and remembers which engines
 * recently worked or were blocked there. A job talks to it twice: `Acquire` (which also
 * answers with the engine history the job plans from) and `Release` (which carries what
 * the job learned), or `Handover` when its node passes the slot straight to its next job
 * (see `DomainSlots`).
 *
 * A holder names a job, and may name its run as `<job>#<run>`: a slot belongs to the job, so a later
 * run (the job picked up again after its node was lost) takes the slot over at once, and from then
 * on the earlier run's Release or Handover, if that run was only slow and not dead, frees nothing.
 */
export const DomainEntity = Entity.make("Domain", [
  /**
   * Waits for a fetch slot, higher `priority` first; the slot expires after `ttlMs` in case its
   * holder dies. Answers with the domain's recent engine history. A wait is cut at once when the
   * entity stops (its node shuts down, its shard moves): it would only hold the shutdown for the
   * termination grace (5 s) and be cut then; the caller asks the entity's next owner (domain-slots.ts).
   */
  Rpc.make("Acquire", {
    payload: Schema.Struct({ holder: Schema.String, ttlMs: Schema.Int, priority: Schema.Int }),
    success: Schema.Array(HistoryEntry)
  }).annotate(ClusterSchema.InterruptOnTermination, true),
  /** Frees the slot and records which engines worked (`ok`) or were refused on the domain. */
  Rpc.make("Release", { payload: Schema.Struct({ holder: Schema.String, outcomes: Schema.Array(Outcome) }) }),
  /**
   * The slot of `from` now belongs to `to` (a job of the same node, already crawling), for `ttlMs`;
   * records what `from` learned. If `from` no longer held a slot, `to` is counted anyway, since it
   * is fetching: new grants wait until the domain is below its limit again.
   */
  Rpc.make("Handover", {
    payload: Schema.Struct({ from: Schema.String, to: Schema.String, ttlMs: Schema.Int, outcomes: Schema.Array(Outcome) })
  }),
  /**
   * The holders' node still holds these slots: each lease runs `ttlMs` from now. A holder the
   * entity does not know (it restarted on another node after its own node died, or the lease ran
   * out while the holder lived) is counted again, over the limit if need be, as a handover's is.
   */
  Rpc.make("Renew", {
    payload: Schema.Struct({ holders: Schema.Array(Schema.Struct({ holder: Schema.String, ttlMs: Schema.Int })) })
  }),
  /** Answers at once: tells a job whose `Acquire` is slow a long queue from an entity out of reach. */
  Rpc.make("Ping")
])

/**
 * A slot is a lease: the entity frees it `SLOT_LEASE_MS` after it was granted or last renewed, in
 * case its holder's node died. While a job holds it (waiting for a crawl slot, or fetching), its
 * node renews it every `SLOT_RENEW_MS` (see DomainSlots).
 *
 * The renewal period also sets how long an entity started again within its mark grants nothing
 * (`RESTART_QUIET_MS`): its shard moved, or every shard was given up while PostgreSQL was out of
 * reach, and the slots' holders must have had the time to tell it of themselves. At 10 s this
 * held each domain ~13 s after a PostgreSQL outage (docs/chaos.md); renewals are small one-way
 * messages between nodes, one per domain a node holds slots of, so they can come often.
 */
export const SLOT_LEASE_MS = 30_000
export const SLOT_RENEW_MS = 1_000
/**
 * How long an entity started within its mark waits for renewals: a renewal period (they are sent on
 * a fixed beat, a slow send never delays the next), plus 2 s for the send and a stalled event loop.
 */
export const RESTART_QUIET_MS = SLOT_RENEW_MS + 2000

/** A holder's job and run (run 0 when the holder names no run). */
export const parseHolder = (holder: string): { readonly job: string; readonly run: number } => {
  const at = holder.lastIndexOf("#")
  const run = at < 0 ? Number.NaN : Number(holder.slice(at + 1))
  return Number.isSafeInteger(run) && run >= 0 ? { job: holder.slice(0, at), run } : { job: holder, run: 0 }
}

interface Slot {
  until: number
  run: number
}

interface Waiter {
  readonly job: string
  run: number
  readonly ttlMs: number
  readonly priority: number
  readonly grants: Array<() => void>
}

/** How long a released holder's late renewals are ignored (messages overtake each other by far less). */
const RELEASED_MEMORY_MS = 3000

/** How often expired slots (their holder died) are looked for while jobs wait. */
const EXPIRY_CHECK_MS = 1000

export const DomainEntityLive = DomainEntity.toLayer(
  Effect.gen(function*() {
    const repo = yield* DomainRepo
    const crawl = yield* CrawlService
    const domainId = (yield* Entity.CurrentAddress).entityId
    const limit = crawl.perDomainConcurrency
    // By job: the run that holds the slot, and when the slot expires.
    const slots = new Map<string, Slot>()
    // Highest priority first, first come first served within a priority.
    const waiters: Array<Waiter> = []
    let expiryTimer: NodeJS.Timeout | undefined

    const rows = yield* repo.engineHistory(domainId).pipe(Effect.orElseSucceed(() => []))

    // Slots live in this entity's memory only. So that an entity started again elsewhere, after
    // its node died with slots out, does not hand out more while their holders still fetch, the
    // entity marks in SQL until when it may have slots out: every grant is covered by the mark for
    // its whole lease. Starting within a marked span, it grants nothing until the holders' nodes have
    // had the time to renew their slots with it (`RESTART_QUIET_MS`).
    const services = yield* Effect.context<never>()
    const mark = yield* repo.leaseMark(domainId).pipe(Effect.orElseSucceed(() => undefined))
    let markedUntil = mark ? mark.getTime() : 0
    const quietUntil = Math.min(markedUntil, Date.now() + RESTART_QUIET_MS)
    let marking: Fiber.Fiber<void> | undefined
    // Until when grants go on unmarked, after a mark could not be written.
    let unmarkedUntil = 0
    /**
     * Whether the mark covers a slot granted now for its whole lease. When it does not, it is
     * written again (for two leases) and the waiters are served once it is. A mark that cannot be
     * written does not stop the domain: grants go on unmarked for a lease, then the write is tried again.
     */
    const markCovers = (): boolean => {
      const now = Date.now()
      if (markedUntil - now >= SLOT_LEASE_MS || now < unmarkedUntil) return true
      marking ??= Effect.runForkWith(services)(
        repo.markLease(domainId, 2 * SLOT_LEASE_MS).pipe(
          Effect.timeout("2 seconds"),
          Effect.andThen(Effect.sync(() => {
            markedUntil = Date.now() + 2 * SLOT_LEASE_MS
          })),
          Effect.catchCause((cause) =>
            Effect.logWarning("domain lease mark not written", cause).pipe(Effect.andThen(Effect.sync(() => {
              unmarkedUntil = Date.now() + SLOT_LEASE_MS
            })))
          ),
          Effect.ensuring(Effect.sync(() => {
            marking = undefined
            grantWaiting()
          }))
        )
      )
      return false
    }
    // Holders that gave their slot back, for a moment: a renewal sent just before the release but
    // arriving after it brings nothing back. Only a moment: a job's run that moved to another node
    // may hold its slot again under the same name, and renews it.
    const released = new Map<string, { readonly run: number; readonly until: number }>()
    const history = new Map(rows.map((r) => [r.engine, { engine: r.engine, ok: r.ok, at: new Date(r.at).getTime() }]))

    const purgeExpired = () => {
      const now = Date.now()
      for (const [job, slot] of slots) if (slot.until <= now) slots.delete(job)
      for (const [job, gone] of released) if (gone.until <= now) released.delete(job)
    }
    /** Hands free slots to the waiters at the head of the queue (none while it waits for renewals after a restart). */
    const grantWaiting = () => {
      purgeExpired()
      const ready = Date.now() >= quietUntil && waiters.length > 0 && slots.size < limit && markCovers()
      while (ready && waiters.length > 0 && slots.size < limit) {
        const w = waiters.shift()!
        slots.set(w.job, { until: Date.now() + w.ttlMs, run: w.run })
        for (const grant of w.grants) grant()
      }
      if (waiters.length === 0 && expiryTimer) {
        clearInterval(expiryTimer)
        expiryTimer = undefined
      } else if (waiters.length > 0 && !expiryTimer) {
        expiryTimer = setInterval(grantWaiting, EXPIRY_CHECK_MS)
        expiryTimer.unref()
      }
    }
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        if (expiryTimer) clearInterval(expiryTimer)
        if (marking) yield* Fiber.interrupt(marking)
        // Stopped with no slot out (reaped when idle, or its node shutting down once its jobs gave
        // theirs back): its next start need not wait for renewals. A node that dies leaves the mark,
        // and so does an entity stopped while it still waits for the renewals of slots it cannot see.
        purgeExpired()
        if (slots.size === 0 && Date.now() >= quietUntil) {
          yield* repo.clearLease(domainId).pipe(Effect.timeout("2 seconds"), Effect.ignore)
        }
      })
    )

    const waitForSlot = (holder: string, ttlMs: number, priority: number) =>
      new Promise<void>((resolve) => {
        const { job, run } = parseHolder(holder)
        released.delete(job)
        // A job asking again keeps its slot or its place: the same run whose earlier reply was lost,
        // or a later run that takes over from a run that was lost. (An earlier run still asking, slow
        // rather than dead, shares the slot of its job.)
        const held = slots.get(job)
        if (held) {
          if (run >= held.run) Object.assign(held, { until: Date.now() + ttlMs, run })
          return resolve()
        }
        const queued = waiters.find((w) => w.job === job)
        if (queued) {
          queued.run = Math.max(queued.run, run)
          return void queued.grants.push(resolve)
        }
        let at = waiters.length
        while (at > 0 && waiters[at - 1]!.priority < priority) at--
        waiters.splice(at, 0, { job, run, ttlMs, priority, grants: [resolve] })
        grantWaiting()
      })

    /** Takes the job's place in the queue away, unless a later run of the job holds it. */
    const dropWaiter = (job: string, run: number) => {
      const queued = waiters.findIndex((w) => w.job === job && w.run <= run)
      if (queued >= 0) waiters.splice(queued, 1)
    }

    /** Frees the slot or place of `holder`, unless a later run of its job holds it now. */
    const leave = (holder: string) => {
      const { job, run } = parseHolder(holder)
      const held = slots.get(job)
      if (held && held.run <= run) slots.delete(job)
      released.set(job, { run, until: Date.now() + RELEASED_MEMORY_MS })
      // A holder that gave up waiting (and crawled without a slot) leaves the queue too.
      dropWaiter(job, run)
    }

    // What the table holds per engine (as this entity last wrote or read it): the in-memory history
    // moves on with every outcome, the table at most once a minute per engine.
    const stored = new Map<string, { readonly ok: boolean; readonly at: number }>()
    for (const h of history.values()) stored.set(h.engine, { ok: h.ok, at: h.at })

    const record = (outcomes: ReadonlyArray<{ engine: string; ok: boolean }>) =>
      Effect.forEach(outcomes, ({ engine, ok }) => {
        const now = Date.now()
        history.set(engine, { engine, ok, at: now })
        // The table only needs to follow changes, and to stay fresh within the learning window: its
        // time is compared with what was written, not with the last outcome, so steady traffic
        // still moves it on once a minute.
        const written = stored.get(engine)
        if (written && written.ok === ok && now - written.at < 60_000) return Effect.void
        stored.set(engine, { ok, at: now })
        return repo.recordEngine(domainId, engine, ok).pipe(Effect.ignore)
      }, { discard: true })

    return DomainEntity.of({
      Acquire: ({ payload }) =>
        Effect.promise(() => waitForSlot(payload.holder, payload.ttlMs, payload.priority)).pipe(
          Effect.map(() => [...history.values()]),
          Rpc.fork
        ),
      Release: ({ payload }) =>
        Effect.sync(() => {
          leave(payload.holder)
          grantWaiting()
        }).pipe(Effect.andThen(record(payload.outcomes)), Rpc.fork),
      Handover: ({ payload }) =>
        Effect.sync(() => {
          leave(payload.from)
          const to = parseHolder(payload.to)
          released.delete(to.job)
          const queued = waiters.findIndex((w) => w.job === to.job)
          if (queued >= 0) waiters.splice(queued, 1)
          const run = Math.max(to.run, slots.get(to.job)?.run ?? 0)
          slots.set(to.job, { until: Date.now() + payload.ttlMs, run })
        }).pipe(Effect.andThen(record(payload.outcomes)), Rpc.fork),
      Renew: ({ payload }) =>
        Effect.sync(() => {
          const now = Date.now()
          for (const { holder, ttlMs } of payload.holders) {
            const { job, run } = parseHolder(holder)
            const held = slots.get(job)
            const gone = released.get(job)
            // A slot a later run of the job has taken over is that run's to renew; one given back stays so.
            if ((held && held.run > run) || (!held && gone && gone.run >= run)) continue
            slots.set(job, { until: now + ttlMs, run })
            dropWaiter(job, run)
          }
          if (slots.size > 0) markCovers()
        }).pipe(Rpc.fork),
      Ping: () => Rpc.fork(Effect.void)
    })
  }),
  { maxIdleTime: "10 minutes" }
)
