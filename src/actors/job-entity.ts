import { Effect, Schema } from "effect"
import { ClusterSchema, Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { RESOURCE_ENTITY_IDLE } from "./cluster.ts"
import { sendOneWay } from "./entity-call.ts"
import { CrawlService } from "../crawl/crawl-service.ts"
import { withoutFragment } from "../crawl/domain.ts"
import type { EngineName, ScreenshotOptions } from "../crawl/engines/types.ts"
import { type PlanEntry, planForScreenshot, planFromHistory } from "../crawl/escalation.ts"
import { EventLog } from "../events/event-log.ts"
import { type JobResult, terminalStatuses } from "../schema/job.ts"
import { JobRepo, type JobRow } from "../sql/job-repo.ts"
import { type HistoryEntry, type Outcome, SLOT_LEASE_MS } from "./domain-entity.ts"
import { DomainSlots } from "./domain-slots.ts"
import { JobSlotReleases } from "./tenant-entity.ts"
import { DueAttempt, WebhookDeliveryEntity } from "./webhook-delivery-entity.ts"
import { newId } from "../ids.ts"
import { recordJobFinished } from "../observability/metrics.ts"
import { RequestId } from "../schema/errors.ts"
import { jobWebhookBody } from "../webhooks/sender.ts"

/**
 * A job whose runs keep dying with their node this often ends `dead`: a page that crashes the node
 * it is fetched on must not take down node after node. A run counts from its claim, which comes
 * when its fetch can begin: a job that was only waiting for a slot when its node died lost nothing.
 */
export const MAX_RUNS = 3

/** Where a job waits for its turn: its domain's politeness slot and the node's crawl capacity, by priority. */
export const RunPlacement = Schema.Struct({ domainId: Schema.String, priority: Schema.Int })

/**
 * One entity per crawl job; it owns the lifecycle queued → claimed → done | failed | dead.
 * `Run` is a persisted message: a job accepted with 201 is never lost, and if the node
 * running it dies, the message is delivered again on another node and the job finishes there.
 */
export const JobEntity = Entity.make("Job", [
  // Stopped at once when its node gives the entity up (shutdown, shard moved): the message is run
  // again by the shard's next owner, and the run's count is given back (see run).
  // It carries where the job waits (its domain and priority), so that a job is claimed only when
  // its fetch can begin; a Run without them (sent before they were) reads them from the job's row.
  Rpc.make("Run", { payload: Schema.NullishOr(RunPlacement) }).annotate(ClusterSchema.Persisted, true).annotate(ClusterSchema.InterruptOnTermination, true),
  /** Best-effort: stops the crawl if it is running here; the state change itself is made in SQL. */
  Rpc.make("Abort")
])

const screenshotOf = (s: JobRow["screenshot"]): false | ScreenshotOptions => {
  if (!s) return false
  if (s === true) return { format: "png" }
  return {
    format: s.format === "jpeg" ? "jpeg" : "png",
    ...(s.quality !== undefined ? { quality: s.quality } : {}),
    ...(s.fullPage !== undefined ? { fullPage: s.fullPage } : {}),
    ...(s.loadResources !== undefined ? { loadResources: s.loadResources } : {})
  }
}

/**
 * The terminal write's write-slot priority, above every job priority (the API caps them far
 * lower): the job waiting for one still holds its crawl slot and its page.
 */
const FINISH_PRIORITY = Number.MAX_SAFE_INTEGER
/** How long after an attempt a running job's attempt count is written, unless the job has ended. */
const ATTEMPT_PROGRESS_DELAY_MS = 1_000

/** Succeeds once `signal` is aborted. */
const whenAborted = (signal: AbortSignal) =>
  Effect.callback<void>((resume) => {
    if (signal.aborted) return resume(Effect.void)
    const onAbort = () => resume(Effect.void)
    signal.addEventListener("abort", onAbort, { once: true })
    return Effect.sync(() => signal.removeEventListener("abort", onAbort))
  })

/**
 * A lower bound of the attempts a claimed job made before this run: those recorded, or one for
 * each earlier run if that is more (a run is claimed as its fetch begins, and a run lost with its
 * node records none).
 */
const attemptsBefore = (job: JobRow) => Math.max(job.attempts, job.runs - 1)

const okClass = new Set(["ok", "not_found"])
// What an attempt teaches about its engine on the domain: it worked, or the domain refused it. An
// empty page says nothing about the engine (the URL is empty), nor does a timeout or an error.
const learnedClass = new Set(["ok", "not_found", "blocked"])

export const JobEntityLive = JobEntity.toLayer(
  Effect.gen(function*() {
    const jobId = (yield* Entity.CurrentAddress).entityId
    const services = yield* Effect.context<never>()
    const repo = yield* JobRepo
    const crawl = yield* CrawlService
    const events = yield* EventLog
    const domainSlots = yield* DomainSlots
    const slotReleases = yield* JobSlotReleases
    const deliveries = yield* WebhookDeliveryEntity.client
    let running: AbortController | undefined
    // Whether the run's fetch has begun: from then on a cancel stops it through its signal.
    let fetching = false
    // An Abort can come before a run has its controller (while the Run reads where the job waits):
    // it is kept, and the run starts aborted. The job is dead by then, so no later run claims it.
    let aborted = false
    // This entity's own run ended the job: a Run sent again meanwhile (the sweeper's, for a job
    // that waited long for its turn) has nothing left to do.
    let ended = false
    // The claim of the run under way, once made: what an interrupted run gives back.
    let claimed: JobRow | undefined

    /** The terminal write, in a write slot that `writeDone` gives back as soon as the row is written. */
    const end = (
      job: JobRow,
      status: "done" | "failed" | "dead",
      result: JobResult,
      attempts: number,
      writeDone: Effect.Effect<void>,
      extra: Partial<Parameters<typeof repo.finish>[1]> = {}
    ) =>
      Effect.gen(function*() {
        // Jobs notify on done and failed; the delivery is written with the terminal state.
        const delivery = job.webhook_url && job.webhook_secret_enc && status !== "dead"
          ? {
            id: newId("whd"),
            tenantId: job.tenant_id,
            resourceType: "job" as const,
            resourceId: job.id,
            eventStatus: status,
            url: job.webhook_url,
            secretEnc: job.webhook_secret_enc,
            body: jobWebhookBody({
              jobId: job.id,
              status,
              httpStatus: result.httpStatus,
              finalUrl: result.finalUrl,
              classification: result.classification,
              durationMs: result.durationMs,
              requestId: job.request_id ?? "",
              deliveredAt: new Date()
            })
          }
          : undefined
        const finished = yield* repo.finish(job, { status, result, attempts, ...extra, ...(delivery ? { delivery } : {}) }).pipe(
          Effect.withSpan("JobRepo.finish", { attributes: { "trawl.job.status": status } }, { captureStackTrace: false })
        )
        yield* writeDone
        if (!finished) return
        recordJobFinished(status, result.engine, result.classification, attempts)
        // Under the request id of the request that created the job: its log lines and its trace meet.
        yield* Effect.logDebug("job ended").pipe(
          Effect.annotateLogs({ jobId: job.id, status, engine: result.engine ?? "none", classification: result.classification, attempts }),
          Effect.provideService(RequestId, job.request_id ?? "none")
        )
        if (delivery) {
          // The delivery sweeper resends a first attempt whose message was lost.
          yield* sendOneWay(deliveries(delivery.id).AttemptNow(new DueAttempt({ attempt: 1, dueAt: Date.now() }), { discard: true }))
        }
        yield* events.notify(job.tenant_id)
        yield* slotReleases.release(job.tenant_id, job.id)
      })

    /** The claimed job's fetch, by the plan it starts with; answers with a write slot for its terminal write. */
    const fetchClaimed = (
      job: JobRow & { readonly firstClaim: boolean },
      history: ReadonlyArray<HistoryEntry>,
      controller: AbortController,
      releaseDomainSlot: (outcomes: ReadonlyArray<Outcome>) => Effect.Effect<void>
    ) => Effect.gen(function*() {
      // The first claim wrote job.claimed (a re-run's claim writes nothing): streams may read it.
      if (job.firstClaim) yield* events.notify(job.tenant_id)
      const screenshot = screenshotOf(job.screenshot)
      let plan: ReadonlyArray<PlanEntry>
      let startedWith: { engine: string; reason: string }
      if (job.escalation) {
        plan = job.escalation as ReadonlyArray<PlanEntry>
        startedWith = { engine: plan[0]!.engine, reason: "escalation given by the request" }
      } else {
        const choice = planFromHistory(crawl.defaultPlan, history.map((h) => ({ engine: h.engine as EngineName, ok: h.ok, at: h.at })), {
          windowMs: crawl.historyWindowMs
        })
        plan = screenshot ? planForScreenshot(choice.plan) : choice.plan
        const skipped = plan !== choice.plan ? `; a screenshot was asked for, so it starts at ${plan[0]!.engine}, the first engine of the plan that renders pages` : ""
        startedWith = { engine: plan[0]?.engine ?? "http", reason: choice.reason + skipped }
      }
      // The job's attempts so far are written a second after an attempt with none after it yet: a
      // job that retries or escalates shows its progress, one that ends at once writes nothing more.
      let progress: ReturnType<typeof setTimeout> | undefined
      const onAttempt = (made: number) => {
        clearTimeout(progress)
        progress = setTimeout(() => Effect.runForkWith(services)(repo.recordAttempts(job.id, attemptsBefore(job) + made).pipe(Effect.ignore)), ATTEMPT_PROGRESS_DELAY_MS)
      }
      const outcome = yield* Effect.suspend(() => {
        fetching = true
        return crawl.crawl({ url: job.url, plan, jobTimeoutMs: job.timeout_ms, screenshot, signal: controller.signal, onAttempt })
      }).pipe(
        // An interrupted run leaves no fetch behind.
        Effect.onInterrupt(() => Effect.sync(() => controller.abort())),
        // What the attempts taught about the domain goes back with the slot.
        Effect.tap((o) =>
          releaseDomainSlot(o.attempts.filter((a) => learnedClass.has(a.classification)).map((a) => ({ engine: a.engine, ok: okClass.has(a.classification) })))
        ),
        Effect.ensuring(Effect.sync(() => {
          running = undefined
          fetching = false
          clearTimeout(progress)
        }))
      )
      const writeDone = yield* crawl.takeWriteSlot(FINISH_PRIORITY)
      return { outcome, writeDone, startedWith, screenshot }
    })

    /**
     * Where the job waits: from the Run that a new job's creation sends, or else (a Run sent again,
     * which the job may have outlived, or one stored before Runs carried it) from the job's row;
     * undefined for a job that has ended or is gone, which then takes no slot just to find that out.
     */
    const placementOf = (payload: typeof RunPlacement.Type | null | undefined) =>
      payload
        ? Effect.succeed(payload)
        : Effect.map(repo.byId(jobId), (row) => (row && !terminalStatuses.includes(row.status) ? { domainId: row.domain_id, priority: row.priority } : undefined))

    const run = (payload: typeof RunPlacement.Type | null | undefined) => Effect.gen(function*() {
      if (ended) return
      const where = yield* placementOf(payload)
      if (!where) return
      claimed = undefined
      // Set before the waits, so that a cancel that comes while the job waits stops it too.
      const controller = new AbortController()
      if (aborted) controller.abort()
      running = controller
      // The job and this run of it, numbered by when it began: a re-run after a lost node takes over
      // its job's slot instead of waiting for the dead run's slot to expire, and the earlier run, if
      // it was only slow, cannot free it. A re-run begins seconds after the run it replaces (a lease
      // or a shard lock ran out first), so the nodes' clocks need only agree within that.
      const holder = `${jobId}#${Date.now()}`
      // The slot's answer is the domain's engine history, which a job without its own escalation
      // plans from; the job gives the slot back, with what its attempts taught, once the fetch is over.
      const work = domainSlots.withSlot(where.domainId, holder, where.priority, SLOT_LEASE_MS, (history, releaseDomainSlot) =>
        claimCrawlAndEnd(where, holder, controller, history, releaseDomainSlot))
      // An abort comes only from a cancel that has already ended the job in SQL and given its quota
      // slot back. A job still waiting for a domain or crawl slot leaves those queues at once instead
      // of taking its turn in them; a fetch under way is stopped by the signal and its run ends with
      // what it did (see claimCrawlAndEnd).
      const waitingOnly = whenAborted(controller.signal).pipe(Effect.andThen(Effect.suspend(() => (fetching ? Effect.never : Effect.void))))
      // A run its own node stops (a shard handed to another node, a shutdown) was not lost to a
      // crash: once claimed, it gives its count back, so only runs cut off by a dead node count
      // towards MAX_RUNS. (Its terminal write, if made, leaves nothing to give back.)
      yield* Effect.raceFirst(work, waitingOnly).pipe(
        Effect.onInterrupt(() => {
          const job = claimed
          return job ? repo.giveBackRun(job.id, job.runs).pipe(Effect.timeout("2 seconds"), Effect.ignore) : Effect.void
        })
      )
      ended = true
    })

    /**
     * With the domain slot held: a crawl slot, and in it the claim and the fetch. The claim counts
     * the run, so only a run whose fetch can begin counts towards MAX_RUNS (a node that dies while
     * its jobs wait for slots costs them nothing). The domain slot goes back (`releaseDomainSlot`) as
     * soon as the fetch is over; then the terminal write.
     */
    const claimCrawlAndEnd = (
      where: { readonly domainId: string; readonly priority: number },
      holder: string,
      controller: AbortController,
      history: ReadonlyArray<HistoryEntry>,
      releaseDomainSlot: (outcomes: ReadonlyArray<Outcome>) => Effect.Effect<void>
    ) => Effect.gen(function*() {
      // The crawl slot is taken by the job's priority; the job takes a write slot for its terminal
      // write before it gives the crawl slot up (see takeWriteSlot). While it waits with its domain
      // slot held, the jobs waiting for that domain lend it their priority: a high-priority job is
      // not held up behind the low-priority holders of its domain.
      const step = yield* crawl.withCrawlSlot(
        where.priority,
        Effect.gen(function*() {
          const job = yield* repo.claim(jobId).pipe(Effect.withSpan("JobRepo.claim", undefined, { captureStackTrace: false }))
          // Ended meanwhile (cancelled).
          if (!job) return undefined
          claimed = job
          if (job.runs > MAX_RUNS) return { job, gaveUp: true as const, writeDone: yield* crawl.takeWriteSlot(FINISH_PRIORITY) }
          return { job, gaveUp: false as const, ...(yield* fetchClaimed(job, history, controller, releaseDomainSlot)) }
        }),
        (raise) => domainSlots.lendPriority(where.domainId, holder, raise)
      )
      if (!step) return
      const job = step.job
      if (step.gaveUp) {
        yield* end(job, "dead", {
          httpStatus: null, finalUrl: null, classification: "internal_error", engine: null, durationMs: 0,
          contentType: null, bytes: 0, startedWith: { engine: "none", reason: `gave up after ${MAX_RUNS} interrupted runs` },
          screenshot: { taken: false, reason: "not crawled" }, attempts: []
        }, attemptsBefore(job), step.writeDone)
        return
      }
      const { outcome, writeDone, startedWith, screenshot } = step
      const winner = outcome.winning
      const final = winner ?? outcome.final
      // The content `/html` serves: the winner's, or what the last attempt of a failed job got (a
      // cancelled run keeps none). An empty answer is none: `/html` has nothing to serve for it.
      const fetched = winner ?? (outcome.outcome === "failed" ? final : undefined)
      const kept = fetched?.body && fetched.body.byteLength > 0 ? fetched : undefined
      const screenshotReason = !screenshot ? null
        : winner?.screenshot ? null
        : winner?.screenshotUnavailable ?? (winner ? `the ${winner.engine} engine cannot take screenshots`
          : kept ? `no attempt succeeded (${outcome.classification}): screenshots are taken of a page that was fetched`
          : "no content was fetched")
      const result: JobResult = {
        httpStatus: final?.httpStatus ?? null,
        finalUrl: final?.finalUrl ?? null,
        classification: outcome.classification,
        engine: winner?.engine ?? final?.engine ?? null,
        durationMs: outcome.durationMs,
        contentType: kept?.contentType ?? null,
        bytes: kept?.bytes ?? 0,
        startedWith,
        screenshot: { taken: !!(screenshot && winner?.screenshot), reason: screenshotReason },
        attempts: outcome.attempts.map((a) => ({
          engine: a.engine,
          classification: a.classification,
          httpStatus: a.httpStatus,
          finalUrl: a.finalUrl,
          durationMs: Math.round(a.durationMs),
          error: a.error ?? null
        }))
      }
      const attempts = attemptsBefore(job) + outcome.attempts.length
      if (outcome.outcome === "done" && winner) {
        // An answer whose bytes the engine could not have (a browser shows nothing for an empty
        // 404) ends the job done all the same, with no content and so no page version.
        yield* end(job, "done", result, attempts, writeDone, {
          ...(winner.body ? { content: { body: winner.body, contentType: winner.contentType, httpStatus: winner.httpStatus, finalUrl: withoutFragment(winner.finalUrl ?? job.url) } } : {}),
          ...(winner.screenshot ? { screenshot: { bytes: winner.screenshot, type: screenshot && screenshot.format === "jpeg" ? "image/jpeg" : "image/png" } } : {})
        })
      } else if (outcome.outcome === "cancelled" && controller.signal.aborted) {
        // The cancel ended the job dead in SQL already; the attempts its run made before it stopped
        // take the place of the cancel's empty result.
        yield* repo.recordCancelledRun(job.id, { ...result, classification: "cancelled" }, attempts)
        yield* writeDone
      } else {
        // What the last attempt got (a block page, an error page) is kept for `/html`, though not
        // as a version of the page: page history records the jobs that fetched content.
        yield* end(job, "failed", result, attempts, writeDone, final?.body
          ? { content: { body: final.body, contentType: final.contentType, httpStatus: final.httpStatus, finalUrl: final.finalUrl } }
          : {})
      }
    }).pipe(Effect.scoped)

    return JobEntity.of({
      Run: ({ payload }) => Effect.orDie(run(payload)),
      Abort: () =>
        Effect.sync(() => {
          aborted = true
          running?.abort()
        }).pipe(Rpc.fork)
    })
  }),
  { maxIdleTime: RESOURCE_ENTITY_IDLE }
)
