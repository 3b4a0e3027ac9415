import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { entityCall, sendOneWay } from "../actors/entity-call.ts"
import { DueRun, ExtractionEntity } from "../actors/extraction-entity.ts"
import { type InsufficientCredit, type QuotaExceeded, TenantEntity } from "../actors/tenant-entity.ts"
import { Config } from "../config.ts"
import { JobCreation, reservationRefusal } from "../crawl/job-creation.ts"
import { checkUrl } from "../crawl/ssrf.ts"
import { classifierFor } from "../crawl/ssrf-policy.ts"
import { EventLog } from "../events/event-log.ts"
import { configPayloadProblems } from "../extract/config-check.ts"
import { CurrentPrincipal, isSuperAdmin } from "../iam/principal.ts"
import { itemId, newId } from "../ids.ts"
import { DEFAULT_PAGE_LIMIT, pageOf } from "../schema/envelope.ts"
import { withTieBreak } from "../sql/order-by.ts"
import { type ErrorDetail, fail, notFound, RequestId } from "../schema/errors.ts"
import {
  type ConfigPayload,
  type CreateExtractionBody,
  type ExtractionStatus,
  extractionSortFields,
  MAX_INPUT_BYTES,
  terminalExtractionStatuses
} from "../schema/extraction.ts"
import { configSortColumns, ExtractionRepo, type ExtractionRow, toConfig, toExtraction } from "../sql/extraction-repo.ts"
import { JobRepo } from "../sql/job-repo.ts"
import { TenantRepo } from "../sql/tenant-repo.ts"
import { WebhookRepo } from "../sql/webhook-repo.ts"
import { canonicalWebhookUrl, WebhookEndpoints } from "../webhooks/endpoints.ts"
import { decryptSecret, encryptSecret } from "../webhooks/secret-box.ts"
import { itemWebhookSecret } from "../webhooks/signing.ts"
import { Api } from "./api.ts"
import { Idempotency, idempotencyKeyProblem, type KeyedAttempt } from "./idempotency.ts"
import { failListQuery, filterFault, NEWEST_FIRST, queryLimit, readSort, sortOrDefault } from "./list-query.ts"

const statuses: ReadonlyArray<ExtractionStatus> = ["queued", "claimed", "done", "failed", "dead", "cancelled"]


