/** A worker entry for tests of timed workers: spins for `spinMs`, then answers, or fails as asked. */
import { parentPort } from "node:worker_threads"

parentPort!.on("message", ({ id, input }: { id: number; input: { spinMs: number; fail?: string } }) => {
  const until = Date.now() + input.spinMs
  while (Date.now() < until) {
    // busy, as a runaway regex would be
  }
  if (input.fail) parentPort!.postMessage({ id, error: input.fail, code: "asked" })
  else parentPort!.postMessage({ id, result: { spun: input.spinMs } })
})
