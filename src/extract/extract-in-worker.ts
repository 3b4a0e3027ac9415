import { availableParallelism } from "node:os"
import { makeTimedWorkers } from "../workers/timed-worker.ts"
import type { ExtractInput, ExtractOutput } from "./types.ts"

/**
 * How long one extraction may run. A page and a config can make the engine's work explode (a
 * regex that backtracks, a selector of many descendant steps over deep markup); run on the event
 * loop, that stalled every request of every tenant.
 */
export const EXTRACT_TIMEOUT_MS = 20_000

/**
 * A core for the event loop and the rest for extractions, up to 4; but at least 2, so that one
 * tenant's extraction that runs to its time bound does not hold every other tenant's behind it.
 */
const extractWorkers = makeTimedWorkers<ExtractInput, ExtractOutput>(new URL("./extract-worker.ts", import.meta.url), {
  size: Math.max(2, Math.min(4, availableParallelism() - 1)),
  timeoutMs: EXTRACT_TIMEOUT_MS,
  what: "extraction"
})

/** `extract`, on the node's extraction workers, within EXTRACT_TIMEOUT_MS; tenants waiting take turns. */
export const extractInWorker = (input: ExtractInput, tenantId: string): Promise<ExtractOutput> => extractWorkers.run(input, tenantId)
