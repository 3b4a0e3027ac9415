/** Worker-thread entry of the page-history diff (see page-diff.ts). */
import { serveTasks } from "../workers/timed-worker.ts"
import { computePageDiff } from "./page-diff.ts"

serveTasks(computePageDiff)
