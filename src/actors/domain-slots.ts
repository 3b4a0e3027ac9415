import { Cause, Context, Deferred, type Duration, Effect, Layer, Schedule, type Scope } from "effect"
import { CrawlService } from "../crawl/crawl-service.ts"
import { DomainEntity, type HistoryEntry, type Outcome, SLOT_RENEW_MS } from "./domain-entity.ts"
import { sendOneWay } from "./entity-call.ts"

/** A politeness slot of one domain, held by one job until it calls `release` with what it learned. */
export interface DomainSlot {
  /** The domain's recent engine history, which a job without its own escalation plans from. */
  readonly history: ReadonlyArray<HistoryEntry>
  readonly release: (outcomes: ReadonlyArray<Outcome>) => Effect.Effect<void>
}

/** What the node's slot cache asks of the domain's entity. */
export interface DomainSlotBackend {
  /** Waits for a slot; undefined when the entity could not be reached (the job crawls without one). */
  readonly acquire: (domainId: string, holder: string, priority: number, ttlMs: number) => Effect.Effect<ReadonlyArray<HistoryEntry> | undefined>
  readonly release: (domainId: string, holder: string, outcomes: ReadonlyArray<Outcome>) => Effect.Effect<void>
  readonly handover: (domainId: string, from: string, to: string, ttlMs: number, outcomes: ReadonlyArray<Outcome>) => Effect.Effect<void>
  /** Extends the leases of slots this node's jobs still hold (and tells an entity that lost them, restarted on another node, of them). */
  readonly renew: (domainId: string, holders: ReadonlyArray<{ readonly holder: string; readonly ttlMs: number }>) => Effect.Effect<void>
}

export interface DomainSlotsShape {
  readonly acquire: (domainId: string, holder: string, priority: number, ttlMs: number) => Effect.Effect<DomainSlot>
  /**
   * Runs `use` with a slot of the domain. `use` gives the slot back with what it learned as soon
   * as its fetch is over; if it ends in any other way first (also by interruption, say while it
   * waits for a crawl slot), the slot goes back then. It goes back once either way.
   */
  readonly withSlot: <A, E, R>(
    domainId: string,
    holder: string,
    priority: number,
    ttlMs: number,
    use: (history: ReadonlyArray<HistoryEntry>, release: (outcomes: ReadonlyArray<Outcome>) => Effect.Effect<void>) => Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E, R>
  /**
   * For a job that holds one of the domain's slots here and then waits for something else (a crawl
   * slot): the jobs waiting here for the domain lend it their priority, so a high-priority job is
   * not stuck behind the low-priority holders of its domain. `raise` is called with the highest
   * waiting priority at once, and with each one that joins later, until the slot is given back.
   */
  readonly lendPriority: (domainId: string, holder: string, raise: (priority: number) => void) => void
}

/**
 * The node's side of the domain entities' politeness slots. While this node's jobs hold all of a
 * domain's slots, the domain's next jobs here wait here (no other node can be given one anyway),
 * and a job that ends hands its slot to the first of them: that job starts at once and the entity
 * learns of the new holder by a one-way message, instead of a release and a fresh request that
 * waits for its answer. A slot is handed over at most `MAX_HANDOVERS` times in a row, then it
 * goes back to the entity, whose queue orders the waiting jobs of every node by priority; so a
 * busy node cannot keep a domain's slots from the others. Holders stay job ids, so the entity's
 * expiry and a re-run's reclaim of its own slot work as before.
 */
export class DomainSlots extends Context.Service<DomainSlots, DomainSlotsShape>()("trawl/DomainSlots") {}

/** Times a slot passes from job to job on one node before it returns to the domain's queue. */
export const MAX_HANDOVERS = 16

interface Waiter {
  readonly holder: string
  readonly priority: number
  readonly ttlMs: number
  readonly granted: Deferred.Deferred<ReadonlyArray<HistoryEntry>>
}

interface Holding {
  /** The handovers the slot has been through. */
  readonly handovers: number
  readonly ttlMs: number
}

interface DomainState {
  /** Slots held by this node's jobs. */
  readonly holding: Map<string, Holding>
  /** Jobs waiting for one of those slots, highest priority first; they have not asked the entity.
   *  There are only such jobs while this node holds all of the domain's slots. */
  readonly waiting: Array<Waiter>
  /** This node's jobs waiting for the entity's answer. While there are any, the next jobs ask the
   *  entity too, behind them, instead of waiting here for a handover that would overtake them. */
  asking: number
  /** How to raise the priority of holders that wait for a crawl slot (see `lendPriority`). */
  readonly raisers: Map<string, (priority: number) => void>
  history: ReadonlyArray<HistoryEntry>
}

export const makeDomainSlots = (
  backend: DomainSlotBackend,
  perDomainLimit: number,
  options: { readonly renewEveryMs?: number } = {}
): Effect.Effect<DomainSlotsShape & { readonly domainsTracked: () => number }, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const domains = new Map<string, DomainState>()
    const renewEveryMs = options.renewEveryMs ?? SLOT_RENEW_MS
    // The leases of every slot held here, renewed while held: a job that waits long for a crawl
    // slot keeps its domain slot, and an entity that restarted elsewhere learns who holds its slots.
    const renewAll = Effect.suspend(() =>
      Effect.forEach(
        [...domains].filter(([, d]) => d.holding.size > 0),
        ([domainId, d]) => backend.renew(domainId, [...d.holding].map(([holder, h]) => ({ holder, ttlMs: h.ttlMs }))),
        // At once: a domain whose entity is out of reach (its node just died) must not hold up the others' renewals.
        { concurrency: "unbounded", discard: true }
      )
    )
    // On a fixed beat, each round on its own fiber: a round whose sends wait (up to 2 s each) never
    // delays the next, so an entity started again hears from every live holder within one period
    // (it waits `RESTART_QUIET_MS` for that). Renewing twice is harmless.
    yield* renewAll.pipe(
      Effect.catchCause(Effect.logWarning),
      Effect.forkIn(scope),
      Effect.repeat(Schedule.fixed(renewEveryMs)),
      Effect.delay(renewEveryMs),
      Effect.forkIn(scope)
    )
    const stateOf = (domainId: string) => {
      let d = domains.get(domainId)
      if (!d) domains.set(domainId, (d = { holding: new Map(), waiting: [], raisers: new Map(), history: [], asking: 0 }))
      return d
    }
    const forget = (domainId: string, d: DomainState) => {
      if (d.holding.size === 0 && d.waiting.length === 0 && d.asking === 0) domains.delete(domainId)
    }
    /** Forgets the domain if nothing of it is held or waited for here (an ask that got no slot leaves nothing behind). */
    const forgetIfIdle = (domainId: string) => {
      const d = domains.get(domainId)
      if (d) forget(domainId, d)
    }
    /** What a job learned also updates the history this node hands out with its next handovers. */
    const learn = (d: DomainState, outcomes: ReadonlyArray<Outcome>) => {
      if (outcomes.length === 0) return
      const byEngine = new Map(d.history.map((h) => [h.engine, h]))
      const at = Date.now()
      for (const o of outcomes) byEngine.set(o.engine, { engine: o.engine, ok: o.ok, at })
      d.history = [...byEngine.values()]
    }

