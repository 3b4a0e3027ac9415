import { Context, Effect, Exit, Layer, Option, Scope } from "effect"
import { recordCrawlAttempt } from "../observability/metrics.ts"
import { Config } from "../config.ts"
import { loadCrawlConfig, loadEscalationConfig } from "./config.ts"
import { createEngines } from "./engines/index.ts"
import type { Attempt, EngineName, ScreenshotOptions } from "./engines/types.ts"
import { type EscalationResult, type PlanEntry, runEscalation } from "./escalation.ts"
import { Semaphore } from "./semaphore.ts"
import { classifierFor } from "./ssrf-policy.ts"

export interface CrawlRequest {
  readonly url: string
  readonly plan: ReadonlyArray<PlanEntry>
  readonly jobTimeoutMs: number
  readonly screenshot: false | ScreenshotOptions
  readonly signal: AbortSignal
  /** Called after each attempt with the number made so far. */
  readonly onAttempt?: (made: number) => void
}

export interface CrawlServiceShape {
  readonly defaultPlan: ReadonlyArray<PlanEntry>
  readonly perDomainConcurrency: number
  readonly historyWindowMs: number
  /**
   * Runs `effect` in one of this node's crawl slots, waiting (parked, higher priority first) for
   * one. Only fetching happens in a crawl slot, so however many jobs a node has been handed, only
   * a bounded number crawl at once and the rest cost nothing while they wait.
   */
  readonly withCrawlSlot: <A, E, R>(
    priority: number,
    effect: Effect.Effect<A, E, R>,
    /** Called when the job has to wait, with a way to raise its priority while it waits. */
    onQueued?: (raise: (priority: number) => void) => void
  ) => Effect.Effect<A, E, R>
  /**
   * Takes one of this node's write slots (by priority); it is given back by the answered effect
   * (at most once) or when the scope closes. Claims and terminal writes run in one; a job takes it
   * before it gives up its crawl slot, so the pages held in memory for their write stay bounded by
   * the two capacities.
   */
  readonly takeWriteSlot: (priority: number) => Effect.Effect<Effect.Effect<void>, never, Scope.Scope>
  /** Runs one job's escalation; call it inside `withCrawlSlot`. */
  readonly crawl: (req: CrawlRequest) => Effect.Effect<EscalationResult>
  readonly engineNames: ReadonlyArray<EngineName>
}

export class CrawlService extends Context.Service<CrawlService, CrawlServiceShape>()("trawl/CrawlService") {}

/** Jobs crawling at once on one node; more wait in priority order. */
export const NODE_JOB_CAPACITY = 32
/** Claims and terminal writes in flight at once on one node (group commit batches them). */
export const NODE_WRITE_CAPACITY = 64

/** How long an interrupted crawl may take to stop before its slots are given back anyway. */
const STOP_WAIT = "10 seconds"

/** Waits for a slot of `semaphore`, interruptibly; answers its release. */
const takeSlot = (semaphore: Semaphore, priority: number, onQueued?: (raise: (priority: number) => void) => void) =>
  Effect.callback<() => void>((resume, signal) => {
    semaphore.acquire(signal, priority, onQueued).then(
      // Granted just as the waiting fiber was interrupted: give the slot straight back.
      (release) => (signal.aborted ? release() : resume(Effect.succeed(release))),
      () => {}
    )
  })

/**
 * Records a finished attempt: its metrics, and, when the crawl's span is exported, a span of its own
 * below it (made after the fact from the attempt's duration: the engines run outside Effect).
 */
const attemptObserver = Effect.withFiber((fiber) => {
  const parent = fiber.cache.span
  const tracer = fiber.cache.tracer
  const traced = tracer !== undefined && parent !== undefined && parent.sampled && fiber.cache.tracerEnabled
  return Effect.succeed((a: Attempt) => {
    recordCrawlAttempt(a.engine, a.classification, a.durationMs / 1000)
    if (!traced) return
    const endNanos = BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6))
    const span = tracer.span({
      name: `crawl.attempt ${a.engine}`,
      parent: Option.some(parent),
      annotations: Context.empty(),
      links: [],
      startTime: endNanos - BigInt(Math.round(a.durationMs * 1e6)),
      kind: "client",
      root: false,
      sampled: true
    })
    span.attribute("trawl.engine", a.engine)
    span.attribute("trawl.classification", a.classification)
    if (a.httpStatus !== null) span.attribute("http.response.status_code", a.httpStatus)
    if (a.error) span.attribute("error.message", a.error)
    span.end(endNanos, Exit.void)
  })
})

