/** Worker-thread entry of the page-history diff (see page-diff.ts). */
import { parentPort } from "node:worker_threads"
import { computePageDiff, type PageDiffInput } from "./page-diff.ts"

parentPort!.on("message", ({ id, input }: { id: number; input: PageDiffInput }) => {
  try {
    parentPort!.postMessage({ id, result: computePageDiff(input) })
  } catch (e) {
    parentPort!.postMessage({ id, error: e instanceof Error ? e.message : String(e) })
  }
})
