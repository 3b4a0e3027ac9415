/**
 * A real node with one layer made faulty, for end-to-end tests of failures no timing can hit. It is
 * src/main.ts's server with one replacement; the fault is the first argument:
 * - `crash-after-job-insert`: the node kills itself once the rows of new jobs are written, before
 *   their hand-off and the response (the live JobRepo, with SIGKILL after `insert`).
 * - `webhook-endpoint-outage`: registering a webhook URL whose path ends in `/outage` fails with 503
 *   as if the tenant's entity were out of reach; other URLs register as usual.
 * - `database-unready`: the readiness probe's database ping fails (`HealthRepoTest(false)`); the
 *   database itself serves every other request.
 * - `stuck-shutdown`: a stop never finishes (a finalizer that waits forever, as the cluster's
 *   shard hand-off was seen to after a freeze), so only SHUTDOWN_TIMEOUT_SECONDS ends the process.
 * Start it with `startServer(env, { fault })` (test/support/server-process.ts).
 */
import { Effect, Layer } from "effect"
import { WebhookEndpoints, WebhookEndpointsLive } from "../../src/actors/webhook-endpoints.ts"
import { fail } from "../../src/schema/errors.ts"
import { runServer } from "../../src/server.ts"
import { HealthRepo, HealthRepoLive, HealthRepoTest } from "../../src/sql/health-repo.ts"
import { JobRepo, JobRepoLive } from "../../src/sql/job-repo.ts"

export const FAULTS = ["crash-after-job-insert", "webhook-endpoint-outage", "database-unready", "stuck-shutdown"] as const
export type Fault = (typeof FAULTS)[number]

const crashAfterJobInsert = Layer.effect(
  JobRepo,
  Effect.map(Effect.service(JobRepo), (live) =>
    JobRepo.of({
      ...live,
      insert: (jobs) => live.insert(jobs).pipe(Effect.tap(() => Effect.sync(() => process.kill(process.pid, "SIGKILL"))))
    }))
).pipe(Layer.provide(JobRepoLive))

const webhookEndpointOutage = Layer.effect(
  WebhookEndpoints,
  Effect.map(Effect.service(WebhookEndpoints), (live) =>
    WebhookEndpoints.of({
      register: (tenantId, url) =>
        new URL(url).pathname.endsWith("/outage")
          ? fail(503, "dependency_unavailable", "the tenant's entity could not be reached (fault-server)", { retryAfter: 1 })
          : live.register(tenantId, url)
    }))
).pipe(Layer.provide(WebhookEndpointsLive))

const stuckShutdown = Layer.effect(
  HealthRepo,
  Effect.gen(function*() {
    yield* Effect.addFinalizer(() => Effect.never)
    return yield* Effect.service(HealthRepo)
  })
).pipe(Layer.provide(HealthRepoLive))

if (import.meta.main) {
  const fault = process.argv[2]
  if (fault === "crash-after-job-insert") runServer({ jobRepo: crashAfterJobInsert })
  else if (fault === "webhook-endpoint-outage") runServer({ webhookEndpoints: webhookEndpointOutage })
  else if (fault === "database-unready") runServer({ healthRepo: HealthRepoTest(false) })
  else if (fault === "stuck-shutdown") runServer({ healthRepo: stuckShutdown })
  else {
    console.error(`fault-server: the fault must be one of ${FAULTS.join(", ")}`)
    process.exit(2)
  }
}
