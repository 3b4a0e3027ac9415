import { Effect } from "effect"
import { Singleton } from "effect/cluster"
import { JobRepo } from "../sql/job-repo.ts"
import { JobEntity } from "./job-entity.ts"
import { sweepLoop } from "./sweep.ts"

/**
 * One sweeper in the whole cluster: a job still queued or claimed after its lease
 * has lost its hand-off or its runner, so its entity is told to run it again
 * (runs are idempotent; a job interrupted too often ends dead).
 */
export const JobSweeperLive = Singleton.make(
  "JobSweeper",
  Effect.gen(function*() {
    const repo = yield* JobRepo
    const jobs = yield* JobEntity.client
    yield* sweepLoop("stale jobs", "15 seconds", repo.stale(200), (job) => jobs(job.id).Run(undefined, { discard: true }))
  })
)
