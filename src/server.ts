import { createServer } from "node:http"
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Cause, Effect, Exit, Layer, References, Runtime } from "effect"
import { HttpRouter } from "effect/http"
import { HttpApiBuilder, HttpApiScalar, OpenApi } from "effect/http-api"
import { ClusterLive } from "./actors/cluster.ts"
import { ClusterInfoLive } from "./actors/cluster-info.ts"
import { DomainEntityLive } from "./actors/domain-entity.ts"
import { DomainSlotsLive } from "./actors/domain-slots.ts"
import { ExtractionCreationLive } from "./actors/extraction-creation.ts"
import { ExtractionEntityLive, ExtractionSweeperLive } from "./actors/extraction-entity.ts"
import { JobCreationLive } from "./actors/job-creation.ts"
import { SiteMapperLive } from "./actors/site-mapper.ts"
import { SiteFetcherLive } from "./actors/site-fetcher.ts"
import { JobEntityLive } from "./actors/job-entity.ts"
import { JobSweeperLive } from "./actors/job-sweeper.ts"
import { ProbeEntityLive } from "./actors/probe-entity.ts"
import { StorageMaintenanceLive } from "./actors/storage-maintenance.ts"
import { WebhookDeliveryEntityLive, WebhookSweeperLive } from "./actors/webhook-delivery-entity.ts"
import { WebhookEndpointsLive } from "./actors/webhook-endpoints.ts"
import { IdentityRegistrationsLive } from "./actors/identity-registrations.ts"
import { CallDebitorLive, CallDebitsLive, JobSlotReleasesLive, TenantEntityLive, TenantLimitsLive } from "./actors/tenant-entity.ts"
import { SubscriptionRenewalsLive } from "./actors/subscription-renewals.ts"
import { QuotaOverridesLive } from "./actors/quota-overrides.ts"
import { PlanGateLive } from "./billing/plan-gate.ts"
import { type AppConfig, Config, ConfigError, loadConfig } from "./config.ts"
import { CrawlServiceLive } from "./crawl/crawl-service.ts"
import { GeoIpLive } from "./network/geoip.ts"
import { closingServer, DrainingLive, drainOnShutdown } from "./http/draining.ts"
import { EventLogLive } from "./events/event-log.ts"
import { AdminHandlers } from "./http/admin.http.ts"
import { Api } from "./http/api.ts"
import { answerParserRefusals } from "./http/client-error.ts"
import { MAX_STREAMS_PER_TENANT, OpenStreams, StreamConnections } from "./http/stream-connections.ts"
import { BillingHandlers } from "./http/billing.http.ts"
import { ControlHandlers } from "./http/control.http.ts"
import { envelopeMiddleware, routeTable } from "./http/envelope-middleware.ts"
import { libraryServerSpansOff } from "./observability/server-span.ts"
import { ExtractionsHandlers } from "./http/extractions.http.ts"
import { ExtractorConfigsHandlers } from "./http/extractor-configs.http.ts"
import { AdminAuditHandlers, AuditHandlers } from "./http/audit.http.ts"
import { DelegationsHandlers } from "./http/delegations.http.ts"
import { IamHandlers } from "./http/iam.http.ts"
import { InvitationsHandlers, RegistrationHandlers } from "./http/invitations.http.ts"
import { AuthHandlers } from "./http/auth.http.ts"
import { UsersHandlers } from "./http/users.http.ts"
import { RolesHandlers } from "./http/roles.http.ts"
import { AdminQuotaRequestsHandlers, QuotaRequestsHandlers } from "./http/quota-requests.http.ts"
import { IdempotencyLive } from "./http/idempotency.ts"
import { JobsHandlers } from "./http/jobs.http.ts"
import { MetricsPortLive, MetricsRoute } from "./http/metrics.http.ts"
import { routeName } from "./http/request-metrics.ts"
import { MapHandlers } from "./http/map.http.ts"
import { CrawlsHandlers } from "./http/crawls.http.ts"
import { SiteCrawlServiceLive } from "./actors/site-crawls.ts"
import { CrawlEntityLive, CrawlSweeperLive } from "./actors/crawl-entity.ts"
import { CrawlRepoLive } from "./sql/crawl-repo.ts"
import { NetworkHandlers } from "./http/network.http.ts"
import { PageHistoryHandlers } from "./http/page-history.http.ts"
import { RateLimiterLive } from "./http/rate-limit.ts"
import { AnonymousLive, ApiKeyAuthLive, AuthorizeLive, InternalAuthLive, KeyMeterLive } from "./http/security.live.ts"
import { AdminSubscriptionHandlers, SubscriptionHandlers } from "./http/subscriptions.http.ts"
import { SystemHandlers } from "./http/system.http.ts"
import { WebhooksAdminHandlers } from "./http/webhooks-admin.http.ts"
import { ApiKeyAuthenticatorLive } from "./iam/api-key-auth.ts"
import { AttemptsLive } from "./iam/attempts.ts"
import { AccountRecoveryLive } from "./iam/account-recovery.ts"
import { AuthServiceLive } from "./iam/auth-service.ts"
import { DelegationServiceLive } from "./iam/delegation-service.ts"
import { IdentityServiceLive } from "./iam/identity-service.ts"
import { InvitationServiceLive } from "./iam/invitation-service.ts"
import { MailedTokensLive } from "./iam/mailed-tokens.ts"
import { QuotaRequestServiceLive } from "./iam/quota-request-service.ts"
import { SessionAuthenticatorLive } from "./iam/session-auth.ts"
import { SessionServiceLive } from "./iam/session-service.ts"
import { RoleServiceLive } from "./iam/role-service.ts"
import { ApiKeyServiceLive } from "./iam/api-key-service.ts"
import { KvLive } from "./kv/kv.ts"
import { WebhookSenderLive } from "./webhooks/webhook-sender.ts"
import { ScrapeLive } from "./observability/scrape.ts"
import { TelemetryLive } from "./observability/telemetry.ts"
import { MailerLive } from "./mail/mailer.ts"
import { ApiKeyRepoLive } from "./sql/api-key-repo.ts"
import { AuditLogLive } from "./sql/audit-log.ts"
import { DatabaseLive } from "./sql/database.ts"
import { IdentityEmailRepoLive } from "./sql/identity-email-repo.ts"
import { DelegationRepoLive } from "./sql/delegation-repo.ts"
import { InvitationRepoLive } from "./sql/invitation-repo.ts"
import { IdentityRepoLive } from "./sql/identity-repo.ts"
import { AuthTokenRepoLive } from "./sql/auth-token-repo.ts"
import { SessionRepoLive } from "./sql/session-repo.ts"
import { DomainRepoLive } from "./sql/domain-repo.ts"
import { EventRepoLive } from "./sql/event-repo.ts"
import { ExtractionRepoLive } from "./sql/extraction-repo.ts"
import { HealthRepoLive } from "./sql/health-repo.ts"
import { IdempotencyRepoLive } from "./sql/idempotency-repo.ts"
import { JobRepoLive } from "./sql/job-repo.ts"
import { MetricsRepoLive } from "./sql/metrics-repo.ts"
import { MailOutboxRepoLive } from "./sql/mail-outbox-repo.ts"
import { MigrationsLive } from "./sql/migrate.ts"
import { QuotaRequestRepoLive } from "./sql/quota-request-repo.ts"
import { RoleRepoLive } from "./sql/role-repo.ts"
import { SubscriptionRepoLive } from "./sql/subscription-repo.ts"
import { TenantRepoLive } from "./sql/tenant-repo.ts"
import { WebhookRepoLive } from "./sql/webhook-repo.ts"

