import { Effect, Schedule } from "effect"
import { Singleton } from "effect/cluster"
import { JobRepo } from "../sql/job-repo.ts"
import { JobEntity } from "./job-entity.ts"

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
    const sweep = Effect.gen(function*() {
      const stale = yield* repo.stale(200)
      yield* Effect.forEach(stale, (job) => jobs(job.id).Run(undefined, { discard: true }).pipe(Effect.ignore), {
        concurrency: 16,
        discard: true
      })
      if (stale.length > 0) yield* Effect.logInfo(`sweeper re-sent ${stale.length} stale jobs`)
    })
    yield* sweep.pipe(Effect.catchCause(Effect.logWarning), Effect.repeat(Schedule.spaced("15 seconds")))
  })
)
