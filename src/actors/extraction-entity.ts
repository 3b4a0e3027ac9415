import { createHash } from "node:crypto"
import { DateTime, Effect, Schema } from "effect"
import { ClusterSchema, DeliverAt, Entity, Singleton } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { RESOURCE_ENTITY_IDLE } from "./cluster.ts"
import { sendOneWay } from "./entity-call.ts"
import { Config } from "../config.ts"
import { matchConfigs } from "../extract/config-match.ts"
import type { ExtractErrorClass } from "../extract/errors.ts"
import { EXTRACT_TIMEOUT_MS, extractInWorker } from "../extract/extract-in-worker.ts"
import { llmErrorClass, refineWithLlm, llmReport } from "../extract/llm.ts"
import { EventLog } from "../events/event-log.ts"
import { newId } from "../ids.ts"
import { ExtractionRepo, type ExtractionRow } from "../sql/extraction-repo.ts"
import { bodyEncoding } from "../crawl/content-type.ts"
import { storableJson } from "../sql/storable-json.ts"
import { WorkerTaskError, WorkerTimeout } from "../workers/timed-worker.ts"
import { JobRepo } from "../sql/job-repo.ts"
import { extractionWebhookBody } from "../webhooks/sender.ts"
import { sweepLoop } from "./sweep.ts"
import { DueAttempt, WebhookDeliveryEntity } from "./webhook-delivery-entity.ts"
import { TenantEntity } from "./tenant-entity.ts"
import { recordExtraction } from "../observability/metrics.ts"

/** Runs of one extraction before a transient failure becomes `dead`. */
export const MAX_EXTRACTION_ATTEMPTS = 3

/** A (re)run, delivered at `dueAt`: retries back off through persisted delayed messages. */
export class DueRun extends Schema.Class<DueRun>("trawl/DueRun")({ dueAt: Schema.Number }) {
  [DeliverAt.symbol]() {
    return DateTime.makeUnsafe(this.dueAt)
  }
}

/**
 * One entity per extraction: queued → claimed → done | failed (transient, retried
 * with backoff) | dead (after retries) | cancelled. `Run` is persisted, so an
 * extraction survives the death of the node working on it.
 */
const EXTRACT_ERROR_CLASSES: ReadonlySet<string> = new Set<ExtractErrorClass>(["parse_error", "invalid_input", "sanitize_fail", "unknown"])

export const ExtractionEntity = Entity.make("Extraction", [
  Rpc.make("Run", { payload: DueRun }).annotate(ClusterSchema.Persisted, true),
  /** Best-effort stop of a running extraction (its state is changed in SQL by the caller). */
  Rpc.make("Abort")
])

/** The model named when refinement was asked for but no model is configured (LLM_BASE_URL unset) and no config named one. */
const NO_MODEL = "none"

class Failure {
  readonly errorClass: string
  readonly message: string
  readonly transient: boolean
  constructor(errorClass: string, message: string, transient: boolean) {
    this.errorClass = errorClass
    this.message = message
    this.transient = transient
  }
}

