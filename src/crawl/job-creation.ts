import { Context, Effect, Layer } from "effect"
import { entityCall, sendOneWay } from "../actors/entity-call.ts"
import { JobEntity } from "../actors/job-entity.ts"
import { type ConcurrentLimit, type QuotaExceeded, TenantEntity } from "../actors/tenant-entity.ts"
import { Config } from "../config.ts"
import { EventLog } from "../events/event-log.ts"
import { newId } from "../ids.ts"
import { type ApiError, type ErrorDetail, fail } from "../schema/errors.ts"
import type { CreateJobBody, Job } from "../schema/job.ts"
import { JobRepo, type NewJob, toJob } from "../sql/job-repo.ts"
import { canonicalWebhookUrl, WebhookEndpoints } from "../webhooks/endpoints.ts"
import { encryptSecret } from "../webhooks/secret-box.ts"
import { generateWebhookSecret } from "../webhooks/signing.ts"
import { domainIdOf, normalizeUrl } from "./domain.ts"
import { checkUrl } from "./ssrf.ts"
import { classifierFor } from "./ssrf-policy.ts"

export const DEFAULT_JOB_TIMEOUT_MS = 120_000

export interface PreparedJob {
  readonly job: NewJob
  /** A secret generated for the webhook, returned once in the creation response. */
  readonly generatedSecret: string | undefined
}

export interface JobCreationShape {
  /** Checks one job body beyond its schema: safe target and webhook URLs. */
  readonly prepare: (tenantId: string, body: CreateJobBody, requestId: string | null, replayOf?: string | null) => Effect.Effect<PreparedJob, ApiError>
  /** Reserves quota in the tenant's entity, writes the rows, then hands each job to its entity. */
  readonly create: (tenantId: string, prepared: ReadonlyArray<PreparedJob>) => Effect.Effect<ReadonlyArray<CreatedJob>, ApiError>
  /**
   * As `create`, for as many of the first jobs as the tenant's quotas take now (at least one, or
   * the quota's error), less those whose new webhook URL finds no place; `refused` says why the
   * others were not created.
   */
  readonly createWhatFits: (tenantId: string, prepared: ReadonlyArray<PreparedJob>) => Effect.Effect<{
    readonly created: ReadonlyArray<CreatedJob>
    /** The jobs not created (by their position in `prepared`), and why. */
    readonly refused: ReadonlyArray<{ readonly position: number; readonly error: ApiError }>
  }, ApiError>
}

export type CreatedJob = Job & { webhookSecret?: string }

/** The one way jobs come into being: from the jobs API, replays and URL extractions. */
export class JobCreation extends Context.Service<JobCreation, JobCreationShape>()("trawl/JobCreation") {}