export const ExtractionsHandlers = HttpApiBuilder.group(
  Api,
  "extractions",
  Effect.fn(function*(handlers) {
    const config = yield* Config
    const repo = yield* ExtractionRepo
    const jobRepo = yield* JobRepo
    const webhooks = yield* WebhookRepo
    const endpoints = yield* WebhookEndpoints
    const events = yield* EventLog
    const idempotency = yield* Idempotency
    const jobCreation = yield* JobCreation
    const client = yield* ExtractionEntity.client
    const tenantClient = yield* TenantEntity.client

    /** Validates, stashes the input or starts its crawl job, writes the row and hands it to its entity. */
    const start = (
      tenantId: string,
      body: CreateExtractionBody,
      source: { replayOf: string | null; recycleCount: number; reuseInputId?: string | null; keyed?: KeyedAttempt | undefined }
    ) =>
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
            details: [{ path: "input", code: "too_large", message: "at most 5 MB" }]
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
        // Its place in the day's quota and the credit it may cost at least are taken in the tenant's
        // entity, before anything is written.
        const refused = (e: QuotaExceeded | InsufficientCredit) => reservationRefusal(e, "this extraction")
        yield* entityCall(tenantClient(tenantId).ReserveExtraction({ extractionId: id, withJob: pageJob !== undefined })).pipe(
          Effect.catchTags({ QuotaExceeded: refused, InsufficientCredit: refused })
        )
        // What it took in the tenant's entity goes back if the request fails before its row is written.
        const inserted = yield* Effect.gen(function*() {
          const webhookUrl = body.webhookUrl ? canonicalWebhookUrl(body.webhookUrl) : null
          if (webhookUrl) yield* endpoints.register(tenantId, webhookUrl)
          if (pageJob) {
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
        }).pipe(Effect.onError(() => sendOneWay(tenantClient(tenantId).ReleaseExtraction({ extractionId: id }, { discard: true }))))
        const row = inserted ?? (yield* repo.find(tenantId, id))
        if (!row) return yield* Effect.die(new Error(`extraction ${id} was neither written nor found`))
        if (inserted) {
          if (source.recycleCount > 0) yield* repo.setRecycleCount(row.id, source.recycleCount)
          yield* events.notify(tenantId)
        }
        if (row.status === "queued") yield* client(id).Run(new DueRun({ dueAt: Date.now() }), { discard: true }).pipe(Effect.ignore)
        return { ...toExtraction({ ...row, recycle_count: source.recycleCount }), ...(generatedSecret ? { webhookSecret: generatedSecret } : {}) }
      })

    const page = (tenantId: string, where: Parameters<typeof repo.query>[0]["where"], sort: ReadonlyArray<{ readonly field: string; readonly dir: "asc" | "desc" }>, offset: number, limit: number) =>
      repo.query({ tenantId, where, sort, offset, limit }).pipe(
        // `sort` echoes the order applied, with the id that breaks ties (as the jobs list does).
        Effect.map((p) => ({ ...pageOf(p.items.map(toExtraction), offset, limit, p.total), sort: [...withTieBreak(sort)] }))
      )

    return handlers
      .handle("create", ({ payload, headers }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          // A body that breaks a rule across its fields is answered as the schema's errors are: before
          // the Idempotency-Key is looked at, naming the key too when it is invalid as well.
          const refused = bodyRefusal(payload, false, headers["idempotency-key"])
          if (refused) return yield* refused
          return yield* idempotency.run(me.tenantId, headers["idempotency-key"], { op: "extraction", payload }, (keyed) => Effect.gen(function*() {
            const created = yield* start(me.tenantId, payload, { replayOf: null, recycleCount: 0, keyed })
            return { status: 201, body: { status: "success", code: "201-created", data: created } }
          }))
        }))
      .handle("list", ({ query }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const limit = yield* queryLimit(query)
          const { sort, faults } = readSort(query.sort, extractionSortFields, "createdAt:desc,id:desc")
          const where: Parameters<typeof repo.query>[0]["where"] = {}
          if (query.status !== undefined) {
            const wanted = query.status.split(",").map((s) => s.trim())
            if (wanted.some((s) => !(statuses as ReadonlyArray<string>).includes(s))) faults.push(filterFault("status", `status must be among ${statuses.join(", ")}`))
            Object.assign(where, { status: wanted })
          }
          if (query.type !== undefined) {
            if (query.type !== "article" && query.type !== "product") faults.push(filterFault("type", "type must be article or product"))
            Object.assign(where, { type: query.type })
          }
          if (query.domainId !== undefined) {
            if (query.domainId.length === 0 || query.domainId.length > 253) faults.push(filterFault("domainId", "domainId must be a domain"))
            Object.assign(where, { domainId: query.domainId })
          }
          if (faults.length > 0) return yield* failListQuery(faults)
          return yield* page(me.tenantId, where, sort, query.offset ?? 0, limit)
        }))
      .handle("search", ({ payload }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const sort = sortOrDefault(payload.sort, NEWEST_FIRST)
          return yield* page(me.tenantId, payload.where ?? {}, sort, payload.pagination?.offset ?? 0, payload.pagination?.limit ?? DEFAULT_PAGE_LIMIT)
        }))
      .handle("get", ({ params }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const row = yield* repo.find(me.tenantId, params.id)
          return row ? toExtraction(row) : yield* notFound("extraction")
        }))
      .handle("cancel", ({ params }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const result = yield* repo.cancel(me.tenantId, params.id)
          if (!result) return yield* notFound("extraction")
          const row: ExtractionRow = result.row
          if (result.changed) {
            // Cancelled in SQL: its abort and event must follow even if the client hangs up. The job
            // it made to fetch its URL has nobody else waiting for it: it is cancelled too.
            yield* Effect.uninterruptible(Effect.all([
              sendOneWay(client(row.id).Abort(undefined, { discard: true })),
              // Cancelled, it costs nothing: the credit it held is free again once it is settled.
              sendOneWay(tenantClient(row.tenant_id).Settle(undefined, { discard: true })),
              events.notify(row.tenant_id),
              row.job_id && row.made_own_job === true ? jobCreation.cancel(me.tenantId, row.job_id) : Effect.void
            ], { discard: true }))
            return { id: row.id, status: row.status, cancelled: true, cancelledAt: toExtraction(row).cancelledAt }
          }
          return { id: row.id, status: row.status, cancelled: false, cancelledAt: toExtraction(row).cancelledAt, reason: `already ${row.status}` }
        }))
      .handle("replay", ({ params }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const row = yield* repo.find(me.tenantId, params.id)
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
          const created = yield* start(me.tenantId, body, { replayOf: row.id, recycleCount: row.recycle_count + 1, reuseInputId: row.input_id })
          return created
        }))
      .handle("webhookDeliveries", ({ params, query }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          if (!(yield* repo.find(me.tenantId, params.id))) return yield* notFound("extraction")
          const offset = query.offset ?? 0
          const limit = yield* queryLimit(query)
          const page = yield* webhooks.forResource(me.tenantId, "extraction", params.id, { offset, limit })
          return pageOf(page.items, offset, limit, page.total)
        }))
  })
)