export const ExtractionEntityLive = ExtractionEntity.toLayer(
  Effect.gen(function*() {
    const extractionId = (yield* Entity.CurrentAddress).entityId
    const repo = yield* ExtractionRepo
    const jobs = yield* JobRepo
    const config = yield* Config
    const events = yield* EventLog
    const self = yield* ExtractionEntity.client
    const deliveries = yield* WebhookDeliveryEntity.client
    const tenants = yield* TenantEntity.client
    let running: AbortController | undefined

    /** The content to extract from: stashed inline input, or a crawl job's HTML (waiting for the job). */
    const inputOf = (row: ExtractionRow) =>
      Effect.gen(function*() {
        if (row.input_id) {
          const stashed = yield* repo.input(row.input_id)
          if (!stashed) return yield* Effect.fail(new Failure("input_stash_lost", "the stashed input is gone", false))
          return stashed
        }
        const jobId = row.job_id!
        for (;;) {
          const job = yield* jobs.byId(jobId)
          if (!job) return yield* Effect.fail(new Failure("invalid_input", `job ${jobId} does not exist`, false))
          // A page that answered 404 or 410 ends its job done (crawling.md), but it is the site's
          // error page, not the page asked for: nothing to extract (api.md, "Extractions").
          if (job.status === "done" && job.result?.classification === "not_found") {
            return yield* Effect.fail(new Failure("invalid_input", "the page could not be fetched (not_found)", false))
          }
          if (job.status === "done") {
            const html = yield* jobs.html(row.tenant_id, jobId)
            if (!html) return yield* Effect.fail(new Failure("invalid_input", `job ${jobId} kept no content`, false))
            // Read as a browser reads it (and as page history serves it): the byte order mark, the
            // type's charset or the page's <meta>, else UTF-8.
            const content = new TextDecoder(bodyEncoding(html.body, html.contentType)).decode(html.body)
            return { content, hash: createHash("sha256").update(html.body).digest("hex") }
          }
          if (job.status === "failed" || job.status === "dead") {
            return yield* Effect.fail(new Failure("invalid_input", `the page could not be fetched (${job.result?.classification ?? job.status})`, false))
          }
          yield* Effect.sleep("500 millis")
        }
      })

    const process = (row: ExtractionRow) =>
      Effect.gen(function*() {
        const started = Date.now()
        const input = yield* inputOf(row)
        const found = row.config_id ? yield* repo.configs.find(row.tenant_id, row.config_id) : undefined
        const requested = found?.enabled ? found : undefined
        // The config the request named was deleted or disabled while the extraction waited: said, not skipped silently.
        const notApplied = row.config_id && !requested ? { configNotApplied: { id: row.config_id, reason: found ? "disabled" : "deleted" } } : {}
        const configs = matchConfigs(yield* repo.configs.candidates(row.tenant_id, row.type), { domainId: row.domain_id, url: row.url }, requested)
        const llmConfig = configs.find((c) => c.payload.llm)
        const llmOptions = llmConfig?.payload.llm
        const llmWanted = row.llm?.enabled ?? llmOptions?.enabled ?? false
        const mode = row.llm?.mode ?? llmOptions?.mode ?? "fill-missing"
        // Per tenant: one tenant's results never reveal another's inputs.
        const cacheKey = createHash("sha256").update(JSON.stringify({
          tenant: row.tenant_id,
          type: row.type,
          format: row.input_format,
          url: row.url,
          input: input.hash,
          configs: configs.map((c) => [c.id, new Date(c.updated_at).getTime()]),
          llm: llmWanted ? { mode, ...llmOptions } : null
        })).digest("hex")
        const cached = yield* repo.cacheGet(cacheKey)
        if (cached) return { data: cached.data, metadata: { ...cached.metadata, ...notApplied, durationMs: Math.max(0, Date.now() - started) }, cacheHit: true, llmError: null }

        const out = yield* Effect.tryPromise({
          try: () => extractInWorker({
            type: row.type,
            content: input.content,
            inputFormat: row.input_format,
            url: row.url,
            configs: configs.map((c) => ({ id: c.id, payload: c.payload }))
          }, row.tenant_id),
          catch: (e) => e
        }).pipe(Effect.catch((e) =>
          e instanceof WorkerTaskError && e.code !== undefined && EXTRACT_ERROR_CLASSES.has(e.code)
            ? Effect.fail(new Failure(e.code, e.message, false))
            // The same page and configs would run as long again.
            : e instanceof WorkerTimeout
            ? Effect.fail(new Failure("invalid_input", `the extraction took longer than ${EXTRACT_TIMEOUT_MS / 1000} s (a config's selector or regex, say, on this page)`, false))
            // A fault of the extractor itself: the same input would fail again, and its text is for the log only.
            : Effect.logError("extractor fault", e).pipe(Effect.andThen(Effect.fail(new Failure("unknown", "the extractor failed on this input", false))))
        ))
        let data = out.data as unknown as Record<string, unknown>
        const metadata: Record<string, unknown> = { ...out.metadata, ...notApplied }
        let llmError: string | null = null
        if (llmWanted) {
          if (!config.llm) {
            llmError = "llm_unavailable"
            // No model to ask: the request could not be made (the spec's statuses; errorClass says why).
            metadata.llm = llmReport(llmOptions?.model ?? NO_MODEL, "failed_request", 0)
          } else {
            const controller = new AbortController()
            running = controller
            const refined = yield* Effect.promise(() =>
              refineWithLlm({
                type: row.type,
                data,
                text: input.content,
                mode,
                llm: {
                  baseUrl: config.llm!.baseUrl,
                  apiKey: config.llm!.apiKey,
                  // A model the operator no longer offers (a config written before LLM_MODELS said so) gives way to the default.
                  model: llmOptions?.model !== undefined && (config.llmModels?.includes(llmOptions.model) ?? true) ? llmOptions.model : config.llm!.model,
                  ...(llmOptions?.temperature !== undefined ? { temperature: llmOptions.temperature } : {}),
                  ...(llmOptions?.promptOverride !== undefined ? { promptOverride: llmOptions.promptOverride } : {})
                },
                signal: controller.signal
              })
            )
            data = refined.data as Record<string, unknown>
            metadata.llm = refined.llm
            const status = refined.llm.status
            if (status !== "ok") llmError = llmErrorClass(status)
          }
        }
        // A config whose LLM options the refinement ran with was applied too (in priority order).
        if (llmWanted && llmConfig) {
          const applied = new Set([...(out.metadata.configsApplied ?? []), llmConfig.id])
          metadata.configsApplied = configs.filter((c) => applied.has(c.id)).map((c) => c.id)
        }
        // (a clock set back meanwhile gives no negative duration)
        metadata.durationMs = Math.max(0, Date.now() - started)
        // Text from the page can hold what the database cannot store (a NUL, half a surrogate pair).
        data = storableJson(data) as Record<string, unknown>
        // A failed LLM call is not cached, so a later identical request may still be refined.
        // The note belongs to this request, not to the result another request may reuse.
        const { configNotApplied: _note, ...cacheable } = metadata
        if (!llmError) yield* repo.cachePut(cacheKey, data, cacheable)
        return { data, metadata, cacheHit: false, llmError }
      })

    const delivery = (row: ExtractionRow, status: "done" | "failed" | "dead", data: Record<string, unknown>, metadata: Record<string, unknown>, error: { errorClass: string | null; errorMessage: string | null }) => {
      if (!row.webhook_url || !row.webhook_secret_enc || !row.webhook_event_types.includes(status)) return undefined
      const common = {
        extractionId: row.id,
        type: row.type,
        url: row.url,
        metadata,
        requestId: row.request_id ?? "",
        deliveredAt: new Date()
      }
      const body = status === "done"
        ? extractionWebhookBody({ ...common, status, data })
        : extractionWebhookBody({ ...common, status, errorClass: error.errorClass ?? "unknown", errorMessage: error.errorMessage ?? "" })
      return {
        id: newId("whd"),
        tenantId: row.tenant_id,
        resourceType: "extraction" as const,
        resourceId: row.id,
        eventStatus: status,
        // Each failed attempt is its own event; done and dead happen once.
        eventSeq: status === "failed" ? row.attempts : 0,
        url: row.webhook_url,
        secretEnc: row.webhook_secret_enc,
        body
      }
    }

    const finish = (row: ExtractionRow, status: "done" | "failed" | "dead", r: {
      data: Record<string, unknown>
      metadata: Record<string, unknown>
      errorClass: string | null
      errorMessage: string | null
      cacheHit: boolean
      retryAt: Date | null
    }) =>
      Effect.gen(function*() {
        const d = delivery(row, status, r.data, r.metadata, r)
        const done = yield* repo.finish(row.id, { status, ...r, ...(d ? { delivery: d } : {}) }).pipe(Effect.withSpan("ExtractionRepo.finish", undefined, { captureStackTrace: false }))
        if (!done) return
        recordExtraction(row.type, status, (performance.now() - started) / 1000)
        // The event was written with the state; streams are woken.
        yield* events.notify(row.tenant_id)
        // An ended extraction is charged by its tenant's entity (the sweeper catches a lost message).
        if (status !== "failed") yield* sendOneWay(tenants(row.tenant_id).Settle(undefined, { discard: true }))
        if (d) yield* sendOneWay(deliveries(d.id).AttemptNow(new DueAttempt({ attempt: 1, dueAt: Date.now() }), { discard: true }))
        if (status === "failed" && r.retryAt) {
          yield* self(row.id).Run(new DueRun({ dueAt: r.retryAt.getTime() }), { discard: true }).pipe(Effect.ignore)
        }
      })

    // When the run under way began its work (its claim), for the extraction latency metric.
    let started = 0
    const run = Effect.gen(function*() {
      const current = yield* repo.byId(extractionId)
      if (!current || !["queued", "claimed", "failed"].includes(current.status)) return
      const row = yield* repo.claim(extractionId, 10 * 60_000)
      if (!row) return
      started = performance.now()
      if (row.attempts === 1) yield* events.notify(row.tenant_id)
      const result = yield* process(row).pipe(
        // A fault of the service (its database, say), retried; its text is for the log only.
        Effect.catchDefect((d) =>
          Effect.logError("extraction fault", d).pipe(Effect.andThen(Effect.fail(new Failure("unknown", "an internal error interrupted the extraction", true))))
        ),
        Effect.result,
        Effect.ensuring(Effect.sync(() => (running = undefined)))
      )
      const meta = { inputFormat: row.input_format, strategiesUsed: [], configsApplied: [] }
      if (result._tag === "Success") {
        const r = result.success
        const required = row.llm?.enabled === true
        yield* finish(row, "done", {
          data: r.data,
          metadata: r.metadata,
          errorClass: required ? r.llmError : null,
          errorMessage: required && r.llmError ? `LLM refinement did not succeed (${r.llmError}); the heuristic result is kept` : null,
          cacheHit: r.cacheHit,
          retryAt: null
        })
        return
      }
      const f = result.failure instanceof Failure ? result.failure : new Failure("unknown", "an internal error interrupted the extraction", true)
      if (f.transient && row.attempts < MAX_EXTRACTION_ATTEMPTS) {
        yield* finish(row, "failed", {
          data: {}, metadata: meta, errorClass: f.errorClass, errorMessage: f.message, cacheHit: false,
          retryAt: new Date(Date.now() + 1000 * 2 ** row.attempts)
        })
      } else {
        yield* finish(row, "dead", { data: {}, metadata: meta, errorClass: f.errorClass, errorMessage: f.message, cacheHit: false, retryAt: null })
      }
    })

    return ExtractionEntity.of({
      Run: () => Effect.orDie(run),
      Abort: () => Effect.sync(() => running?.abort()).pipe(Rpc.fork)
    })
  }),
  { maxIdleTime: RESOURCE_ENTITY_IDLE }
)

/** Re-sends runs of extractions whose lease ran out (lost hand-off or runner). */
export const ExtractionSweeperLive = Singleton.make(
  "ExtractionSweeper",
  Effect.gen(function*() {
    const repo = yield* ExtractionRepo
    const extractions = yield* ExtractionEntity.client
    yield* sweepLoop("stale extractions", "15 seconds", repo.stale(200), (e) =>
      extractions(e.id).Run(new DueRun({ dueAt: Date.now() }), { discard: true }))
  })
)
