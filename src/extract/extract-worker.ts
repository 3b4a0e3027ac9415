/** Worker-thread entry of extraction (see extract-in-worker.ts). */
import { serveTasks } from "../workers/timed-worker.ts"
import { isExtractError } from "./errors.ts"
import { extract } from "./extract.ts"

// The engine's own failures keep their class; anything else is a fault of the extractor.
serveTasks(extract, (e) => (isExtractError(e) ? e.errorClass : "fault"))