/**
 * Whether the extraction made its job to fetch its URL, rather than being given it. Rows from before
 * this was recorded: a first extraction with a url and a job made it (what replays assumed then).
 */
const madeOwnJob = (extraction: ExtractionRow) =>
  extraction.made_own_job ?? (extraction.replay_of === null && extraction.url !== null && extraction.job_id !== null)

/**
 * The rules across a create body's fields: exactly one source (unless a replay reuses the stored
 * input), `inputFormat` only with `input`, webhook options only with `webhookUrl`. With `key`, an
 * invalid Idempotency-Key is named in the same answer.
 */
const bodyRefusal = (body: CreateExtractionBody, reusesInput: boolean, key?: string) => {
  const details: Array<ErrorDetail> = []
  const sources = (["url", "input", "jobId"] as const).filter((k) => body[k] !== undefined)
  if (sources.length !== 1 && !reusesInput) {
    details.push({ path: sources.length === 0 ? "url" : sources[1]!, code: "exactly_one_source", message: "exactly one of url, input, jobId" })
  }
  if (body.inputFormat !== undefined && body.input === undefined && !reusesInput) {
    details.push({ path: "inputFormat", code: "invalid_value", message: "only with input" })
  }
  for (const k of ["webhookSecret", "webhookEventTypes"] as const) {
    if (body[k] !== undefined && !body.webhookUrl) details.push({ path: k, code: "invalid_value", message: "only with webhookUrl" })
  }
  if (details.length === 0) return undefined
  const keyProblem = key === undefined ? undefined : idempotencyKeyProblem(key)
  return fail(400, "validation_error", "the body breaks a rule across its fields", { details: keyProblem ? [...details, keyProblem] : details })
}

/**
 * Refuses a config payload that would fail every extraction it applies to (see configPayloadProblems),
 * or that names an LLM model the operator does not offer (LLM_MODELS).
 */
const checkConfigPayload = (payload: ConfigPayload, models: ReadonlyArray<string> | undefined) => {
  const problems = configPayloadProblems(payload)
  const model = payload.llm?.model
  if (model !== undefined && models !== undefined && !models.includes(model)) {
    problems.push({ path: "payload.llm.model", code: "invalid_value", message: `is not a model this service offers (${models.join(", ")})` })
  }
  return problems.length === 0
    ? Effect.void
    : fail(400, "validation_error", "the config's payload would fail every extraction it applies to", { details: problems })
}

