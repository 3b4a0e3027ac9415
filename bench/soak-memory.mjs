/**
 * Preloaded into the soak's node (NODE_OPTIONS=--import): every 2 s it writes the process's
 * memoryUsage() (RSS, V8 heap, external, array buffers) as one JSON line to SOAK_MEMORY_FILE, so
 * the soak can tell a growing heap from growing native memory (docs/chaos.md "The soak").
 */
import { renameSync, writeFileSync } from "node:fs"
import { isMainThread } from "node:worker_threads"

const file = process.env.SOAK_MEMORY_FILE
// Worker threads load it too (NODE_OPTIONS); their heaps are their own, so only the main thread writes.
if (file && isMainThread) {
  // Written aside and renamed, so the soak never reads half a file.
  const write = () => {
    writeFileSync(`${file}.tmp`, JSON.stringify(process.memoryUsage()))
    renameSync(`${file}.tmp`, file)
  }
  write()
  setInterval(write, 2000).unref()
}