    const slot = (domainId: string, holder: string, history: ReadonlyArray<HistoryEntry>, held: boolean): DomainSlot => ({
      history,
      release: (outcomes) => (held ? release(domainId, holder, outcomes) : backend.release(domainId, holder, outcomes))
    })

    /** Asks the entity for a slot; the answer is the job's own, or the next handover's if the job left meanwhile. */
    const askEntity = (domainId: string, holder: string, priority: number, ttlMs: number) =>
      Effect.suspend(() => {
        const d = stateOf(domainId)
        d.asking++
        return askedEntity(domainId, holder, priority, ttlMs).pipe(
          Effect.ensuring(Effect.sync(() => {
            d.asking--
            forget(domainId, d)
          }))
        )
      })
    const askedEntity = (domainId: string, holder: string, priority: number, ttlMs: number) =>
      backend.acquire(domainId, holder, priority, ttlMs).pipe(
        Effect.map((history) => {
          if (history === undefined) {
            forgetIfIdle(domainId)
            return slot(domainId, holder, [], false)
          }
          const d = stateOf(domainId)
          d.history = history
          d.holding.set(holder, { handovers: 0, ttlMs })
          return slot(domainId, holder, history, true)
        }),
        // A job that stops waiting for the answer (cancelled, or stopped by its node) says so: the
        // entity takes it out of its queue, or frees the slot it was given just then. Otherwise the
        // slot would go to a job that is gone, and stay taken until its time-to-live ran out.
        Effect.onInterrupt(() => Effect.andThen(Effect.sync(() => forgetIfIdle(domainId)), backend.release(domainId, holder, [])))
      )