export const JobCreationLive = Layer.effect(
  JobCreation,
  Effect.gen(function*() {
    const config = yield* Config
    const repo = yield* JobRepo
    const events = yield* EventLog
    const jobClient = yield* JobEntity.client
    const tenantClient = yield* TenantEntity.client
    const endpoints = yield* WebhookEndpoints
    const guard = { allowPrivate: config.allowPrivateTargets, classify: classifierFor(config) }

    /** Checks one job body beyond its schema: safe target and webhook URLs. */
    const prepare = (tenantId: string, body: CreateJobBody, requestId: string | null, replayOf: string | null = null): Effect.Effect<PreparedJob, ApiError> =>
      Effect.gen(function*() {
        if (body.webhookSecret !== undefined && !body.webhookUrl) {
          return yield* fail(400, "validation_error", "webhookSecret goes with webhookUrl", {
            details: [{ path: "webhookSecret", code: "invalid_value", message: "only with webhookUrl" }]
          })
        }
        // Both URLs are checked, and every refusal is reported at once.
        const [target, hook] = yield* Effect.promise(() =>
          Promise.all([
            checkUrl(body.url, guard),
            body.webhookUrl ? checkUrl(body.webhookUrl, guard) : undefined
          ])
        )
        // An unresolvable name is not unsafe; the crawl (or the delivery) reports it.
        const refused: Array<ErrorDetail> = []
        if (!target.ok && target.reason !== "dns_error") refused.push({ path: "url", code: target.reason, message: target.detail })
        if (hook && !hook.ok && hook.reason !== "dns_error") refused.push({ path: "webhookUrl", code: hook.reason, message: hook.detail })
        if (refused.length > 0) {
          return yield* fail(422, "unsafe_url", `refused: ${refused.map((r) => `${r.path} (${r.message})`).join("; ")}`, { details: refused })
        }
        const generatedSecret = body.webhookUrl && !body.webhookSecret ? generateWebhookSecret() : undefined
        const secret = body.webhookSecret ?? generatedSecret
        const url = new URL(body.url)
        const job: NewJob = {
          id: newId("job"),
          tenantId,
          url: url.href,
          normalizedUrl: normalizeUrl(url),
          domainId: domainIdOf(url) ?? url.hostname.toLowerCase(),
          priority: body.priority ?? 0,
          timeoutMs: body.timeoutMs ?? DEFAULT_JOB_TIMEOUT_MS,
          escalation: body.escalation ?? null,
          screenshot: body.screenshot ?? false,
          webhookUrl: body.webhookUrl ? canonicalWebhookUrl(body.webhookUrl) : null,
          webhookSecretEnc: secret ? encryptSecret(config.secretKey, secret, "webhook") : null,
          replayOf,
          requestId
        }
        return { job, generatedSecret }
      })

    const quotaError = (e: QuotaExceeded | ConcurrentLimit) =>
      e._tag === "QuotaExceeded"
        ? fail(429, "quota_exceeded", `the daily quota ${e.quotaKey} (${e.limit}) is used up`, { retryAfter: e.retryAfter })
        : fail(429, "concurrent_limit_exceeded", `the tenant's ${e.limit} running jobs (${e.quotaKey}) leave no room; retry when one ends`, {
          retryAfter: 1
        })

    /**
     * Takes the place of each job's webhook URL in `webhooks.endpoints.total`, in order (a URL is
     * asked for once); answers each job's refusal, or undefined. Only jobs that hold their quota
     * slots get here, so a request refused for quota takes no place.
     */
    const registerEndpoints = (tenantId: string, prepared: ReadonlyArray<PreparedJob>) =>
      Effect.gen(function*() {
        const verdicts = new Map<string, ApiError | undefined>()
        for (const url of new Set(prepared.flatMap((p) => (p.job.webhookUrl ? [p.job.webhookUrl] : [])))) {
          const result = yield* Effect.result(endpoints.register(tenantId, url))
          verdicts.set(url, result._tag === "Failure" ? result.failure : undefined)
        }
        return prepared.map((p) => (p.job.webhookUrl ? verdicts.get(p.job.webhookUrl) : undefined))
      })

    const release = (tenantId: string, jobs: ReadonlyArray<PreparedJob>) =>
      jobs.length === 0 ? Effect.void : sendOneWay(tenantClient(tenantId).ReleaseJobs({ jobIds: jobs.map((p) => p.job.id) }, { discard: true }))

    const createWhatFits = (tenantId: string, all: ReadonlyArray<PreparedJob>) =>
      Effect.gen(function*() {
        const { reserved, shortBy } = yield* entityCall(tenantClient(tenantId).ReserveJobs({ jobIds: all.map((p) => p.job.id), partial: true })).pipe(
          Effect.catchTags({ QuotaExceeded: quotaError, ConcurrentLimit: quotaError })
        )
        const held = all.slice(0, reserved)
        const verdicts = yield* registerEndpoints(tenantId, held).pipe(Effect.onError(() => release(tenantId, held)))
        yield* release(tenantId, held.filter((_, i) => verdicts[i] !== undefined))
        const created = yield* writeAndRun(tenantId, held.filter((_, i) => verdicts[i] === undefined))
        const quotaRefusal = shortBy ? yield* Effect.flip(quotaError(shortBy)) : undefined
        const refused = all.flatMap((_, position) => {
          const error = position < reserved ? verdicts[position] : quotaRefusal
          return error ? [{ position, error }] : []
        })
        return { created, refused }
      })

    /** Reserves quota in the tenant's entity, writes the rows, then hands each job to its entity. */
    const createJobs = (tenantId: string, prepared: ReadonlyArray<PreparedJob>) =>
      Effect.gen(function*() {
        yield* entityCall(tenantClient(tenantId).ReserveJobs({ jobIds: prepared.map((p) => p.job.id) })).pipe(
          Effect.catchTags({ QuotaExceeded: quotaError, ConcurrentLimit: quotaError })
        )
        const verdicts = yield* registerEndpoints(tenantId, prepared).pipe(Effect.onError(() => release(tenantId, prepared)))
        const refusal = verdicts.find((v) => v !== undefined)
        if (refusal) {
          yield* release(tenantId, prepared)
          return yield* Effect.fail(refusal)
        }
        return yield* writeAndRun(tenantId, prepared)
      })

    /**
     * Writes the rows of reserved jobs, then hands each job to its entity. Not interruptible (a
     * client that hangs up, say): once the rows may be written, the jobs are handed on and their
     * slots kept, instead of jobs that exist with their slots given back and no run sent.
     */
    const writeAndRun = (tenantId: string, prepared: ReadonlyArray<PreparedJob>) =>
      Effect.uninterruptible(Effect.gen(function*() {
        if (prepared.length === 0) return []
        const ids = prepared.map((p) => p.job.id)
        const rows = yield* repo.insert(prepared.map((p) => p.job)).pipe(Effect.onError(() => release(tenantId, prepared)))
        if (rows.length > 0) yield* events.notify(tenantId)
        // A lost hand-off is picked up by the sweeper once the job's lease runs out.
        yield* Effect.forEach(ids, (id) => jobClient(id).Run(undefined, { discard: true }).pipe(Effect.ignore), {
          concurrency: 32,
          discard: true
        })
        return rows.map((row, i) => ({
          ...toJob(row),
          ...(prepared[i]!.generatedSecret ? { webhookSecret: prepared[i]!.generatedSecret } : {})
        }))
      }))


    return JobCreation.of({ prepare, create: createJobs, createWhatFits })
  })
)
