import { Context, Effect, Exit, Layer, Schema, Semaphore } from "effect"
import { ClusterSchema, Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { extractionCharge, type ExtractionUsage, extractionMinimumUnits, fromUnits, jobCharge, type JobUsage, jobMinimumUnits, toUnits } from "../billing/pricing.ts"
import { TenantCredit } from "../billing/tenant-credit.ts"
import { secondsToNextUtcDay, utcDayStart } from "../billing/windows.ts"
import { ExtractionRepo } from "../sql/extraction-repo.ts"
import { JobRepo } from "../sql/job-repo.ts"
import { type CallDebit, TenantRepo } from "../sql/tenant-repo.ts"
import { WebhookRepo } from "../sql/webhook-repo.ts"
import { AuthTokenRepo } from "../sql/auth-token-repo.ts"
import { InvitationRepo } from "../sql/invitation-repo.ts"
import { Transaction } from "../schema/tenant.ts"
import { makeGroupCommit } from "../sql/group-commit.ts"
import { Unavailable } from "../schema/errors.ts"
import { entityCall, sendOneWay } from "./entity-call.ts"
import { IdentityLimit, RegisteredIdentity, registerIdentity, RegistrationEmailInUse, RegistrationRefused, RegistrationRequest } from "./tenant-identities.ts"
import { type QuotaName, TenantJobSlots } from "./tenant-job-slots.ts"
import { DueRenewal, makeTenantSubscription, SubscriptionChange } from "./tenant-subscription.ts"

const BootstrapPayload = Schema.Struct({
  name: Schema.String,
  isInternal: Schema.Boolean,
  plan: Schema.String,
  credits: Schema.String,
  email: Schema.String,
  passwordHash: Schema.NullOr(Schema.String),
  apiKey: Schema.Struct({
    id: Schema.String,
    prefix: Schema.String,
    hash: Schema.String,
    rateLimitPerMinute: Schema.Int
  })
})

export const BootstrapResult = Schema.Struct({
  tenantId: Schema.String,
  organizationId: Schema.String,
  ownerIdentityId: Schema.String,
  roleId: Schema.String,
  apiKeyId: Schema.String
})

/** A new webhook URL would exceed the tenant's `webhooks.endpoints.total`. */
export class EndpointLimit extends Schema.TaggedError<EndpointLimit>()("EndpointLimit", { limit: Schema.Int }) {}
export class EmailInUse extends Schema.TaggedError<EmailInUse>()("EmailInUse", {}) {}
export class TenantMissing extends Schema.TaggedError<TenantMissing>()("TenantMissing", {}) {}
/** A daily quota is used up until `retryAfter` seconds from now (the next UTC day). */
export class QuotaExceeded extends Schema.TaggedError<QuotaExceeded>()("QuotaExceeded", {
  quotaKey: Schema.String,
  limit: Schema.Int,
  retryAfter: Schema.Int
}) {}
export class ConcurrentLimit extends Schema.TaggedError<ConcurrentLimit>()("ConcurrentLimit", {
  quotaKey: Schema.String,
  limit: Schema.Int
}) {}

/** An adjustment would take the balance above the most a balance may hold (`MAX_BALANCE`). */
export class BalanceCeiling extends Schema.TaggedError<BalanceCeiling>()("BalanceCeiling", { balance: Schema.String }) {}
/** The balance (less what jobs not charged yet may cost) cannot cover the call; `required` is what it needed free. */
export class InsufficientCredit extends Schema.TaggedError<InsufficientCredit>()("InsufficientCredit", {
  balance: Schema.String,
  required: Schema.optional(Schema.String)
}) {}

/** What a `402 insufficient_credit` tells a client besides its message (`error.balance`, `error.required`): the balance then, and the free credit the call needed. */
export const creditShortfall = (e: InsufficientCredit): { readonly balance: string; readonly required?: string } => ({
  balance: e.balance,
  ...(e.required !== undefined ? { required: e.required } : {})
})

/** A call priced when it is made (an IP lookup), to debit: its ledger entry's id, price in 1/10000 EUR and names. */
export const CallToDebit = Schema.Struct({
  entryId: Schema.String,
  units: Schema.Int,
  serviceKey: Schema.String,
  resourceType: Schema.String,
  resourceId: Schema.NullOr(Schema.String),
  note: Schema.NullOr(Schema.String)
})
export type CallToDebit = typeof CallToDebit.Type

/**
 * One entity per tenant. It owns the tenant's credits (and, as the product grows,
 * its quotas and concurrency slots): every change to them is a message here, so
 * concurrent requests on several nodes are serialized in one place.
 */
export const TenantEntity = Entity.make("Tenant", [
  /** Creates the tenant; persisted and idempotent (a re-delivered message returns the first result). */
  Rpc.make("Bootstrap", { payload: BootstrapPayload, success: BootstrapResult, error: EmailInUse })
    .annotate(ClusterSchema.Persisted, true),
  Rpc.make("GetBalance", { success: Schema.String, error: TenantMissing }),
  /** Appends a ledger entry; idempotent by `entryId`. */
  Rpc.make("AdjustCredits", {
    payload: Schema.Struct({
      entryId: Schema.String,
      type: Schema.String,
      amount: Schema.String,
      note: Schema.NullOr(Schema.String),
      serviceKey: Schema.NullOr(Schema.String),
      resourceId: Schema.NullOr(Schema.String),
      resourceType: Schema.NullOr(Schema.String)
    }),
    success: Transaction,
    error: Schema.Union([TenantMissing, InsufficientCredit, BalanceCeiling])
  }).annotate(ClusterSchema.Persisted, true),
  /**
   * Takes daily and concurrency slots for jobs about to be created. Serial per
   * tenant, so concurrent requests on any number of nodes cannot overshoot. All of
   * them or none; with `partial`, as many of the first ids as fit (at least one), and
   * `shortBy` names the quota that left the others out.
   */
  Rpc.make("ReserveJobs", {
    payload: Schema.Struct({ jobIds: Schema.Array(Schema.String), partial: Schema.optional(Schema.Boolean) }),
    /** `reserved`: the jobs that hold their slots now; with `partial`, `shortBy` names the quota that left the others out. */
    success: Schema.Struct({
      reserved: Schema.Array(Schema.String),
      shortBy: Schema.optional(Schema.Union([QuotaExceeded, ConcurrentLimit, InsufficientCredit]))
    }),
    error: Schema.Union([QuotaExceeded, ConcurrentLimit, InsufficientCredit])
  }),
  /** Gives concurrency slots back (jobs ended, or were never created), and charges the jobs that ended. */
  // `unwritten`: the jobs were reserved but never written (their request was refused or failed
  // after the reservation), so they leave the day's count as well as their running slots.
  Rpc.make("ReleaseJobs", { payload: Schema.Struct({ jobIds: Schema.Array(Schema.String), unwritten: Schema.optional(Schema.Boolean) }) }),
  /**
   * Takes the credit a new extraction needs free (its minimum price) until it is written and
   * charged; retried for the same extraction, it takes none again. With `jobId` (an extraction of a
   * URL makes its page's job), that job is reserved in the same message, as `ReserveJobs` would (its
   * quotas and its minimum): both or neither, so concurrent extractions cannot each hold credit for
   * a job that another then finds no room for. The job's own `ReserveJobs` later takes no more room.
   */
  Rpc.make("ReserveExtraction", {
    payload: Schema.Struct({ extractionId: Schema.String, jobId: Schema.optional(Schema.String) }),
    error: Schema.Union([QuotaExceeded, ConcurrentLimit, InsufficientCredit])
  }),
  /** Gives back what a reserved extraction took, when its request failed before it was written. */
  Rpc.make("ReleaseExtraction", { payload: Schema.Struct({ extractionId: Schema.String }) }),
  /**
   * Debits calls priced when they are made (IP lookups), in order: each one ledger entry, written
   * only when the free credit covers its `units` (1/10000 EUR), else refused. The calls of one
   * tenant that a node has at once come in one message (CallDebitor). Not persisted: a caller that
   * gets no answer was not answered either, and an entry written for it is one its client may see
   * in the ledger.
   */
  Rpc.make("DebitCalls", {
    payload: Schema.Struct({ calls: Schema.Array(CallToDebit) }),
    /** One per call, in the same order: its entry, or its refusal. */
    success: Schema.Array(Schema.Struct({ debited: Schema.optional(Transaction), refused: Schema.optional(InsufficientCredit) }))
  }),
  /** Charges the tenant's ended jobs and extractions not charged yet (sent when an extraction ends, and by the sweeper). */
  Rpc.make("Settle"),
  /**
   * Registers a webhook URL unless it would exceed `webhooks.endpoints.total`. Serial per tenant,
   * so parallel requests (and the items of a bulk request) cannot register more than the limit.
   */
  Rpc.make("RegisterWebhookEndpoint", {
    payload: Schema.Struct({ url: Schema.String }),
    error: EndpointLimit
  }),
  /**
   * Creates a person from an invitation or delegation token unless the tenant has its
   * `iam.identities.total` already. Serial per tenant, so registrations on any number of nodes
   * cannot pass the limit (src/actors/tenant-identities.ts). Not persisted: the token is used in
   * the insert's transaction, so a message delivered again is refused rather than creating twice.
   */
  Rpc.make("RegisterIdentity", {
    payload: RegistrationRequest,
    success: RegisteredIdentity,
    error: Schema.Union([IdentityLimit, RegistrationEmailInUse, RegistrationRefused])
  }),
  /** The subscription's period ends: its renewal, a persisted message delivered then (src/actors/tenant-subscription.ts). */
  Rpc.make("RenewSubscription", { payload: DueRenewal }).annotate(ClusterSchema.Persisted, true),
  /** The tenant's quota limits were changed (a super-admin's override, an approved request): read them again now. */
  Rpc.make("ReloadLimits"),
  /** A super-admin's change of the subscription, prorated in the ledger. */
  Rpc.make("ChangeSubscription", {
    payload: SubscriptionChange,
    success: Schema.Struct({ entry: Schema.NullOr(Transaction) }),
    error: Schema.Union([TenantMissing, InsufficientCredit, BalanceCeiling])
  }).annotate(ClusterSchema.Persisted, true)
])

const RECONCILE_MS = 5_000

/**
 * Tells a tenant's entity its quota limits changed, before the change is answered, so that a
 * lowered limit holds from the next request on (docs/api.md, "Quotas"). Best effort within 2 s: the
 * entity reads its limits again within RECONCILE_MS in any case.
 */
export class TenantLimits extends Context.Service<TenantLimits, {
  readonly reload: (tenantId: string) => Effect.Effect<void>
}>()("trawl/TenantLimits") {}

export const TenantLimitsLive = Layer.effect(
  TenantLimits,
  Effect.map(TenantEntity.client, (client) =>
    TenantLimits.of({
      reload: (tenantId) => client(tenantId).ReloadLimits().pipe(Effect.timeout("2 seconds"), Effect.catchCause(() => Effect.void))
    }))
)

/** For unit tests of the services that change limits: the entity is not there to tell. */
export const TenantLimitsTest = Layer.succeed(TenantLimits, TenantLimits.of({ reload: () => Effect.void }))
/** The most ended jobs (or extractions) one charging statement takes. */
const SETTLE_BATCH = 200
const SETTLE_ROUNDS = 5
const SETTLE_DELAY = "2 seconds"
const PENDING_TTL_MS = 30_000
/** How often a tenant refused for its job quotas has its counts read again before the refusal. */
const RECHECK_MS = 500

export const TenantEntityLive = TenantEntity.toLayer(
  Effect.gen(function*() {
    const repo = yield* TenantRepo
    const jobs = yield* JobRepo
    const extractions = yield* ExtractionRepo
    const webhooks = yield* WebhookRepo
    // What registrations need, taken once so that the handler's effect needs nothing more.
    const registrationContext = yield* Effect.context<TenantRepo | InvitationRepo | AuthTokenRepo>()
    const callDebits = yield* CallDebits
    const address = yield* Entity.CurrentAddress
    const entityScope = yield* Effect.scope
    const tenantId = address.entityId
    const self = yield* TenantEntity.client
    const subscription = yield* makeTenantSubscription(tenantId, (periodEnd) =>
      self(tenantId).RenewSubscription(new DueRenewal({ periodEnd }), { discard: true }).pipe(Effect.orDie))

    // Job slots: counted from SQL, plus reservations whose rows are not written yet. The quota
    // limits are read with each reconcile and before any refusal: a raised limit applies to the
    // very next request, a lowered one within RECONCILE_MS.
    const slots = new TenantJobSlots({ reconcileEveryMs: RECONCILE_MS, pendingTtlMs: PENDING_TTL_MS })
    const limits = { daily: 0, concurrent: 0, extractionsDaily: 0 }
    // Extractions created today (`extractor.extractions.daily`): SQL's count and the ones reserved since.
    let extractionsToday = 0
    const credit = new TenantCredit({ pendingTtlMs: PENDING_TTL_MS })
    const readLimits = Effect.gen(function*() {
      const read = yield* repo.quotaLimits(tenantId, ["scraper.jobs.daily", "scraper.jobs.concurrent", "extractor.extractions.daily"])
      limits.daily = read["scraper.jobs.daily"]
      limits.concurrent = read["scraper.jobs.concurrent"]
      limits.extractionsDaily = read["extractor.extractions.daily"]
    })
    // Debits of calls run beside the entity's other messages, so counts are read under a lock: two
    // reads never interleave their updates.
    const reconcileLock = yield* Semaphore.make(1)
    const reconcileUnlocked = (now: number, day: number) =>
      Effect.gen(function*() {
        const pending = slots.pendingIds(now)
        const pendingExtractions = credit.pendingExtractionIds(now)
        const [written, writtenExtractions] = yield* Effect.all([
          pending.length > 0 ? jobs.existing(pending) : Effect.succeed(new Set<string>()),
          repo.extractionsWritten(pendingExtractions)
        ])
        const counts = yield* jobs.counts(tenantId, new Date(day))
        const [uncharged, balance, extractionsSince] = yield* Effect.all([
          repo.uncharged(tenantId),
          repo.balance(tenantId),
          extractions.createdSince(tenantId, new Date(day))
        ])
        yield* readLimits
        slots.reconcile(counts, written, now, day)
        credit.reconcile({ balance: toUnits(balance ?? 0), ...uncharged }, slots.pendingCount, writtenExtractions)
        extractionsToday = extractionsSince + credit.pendingExtractionCount
      })
    const reconcile = (now: number, day: number) => reconcileLock.withPermits(1)(reconcileUnlocked(now, day))
    /** Reads the counts when they are due, once however many callers ask at the same time. */
    const reconcileIfDue = reconcileLock.withPermits(1)(Effect.suspend(() => {
      const now = Date.now()
      const day = utcDayStart(now)
      return slots.needsReconcile(now, day) ? reconcileUnlocked(now, day) : Effect.void
    }))
    /**
     * For the debits of calls: the counts are read before the entity's first debit, then, when
     * due, beside the debits rather than before them. The statement itself never takes the balance
     * below zero, and counts one read old are what the entity works with between reads anyway.
     */
    let reconcilingBeside = false
    const reconcileBesideDebits = Effect.suspend(() => {
      if (credit.generation === 0) return reconcileIfDue
      const now = Date.now()
      if (reconcilingBeside || !slots.needsReconcile(now, utcDayStart(now))) return Effect.void
      reconcilingBeside = true
      return Effect.forkIn(
        reconcileIfDue.pipe(Effect.catchCause(Effect.logWarning), Effect.ensuring(Effect.sync(() => (reconcilingBeside = false)))),
        entityScope
      )
    })
    /** Reads the counts again now, for a refusal that may be out of date. */
    const reconcileNow = Effect.suspend(() => {
      const now = Date.now()
      return reconcile(now, utcDayStart(now))
    })

    // Charges the jobs and extractions that ended: one run at a time, and calls that come while
    // one runs share the next.
    const settleAll = (calls: ReadonlyArray<void>) =>
      Effect.gen(function*() {
        for (const source of ["jobs", "extractions"] as const) {
          // At most SETTLE_ROUNDS batches a call: a backlog is charged over several calls (and the
          // sweeper), not by one that holds the tenant's other messages up.
          for (let settled = SETTLE_BATCH, round = 0; settled === SETTLE_BATCH && round < SETTLE_ROUNDS; round++) {
            const generation = credit.generation
            const after = yield* repo.settle(tenantId, source, SETTLE_BATCH, (row) =>
              source === "jobs" ? jobCharge(row.result as JobUsage | null) : extractionCharge(row as unknown as ExtractionUsage))
            settled = after.settled
            if (after.balance !== undefined) credit.charged(source, settled, toUnits(after.balance), generation)
          }
        }
        return calls.map(() => undefined)
      })
    const settle = yield* makeGroupCommit(settleAll, { maxBatch: 1024 })
    // A creation that would be refused for credit first has the ended work charged and the counts
    // read again; a charge that fails then leaves the refusal to the counts as they are.
    const settleBeforeRefusal = settle(undefined).pipe(Effect.catchCause(Effect.logWarning), Effect.andThen(reconcileNow))
    // Work that ends is charged SETTLE_DELAY later, so that what ends within it is charged by one statement.
    let settleScheduled = false
    const settleSoon = Effect.suspend(() => {
      if (settleScheduled) return Effect.void
      settleScheduled = true
      return Effect.sleep(SETTLE_DELAY).pipe(
        Effect.andThen(Effect.sync(() => (settleScheduled = false))),
        Effect.andThen(settle(undefined)),
        Effect.catchCause(Effect.logWarning)
      )
    })
    /**
     * Takes the jobs' places in the day's and the running quotas and their minimum credit (one
     * that holds its place already, by an earlier try, takes no more room); with `partial`, as many
     * as fit, the quota that left the others out named in `shortBy`.
     */
    const reserveJobs = (jobIds: ReadonlyArray<string>, partial: boolean) =>
      Effect.gen(function*() {
        if (jobIds.length === 0) return { reserved: [] as ReadonlyArray<string> }
        const now = Date.now()
        const day = utcDayStart(now)
        if (slots.needsReconcile(now, day)) yield* reconcile(now, day)
        // A job that already holds its slot (reserved twice by two tries of one keyed request) takes no more room.
        let fresh = slots.newIds(jobIds)
        // A refusal is checked against fresh counts: a reservation given back without its job, or
        // a release that crossed a recount, would otherwise refuse for up to RECONCILE_MS. A tenant
        // at its limit that keeps asking reads them at most every RECHECK_MS. (A recount can change
        // which of the jobs hold a slot already.)
        if (slots.today + fresh.length > limits.daily || slots.running + fresh.length > limits.concurrent) {
          yield* slots.reconciledWithin(now, day, RECHECK_MS) ? readLimits : reconcile(now, day)
          fresh = slots.newIds(jobIds)
        }
        const wanted = fresh.length
        // Before a refusal for credit, the balance is read again (and work that ended is charged).
        if (credit.jobRoom() < wanted) yield* settleBeforeRefusal
        // `need`: the jobs the refusal is about (all of them, or those left out of a partial reservation,
        // the others being reserved, and so counted in what the credit holds already).
        const quota = (name: QuotaName, need: number) =>
          name === "daily"
            ? new QuotaExceeded({ quotaKey: "scraper.jobs.daily", limit: limits.daily, retryAfter: secondsToNextUtcDay(now) })
            : name === "credit"
            ? new InsufficientCredit({ balance: fromUnits(credit.balance), required: fromUnits(credit.needed(Math.max(1, need) * jobMinimumUnits)) })
            : new ConcurrentLimit({ quotaKey: "scraper.jobs.concurrent", limit: limits.concurrent })
        const admission = slots.admit(jobIds, partial, { ...limits, creditRoom: credit.jobRoom() }, now)
        if ("refused" in admission) return yield* quota(admission.refused, wanted)
        const reserved = new Set(admission.reserved)
        const admitted = fresh.filter((id) => reserved.has(id)).length
        credit.jobsReserved(admitted)
        return { reserved: admission.reserved, ...(admission.shortBy ? { shortBy: quota(admission.shortBy, wanted - admitted) } : {}) }
      })

    return TenantEntity.of({
      Bootstrap: ({ payload }) =>
        Effect.gen(function*() {
          const result = (yield* repo.bootstrapResult(tenantId)) ??
            (yield* repo.bootstrap({ ...payload, tenantId }).pipe(Effect.mapError(() => new EmailInUse())))
          // Also when re-delivered: a bootstrap cut short before its subscription opens it now.
          yield* subscription.open(payload.plan)
          return result
        }),
      RenewSubscription: ({ payload }) =>
        subscription.renew(payload.periodEnd).pipe(Effect.map((balance) => {
          if (balance !== undefined) credit.balance = toUnits(balance)
        })),
      ReloadLimits: () => readLimits,
      ChangeSubscription: ({ payload }) =>
        Effect.gen(function*() {
          const outcome = yield* subscription.change(payload)
          if (outcome.ok) {
            if (outcome.entry) credit.balance = toUnits(outcome.entry.balanceAfter)
            // The plan's quotas apply to the very next request, a lowered one too.
            yield* readLimits
            return { entry: outcome.entry }
          }
          if (outcome.reason === "missing") return yield* new TenantMissing()
          if (outcome.reason === "above_ceiling") return yield* new BalanceCeiling({ balance: outcome.balance ?? "0" })
          return yield* new InsufficientCredit({ balance: outcome.balance ?? "0", ...(outcome.required ? { required: outcome.required } : {}) })
        }),
      GetBalance: () =>
        repo.balance(tenantId).pipe(
          Effect.flatMap((b) => b === undefined ? Effect.fail(new TenantMissing()) : Effect.succeed(b))
        ),
      AdjustCredits: ({ payload }) =>
        Effect.gen(function*() {
          if ((yield* repo.find(tenantId)) === undefined) return yield* new TenantMissing()
          const result = yield* repo.adjust({
            id: payload.entryId,
            tenantId,
            type: payload.type,
            amount: payload.amount,
            note: payload.note,
            serviceKey: payload.serviceKey,
            resourceId: payload.resourceId,
            resourceType: payload.resourceType
          })
          if (!result.ok) {
            return yield* result.reason === "above_ceiling" ? new BalanceCeiling({ balance: result.balance }) : new InsufficientCredit({ balance: result.balance })
          }
          credit.balance = toUnits(result.transaction.balanceAfter)
          return result.transaction
        }),
      ReserveExtraction: ({ payload }) =>
        Effect.gen(function*() {
          const now = Date.now()
          if (slots.needsReconcile(now, utcDayStart(now))) yield* reconcileNow
          // Serial per tenant, so concurrent requests on any node cannot create more than the day allows.
          if (extractionsToday >= limits.extractionsDaily && !credit.holdsExtraction(payload.extractionId)) {
            yield* readLimits
            if (extractionsToday >= limits.extractionsDaily) {
              return yield* new QuotaExceeded({ quotaKey: "extractor.extractions.daily", limit: limits.extractionsDaily, retryAfter: secondsToNextUtcDay(now) })
            }
          }
          // Before a refusal, the balance is read again (and work that ended is charged).
          const withJob = payload.jobId !== undefined && slots.newIds([payload.jobId]).length > 0
          if (!credit.extractionFits(payload.extractionId, withJob)) yield* settleBeforeRefusal
          if (!credit.extractionFits(payload.extractionId, withJob)) {
            return yield* new InsufficientCredit({
              balance: fromUnits(credit.balance),
              required: fromUnits(credit.needed(extractionMinimumUnits + (withJob ? jobMinimumUnits : 0)))
            })
          }
          // The page's job first: its quotas may refuse it, and then nothing is taken.
          if (payload.jobId !== undefined) yield* reserveJobs([payload.jobId], false)
          if (credit.extractionReserved(payload.extractionId, now)) extractionsToday++
        }),
      ReserveJobs: ({ payload }) => reserveJobs(payload.jobIds, payload.partial ?? false),
      RegisterWebhookEndpoint: ({ payload }) =>
        Effect.gen(function*() {
          // Every registration of this tenant passes here one at a time, so the count checked holds.
          const limit = yield* repo.quotaLimit(tenantId, "webhooks.endpoints.total")
          if (!(yield* webhooks.addEndpoint(tenantId, payload.url, limit))) return yield* new EndpointLimit({ limit })
        }),
      RegisterIdentity: ({ payload }) => registerIdentity(tenantId, payload).pipe(Effect.provideContext(registrationContext)),
      // Charging runs beside the entity's other messages: a creation does not wait for it.
      // Forked: lookups wait for their own debits' write, not for other messages. Their credit is
      // taken before the write, so concurrent ones cannot together take more than is free; the
      // write itself refuses to take the balance below zero.
      DebitCalls: ({ payload }) =>
        Effect.gen(function*() {
          yield* reconcileBesideDebits
          const refusal = (units: number) => new InsufficientCredit({ balance: fromUnits(credit.balance), required: fromUnits(credit.needed(units)) })
          // In order, each call takes its price from the free credit or is refused; before the
          // first refusal the balance is read again (and work that ended is charged), once.
          let rechecked = false
          const taken: Array<CallToDebit> = []
          const refused: Array<boolean> = []
          for (const call of payload.calls) {
            let ok = credit.callReserved(call.units)
            if (!ok && !rechecked) {
              rechecked = true
              yield* settleBeforeRefusal
              ok = credit.callReserved(call.units)
            }
            refused.push(!ok)
            if (ok) taken.push(call)
          }
          // The calls taken are written together, by the node's one statement for all tenants.
          const written = taken.length === 0 ? [] : yield* callDebits.write({ tenantId, calls: taken }).pipe(
            Effect.onExit((exit) =>
              Effect.sync(() => {
                const balance = Exit.isSuccess(exit) ? exit.value.balance : undefined
                credit.callDone(taken.reduce((sum, c) => sum + c.units, 0), balance !== undefined ? toUnits(balance) : undefined)
              })
            ),
            Effect.map((result) => result.transactions)
          )
          let next = 0
          return payload.calls.map((call, i): { readonly debited?: Transaction; readonly refused?: InsufficientCredit } => {
            // The statement itself refuses to take the balance below zero.
            const debited = refused[i] ? undefined : written[next++]
            return debited ? { debited } : { refused: refusal(call.units) }
          })
        }).pipe(Rpc.fork),
      ReleaseExtraction: ({ payload }) =>
        Effect.gen(function*() {
          // A request can fail after its row was written (a client gone just after): that one stays counted.
          if ((yield* repo.extractionsWritten([payload.extractionId])).size > 0) return
          if (credit.extractionReleased(payload.extractionId)) extractionsToday = Math.max(0, extractionsToday - 1)
        }),
      ReleaseJobs: ({ payload }) => Effect.sync(() => slots.release(payload.jobIds, payload.unwritten ?? false)).pipe(Effect.andThen(settleSoon), Rpc.fork),
      Settle: () => settleSoon.pipe(Rpc.fork)
    })
  }),
  { maxIdleTime: "5 minutes" }
)

/**
 * The writer of the debits of calls priced when made (IP lookups), one per node: the debits of all
 * the tenants whose entities run here that come while statements are written go together in the
 * next. One statement per tenant would queue on the embedded database, which runs one at a time;
 * two at once keep it busy while the node reads one's answer and builds the next.
 */
export class CallDebits extends Context.Service<CallDebits, {
  /** Writes one tenant's calls, in order: an entry per call its balance covers (its first ones), and its balance after. */
  readonly write: (debits: { readonly tenantId: string; readonly calls: ReadonlyArray<CallToDebit> }) => Effect.Effect<{
    readonly transactions: ReadonlyArray<Transaction | undefined>
    readonly balance: string | undefined
  }>
}>()("trawl/CallDebits") {}

export const CallDebitsLive = Layer.effect(
  CallDebits,
  Effect.gen(function*() {
    const repo = yield* TenantRepo
    const write = yield* makeGroupCommit(
      (messages: ReadonlyArray<{ readonly tenantId: string; readonly calls: ReadonlyArray<CallToDebit> }>) =>
        repo.debitCalls(messages.flatMap(({ tenantId, calls }) => calls.map((call): CallDebit => ({ ...call, tenantId })))).pipe(
          Effect.map((rows) => {
            let at = 0
            return messages.map(({ calls }) => {
              const mine = rows.slice(at, at += calls.length)
              return { transactions: mine.map((r) => r.transaction), balance: mine.at(-1)?.balance }
            })
          })
        ),
      { maxBatch: 512, weight: (m) => m.calls.length, maxWeight: 2048, inFlight: 2 }
    )
    return CallDebits.of({ write })
  })
)

/**
 * Debits calls priced when made (IP lookups) through their tenants' entities, one per node: the
 * calls that come while rounds of messages are under way go in the next, one message per tenant
 * for all of its calls. Two rounds go at once, so that a lookup does not wait for a whole
 * round (its entity message and the statement that writes it) before its own is sent; the order
 * of a tenant's entries is the order its entity takes them in. Each caller gets its own entry or its own refusal; a message that fails
 * (the cluster unavailable) fails all of its calls, none of which is then tried again.
 */
export class CallDebitor extends Context.Service<CallDebitor, {
  readonly debit: (tenantId: string, call: CallToDebit) => Effect.Effect<Transaction, InsufficientCredit | Unavailable>
}>()("trawl/CallDebitor") {}

export const CallDebitorLive = Layer.effect(
  CallDebitor,
  Effect.gen(function*() {
    const tenants = yield* TenantEntity.client
    type Outcome = Exit.Exit<Transaction, InsufficientCredit | Unavailable>
    const send = yield* makeGroupCommit((items: ReadonlyArray<{ readonly tenantId: string; readonly call: CallToDebit }>) => {
      const byTenant = new Map<string, Array<number>>()
      items.forEach(({ tenantId }, i) => {
        const indices = byTenant.get(tenantId)
        if (indices) indices.push(i)
        else byTenant.set(tenantId, [i])
      })
      const outcomes = new Array<Outcome>(items.length)
      return Effect.forEach(byTenant, ([tenantId, indices]) =>
        entityCall(tenants(tenantId).DebitCalls({ calls: indices.map((i) => items[i]!.call) })).pipe(
          Effect.exit,
          Effect.map((exit) =>
            indices.forEach((item, j) => {
              const answer = Exit.isSuccess(exit) ? exit.value[j] : undefined
              outcomes[item] = !Exit.isSuccess(exit) ? Exit.failCause(exit.cause)
                : answer?.debited ? Exit.succeed(answer.debited)
                : answer?.refused ? Exit.fail(answer.refused)
                : Exit.die(new Error("DebitCalls answered fewer outcomes than calls"))
            })
          )
        ), { concurrency: "unbounded", discard: true }).pipe(Effect.as(outcomes))
    }, { maxBatch: 1024, inFlight: 2 })
    return CallDebitor.of({ debit: (tenantId, call) => Effect.flatten(send({ tenantId, call })) })
  })
)

/** Gives a finished job's concurrency slot back to its tenant's entity. */
export class JobSlotReleases extends Context.Service<JobSlotReleases, {
  readonly release: (tenantId: string, jobId: string) => Effect.Effect<void>
}>()("trawl/JobSlotReleases") {}

/**
 * Jobs of one tenant that end at about the same time on a node give their slots back in one
 * message. The message is one-way and its loss heals itself (the entity reconciles its counts
 * from SQL), so a send that cannot get through in time is dropped rather than holding the job.
 */
export const JobSlotReleasesLive = Layer.effect(
  JobSlotReleases,
  Effect.gen(function*() {
    const tenants = yield* TenantEntity.client
    const send = yield* makeGroupCommit((ended: ReadonlyArray<{ tenantId: string; jobId: string }>) => {
      const byTenant = new Map<string, Array<string>>()
      for (const { tenantId, jobId } of ended) byTenant.set(tenantId, [...(byTenant.get(tenantId) ?? []), jobId])
      return Effect.forEach(byTenant, ([tenantId, jobIds]) =>
        sendOneWay(tenants(tenantId).ReleaseJobs({ jobIds }, { discard: true })), {
        concurrency: "unbounded",
        discard: true
      }).pipe(Effect.as(ended.map(() => undefined)))
    }, { maxBatch: 256 })
    return JobSlotReleases.of({ release: (tenantId, jobId) => send({ tenantId, jobId }) })
  })
)
