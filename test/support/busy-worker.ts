/** A worker entry for tests of timed workers: spins for `spinMs`, then answers, or fails as asked. */
import { serveTasks } from "../../src/workers/timed-worker.ts"

serveTasks((input: { spinMs: number; fail?: string }) => {
  const until = Date.now() + input.spinMs
  while (Date.now() < until) {
    // busy, as a runaway regex would be
  }
  if (input.fail) throw new Error(input.fail)
  return { spun: input.spinMs }
}, () => "asked")