    // Atomic: once it has taken the slot (and perhaps the jobs waiting for it) out of this node's
    // books, it must finish handing them on, even if the releasing job is being interrupted.
    const release = (domainId: string, holder: string, outcomes: ReadonlyArray<Outcome>): Effect.Effect<void> =>
      Effect.uninterruptible(Effect.suspend(() => {
        const d = stateOf(domainId)
        const handovers = d.holding.get(holder)?.handovers
        d.holding.delete(holder)
        d.raisers.delete(holder)
        learn(d, outcomes)
        const next = d.waiting[0]
        if (handovers !== undefined && next && handovers < MAX_HANDOVERS) {
          d.waiting.shift()
          d.holding.set(next.holder, { handovers: handovers + 1, ttlMs: next.ttlMs })
          // The entity hears of the new holder before that job can start (and perhaps end and send
          // its own release, which would otherwise arrive first and leave a phantom holder). A job
          // that stopped waiting meanwhile is released from here, after the handover, for the same reason.
          const history = d.history
          return backend.handover(domainId, holder, next.holder, next.ttlMs, outcomes).pipe(
            Effect.ensuring(Effect.suspend(() =>
              Deferred.isDoneUnsafe(next.granted)
                ? release(domainId, next.holder, [])
                : Effect.sync(() => Deferred.doneUnsafe(next.granted, Effect.succeed(history)))
            ))
          )
        }
        // The slot goes back, and this node no longer holds all of them: the jobs waiting here ask
        // the entity, whose queue also holds other nodes' jobs.
        const uncovered = d.waiting.splice(0)
        forget(domainId, d)
        return backend.release(domainId, holder, outcomes).pipe(
          Effect.andThen(Effect.forEach(uncovered, (w) =>
            askEntity(domainId, w.holder, w.priority, w.ttlMs).pipe(
              Effect.flatMap((s) =>
                Deferred.isDoneUnsafe(w.granted)
                  // The job stopped waiting meanwhile: the slot it was given goes straight back.
                  ? s.release([])
                  : Effect.sync(() => Deferred.doneUnsafe(w.granted, Effect.succeed(s.history)))
              ),
              Effect.forkIn(scope)
            ), { discard: true }))
        )
      }))

    const acquire = (domainId: string, holder: string, priority: number, ttlMs: number): Effect.Effect<DomainSlot> =>
      Effect.suspend(() => {
        const d = stateOf(domainId)
        // Jobs of this node already in the entity's queue go first: a job waiting here would be
        // handed a slot before them (a fail-over left them queued there while the node held nothing).
        if (d.holding.size < perDomainLimit || d.holding.has(holder) || d.asking > 0) return askEntity(domainId, holder, priority, ttlMs)
        const granted = Deferred.makeUnsafe<ReadonlyArray<HistoryEntry>>()
        let at = d.waiting.length
        while (at > 0 && d.waiting[at - 1]!.priority < priority) at--
        const waiter: Waiter = { holder, priority, ttlMs, granted }
        d.waiting.splice(at, 0, waiter)
        for (const raise of d.raisers.values()) raise(priority)
        return Deferred.await(granted).pipe(
          Effect.map((history) => slot(domainId, holder, history, true)),
          Effect.onInterrupt(() =>
            Effect.suspend(() => {
              const i = d.waiting.indexOf(waiter)
              if (i >= 0) {
                d.waiting.splice(i, 1)
                forget(domainId, d)
                return Effect.void
              }
              // Granted just as the job stopped waiting: pass the slot on.
              if (Deferred.isDoneUnsafe(granted)) return d.holding.has(holder) ? release(domainId, holder, []) : Effect.void
              // Being handed over, or asked for from the entity, right now: whoever completes that
              // sees the job gone and passes the slot on once the entity knows it was this job's.
              Deferred.doneUnsafe(granted, Effect.interrupt)
              return Effect.void
            })
          )
        )
      })

    const withSlot: DomainSlotsShape["withSlot"] = (domainId, holder, priority, ttlMs, use) =>
      Effect.uninterruptibleMask((restore) =>
        restore(acquire(domainId, holder, priority, ttlMs)).pipe(
          Effect.flatMap((slot) => {
            let released = false
            const releaseOnce = (outcomes: ReadonlyArray<Outcome>) =>
              Effect.suspend(() => {
                if (released) return Effect.void
                released = true
                return slot.release(outcomes)
              })
            return restore(use(slot.history, releaseOnce)).pipe(Effect.ensuring(releaseOnce([])))
          })
        )
      )

    const lendPriority: DomainSlotsShape["lendPriority"] = (domainId, holder, raise) => {
      const d = domains.get(domainId)
      // A job that crawls without a slot, or whose slot was handed on meanwhile, holds nothing here.
      if (!d?.holding.has(holder)) return
      d.raisers.set(holder, raise)
      const top = d.waiting[0]
      if (top) raise(top.priority)
    }