export const ExtractorConfigsHandlers = HttpApiBuilder.group(
  Api,
  "extractor-configs",
  Effect.fn(function*(handlers) {
    const repo = yield* ExtractionRepo
    const tenants = yield* TenantRepo
    const llmModels = (yield* Config).llm?.models

    /** Global configs are the super-admin's; a tenant may only change its own. */
    const writable = (id: string) =>
      Effect.gen(function*() {
        const me = yield* CurrentPrincipal
        const row = yield* repo.configs.find(me.tenantId, id)
        if (!row) return yield* notFound("extractor config")
        if (row.scope === "global" && !isSuperAdmin(me)) return yield* fail(403, "forbidden", "global configs are changed by platform admins only")
        return row
      })

    return handlers
      .handle("create", ({ payload }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          if (payload.scope === "global" && !isSuperAdmin(me)) {
            return yield* fail(403, "forbidden", "only platform admins create global configs")
          }
          if (payload.scope === "tenant" && payload.tenantId != null && payload.tenantId !== me.tenantId) {
            return yield* fail(422, "invalid_tenant", "tenantId is set from the caller for tenant configs", {
              details: [{ path: "tenantId", code: "invalid_value", message: "must be your tenant or omitted" }]
            })
          }
          if (payload.payload) yield* checkConfigPayload(payload.payload, llmModels)
          const limit = yield* tenants.quotaLimit(me.tenantId, "extractor.configs.total")
          const row = yield* repo.configs.insert({
            id: newId("cfg"),
            tenant_id: payload.scope === "global" ? null : me.tenantId,
            scope: payload.scope,
            type: payload.type ?? null,
            domain_id: payload.domainId?.toLowerCase() ?? null,
            url_pattern: payload.urlPattern ?? null,
            priority: payload.priority ?? 0,
            enabled: payload.enabled ?? true,
            payload: payload.payload ?? {},
            notes: payload.notes ?? null
          }, limit)
          if (!row) return yield* fail(429, "quota_exceeded", `the tenant already has ${limit} extractor configs (extractor.configs.total)`)
          return toConfig(row)
        }))
      .handle("list", ({ query }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const limit = yield* queryLimit(query)
          const { sort, faults } = readSort(query.sort, Object.keys(configSortColumns), "createdAt:desc,id:desc")
          if (faults.length > 0) return yield* failListQuery(faults)
          const offset = query.offset ?? 0
          const p = yield* repo.configs.list(me.tenantId, sort, offset, limit)
          return { ...pageOf(p.items.map(toConfig), offset, limit, p.total), sort: [...withTieBreak(sort)] }
        }))
      .handle("get", ({ params }) =>
        Effect.gen(function*() {
          const me = yield* CurrentPrincipal
          const row = yield* repo.configs.find(me.tenantId, params.id)
          return row ? toConfig(row) : yield* notFound("extractor config")
        }))
      .handle("update", ({ params, payload }) =>
        Effect.gen(function*() {
          yield* writable(params.id)
          if (payload.payload) yield* checkConfigPayload(payload.payload, llmModels)
          const patch: Record<string, unknown> = {}
          if (payload.type !== undefined) patch.type = payload.type
          if (payload.domainId !== undefined) patch.domain_id = payload.domainId?.toLowerCase() ?? null
          if (payload.urlPattern !== undefined) patch.url_pattern = payload.urlPattern
          if (payload.priority !== undefined) patch.priority = payload.priority
          if (payload.enabled !== undefined) patch.enabled = payload.enabled
          if (payload.payload !== undefined) patch.payload = JSON.stringify(payload.payload)
          if (payload.notes !== undefined) patch.notes = payload.notes
          const row = yield* repo.configs.update(params.id, patch)
          return row ? toConfig(row) : yield* notFound("extractor config")
        }))
      .handle("remove", ({ params }) =>
        Effect.gen(function*() {
          yield* writable(params.id)
          yield* repo.configs.remove(params.id)
          return { deleted: true, deletedAt: new Date().toISOString(), id: params.id }
        }))
  })
)
