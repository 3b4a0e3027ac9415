import { Context, Effect, Layer } from "effect"
import { Config } from "../config.ts"
import { checkUrl } from "../crawl/ssrf.ts"
import { classifierFor } from "../crawl/ssrf-policy.ts"
import { EventLog } from "../events/event-log.ts"
import { readJsonInput } from "../extract/structured.ts"
import { idempotencyKeyProblem, type KeyedAttempt } from "../http/idempotency.ts"
import { itemId } from "../ids.ts"
import { type Conflict, fail, type InvalidRequest, notFound, type NotFound, type PayloadTooLarge, type PaymentRequired, RequestId, type TooManyRequests, type Unavailable, type Unprocessable } from "../schema/errors.ts"
import { type CreateExtractionBody, type Extraction, extractionBodyFaults, MAX_INPUT_BYTES, terminalExtractionStatuses } from "../schema/extraction.ts"
import { ExtractionRepo, type ExtractionRow, toExtraction } from "../sql/extraction-repo.ts"
import { JobRepo } from "../sql/job-repo.ts"
import { decryptSecret, encryptSecret } from "../webhooks/secret-box.ts"
import { itemWebhookSecret } from "../webhooks/signing.ts"
import { entityCall, sendOneWay } from "./entity-call.ts"
import { DueRun, ExtractionEntity } from "./extraction-entity.ts"
import { JobCreation, reservationRefusal } from "./job-creation.ts"
import { type ConcurrentLimit, type InsufficientCredit, type QuotaExceeded, TenantEntity } from "./tenant-entity.ts"
import { canonicalWebhookUrl, WebhookEndpoints } from "./webhook-endpoints.ts"
import type { ExtractionId } from "../schema/ids.ts"

/** An extraction as its creation answers it: with the webhook secret generated for it, once. */
export type CreatedExtraction = Extraction & { readonly webhookSecret?: string }

/** What an extraction is created from, besides its body. */
export interface ExtractionSource {
  /** The extraction it replays, if any. */
  readonly replayOf: string | null
  readonly recycleCount: number
  /** A replay of an extraction of stashed input reads that input again. */
  readonly reuseInputId?: string | null
  /** The request's Idempotency-Key, when it was sent with one. */
  readonly keyed?: KeyedAttempt | undefined
}

export interface ExtractionCreationShape {
  /**
   * Validates the body, stashes the input or starts the job that fetches its URL, reserves its
   * place in the tenant's quotas, writes the row and hands it to its entity.
   */
  readonly create: (tenantId: string, body: CreateExtractionBody, source: ExtractionSource) => Effect.Effect<CreatedExtraction, InvalidRequest | PayloadTooLarge | PaymentRequired | TooManyRequests | Unavailable | Unprocessable>
  /**
   * Creates an extraction again from a finished one of the tenant: the same input (a URL is fetched
   * again, a named job read again, stashed input reused), config, LLM options and webhook.
   */
  readonly replay: (tenantId: string, extractionId: ExtractionId) => Effect.Effect<CreatedExtraction, Conflict | InvalidRequest | NotFound | PayloadTooLarge | PaymentRequired | TooManyRequests | Unavailable | Unprocessable>
}

/** The one way extractions come into being (from the extractions API and replays). */
export class ExtractionCreation extends Context.Service<ExtractionCreation, ExtractionCreationShape>()("trawl/ExtractionCreation") {}

/**
 * The rules across a create body's fields: exactly one source (unless a replay reuses the stored
 * input), `inputFormat` only with `input`, webhook options only with `webhookUrl`. With `key`, an
 * invalid Idempotency-Key is named in the same answer.
 */
export const bodyRefusal = (body: CreateExtractionBody, reusesInput: boolean, key?: string) => {
  const details = extractionBodyFaults(body, reusesInput)
  if (details.length === 0) return undefined
  const keyProblem = key === undefined ? undefined : idempotencyKeyProblem(key)
  return fail(400, "validation_error", "the body breaks a rule across its fields", { details: keyProblem ? [...details, keyProblem] : details })
}

/**
 * Whether the extraction made its job to fetch its URL, rather than being given it. Rows from before
 * this was recorded: a first extraction with a url and a job made it (what replays assumed then).
 */
const madeOwnJob = (extraction: ExtractionRow) =>
  extraction.made_own_job ?? (extraction.replay_of === null && extraction.url !== null && extraction.job_id !== null)

