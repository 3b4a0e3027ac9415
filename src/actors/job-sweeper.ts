import { Effect } from "effect"
import { Singleton } from "effect/cluster"
import { JobRepo } from "../sql/job-repo.ts"
import { TenantRepo } from "../sql/tenant-repo.ts"
import { JobEntity } from "./job-entity.ts"
import { sweepLoop } from "./sweep.ts"
import { TenantEntity } from "./tenant-entity.ts"

/** Ended work is charged by its tenant's entity at once; work still uncharged after this lost its trigger. */
const UNCHARGED_AFTER_MS = 60_000

/**
 * One sweeper in the whole cluster: a job still queued or claimed after its lease
 * has lost its hand-off or its runner, so its entity is told to run it again
 * (runs are idempotent; a job interrupted too often ends dead). A tenant with ended jobs or
 * extractions left uncharged is told to charge them.
 */
export const JobSweeperLive = Singleton.make(
  "JobSweeper",
  Effect.gen(function*() {
    const repo = yield* JobRepo
    const tenantRepo = yield* TenantRepo
    const jobs = yield* JobEntity.client
    const tenants = yield* TenantEntity.client
    yield* Effect.all([
      // Sent without where the job waits: the entity reads the row, and a job that ended meanwhile takes no slot.
      sweepLoop("stale jobs", "15 seconds", repo.stale(200), (job) => jobs(job.id).Run(undefined, { discard: true })),
      sweepLoop("tenants with uncharged work", "30 seconds", tenantRepo.tenantsWithUnchargedWork(UNCHARGED_AFTER_MS, 100), (tenantId) =>
        tenants(tenantId).Settle(undefined, { discard: true }))
    ], { concurrency: 2, discard: true })
  })
)