/** Every (method, path) of the API, for telling 405 from 404. */
export const apiRoutes = Object.values(Api.groups).flatMap((group) =>
  Object.values(group.endpoints).map((e) => ({ method: e.method, path: e.path }))
)

const logLevels = { debug: "Debug", info: "Info", warn: "Warn", error: "Error" } as const

/**
 * Layers a test entry point (test/support/fault-server.ts) swaps in for the live ones, to fail
 * where no timing can make a real node fail; production code knows nothing of the faults.
 */
export interface ServerLayerReplacements {
  readonly jobRepo?: typeof JobRepoLive
  readonly webhookEndpoints?: typeof WebhookEndpointsLive
  readonly healthRepo?: typeof HealthRepoLive
}

/**
 * The whole node: database (migrated), shared state, the cluster runner with its
 * entities, and the HTTP server. How a request travels: the router matches an
 * endpoint of `Api`, the envelope middleware wraps it, the security middleware
 * authenticates and authorizes, the handler validates and sends a typed message
 * to an entity (or reads SQL), and the result is encoded into the envelope.
 */
export const makeServerLayer = (config: AppConfig, replace: ServerLayerReplacements = {}) => {
  const ConfigLive = Layer.succeed(Config, config)
  const Storage = MigrationsLive.pipe(Layer.provideMerge(DatabaseLive))
  const Repos = Layer.mergeAll(
    ApiKeyRepoLive,
    RoleRepoLive,
    QuotaRequestRepoLive,
    TenantRepoLive,
    replace.jobRepo ?? JobRepoLive,
    ExtractionRepoLive,
    AuditLogLive,
    MailOutboxRepoLive,
    IdentityRepoLive,
    IdentityEmailRepoLive,
    SessionRepoLive,
    AuthTokenRepoLive,
    InvitationRepoLive,
    DelegationRepoLive,
    PlanGateLive.pipe(Layer.provideMerge(SubscriptionRepoLive)),
    DomainRepoLive,
    EventRepoLive,
    replace.healthRepo ?? HealthRepoLive,
    IdempotencyRepoLive,
    MetricsRepoLive,
    CrawlRepoLive
  ).pipe(Layer.provideMerge(WebhookRepoLive))
  // Identity: sessions are authenticated like keys; the services above them log in, change passwords and second factors.
  const Identity = Layer.mergeAll(
    AccountRecoveryLive,
    ApiKeyServiceLive,
    IdentityServiceLive,
    RoleServiceLive,
    DelegationServiceLive
  ).pipe(
    Layer.provideMerge(Layer.mergeAll(AuthServiceLive, MailedTokensLive)),
    Layer.provideMerge(SessionServiceLive),
    Layer.provideMerge(Layer.mergeAll(ApiKeyAuthenticatorLive, SessionAuthenticatorLive, AttemptsLive, MailerLive))
  )
  const Services = Layer.mergeAll(RateLimiterLive, EventLogLive, IdempotencyLive, CrawlServiceLive, GeoIpLive, ScrapeLive, SiteFetcherLive).pipe(
    Layer.provideMerge(Identity),
    Layer.provideMerge(Repos)
  )
  // Registrations are counted by the tenant's entity, so the invitation service stands on the cluster.
  // Quota changes are told to the tenant's entity, so those services stand on the cluster too.
  const Domain = Layer.mergeAll(
    ExtractionCreationLive,
    InvitationServiceLive.pipe(Layer.provide(IdentityRegistrationsLive)),
    Layer.merge(QuotaRequestServiceLive, QuotaOverridesLive).pipe(Layer.provide(TenantLimitsLive))
  ).pipe(Layer.provideMerge(JobCreationLive), Layer.provideMerge(replace.webhookEndpoints ?? WebhookEndpointsLive), Layer.provideMerge(CallDebitorLive))
  const Entities = Layer.mergeAll(
    TenantEntityLive.pipe(Layer.provide(CallDebitsLive)),
    ProbeEntityLive,
    JobEntityLive.pipe(Layer.provide([DomainSlotsLive, JobSlotReleasesLive])),
    DomainEntityLive,
    WebhookDeliveryEntityLive.pipe(Layer.provide(WebhookSenderLive)),
    ExtractionEntityLive,
    ExtractionSweeperLive,
    JobSweeperLive,
    CrawlEntityLive.pipe(Layer.provide(JobCreationLive.pipe(Layer.provide(replace.webhookEndpoints ?? WebhookEndpointsLive)))),
    CrawlSweeperLive,
    WebhookSweeperLive,
    SubscriptionRenewalsLive,
    StorageMaintenanceLive
  )

  // A live event stream sends a keep-alive every 15 s: one that sends nothing for a minute is stuck.
  const streams = new StreamConnections({ stallMs: 60_000, maxPerTenant: MAX_STREAMS_PER_TENANT })
  const Handlers = Layer.mergeAll(
    SystemHandlers,
    AuthHandlers,
    RegistrationHandlers,
    UsersHandlers,
    DelegationsHandlers,
    InvitationsHandlers,
    IamHandlers,
    RolesHandlers,
    QuotaRequestsHandlers,
    AuditHandlers,
    AdminAuditHandlers,
    AdminQuotaRequestsHandlers,
    JobsHandlers.pipe(Layer.provide(Layer.succeed(OpenStreams, streams))),
    WebhooksAdminHandlers,
    PageHistoryHandlers,
    ExtractionsHandlers,
    ExtractorConfigsHandlers,
    NetworkHandlers,
    MapHandlers.pipe(Layer.provide(SiteMapperLive.pipe(Layer.provide(DomainSlotsLive)))),
    CrawlsHandlers.pipe(Layer.provide(SiteCrawlServiceLive)),
    BillingHandlers,
    SubscriptionHandlers,
    AdminHandlers,
    AdminSubscriptionHandlers,
    ControlHandlers
  )
  const Security = Layer.mergeAll(ApiKeyAuthLive, AuthorizeLive, AnonymousLive, InternalAuthLive, KeyMeterLive)

  // The document names the node's public base URL (PUBLIC_BASE_URL, else the listening address).
  const ServedApi = Api.annotate(OpenApi.Servers, [{ url: config.publicBaseUrl }])
  const Routes = Layer.mergeAll(
    HttpApiBuilder.layer(ServedApi, { openapiPath: "/v1/openapi.json" }).pipe(Layer.provide(Handlers)),
    MetricsRoute,
    HttpApiScalar.layer(ServedApi, { path: "/docs" }),
    envelopeMiddleware(routeTable(apiRoutes))
  ).pipe(Layer.provide(Security), Layer.provide(routeName))

  // A client gets REQUEST_TIMEOUT_SECONDS to send headers and body (then 408 in the envelope), so
  // a trickled body cannot hold a connection and its buffers for Node's default of 300 s. The check
  // runs every second, not Node's 30, so the bound is what the setting says. Responses, such as an
  // event stream, are not bounded by it.
  const requestTimeoutMs = config.requestTimeoutSeconds * 1000
  const http = closingServer(answerParserRefusals(createServer({
    keepAliveTimeout: 65_000,
    requestTimeout: requestTimeoutMs,
    headersTimeout: requestTimeoutMs,
    connectionsCheckingInterval: 1_000
  })))
  // Paths match as written (RFC 3986: a path is case-sensitive), with one trailing slash tolerated:
  // `/V1/...` or `/v1//...` is no route (404), as the 405 check reads it (docs/api.md "Paths").
  const Http = HttpRouter.serve(Routes, { disableLogger: true, routerConfig: { caseSensitive: true, ignoreDuplicateSlashes: false } }).pipe(
    Layer.provide(NodeHttpServer.layer(() => http.server, { port: config.port, host: config.host })),
    // The envelope middleware makes each request's server span (src/observability/server-span.ts).
    Layer.provide(Layer.succeed(libraryServerSpansOff, () => true))
  )

  return drainOnShutdown(streams, http).pipe(
    Layer.provideMerge(Layer.merge(Http, MetricsPortLive)),
    Layer.provideMerge(Domain),
    Layer.provideMerge(Layer.mergeAll(Entities, ClusterInfoLive)),
    Layer.provideMerge(ClusterLive),
    Layer.provideMerge(Services),
    Layer.provideMerge(KvLive),
    Layer.provideMerge(Storage),
    Layer.provideMerge(ConfigLive),
    Layer.provideMerge(DrainingLive),
    Layer.provide(Layer.succeed(References.MinimumLogLevel, logLevels[config.logLevel])),
    // JSON logs; OTLP traces, metrics and logs only with OTEL_EXPORTER_OTLP_ENDPOINT. Without it no
    // span is built at all: they would only cost time on every entity message.
    Layer.provide(TelemetryLive(config.otel))
  )
}

