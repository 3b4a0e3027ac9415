/**
 * Every service of src/ with a live layer builds from test layers only: each repository, the
 * mailer, key-value store, GeoIP, webhook sender and crawler have a test layer, the cluster is
 * effect's in-memory runner (ClusterTest), and every other live layer (services, entities,
 * singletons, HTTP security) is composed on those. The compiler checks that nothing else is
 * needed (no SqlClient, no socket, no Redis); the test builds them all, starts what they start,
 * and looks each service up. What is left out is named below with its reason. README's
 * architecture section has the table of which test layer stands in for which live one.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { ClusterInfo, makeClusterInfoTest } from "../../src/actors/cluster-info.ts"
import { DomainEntityLive } from "../../src/actors/domain-entity.ts"
import { DomainSlots, DomainSlotsLive } from "../../src/actors/domain-slots.ts"
import { ExtractionCreation, ExtractionCreationLive } from "../../src/actors/extraction-creation.ts"
import { ExtractionSweeperLive } from "../../src/actors/extraction-entity.ts"
import { IdentityRegistrations, IdentityRegistrationsLive } from "../../src/actors/identity-registrations.ts"
import { JobCreation, JobCreationLive } from "../../src/actors/job-creation.ts"
import { JobSweeperLive } from "../../src/actors/job-sweeper.ts"
import { makeSiteFetcherTest } from "../../src/actors/site-fetcher.ts"
import { SiteMapper, SiteMapperLive } from "../../src/actors/site-mapper.ts"
import { SubscriptionRenewalsLive } from "../../src/actors/subscription-renewals.ts"
import { CallDebitor, CallDebitorLive, JobSlotReleases, JobSlotReleasesLive, TenantLimits, TenantLimitsLive } from "../../src/actors/tenant-entity.ts"
import { QuotaOverrides, QuotaOverridesLive } from "../../src/actors/quota-overrides.ts"
import { WebhookDeliveryEntityLive, WebhookSweeperLive } from "../../src/actors/webhook-delivery-entity.ts"
import { WebhookEndpoints } from "../../src/actors/webhook-endpoints.ts"
import { PlanGate, PlanGateLive } from "../../src/billing/plan-gate.ts"
import { makeCrawlServiceTest } from "../../src/crawl/crawl-service.ts"
import { EventLog } from "../../src/events/event-log.ts"
import { Draining, DrainingLive } from "../../src/http/draining.ts"
import { Idempotency, IdempotencyLive } from "../../src/http/idempotency.ts"
import { RateLimiter, RateLimiterLive } from "../../src/http/rate-limit.ts"
import { AnonymousLive, ApiKeyAuthLive, AuthorizeLive, InternalAuthLive, KeyMeterLive } from "../../src/http/security.live.ts"
import { AccountRecovery, AccountRecoveryLive } from "../../src/iam/account-recovery.ts"
import { ApiKeyAuthenticator, ApiKeyAuthenticatorLive } from "../../src/iam/api-key-auth.ts"
import { ApiKeyService, ApiKeyServiceLive } from "../../src/iam/api-key-service.ts"
import { Attempts, AttemptsLive } from "../../src/iam/attempts.ts"
import { AuthService, AuthServiceLive } from "../../src/iam/auth-service.ts"
import { DelegationService, DelegationServiceLive } from "../../src/iam/delegation-service.ts"
import { IdentityService, IdentityServiceLive } from "../../src/iam/identity-service.ts"
import { InvitationService, InvitationServiceLive } from "../../src/iam/invitation-service.ts"
import { MailedTokens, MailedTokensLive } from "../../src/iam/mailed-tokens.ts"
import { QuotaRequestService, QuotaRequestServiceLive } from "../../src/iam/quota-request-service.ts"
import { RoleService, RoleServiceLive } from "../../src/iam/role-service.ts"
import { SessionAuthenticator, SessionAuthenticatorLive } from "../../src/iam/session-auth.ts"
import { SessionService, SessionServiceLive } from "../../src/iam/session-service.ts"
import { GeoIpTest } from "../../src/network/geoip.ts"
import { Scrape, ScrapeLive } from "../../src/observability/scrape.ts"
import { makeApiKeyRepoTest } from "../../src/sql/api-key-repo.ts"
import { AuditLogTest } from "../../src/sql/audit-log.ts"
import { makeDelegationRepoTest } from "../../src/sql/delegation-repo.ts"
import { DomainRepoTest } from "../../src/sql/domain-repo.ts"
import { HealthRepoTest } from "../../src/sql/health-repo.ts"
import { IdempotencyRepoTest } from "../../src/sql/idempotency-repo.ts"
import { makeIdentityEmailRepoTest } from "../../src/sql/identity-email-repo.ts"
import { makeIdentityRepoTest } from "../../src/sql/identity-repo.ts"
import { MailOutboxRepoTest } from "../../src/sql/mail-outbox-repo.ts"
import { emptyQueues, MetricsRepoTest, TestMetricsFigures } from "../../src/sql/metrics-repo.ts"
import { makeQuotaRequestRepoTest } from "../../src/sql/quota-request-repo.ts"
import { makeRoleRepoTest } from "../../src/sql/role-repo.ts"
import { makeSessionRepoTest } from "../../src/sql/session-repo.ts"
import { WebhookSenderTest } from "../../src/webhooks/webhook-sender.ts"
import { actorTestLayers } from "../support/actor-layers.ts"

/** The repositories and outside services not already in actorTestLayers, each in its test layer. */
const moreTestLayers = Layer.mergeAll(
  makeApiKeyRepoTest().pipe(Layer.provideMerge(makeRoleRepoTest())),
  AuditLogTest,
  makeDelegationRepoTest([]),
  DomainRepoTest,
  HealthRepoTest(),
  IdempotencyRepoTest,
  makeIdentityEmailRepoTest({}),
  makeIdentityRepoTest([]),
  MailOutboxRepoTest,
  MetricsRepoTest,
  makeQuotaRequestRepoTest(),
  makeSessionRepoTest(),
  GeoIpTest({}),
  makeClusterInfoTest(),
  WebhookSenderTest,
  makeCrawlServiceTest(() => { throw new Error("no crawl in this test") }),
  makeSiteFetcherTest()
)

