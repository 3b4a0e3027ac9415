/**
 * Baseline (b) of `npm run bench:crawl`: a bare Crawlee HttpCrawler, default settings except the
 * concurrency (min = max = CONCURRENCY, so it runs at the same concurrency as Trawl instead of
 * ramping up from 1 in 5 % steps every 10 s) and an in-memory storage (persistStorage: false).
 *
 * Env: URLS_FILE (JSON {warm: string[], measured: string[]}), CONCURRENCY.
 * Runs the warm-up URLs with one crawler, then the measured URLs with a fresh crawler, and prints
 * `result <json>` with pages, failures, wall ms and this process's CPU ms for the measured run.
 */
import { readFileSync } from "node:fs"
import { Configuration, log } from "@crawlee/core"
import { HttpCrawler } from "@crawlee/http"
import { exitWithParent } from "../support/processes.ts"

const { warm, measured } = JSON.parse(readFileSync(process.env.URLS_FILE!, "utf8")) as { warm: Array<string>; measured: Array<string> }
const concurrency = Number(process.env.CONCURRENCY ?? 32)

log.setLevel(log.LEVELS.WARNING)

const crawl = async (urls: ReadonlyArray<string>) => {
  const config = new Configuration({ persistStorage: false, purgeOnStart: true })
  let ok = 0
  let bytes = 0
  let failed = 0
  const crawler = new HttpCrawler({
    minConcurrency: concurrency,
    maxConcurrency: concurrency,
    requestHandler: async ({ body, response }) => {
      if (response.statusCode === 200) ok++
      bytes += body.length
    },
    failedRequestHandler: async () => {
      failed++
    }
  }, config)
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  await crawler.run([...urls])
  const wallMs = performance.now() - t0
  const cpu = process.cpuUsage(cpu0)
  await crawler.teardown().catch(() => {})
  return { pages: urls.length, ok, failed, bytes, wallMs, cpuMs: (cpu.user + cpu.system) / 1000 }
}

exitWithParent(() => {})
const main = async () => {
  if (warm.length > 0) await crawl(warm)
  const result = await crawl(measured)
  console.log(`result ${JSON.stringify(result)}`)
  process.exit(0)
}
main().catch((error) => {
  console.error("crawlee runner failed:", error)
  process.exit(1)
})