/** One long-lived set of engines per node (browser pools, HTTP agents), closed on shutdown. */
export const CrawlServiceLive = Layer.effect(
  CrawlService,
  Effect.gen(function*() {
    const config = yield* Config
    const crawlConfig = loadCrawlConfig()
    const escalation = loadEscalationConfig()
    const engines = yield* Effect.acquireRelease(
      Effect.sync(() =>
        createEngines({
          bravePath: config.bravePath,
          camoufoxPath: config.camoufoxPath,
          alternateProxyUrl: config.alternateProxyUrl,
          crawl: crawlConfig,
          classify: classifierFor(config)
        })
      ),
      (e) => Effect.promise(() => e.close()).pipe(Effect.ignore)
    )
    const crawlSlots = new Semaphore(NODE_JOB_CAPACITY)
    const writeSlots = new Semaphore(NODE_WRITE_CAPACITY)
    return CrawlService.of({
      defaultPlan: escalation.defaultPlan,
      perDomainConcurrency: crawlConfig.perDomainConcurrency,
      historyWindowMs: escalation.historyWindowMs,
      engineNames: ["http", "alternate", "brave", "camoufox"],
      withCrawlSlot: (priority, effect, onQueued) =>
        Effect.uninterruptibleMask((restore) =>
          restore(takeSlot(crawlSlots, priority, onQueued)).pipe(Effect.flatMap((release) => restore(effect).pipe(Effect.ensuring(Effect.sync(release)))))
        ),
      takeWriteSlot: (priority) =>
        Effect.uninterruptibleMask((restore) =>
          restore(takeSlot(writeSlots, priority)).pipe(
            // The semaphore's release is idempotent, so the early release and the finalizer can both run.
            // Scope.addFinalizer, not Effect.addFinalizer: the latter runs its finalizer in the caller's
            // context merged into the closing fiber's, a copy of the node's services twice per job.
            Effect.flatMap((release) =>
              Effect.flatMap(Effect.scope, (scope) => Effect.as(Scope.addFinalizer(scope, Effect.sync(release)), Effect.sync(release)))
            )
          )
        ),
      crawl: (req) =>
        Effect.flatMap(attemptObserver, (observe) => Effect.callback<EscalationResult>((resume, signal) => {
          let made = 0
          const running = runEscalation(req.plan, {
            url: req.url,
            allowPrivate: config.allowPrivateTargets,
            ...(req.screenshot ? { screenshot: req.screenshot } : {})
          }, engines, {
            jobTimeoutMs: req.jobTimeoutMs,
            signal: AbortSignal.any([req.signal, signal]),
            retryDelayMs: escalation.retryDelayMs,
            onAttempt: (attempt) => {
              observe(attempt)
              req.onAttempt?.(++made)
            }
          })
          running.then((result) => resume(Effect.succeed(result)), (e) => resume(Effect.die(e)))
          // Interrupted: the fetch is aborted, and the crawl ends once it has stopped, so the slots
          // around it do not go to the next job while this one still has a connection or page open.
          return Effect.promise(() => running.then(() => undefined, () => undefined)).pipe(Effect.timeout(STOP_WAIT), Effect.ignore)
        })).pipe(Effect.withSpan("crawl", { attributes: { "trawl.plan": req.plan.map((p) => p.engine).join(",") } }, { captureStackTrace: false }))
    })
  })
)

/** The crawl requests a `makeCrawlServiceTest` was given, oldest first. */
export class CrawlRequests extends Context.Service<CrawlRequests, { readonly all: Effect.Effect<ReadonlyArray<CrawlRequest>> }>()(
  "trawl/CrawlRequests"
) {}

/**
 * A crawler for tests: no engines and no network; each crawl answers `answer(request)` and is
 * captured. Slots are not limited. The limits are the live configuration's (config/crawl.json,
 * config/escalation.json) unless given.
 */
export const makeCrawlServiceTest = (
  answer: (req: CrawlRequest) => EscalationResult,
  limits: Partial<Pick<CrawlServiceShape, "perDomainConcurrency" | "historyWindowMs">> = {}
): Layer.Layer<CrawlService | CrawlRequests> =>
  Layer.unwrap(Effect.sync(() => {
    const requests: Array<CrawlRequest> = []
    const escalation = loadEscalationConfig()
    return Layer.mergeAll(
      Layer.succeed(CrawlService, CrawlService.of({
        defaultPlan: escalation.defaultPlan,
        perDomainConcurrency: limits.perDomainConcurrency ?? loadCrawlConfig().perDomainConcurrency,
        historyWindowMs: limits.historyWindowMs ?? escalation.historyWindowMs,
        engineNames: ["http", "alternate", "brave", "camoufox"],
        withCrawlSlot: (_priority, effect) => effect,
        takeWriteSlot: () => Effect.succeed(Effect.void),
        crawl: (req) =>
          Effect.sync(() => {
            requests.push(req)
            const result = answer(req)
            req.onAttempt?.(result.attempts.length)
            return result
          })
      })),
      Layer.succeed(CrawlRequests, CrawlRequests.of({ all: Effect.sync(() => [...requests]) }))
    )
  }))
