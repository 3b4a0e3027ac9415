import { Context, Effect, Layer } from "effect"
import { Config } from "../config.ts"
import { domainIdOf, normalizeUrl } from "../crawl/domain.ts"
import { classifierFor } from "../crawl/ssrf-policy.ts"
import { checkUrl } from "../crawl/ssrf.ts"
import { EventLog } from "../events/event-log.ts"
import type { KeyedAttempt } from "../http/idempotency.ts"
import { itemId } from "../ids.ts"
import { type ApiError, type ErrorDetail, fail, type InvalidRequest, type PaymentRequired, type TooManyRequests, type Unavailable, type Unprocessable } from "../schema/errors.ts"
import type { CreateJobBody, Job } from "../schema/job.ts"
import { JobRepo, type JobRow, type NewJob, toJob } from "../sql/job-repo.ts"
import { encryptSecret } from "../webhooks/secret-box.ts"
import { itemWebhookSecret } from "../webhooks/signing.ts"
import { entityCall, sendOneWay } from "./entity-call.ts"
import { JobEntity } from "./job-entity.ts"
import { type ConcurrentLimit, type InsufficientCredit, type QuotaExceeded, TenantEntity, creditShortfall } from "./tenant-entity.ts"
import { canonicalWebhookUrl, WebhookEndpoints } from "./webhook-endpoints.ts"
import type { JobId } from "../schema/ids.ts"
import { webhookSecretFaults } from "../schema/webhook.ts"

export const DEFAULT_JOB_TIMEOUT_MS = 120_000

export interface PreparedJob {
  readonly job: NewJob
  /** A secret generated for the webhook, returned once in the creation response. */
  readonly generatedSecret: string | undefined
  /** An earlier try of its request (same Idempotency-Key) may have written this very job. */
  readonly resumed: boolean
}

/** Where a job's id comes from: fresh, or item `index` of a request run under an Idempotency-Key. */
export interface JobOrigin {
  readonly requestId: string | null
  readonly replayOf?: string | null
  readonly keyed?: { readonly attempt: KeyedAttempt; readonly index: number } | undefined
}

export interface JobCreationShape {
  /** Checks one job body beyond its schema: safe target and webhook URLs. */
  readonly prepare: (tenantId: string, body: CreateJobBody, origin: JobOrigin) => Effect.Effect<PreparedJob, InvalidRequest | Unprocessable>
  /** Reserves quota in the tenant's entity, writes the rows, then hands each job to its entity. */
  readonly create: (tenantId: string, prepared: ReadonlyArray<PreparedJob>) => Effect.Effect<ReadonlyArray<CreatedJob>, PaymentRequired | TooManyRequests | Unavailable>
  /**
   * As `create`, for as many of the first jobs as the tenant's quotas take now (at least one, or
   * the quota's error), less those whose new webhook URL finds no place; `refused` says why the
   * others were not created.
   */
  readonly createWhatFits: (tenantId: string, prepared: ReadonlyArray<PreparedJob>) => Effect.Effect<{
    readonly created: ReadonlyArray<CreatedJob>
    /** The jobs not created (by their position in `prepared`), and why. */
    readonly refused: ReadonlyArray<{ readonly position: number; readonly error: ApiError }>
  }, PaymentRequired | TooManyRequests | Unavailable>
  /**
   * Cancels a job of the tenant: the job ends dead in SQL and, if it changed, its run is aborted,
   * its quota slot given back and the streams woken, all uninterrupted (a client that hangs up
   * cannot skip the follow-ups). Undefined when the tenant has no such job.
   */
  readonly cancel: (tenantId: string, jobId: JobId) => Effect.Effect<{ readonly row: JobRow; readonly changed: boolean } | undefined>
}

export type CreatedJob = Job & { webhookSecret?: string }

/** The answer to a reservation the tenant's entity refused, for `what` was to be created. */
export const reservationRefusal = (e: QuotaExceeded | ConcurrentLimit | InsufficientCredit, what: string): Effect.Effect<never, TooManyRequests | PaymentRequired> =>
  e._tag === "QuotaExceeded"
    ? fail(429, "quota_exceeded", `the daily quota ${e.quotaKey} (${e.limit}) is used up`, { retryAfter: e.retryAfter })
    : e._tag === "InsufficientCredit"
    ? fail(402, "insufficient_credit", `the balance of ${e.balance} EUR does not leave the ${e.required} EUR free that ${what} and the tenant's uncharged work may cost at least (see GET /v1/billing/pricing)`, { extra: creditShortfall(e) })
    : fail(429, "concurrent_limit_exceeded", `the tenant's ${e.limit} running jobs (${e.quotaKey}) leave no room; retry when one ends`, {
      retryAfter: 1
    })

