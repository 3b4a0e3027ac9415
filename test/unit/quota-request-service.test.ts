/**
 * QuotaRequestService (src/iam/quota-request-service.ts) on test layers: in-memory quota requests
 * and tenants, a capturing mailer and audit log. The HTTP side is covered by test/quota-requests.e2e.test.ts.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TenantLimitsTest } from "../../src/actors/tenant-entity.ts"
import { planQuota } from "../../src/billing/plans.ts"
import type { Principal } from "../../src/iam/principal.ts"
import { type PlainPrincipal, testPrincipal } from "../support/principal.ts"
import { QuotaRequestService, QuotaRequestServiceLive } from "../../src/iam/quota-request-service.ts"
import { MailerTest, SentMails } from "../../src/mail/mailer.ts"
import { AuditEntries, AuditLogTest } from "../../src/sql/audit-log.ts"
import { makeQuotaRequestRepoTest } from "../../src/sql/quota-request-repo.ts"
import { makeTenantRepoTest, TenantRepo } from "../../src/sql/tenant-repo.ts"
import { makeSubscriptionRepoTest, SubscriptionRepo } from "../../src/sql/subscription-repo.ts"

const overrides = new Map<string, number>()
const Requests = QuotaRequestServiceLive.pipe(
  Layer.provideMerge(Layer.mergeAll(
    makeQuotaRequestRepoTest({
      emails: { idt_dev: "Dev@Example.test", idt_owner: "owner@example.test" },
      owners: { ten_1: ["owner@example.test", "dev@example.test"] },
      overrides
    }),
    makeTenantRepoTest({ tenants: [{ id: "ten_1", plan: "starter" }, { id: "ten_2", plan: "starter" }, { id: "ten_free", plan: "free" }] }),
    makeSubscriptionRepoTest(),
    MailerTest,
    AuditLogTest,
    TenantLimitsTest
  ))
)

const member = (over: Partial<PlainPrincipal> = {}): Principal => testPrincipal({
  kind: "session",
  credentialId: "ses_1",
  tenantId: "ten_1",
  identityId: "idt_dev",
  actorId: "idt_dev",
  roleId: "role_dev",
  permissions: ["iam:quota-requests:write"],
  isInternalTenant: false,
  rateLimitPerMinute: 600,
  expiresAt: null,
  ...over
})
const superAdmin = member({ tenantId: "ten_internal", identityId: "idt_admin", actorId: "idt_admin", isInternalTenant: true })

const failure = <A, E extends { readonly status: number; readonly code: string }>(effect: Effect.Effect<A, E>) =>
  Effect.map(Effect.flip(effect), (e) => ({ status: e.status, code: e.code, e }))

const concurrent = planQuota("starter", "scraper.jobs.concurrent")

layer(Requests)("QuotaRequestService", (it) => {
  it.effect("refuses an unknown quota key (400) and a limit not above the current one (422, naming it)", () =>
    Effect.gen(function*() {
      const service = yield* QuotaRequestService
      const unknown = yield* failure(service.create(member(), { quotaKey: "scraper.pages.daily", requestedLimit: "10", reason: "more" }))
      expect([unknown.status, unknown.code]).toEqual([400, "validation_error"])
      expect(unknown.e.details?.[0]).toMatchObject({ path: "quotaKey", code: "unknown_quota_key" })
      const notHigher = yield* failure(service.create(member(), { quotaKey: "scraper.jobs.concurrent", requestedLimit: String(concurrent), reason: "same" }))
      expect([notHigher.status, notHigher.code]).toEqual([422, "requested_limit_not_higher"])
      expect(notHigher.e.extra).toMatchObject({ currentLimit: concurrent })
      // The limit compared against is the tenant's override when it has one.
      yield* (yield* TenantRepo).setQuota("ten_2", "scraper.jobs.concurrent", concurrent * 4)
      const belowOverride = yield* failure(service.create(member({ tenantId: "ten_2" }), {
        quotaKey: "scraper.jobs.concurrent", requestedLimit: String(concurrent * 2), reason: "more"
      }))
      expect(belowOverride.e.extra).toMatchObject({ currentLimit: concurrent * 4 })
    }))

  it.effect("allows one pending request per quota; approval raises the limit, audits in the tenant's log and mails owners and requester once each", () =>
    Effect.gen(function*() {
      const service = yield* QuotaRequestService
      const request = yield* service.create(member(), { quotaKey: "scraper.jobs.concurrent", requestedLimit: String(concurrent + 10), reason: "launch" })
      expect(request).toMatchObject({ status: "pending", tenant_id: "ten_1", requested_by: "idt_dev", requested_limit: concurrent + 10 })
      const again = yield* failure(service.create(member(), { quotaKey: "scraper.jobs.concurrent", requestedLimit: String(concurrent + 20), reason: "again" }))
      expect([again.status, again.code]).toEqual([409, "quota_request_pending"])

      const approved = yield* service.decide(superAdmin, request.id, true, "fine")
      expect(approved).toMatchObject({ status: "approved", decided_by: "idt_admin", decision_note: "fine" })
      expect(overrides.get("ten_1 scraper.jobs.concurrent")).toBe(concurrent + 10)
      const audit = (yield* (yield* AuditEntries).all).find((e) => e.action === "quota_request.approve")
      expect(audit).toMatchObject({ tenantId: "ten_1", actorId: "idt_admin", targetId: request.id, data: { deciderTenantId: "ten_internal", note: "fine" } })
      // The requester is also an owner, in another letter case: one mail each.
      const mails = yield* (yield* SentMails).all
      expect(mails.map((m) => m.to.toLowerCase()).sort()).toEqual(["dev@example.test", "owner@example.test"])
      expect(mails[0]!.subject).toBe("Quota request approved: scraper.jobs.concurrent")
      expect(mails[0]!.text).toContain("Note: fine")

      // Decided once: a second decision or a withdrawal is a 409 naming its status.
      const twice = yield* failure(service.decide(superAdmin, request.id, false, null))
      expect([twice.status, twice.code, twice.e.extra]).toEqual([409, "quota_request_not_pending", { currentStatus: "approved" }])
      expect((yield* failure(service.withdraw(member(), request.id))).code).toBe("quota_request_not_pending")
      // With it decided, the tenant may ask again (on another key's request nothing was pending either).
      const next = yield* service.create(member(), { quotaKey: "scraper.jobs.concurrent", requestedLimit: String(concurrent + 30), reason: "more" })
      expect(next.status).toBe("pending")
    }))

  it.effect("withdraws only the tenant's own pending request; another tenant's is a 404; a rejection keeps the limit and still mails", () =>
    Effect.gen(function*() {
      const service = yield* QuotaRequestService
      const request = yield* service.create(member(), { quotaKey: "iam.api-keys.total", requestedLimit: "100000", reason: "automation" })
      expect((yield* failure(service.withdraw(member({ tenantId: "ten_2" }), request.id))).status).toBe(404)
      const withdrawn = yield* service.withdraw(member(), request.id)
      expect(withdrawn.status).toBe("cancelled")
      expect((yield* failure(service.decide(superAdmin, request.id, true, null))).e.extra).toEqual({ currentStatus: "withdrawn" })
      expect(overrides.has("ten_1 iam.api-keys.total")).toBe(false)

      const asked = yield* service.create(member(), { quotaKey: "iam.api-keys.total", requestedLimit: "100000", reason: "again" })
      yield* (yield* SentMails).setUnavailable(true)
      // A mail that cannot be sent does not undo the decision.
      const rejected = yield* service.decide(superAdmin, asked.id, false, null)
      expect(rejected.status).toBe("rejected")
      expect(overrides.has("ten_1 iam.api-keys.total")).toBe(false)
      yield* (yield* SentMails).setUnavailable(false)
      expect((yield* failure(service.decide(superAdmin, "qreq_missing", true, null))).status).toBe(404)
    }))

  it.effect("names the pending request in a 409; an approval never lowers a limit a super-admin raised meanwhile", () =>
    Effect.gen(function*() {
      const service = yield* QuotaRequestService
      const request = yield* service.create(member(), { quotaKey: "webhooks.endpoints.total", requestedLimit: "40", reason: "more receivers" })
      const again = yield* failure(service.create(member(), { quotaKey: "webhooks.endpoints.total", requestedLimit: "45", reason: "more" }))
      expect([again.status, again.code, again.e.extra]).toEqual([409, "quota_request_pending", { pendingRequestId: request.id }])
      // A super-admin sets 50 before the request is decided: approving the request for 40 keeps 50.
      overrides.set("ten_1 webhooks.endpoints.total", 50)
      yield* service.decide(superAdmin, request.id, true, "ok")
      expect(overrides.get("ten_1 webhooks.endpoints.total")).toBe(50)
    }))

  it.effect("refuses a request on a quota of a service the tenant's plan leaves out (403 service_disabled_on_plan)", () =>
    Effect.gen(function*() {
      const service = yield* QuotaRequestService
      yield* (yield* SubscriptionRepo).open("ten_free", "free", { anchorAt: 0, index: 0, start: 0, end: 1 })
      const refused = yield* failure(service.create(member({ tenantId: "ten_free" }), { quotaKey: "extractor.extractions.daily", requestedLimit: "100000", reason: "x" }))
      expect([refused.status, refused.code]).toEqual([403, "service_disabled_on_plan"])
      // a quota of the plan's own services may still be raised
      const fine = yield* service.create(member({ tenantId: "ten_free" }), { quotaKey: "scraper.jobs.daily", requestedLimit: "100000", reason: "x" })
      expect(fine.status).toBe("pending")
    }))
})