export const ExtractionCreationLive = Layer.effect(
  ExtractionCreation,
  Effect.gen(function*() {
    const config = yield* Config
    const repo = yield* ExtractionRepo
    const jobRepo = yield* JobRepo
    const endpoints = yield* WebhookEndpoints
    const events = yield* EventLog
    const jobCreation = yield* JobCreation
    const client = yield* ExtractionEntity.client
    const tenantClient = yield* TenantEntity.client

    const create = (tenantId: string, body: CreateExtractionBody, source: ExtractionSource) =>
      Effect.gen(function*() {
        const { keyed } = source
        // Under an Idempotency-Key the ids come from the key's seed: a retry after a try whose node
        // died mid-way meets what that try wrote instead of writing it twice.
        const item = keyed && { seed: keyed.seed, index: 0 }
        const id = itemId("ext", item)
        const generatedSecret = body.webhookUrl && !body.webhookSecret ? itemWebhookSecret(config.secretKey, item) : undefined
        const written = keyed?.resumed ? yield* repo.find(tenantId, id) : undefined
        if (written) {
          // The dead try wrote the row (and all it needed before it), and may not have handed it on.
          // Only a queued one is handed on: a failed one waits for its retry.
          if (written.status === "queued") yield* client(id).Run(new DueRun({ dueAt: Date.now() }), { discard: true }).pipe(Effect.ignore)
          return { ...toExtraction(written), ...(generatedSecret ? { webhookSecret: generatedSecret } : {}) }
        }
        const broken = bodyRefusal(body, source.reuseInputId !== undefined)
        if (broken) return yield* broken
        if (body.input !== undefined && Buffer.byteLength(body.input, "utf8") > MAX_INPUT_BYTES) {
          return yield* fail(413, "payload_too_large", `input is larger than ${MAX_INPUT_BYTES} bytes`, {
            details: [{ path: "input", code: "too_large", message: "at most 5 MiB (5242880 bytes of UTF-8)" }]
          })
        }
        if (body.input !== undefined && body.input.includes("\u0000")) {
          return yield* fail(400, "validation_error", "input cannot contain the NUL character (U+0000)", {
            details: [{ path: "input", code: "invalid_value", message: "contains U+0000" }]
          })
        }
        if (body.input !== undefined && body.input.trim() === "") {
          return yield* fail(400, "validation_error", "input is empty", { details: [{ path: "input", code: "invalid_value", message: "must not be empty" }] })
        }
        // JSON input the engine could not read is refused now, not accepted to end dead
        const json = body.input !== undefined && body.inputFormat === "json" ? readJsonInput(body.input) : undefined
        if (json !== undefined && "problem" in json) {
          return yield* fail(400, "validation_error", "input is not a JSON object or array", {
            details: [{ path: "input", code: "invalid_json", message: "must be a JSON object or array" }]
          })
        }
        if (body.configId !== undefined) {
          const requested = yield* repo.configs.find(tenantId, body.configId)
          if (!requested) {
            return yield* fail(422, "invalid_config", "configId is not a config of this tenant", {
              details: [{ path: "configId", code: "not_found", message: "no such config" }]
            })
          }
          if (!requested.enabled) {
            return yield* fail(422, "invalid_config", "the requested config is disabled", {
              details: [{ path: "configId", code: "disabled", message: "enable the config first" }]
            })
          }
        }
        if (body.webhookUrl) {
          const hook = yield* Effect.promise(() => checkUrl(body.webhookUrl!, { allowPrivate: config.allowPrivateTargets, classify: classifierFor(config) }))
          if (!hook.ok && hook.reason !== "dns_error") {
            return yield* fail(422, "unsafe_url", `the webhookUrl is refused: ${hook.detail}`, {
              details: [{ path: "webhookUrl", code: hook.reason, message: hook.detail }]
            })
          }
        }
        const requestId = yield* RequestId
        let url: string | null = null
        let domainId: string | null = null
        let jobId: string | null = null
        let inputId: string | null = source.reuseInputId ?? null
        // Everything is checked before anything is written: the URL's job, then the webhook URL's place.
        const pageJob = body.url !== undefined ? yield* jobCreation.prepare(tenantId, { url: body.url }, { requestId, keyed: keyed && { attempt: keyed, index: 0 } }) : undefined
        const givenJob = body.jobId !== undefined ? yield* jobRepo.find(tenantId, body.jobId) : undefined
        if (body.jobId !== undefined && !givenJob) {
          return yield* fail(422, "invalid_job", "jobId is not a job of this tenant", {
            details: [{ path: "jobId", code: "not_found", message: "no such job" }]
          })
        }
        // a job that ended without a page never will have one: nothing to extract from
        if (givenJob && (givenJob.status === "failed" || givenJob.status === "dead")) {
          return yield* fail(422, "invalid_job", `the job ended ${givenJob.status} without a page to extract from`, {
            details: [{ path: "jobId", code: "no_page", message: `the job is ${givenJob.status}` }]
          })
        }
        // Its place in the day's quota and the credit it may cost at least are taken in the tenant's
        // entity, before anything is written.
        const refused = (e: QuotaExceeded | ConcurrentLimit | InsufficientCredit) => reservationRefusal(e, "this extraction")
        // The page's job is reserved with it (both or neither; its own reservation later takes no more room).
        yield* entityCall(tenantClient(tenantId).ReserveExtraction({ extractionId: id, ...(pageJob ? { jobId: pageJob.job.id } : {}) })).pipe(
          Effect.catchTags({ QuotaExceeded: refused, ConcurrentLimit: refused, InsufficientCredit: refused })
        )
        // Not interruptible from the first write to the hand-off (as jobs' writeAndRun): a client that
        // hangs up interrupts its request, and a row written but not handed on stayed queued until
        // the sweeper found its lease run out, up to a minute and a sweep later (docs/chaos.md, run E).
        // from the call on, the job's own creation gives back what it took when it fails
        let pageJobMade = false
        const row = yield* Effect.uninterruptible(Effect.gen(function*() {
          // What it took in the tenant's entity goes back if the request fails before its row is written.
          const inserted = yield* Effect.gen(function*() {
            const webhookUrl = body.webhookUrl ? canonicalWebhookUrl(body.webhookUrl) : null
            if (webhookUrl) yield* endpoints.register(tenantId, webhookUrl)
            if (pageJob) {
              pageJobMade = true
              const [job] = yield* jobCreation.create(tenantId, [pageJob])
              url = job!.url
              domainId = job!.domainId
              jobId = job!.id
            } else if (givenJob) {
              url = givenJob.url
              domainId = givenJob.domain_id
              jobId = givenJob.id
            } else if (body.input !== undefined) {
              inputId = itemId("inp", item)
              // Stashed before the 201, so a crash never loses the client's input.
              yield* repo.stash(tenantId, inputId, body.input)
            }
            const secret = body.webhookSecret ?? generatedSecret
            // Not written when a try of the same keyed request, taken for dead but still running, wrote it first.
            return yield* repo.insert({
              id,
              tenantId,
              type: body.type,
              url,
              domainId,
              inputFormat: body.input !== undefined || inputId ? body.inputFormat ?? "html" : "html",
              inputId,
              jobId,
              configId: body.configId ?? null,
              llm: body.llm ?? null,
              webhookUrl,
              webhookSecretEnc: secret ? encryptSecret(config.secretKey, secret, "webhook") : null,
              webhookEventTypes: body.webhookEventTypes ?? ["done", "dead"],
              replayOf: source.replayOf,
              requestId,
              madeOwnJob: pageJob !== undefined
            })
          }).pipe(Effect.onError(() =>
            Effect.andThen(
              sendOneWay(tenantClient(tenantId).ReleaseExtraction({ extractionId: id }, { discard: true })),
              // a page job reserved with the extraction and never made gives its place back too
              pageJob && !pageJobMade ? sendOneWay(tenantClient(tenantId).ReleaseJobs({ jobIds: [pageJob.job.id], unwritten: true }, { discard: true })) : Effect.void
            )
          ))
          const row = inserted ?? (yield* repo.find(tenantId, id))
          if (!row) return yield* Effect.die(new Error(`extraction ${id} was neither written nor found`))
          if (inserted) {
            if (source.recycleCount > 0) yield* repo.setRecycleCount(row.id, source.recycleCount)
            yield* events.notify(tenantId)
          }
          if (row.status === "queued") yield* client(id).Run(new DueRun({ dueAt: Date.now() }), { discard: true }).pipe(Effect.ignore)
          return row
        }))
        return { ...toExtraction({ ...row, recycle_count: source.recycleCount }), ...(generatedSecret ? { webhookSecret: generatedSecret } : {}) }
      })

    const replay = (tenantId: string, extractionId: string) =>
      Effect.gen(function*() {
        const row = yield* repo.find(tenantId, extractionId)
        if (!row) return yield* notFound("extraction")
        if (!terminalExtractionStatuses.includes(row.status)) {
          return yield* fail(409, `cannot_replay_${row.status}`, `a ${row.status} extraction cannot be replayed; wait until it ends`)
        }
        // The same input: a URL is fetched again (the extraction made its job itself), a job the
        // client named is read again.
        const ownJob = row.job_id !== null && row.url !== null && madeOwnJob(row)
        const body: CreateExtractionBody = {
          type: row.type,
          ...(row.input_id ? {} : ownJob ? { url: row.url! } : row.job_id ? { jobId: row.job_id } : {}),
          ...(row.input_id ? { inputFormat: row.input_format } : {}),
          ...(row.config_id ? { configId: row.config_id } : {}),
          ...(row.llm ? { llm: row.llm } : {}),
          // The same webhook, signed with the same secret, for the same events.
          ...(row.webhook_url
            ? {
              webhookUrl: row.webhook_url,
              webhookEventTypes: row.webhook_event_types as CreateExtractionBody["webhookEventTypes"],
              ...(row.webhook_secret_enc ? { webhookSecret: decryptSecret(config.secretKey, row.webhook_secret_enc, "webhook") } : {})
            }
            : {})
        }
        return yield* create(tenantId, body, { replayOf: row.id, recycleCount: row.recycle_count + 1, reuseInputId: row.input_id })
      })

    return ExtractionCreation.of({ create, replay })
  })
)