/** The one way jobs come into being (from the jobs API, replays and URL extractions), and are cancelled. */
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
    const prepare = (tenantId: string, body: CreateJobBody, origin: JobOrigin): Effect.Effect<PreparedJob, InvalidRequest | Unprocessable> =>
      Effect.gen(function*() {
        const lonely = webhookSecretFaults(body)
        if (lonely.length > 0) return yield* fail(400, "validation_error", "webhookSecret goes with webhookUrl", { details: lonely })
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
        const { keyed } = origin
        const item = keyed && { seed: keyed.attempt.seed, index: keyed.index }
        const generatedSecret = body.webhookUrl && !body.webhookSecret ? itemWebhookSecret(config.secretKey, item) : undefined
        const secret = body.webhookSecret ?? generatedSecret
        const url = new URL(body.url)
        const job: NewJob = {
          id: itemId("job", item),
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
          replayOf: origin.replayOf ?? null,
          requestId: origin.requestId
        }
        return { job, generatedSecret, resumed: keyed?.attempt.resumed ?? false }
      })

    const quotaError = (e: QuotaExceeded | ConcurrentLimit | InsufficientCredit) => reservationRefusal(e, "these jobs")

    /**
     * Takes the place of each job's webhook URL in `webhooks.endpoints.total`, in order (a URL is
     * asked for once); answers each job's refusal, or undefined. Only jobs that hold their quota
     * slots get here, so a request refused for quota takes no place.
     */
    const registerEndpoints = (tenantId: string, prepared: ReadonlyArray<PreparedJob>) =>
      Effect.gen(function*() {
        const verdicts = new Map<string, TooManyRequests | undefined>()
        for (const url of new Set(prepared.flatMap((p) => (p.job.webhookUrl ? [p.job.webhookUrl] : [])))) {
          // Only the quota's refusal belongs to the items. Any other failure (the tenant's entity out
          // of reach) fails the request: a bulk would otherwise answer 207 and keep that passing
          // failure under its Idempotency-Key for a day, where a retry of the request can succeed.
          verdicts.set(url, yield* endpoints.register(tenantId, url).pipe(
            Effect.as(undefined),
            Effect.catchTag("TooManyRequests", (e) => Effect.succeed(e))
          ))
        }
        return prepared.map((p) => (p.job.webhookUrl ? verdicts.get(p.job.webhookUrl) : undefined))
      })

    /**
     * Gives reserved slots back. `unwritten` when the rows were certainly not written (the request
     * was refused before its insert), so that the day's count drops too; after an insert that
     * failed, the rows may exist all the same, and the day's count waits for the next recount.
     */
    const release = (tenantId: string, jobs: ReadonlyArray<PreparedJob>, unwritten = true) =>
      jobs.length === 0
        ? Effect.void
        : sendOneWay(tenantClient(tenantId).ReleaseJobs({ jobIds: jobs.map((p) => p.job.id), unwritten }, { discard: true }))

    /**
     * The jobs that an earlier try of the same request wrote before its node died: they hold their
     * slots and places already, so they are only handed on again. Looked up only for resumed tries.
     */
    const alreadyWritten = (tenantId: string, prepared: ReadonlyArray<PreparedJob>) =>
      prepared.some((p) => p.resumed)
        ? repo.findMany(tenantId, prepared.filter((p) => p.resumed).map((p) => p.job.id)).pipe(Effect.map((rows) => new Set(rows.map((r) => r.id))))
        : Effect.succeed(new Set<string>())

    /**
     * Both ways to create run to their end once begun, like `writeAndRun`: a client that hangs up
     * between the reservation and the rows would otherwise leave slots reserved for no job until
     * the reservation's time to live runs out (each step is bounded by its own timeout).
     */
    const createWhatFits = (tenantId: string, all: ReadonlyArray<PreparedJob>) =>
      Effect.uninterruptible(Effect.gen(function*() {
        const written = yield* alreadyWritten(tenantId, all)
        const fresh = all.filter((p) => !written.has(p.job.id))
        // With jobs already written, a quota with no room left refuses the others item by item: the
        // request still answers what exists (failing it whole would leave those jobs unanswered).
        const noRoom = (e: QuotaExceeded | ConcurrentLimit | InsufficientCredit) =>
          written.size > 0 ? Effect.succeed({ reserved: [], shortBy: e }) : quotaError(e)
        const { reserved, shortBy } = fresh.length === 0 ? { reserved: [], shortBy: undefined } : yield* entityCall(
          tenantClient(tenantId).ReserveJobs({ jobIds: fresh.map((p) => p.job.id), partial: true })
        ).pipe(Effect.catchTags({ QuotaExceeded: noRoom, ConcurrentLimit: noRoom, InsufficientCredit: noRoom }))
        const reservedIds = new Set(reserved)
        const held = fresh.filter((p) => reservedIds.has(p.job.id))
        const verdicts = yield* registerEndpoints(tenantId, held).pipe(Effect.onError(() => release(tenantId, held)))
        yield* release(tenantId, held.filter((_, i) => verdicts[i] !== undefined))
        const quotaRefusal = shortBy ? yield* Effect.flip(quotaError(shortBy)) : undefined
        const refusals = new Map<string, ApiError>()
        held.forEach((p, i) => {
          if (verdicts[i]) refusals.set(p.job.id, verdicts[i])
        })
        const unreserved = fresh.filter((p) => !reservedIds.has(p.job.id))
        if (unreserved.length > 0 && !quotaRefusal) return yield* Effect.die(new Error("jobs left out of a reservation with no quota named"))
        for (const p of unreserved) refusals.set(p.job.id, quotaRefusal!)
        const created = yield* writeAndRun(tenantId, all.filter((p) => !refusals.has(p.job.id)), held)
        const refused = all.flatMap((p, position) => {
          const error = refusals.get(p.job.id)
          return error ? [{ position, error }] : []
        })
        return { created, refused }
      }))

    /** Reserves quota in the tenant's entity, writes the rows, then hands each job to its entity. */
    const createJobs = (tenantId: string, prepared: ReadonlyArray<PreparedJob>) =>
      Effect.uninterruptible(Effect.gen(function*() {
        const written = yield* alreadyWritten(tenantId, prepared)
        const fresh = prepared.filter((p) => !written.has(p.job.id))
        if (fresh.length > 0) {
          yield* entityCall(tenantClient(tenantId).ReserveJobs({ jobIds: fresh.map((p) => p.job.id) })).pipe(
            Effect.catchTags({ QuotaExceeded: quotaError, ConcurrentLimit: quotaError, InsufficientCredit: quotaError })
          )
        }
        const verdicts = yield* registerEndpoints(tenantId, fresh).pipe(Effect.onError(() => release(tenantId, fresh)))
        const refusal = verdicts.find((v) => v !== undefined)
        if (refusal) {
          yield* release(tenantId, fresh)
          return yield* Effect.fail(refusal)
        }
        return yield* writeAndRun(tenantId, prepared, fresh)
      }))

    /**
     * Writes the rows of `jobs`, then hands each one to its entity; `reserved` are those whose
     * slots this request holds (the others were written by an earlier try, and are met, not
     * written again). Not interruptible (a client that hangs up, say): once the rows may be
     * written, the jobs are handed on and their slots kept, instead of jobs that exist with their
     * slots given back and no run sent.
     */
    const writeAndRun = (tenantId: string, jobs: ReadonlyArray<PreparedJob>, reserved: ReadonlyArray<PreparedJob>) =>
      Effect.uninterruptible(Effect.gen(function*() {
        if (jobs.length === 0) return []
        const ids = jobs.map((p) => p.job.id)
        const inserted = yield* repo.insert(jobs.map((p) => p.job)).pipe(Effect.onError(() => release(tenantId, reserved, false)))
        if (inserted.length > 0) yield* events.notify(tenantId)
        // Rows an earlier try wrote are not inserted again: they are read as they are now.
        const rows = new Map(inserted.map((r) => [r.id, r]))
        if (rows.size < ids.length) {
          for (const row of yield* repo.findMany(tenantId, ids.filter((id) => !rows.has(id)))) rows.set(row.id, row)
        }
        const missing = ids.filter((id) => !rows.has(id))
        if (missing.length > 0) return yield* Effect.die(new Error(`jobs neither written nor found: ${missing.join(", ")}`))
        // A lost hand-off is picked up by the sweeper once the job's lease runs out.
        // A new job's Run says where it waits; one an earlier try wrote may have ended since, so its
        // entity reads the row instead.
        const fresh = new Set(inserted.map((r) => r.id))
        yield* Effect.forEach(jobs, ({ job }) =>
          jobClient(job.id).Run(fresh.has(job.id) ? { domainId: job.domainId, priority: job.priority } : undefined, { discard: true }).pipe(Effect.ignore), {
          concurrency: 32,
          discard: true
        })
        return jobs.map((p) => ({ ...toJob(rows.get(p.job.id)!), ...(p.generatedSecret ? { webhookSecret: p.generatedSecret } : {}) }))
      }))

    const cancel = (tenantId: string, jobId: string) =>
      Effect.uninterruptible(repo.cancel(tenantId, jobId).pipe(
        Effect.tap((c) =>
          c?.changed
            ? Effect.all([
              events.notify(c.row.tenant_id),
              sendOneWay(jobClient(c.row.id).Abort(undefined, { discard: true })),
              sendOneWay(tenantClient(c.row.tenant_id).ReleaseJobs({ jobIds: [c.row.id] }, { discard: true }))
            ], { discard: true })
            : Effect.void
        )
      ))

    return JobCreation.of({ prepare, create: createJobs, createWhatFits, cancel })
  })
)