    // How many domains this node keeps state for (tests: none is left once nothing is held or waited for).
    return { acquire, withSlot, lendPriority, domainsTracked: () => domains.size }
  })

/** The calls the cluster backend makes to one domain's entity (its client, or a stand-in in tests). */
export interface DomainEntityCalls {
  readonly Acquire: (payload: { holder: string; ttlMs: number; priority: number }) => Effect.Effect<ReadonlyArray<HistoryEntry>, unknown>
  readonly Release: (payload: { holder: string; outcomes: ReadonlyArray<Outcome> }, options: { discard: true }) => Effect.Effect<void, unknown>
  readonly Handover: (payload: { from: string; to: string; ttlMs: number; outcomes: ReadonlyArray<Outcome> }, options: { discard: true }) => Effect.Effect<void, unknown>
  readonly Renew: (payload: { holders: ReadonlyArray<{ holder: string; ttlMs: number }> }, options: { discard: true }) => Effect.Effect<void, unknown>
  readonly Ping: () => Effect.Effect<void, unknown>
}

/**
 * The backend through the cluster: bounded waits, and one-way messages whose loss heals by expiry.
 * Each wait for a slot is bounded (`acquireWait`), so a reply lost with a dying node is asked for
 * again; the holder id makes a repeated request for the same slot harmless. A job waits as long as
 * the domain's queue is long, and crawls without a slot only when the entity does not answer a
 * ping (three tries of `pingWait`): politeness must not strand a job, nor give way to a long queue.
 */
export const entitySlotBackend = (
  entity: (domainId: string) => DomainEntityCalls,
  timing: { readonly acquireWait: Duration.Input; readonly pingWait: Duration.Input; readonly retryAfterInterrupt: Duration.Input } = {
    acquireWait: "15 seconds",
    pingWait: "5 seconds",
    retryAfterInterrupt: "200 millis"
  }
): DomainSlotBackend => {
  const reachable = (domainId: string) =>
    entity(domainId).Ping().pipe(
      // Interrupted by the entity's own stop (its shard moving): its next owner answers shortly.
      Effect.catchCause((cause) => (Cause.hasInterruptsOnly(cause) ? Effect.void : Effect.failCause(cause))),
      Effect.timeout(timing.pingWait),
      Effect.retry({ times: 2, schedule: Schedule.spaced("500 millis") }),
      Effect.as(true),
      Effect.catch(() => Effect.succeed(false))
    )
  const acquire = (domainId: string, holder: string, priority: number, ttlMs: number): Effect.Effect<ReadonlyArray<HistoryEntry> | undefined> =>
    entity(domainId).Acquire({ holder, ttlMs, priority }).pipe(
      // An entity that stops (its shard moving to another node) answers a waiting request with an
      // interruption. That is the reply's, not this job's: let it through and the job's run would
      // end as if interrupted, its message answered and the job left claimed. Ask again instead
      // (the new owner has the slot, or the queue, again); if this fiber is the one interrupted,
      // the retry stops at once.
      Effect.catchCause((cause) =>
        Cause.hasInterruptsOnly(cause) ? Effect.sleep(timing.retryAfterInterrupt).pipe(Effect.andThen(acquire(domainId, holder, priority, ttlMs))) : Effect.failCause(cause)
      ),
      Effect.timeout(timing.acquireWait),
      Effect.catch((e) =>
        reachable(domainId).pipe(
          Effect.flatMap((answers) =>
            answers
              ? acquire(domainId, holder, priority, ttlMs)
              : Effect.logWarning("domain slot unavailable, crawling without it", e).pipe(Effect.as(undefined))
          )
        )
      )
    )
  return {
    acquire,
    release: (domainId, holder, outcomes) => sendOneWay(entity(domainId).Release({ holder, outcomes }, { discard: true })),
    handover: (domainId, from, to, ttlMs, outcomes) => sendOneWay(entity(domainId).Handover({ from, to, ttlMs, outcomes }, { discard: true })),
    renew: (domainId, holders) => sendOneWay(entity(domainId).Renew({ holders }, { discard: true }))
  }
}

export const DomainSlotsLive = Layer.effect(
  DomainSlots,
  Effect.gen(function*() {
    const entity = yield* DomainEntity.client
    const crawl = yield* CrawlService
    const { acquire, withSlot, lendPriority } = yield* makeDomainSlots(entitySlotBackend(entity), crawl.perDomainConcurrency)
    return DomainSlots.of({ acquire, withSlot, lendPriority })
  })
)
