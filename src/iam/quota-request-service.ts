import { Context, Effect, Layer } from "effect"
import { TenantLimits } from "../actors/tenant-entity.ts"
import { planServices } from "../billing/plan-rules.ts"
import { planIncludes, type QuotaKey, quotaKeys } from "../billing/plans.ts"
import { Mailer } from "../mail/mailer.ts"
import { iso } from "../schema/common.ts"
import { type Conflict, fail, type Forbidden, type InvalidRequest, notFound, type NotFound, type Unprocessable } from "../schema/errors.ts"
import type { QuotaRequest, QuotaRequestStatus } from "../schema/quota-request.ts"
import { AuditLog, entryForTenant } from "../sql/audit-log.ts"
import { QuotaRequestRepo, type QuotaRequestRow, type StoredQuotaRequestStatus } from "../sql/quota-request-repo.ts"
import { SubscriptionRepo } from "../sql/subscription-repo.ts"
import { TenantRepo } from "../sql/tenant-repo.ts"
import type { Principal } from "./principal.ts"

/** `cancelled` is how a withdrawn request is stored; the API says `withdrawn`. */
export const storedStatus = (status: QuotaRequestStatus): StoredQuotaRequestStatus => status === "withdrawn" ? "cancelled" : status
const shownStatus = (status: StoredQuotaRequestStatus): QuotaRequestStatus => status === "cancelled" ? "withdrawn" : status

export const toQuotaRequest = (r: QuotaRequestRow): QuotaRequest => ({
  id: r.id,
  tenantId: r.tenant_id,
  quotaKey: r.quota_key,
  requestedBy: r.requested_by,
  requestedLimit: String(r.requested_limit),
  reason: r.reason,
  status: shownStatus(r.status),
  decidedBy: r.decided_by,
  decidedAt: iso(r.decided_at),
  decisionNote: r.decision_note,
  createdAt: iso(r.created_at)!,
  updatedAt: iso(r.updated_at)!
})

const notPending = (row: QuotaRequestRow, doing: string) =>
  fail(409, "quota_request_not_pending", `the quota request is ${shownStatus(row.status)}, not pending: it cannot be ${doing}`, {
    extra: { currentStatus: shownStatus(row.status) }
  })

export interface QuotaRequestServiceShape {
  /** A tenant asks for a higher limit on one of its quotas. */
  readonly create: (me: Principal, body: { quotaKey: string; requestedLimit: string; reason: string }) => Effect.Effect<QuotaRequestRow, Conflict | Forbidden | InvalidRequest | Unprocessable>
  /** The tenant takes back a request not decided yet. */
  readonly withdraw: (me: Principal, id: string) => Effect.Effect<QuotaRequestRow, Conflict | NotFound>
  /** A super-admin approves (raising the quota) or rejects a pending request; the requester is mailed. */
  readonly decide: (me: Principal, id: string, approve: boolean, note: string | null) => Effect.Effect<QuotaRequestRow, Conflict | NotFound>
}

export class QuotaRequestService extends Context.Service<QuotaRequestService, QuotaRequestServiceShape>()("trawl/QuotaRequestService") {}

/** The decision mail: names the quota, the limit asked for, the decision, the limit now and the note. */
export const decisionMail = (r: QuotaRequestRow, limitNow: number) => {
  const decision = r.status === "approved" ? "approved" : "rejected"
  const lines = [
    `Your request to raise the quota ${r.quota_key} to ${r.requested_limit} was ${decision}.`,
    r.status === "approved" ? `The limit of ${r.quota_key} is now ${limitNow}.` : `The limit of ${r.quota_key} is unchanged: ${limitNow}.`,
    ...(r.decision_note ? ["", `Note: ${r.decision_note}`] : []),
    "",
    `Request: ${r.id}`
  ]
  return { subject: `Quota request ${decision}: ${r.quota_key}`, text: lines.join("\n") }
}

