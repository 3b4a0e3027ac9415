import { Context, Effect, Layer } from "effect"
import { Config } from "../config.ts"
import { loadCrawlConfig, loadEscalationConfig } from "./config.ts"
import { createEngines } from "./engines/index.ts"
import type { EngineName, ScreenshotOptions } from "./engines/types.ts"
import { type EscalationResult, type PlanEntry, runEscalation } from "./escalation.ts"
import { Semaphore } from "./semaphore.ts"
import { classifierFor } from "./ssrf-policy.ts"

export interface CrawlRequest {
  readonly url: string
  readonly plan: ReadonlyArray<PlanEntry>
  readonly jobTimeoutMs: number
  readonly priority: number
  readonly screenshot: false | ScreenshotOptions
  readonly signal: AbortSignal
}

export interface CrawlServiceShape {
  readonly defaultPlan: ReadonlyArray<PlanEntry>
  readonly perDomainConcurrency: number
  readonly historyWindowMs: number
  /** Runs one job's escalation when this node has capacity; higher priority first. */
  readonly crawl: (req: CrawlRequest) => Effect.Effect<EscalationResult>
  readonly engineNames: ReadonlyArray<EngineName>
}

export class CrawlService extends Context.Service<CrawlService, CrawlServiceShape>()("trawl/CrawlService") {}

/** Jobs crawling at once on one node; more wait in priority order. */
export const NODE_JOB_CAPACITY = 32

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
    const capacity = new Semaphore(NODE_JOB_CAPACITY)
    return CrawlService.of({
      defaultPlan: escalation.defaultPlan,
      perDomainConcurrency: crawlConfig.perDomainConcurrency,
      historyWindowMs: escalation.historyWindowMs,
      engineNames: ["http", "alternate", "brave", "camoufox"],
      crawl: (req) =>
        Effect.promise(async () => {
          const release = await capacity.acquire(req.signal, req.priority).catch(() => undefined)
          try {
            return await runEscalation(req.plan, {
              url: req.url,
              allowPrivate: config.allowPrivateTargets,
              ...(req.screenshot ? { screenshot: req.screenshot } : {})
            }, engines, {
              jobTimeoutMs: req.jobTimeoutMs,
              signal: req.signal,
              retryDelayMs: escalation.retryDelayMs
            })
          } finally {
            release?.()
          }
        })
    })
  })
)