// Left out: DatabaseLive, MigrationsLive, MessageStorageLive and ClusterLive are the SQL and
// cluster plumbing the test layers replace; MetricsPortLive opens a port and TelemetryLive an
// exporter. StorageMaintenanceLive maintains the database's
// own tables (cluster messages, vacuum): test/integration/storage-maintenance.test.ts runs it on the
// embedded database and PostgreSQL. ClusterInfoLive and ProbeEntityLive read and write the
// cluster's own tables: makeClusterInfoTest stands in for the first, and the probe (an operator's
// check of routing and fail-over) is exercised on two nodes in test/cluster-failover.e2e.test.ts.
const iam = Layer.mergeAll(AccountRecoveryLive, ApiKeyServiceLive, DelegationServiceLive, InvitationServiceLive, RoleServiceLive).pipe(
  Layer.provideMerge(Layer.mergeAll(AuthServiceLive, IdentityServiceLive, QuotaRequestServiceLive)),
  Layer.provideMerge(SessionServiceLive),
  Layer.provideMerge(Layer.mergeAll(ApiKeyAuthenticatorLive, SessionAuthenticatorLive, MailedTokensLive, AttemptsLive, IdentityRegistrationsLive, TenantLimitsLive))
)
const actors = Layer.mergeAll(
  JobCreationLive, SiteMapperLive.pipe(Layer.provide(DomainSlotsLive)), DomainSlotsLive, JobSlotReleasesLive,
  DomainEntityLive, WebhookDeliveryEntityLive,
  JobSweeperLive, ExtractionSweeperLive, WebhookSweeperLive, SubscriptionRenewalsLive, QuotaOverridesLive
).pipe(Layer.provideMerge(Layer.mergeAll(CallDebitorLive, PlanGateLive, TenantLimitsLive)))
const http = Layer.mergeAll(ApiKeyAuthLive, AuthorizeLive, AnonymousLive, InternalAuthLive, KeyMeterLive).pipe(
  Layer.provideMerge(Layer.mergeAll(RateLimiterLive, IdempotencyLive, DrainingLive))
)
const everything = Layer.mergeAll(ExtractionCreationLive, http, ScrapeLive).pipe(
  Layer.provideMerge(Layer.mergeAll(actors, iam)),
  Layer.provideMerge(moreTestLayers),
  Layer.provideMerge(actorTestLayers())
)

layer(everything, { excludeTestServices: true })("live services on test layers", (it) => {
  it.effect("builds every service and finds each one", () =>
    Effect.gen(function*() {
      const services = [
        AccountRecovery, ApiKeyAuthenticator, ApiKeyService, Attempts, AuthService, CallDebitor, ClusterInfo, DelegationService, DomainSlots,
        Draining, EventLog, ExtractionCreation, Idempotency, IdentityRegistrations, IdentityService, InvitationService, JobCreation,
        JobSlotReleases, MailedTokens, PlanGate, QuotaOverrides, QuotaRequestService, RateLimiter, TenantLimits, RoleService, SessionAuthenticator, SessionService,
        SiteMapper, WebhookEndpoints
      ]
      for (const tag of services) expect(yield* Effect.serviceOption(tag as never)).toMatchObject({ _tag: "Some" })
    }))

  it.effect("scrapes the queue figures the metrics test layer is given", () =>
    Effect.gen(function*() {
      yield* (yield* TestMetricsFigures).setQueues(emptyQueues.map((q) => (q.kind === "jobs" ? { ...q, depth: 7, oldestAgeSeconds: 12 } : q)))
      const text = yield* (yield* Scrape).prometheusText
      expect(text).toMatch(/trawl_queue_depth\{kind="jobs"\} 7\b/)
      expect(text).toMatch(/trawl_queue_oldest_age_seconds\{kind="jobs"\} 12\b/)
    }))
})