export const QuotaRequestServiceLive = Layer.effect(
  QuotaRequestService,
  Effect.gen(function*() {
    const requests = yield* QuotaRequestRepo
    const tenants = yield* TenantRepo
    const subscriptions = yield* SubscriptionRepo
    const audit = yield* AuditLog
    const mailer = yield* Mailer
    const limits = yield* TenantLimits

    const isQuotaKey = (key: string): key is QuotaKey => (quotaKeys as ReadonlyArray<string>).includes(key)

    /**
     * The decision is told by mail after it is committed, to the tenant's owners and the requester
     * (docs/api.md, "Quota increase requests"): a mail that fails is logged, the decision stands.
     */
    const mailRequester = (row: QuotaRequestRow) =>
      Effect.gen(function*() {
        const requester = yield* requests.primaryEmail(row.requested_by)
        const owners = yield* requests.ownerEmails(row.tenant_id)
        const recipients = [...new Map([...owners, ...(requester ? [requester] : [])].map((e) => [e.toLowerCase(), e])).values()]
        if (recipients.length === 0) return yield* Effect.logWarning("quota request decision not mailed: nobody to tell has a primary e-mail address")
        const limitNow = isQuotaKey(row.quota_key) ? yield* tenants.quotaLimit(row.tenant_id, row.quota_key) : Number(row.requested_limit)
        yield* Effect.forEach(recipients, (to) =>
          mailer.send({ to, ...decisionMail(row, limitNow) }).pipe(
            Effect.catchTag("MailUnavailable", (e) => Effect.logWarning("quota request decision not mailed", e.message))
          ), { discard: true })
      }).pipe(Effect.annotateLogs({ quotaRequestId: row.id }))

    return QuotaRequestService.of({
      create: (me, body) =>
        Effect.gen(function*() {
          if (!isQuotaKey(body.quotaKey)) {
            return yield* fail(400, "validation_error", `"${body.quotaKey}" is not a quota key`, {
              details: [{ path: "quotaKey", code: "unknown_quota_key", message: `quota keys are ${quotaKeys.join(", ")}` }]
            })
          }
          // A quota of a service the plan leaves out would raise nothing the tenant can use.
          const service = body.quotaKey.split(".")[0]!
          const subscription = (planServices as ReadonlyArray<string>).includes(service) ? yield* subscriptions.find(me.tenantId) : undefined
          if (subscription !== undefined && !planIncludes(subscription.plan, service)) {
            return yield* fail(403, "service_disabled_on_plan", `the ${subscription.plan} plan does not include the ${service} service that ${body.quotaKey} limits`, {
              details: [{ path: "quotaKey", code: "service_disabled_on_plan", message: `the ${subscription.plan} plan does not include ${service}` }],
              extra: { plan: subscription.plan, service }
            })
          }
          const requested = Number(body.requestedLimit)
          const current = yield* tenants.quotaLimit(me.tenantId, body.quotaKey)
          if (requested <= current) {
            return yield* fail(422, "requested_limit_not_higher", `requestedLimit must be above the current limit of ${body.quotaKey} (${current})`, {
              details: [{ path: "requestedLimit", code: "not_higher", message: `must be above the current limit, ${current}` }],
              extra: { currentLimit: current }
            })
          }
          const row = yield* requests.insert({
            tenantId: me.tenantId,
            quotaKey: body.quotaKey,
            requestedBy: me.identityId,
            requestedLimit: requested,
            reason: body.reason
          })
          if ("pending" in row) {
            return yield* fail(409, "quota_request_pending", `the tenant already has a pending request on ${body.quotaKey} (${row.pending}); withdraw it or wait for its decision`, {
              extra: { pendingRequestId: row.pending }
            })
          }
          yield* audit.record(me, "quota_request.create", row.id, { quotaKey: row.quota_key, requestedLimit: String(row.requested_limit), currentLimit: current })
          return row
        }),
      withdraw: (me, id) =>
        Effect.gen(function*() {
          const result = yield* requests.withdraw(me.tenantId, id)
          if (result === "not_found") return yield* notFound("quota request")
          if ("notPending" in result) return yield* notPending(result.notPending, "withdrawn")
          yield* audit.record(me, "quota_request.withdraw", result.id, { quotaKey: result.quota_key, requestedLimit: String(result.requested_limit) })
          return result
        }),
      decide: (me, id, approve, note) =>
        Effect.gen(function*() {
          const result = yield* requests.decide(id, { approve, decidedBy: me.identityId, note })
          if (result === "not_found") return yield* notFound("quota request")
          if ("notPending" in result) return yield* notPending(result.notPending, approve ? "approved" : "rejected")
          // In the tenant's own log, where its owner reads who decided what.
          yield* audit.write(entryForTenant(me, result.tenant_id, approve ? "quota_request.approve" : "quota_request.reject", result.id, {
            quotaKey: result.quota_key,
            requestedLimit: String(result.requested_limit),
            note
          }))
          // The approval set the override: the tenant's entity enforces it from the next request on.
          if (approve) yield* limits.reload(result.tenant_id)
          yield* mailRequester(result)
          return result
        })
    })
  })
)