export const announce = (config: AppConfig) =>
  Effect.sync(() => {
    const base = `http://${config.host.includes(":") ? `[${config.host}]` : config.host}:${config.port}`
    console.log(`trawl listening on ${base}`)
    console.log(`database: ${config.databaseUrl ? "PostgreSQL (DATABASE_URL)" : `embedded PGlite in ${config.dataDir}`}`)
    if (config.trustProxy.entries.length > 0) console.log(`X-Forwarded-For believed from: ${config.trustProxy.entries.join(", ")}`)
    if (config.internalTokenGenerated) console.log(`internal token (generated for this start): ${config.internalTokens[0]}`)
    if (config.allowPrivateTargets) {
      console.warn("warning: ALLOW_PRIVATE_TARGETS=true: crawls and webhooks may reach private and loopback addresses (development and tests only)")
    }
    if (config.databaseUrl && config.secretKeyGenerated) {
      console.warn("warning: SECRET_KEY is not set; this node uses its own key from DATA_DIR. Every node of a cluster must share one SECRET_KEY.")
    }
  })

/**
 * Why the node could not start or stopped, in one line for an operator's log (README,
 * "Configuration"): the messages of the error and of its causes, outermost first ("PgConnection:
 * Failed to connect: connect ECONNREFUSED 127.0.0.1:5433"), without stack frames. No message of
 * these quotes a password: the database and Redis clients name hosts, ports and databases only.
 */
