/**
 * The services that drive entities (JobCreation, ExtractionCreation, WebhookEndpoints,
 * IdentityRegistrations, ...) composed from test layers only: the real tenant entity on effect's
 * in-memory cluster (ClusterTest), over in-memory repositories, with recording stand-ins for the
 * job and extraction entities (their work is a crawl and an extraction, not what these tests are
 * about). No database, no network: the test config allows private targets, so no URL is resolved.
 */
import { Layer } from "effect"
import { ClusterTest, EntityMessagesTest, recordingEntity } from "../../src/actors/entity-test.ts"
import { ExtractionEntity } from "../../src/actors/extraction-entity.ts"
import { JobEntity } from "../../src/actors/job-entity.ts"
import { CallDebitsLive, TenantEntityLive } from "../../src/actors/tenant-entity.ts"
import { WebhookEndpointsLive } from "../../src/actors/webhook-endpoints.ts"
import { PlanGateLive } from "../../src/billing/plan-gate.ts"
import { Config, configForTests } from "../../src/config.ts"
import { EventLogLive } from "../../src/events/event-log.ts"
import { KvTest } from "../../src/kv/kv.ts"
import { MailerTest } from "../../src/mail/mailer.ts"
import { AuthTokenRepoTest } from "../../src/sql/auth-token-repo.ts"
import { EventRepoTest } from "../../src/sql/event-repo.ts"
import { ExtractionRepoTest } from "../../src/sql/extraction-repo.ts"
import { type InvitationRepoSeed, makeInvitationRepoTest } from "../../src/sql/invitation-repo.ts"
import { JobRepoTest } from "../../src/sql/job-repo.ts"
import { makeSubscriptionRepoTest } from "../../src/sql/subscription-repo.ts"
import { makeTenantRepoTest, type TenantRepoSeed } from "../../src/sql/tenant-repo.ts"
import { WebhookRepoTest } from "../../src/sql/webhook-repo.ts"

/**
 * The repositories, event log, cluster and entities; the services under test go on top
 * (`Service.pipe(Layer.provideMerge(actorTestLayers(seed)))`). Each build starts empty.
 */
export const actorTestLayers = (tenants: TenantRepoSeed["tenants"] = [], invitations: InvitationRepoSeed = {}) => {
  const repos = Layer.mergeAll(JobRepoTest, ExtractionRepoTest).pipe(
    Layer.provideMerge(Layer.mergeAll(
      WebhookRepoTest,
      makeTenantRepoTest({ tenants }),
      makeInvitationRepoTest(invitations),
      AuthTokenRepoTest,
      makeSubscriptionRepoTest(),
      MailerTest,
      EventRepoTest,
      KvTest,
      Layer.succeed(Config, configForTests({ ALLOW_PRIVATE_TARGETS: "true" }))
    ))
  )
  const entities = Layer.mergeAll(TenantEntityLive, recordingEntity(JobEntity), recordingEntity(ExtractionEntity)).pipe(
    Layer.provide(Layer.mergeAll(CallDebitsLive, PlanGateLive))
  )
  return Layer.mergeAll(entities, WebhookEndpointsLive, EventLogLive).pipe(
    Layer.provideMerge(Layer.mergeAll(ClusterTest, EntityMessagesTest)),
    Layer.provideMerge(repos)
  )
}
