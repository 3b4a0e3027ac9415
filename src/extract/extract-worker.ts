/** Worker-thread entry of extraction (see extract-in-worker.ts). */
import { parentPort } from "node:worker_threads"
import { isExtractError } from "./errors.ts"
import { extract } from "./extract.ts"
import type { ExtractInput } from "./types.ts"

parentPort!.on("message", ({ id, input }: { id: number; input: ExtractInput }) => {
  try {
    parentPort!.postMessage({ id, result: extract(input) })
  } catch (e) {
    // The engine's own failures keep their class; anything else is a fault of the extractor.
    parentPort!.postMessage({ id, error: e instanceof Error ? e.message : String(e), code: isExtractError(e) ? e.errorClass : "fault" })
  }
})