export const oneLine = (cause: Cause.Cause<unknown>): string => {
  const parts: Array<string> = []
  let error: unknown = Cause.squash(cause)
  for (let depth = 0; depth < 6 && error !== undefined && error !== null; depth++) {
    const text = (error instanceof Error ? error.message || error.name : typeof error === "object" ? "" : String(error)).replace(/\s+/g, " ").trim()
    if (text !== "" && !parts.some((p) => p.includes(text))) parts.push(text)
    error = error instanceof Error ? error.cause : (error as { cause?: unknown }).cause
  }
  return (parts.join(": ") || "the node failed").slice(0, 1000)
}

/** The signal that asked the node to stop, and when (for the last `shutdown:` line). */
let stopAsked: { readonly signal: NodeJS.Signals; readonly at: number } | undefined

/**
 * A stop that does not end is worse than a crash: a supervisor waits on it, and its shards are held
 * until it is killed. The three-node fault campaign twice saw a node, frozen (SIGSTOP) for about a
 * minute under load, never finish handing its shards off after SIGTERM. So a stop that has not
 * ended `timeoutSeconds` after the signal ends the process with status 1; the other nodes take its
 * shards as after a crash (docs/scaling.md, "Stopping a node"). The timer does not keep it alive.
 */
const endStuckShutdowns = (timeoutSeconds: number) => {
  const arm = (signal: NodeJS.Signals) => () => {
    stopAsked = { signal, at: Date.now() }
    setTimeout(() => {
      console.error(`shutdown: not finished ${timeoutSeconds} s after ${signal} (SHUTDOWN_TIMEOUT_SECONDS); the process ends now`)
      process.exit(1)
    }, timeoutSeconds * 1000).unref()
  }
  process.once("SIGTERM", arm("SIGTERM"))
  process.once("SIGINT", arm("SIGINT"))
}

/**
 * Loads the configuration from the environment (a bad one exits with status 2) and runs the node
 * until it is stopped: src/main.ts, and with replaced layers test/support/fault-server.ts.
 */
export const runServer = (replace: ServerLayerReplacements = {}) => {
  let config: AppConfig
  try {
    config = loadConfig()
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(e.message)
      process.exit(2)
    }
    throw e
  }
  endStuckShutdowns(config.shutdownTimeoutSeconds)
  // The announcement is built on top of the server, so it prints once the port is open.
  // No traces are exported, so spans (one per SQL statement and entity message) are not built at all.
  Layer.launch(Layer.effectDiscard(announce(config)).pipe(Layer.provide(makeServerLayer(config, replace)))).pipe(
    Effect.withTracerEnabled(false),
    Effect.tapCause((cause) => Cause.hasInterruptsOnly(cause) ? Effect.void : Effect.sync(() => console.error(`fatal: ${oneLine(cause)}`))),
    NodeRuntime.runMain({ disableErrorReporting: true, teardown: stoppedAsAsked(config.logLevel === "debug" || config.logLevel === "info") })
  )
}

/**
 * Exit codes: the server only ends interrupted, by SIGTERM or SIGINT, and a stop that finished is
 * a success (0), as supervisors such as systemd expect; Effect's default says 130. A failure keeps
 * the default's code (1).
 */
const stoppedAsAsked = (logInfo: boolean): Runtime.Teardown => (exit, onExit) => {
  if (!(Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause))) return Runtime.defaultTeardown(exit, onExit)
  // The last of the `shutdown:` lines (src/http/draining.ts has the first two): when the cluster's
  // part ended. The logger is gone with the layers, so the line is written as it would have written it.
  if (logInfo && stopAsked !== undefined) {
    const message = `shutdown: entities stopped and shards handed off; stopped ${Date.now() - stopAsked.at} ms after ${stopAsked.signal}`
    console.log(JSON.stringify({ timestamp: new Date().toISOString(), level: "INFO", message }))
  }
  onExit(0)
}
