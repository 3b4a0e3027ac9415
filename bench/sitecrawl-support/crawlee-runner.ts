/**
 * Baseline (b) of `npm run bench:sitecrawl`: Crawlee's CheerioCrawler following links with
 * `enqueueLinks()` (its default: `<a href>` on the same host name) from one seed, in its own process
 * so that its CPU is its own. Defaults except: min = max concurrency = CONCURRENCY (Trawl's
 * concurrency for one site, instead of Crawlee's ramp-up from 1), `maxRequestsPerCrawl` = LIMIT,
 * in-memory storage (persistStorage: false).
 *
 * Env: CONCURRENCY, and JSON CRAWLS: [{seed, limit}] run one after another with a fresh crawler each
 * (the first ones are warm-ups). Prints `result <json>` for each: pages handled, failures, wall ms and
 * this process's CPU ms over that crawl.
 */
import { CheerioCrawler, Configuration, log } from "@crawlee/cheerio"
import { exitWithParent } from "../support/processes.ts"

const concurrency = Number(process.env.CONCURRENCY ?? 2)
const crawls = JSON.parse(process.env.CRAWLS ?? "[]") as Array<{ seed: string; limit: number }>

log.setLevel(log.LEVELS.WARNING)

const crawl = async (seed: string, limit: number) => {
  const config = new Configuration({ persistStorage: false, purgeOnStart: true })
  let handled = 0
  let failed = 0
  const crawler = new CheerioCrawler({
    minConcurrency: concurrency,
    maxConcurrency: concurrency,
    maxRequestsPerCrawl: limit,
    requestHandler: async ({ enqueueLinks }) => {
      handled++
      await enqueueLinks()
    },
    failedRequestHandler: async () => {
      failed++
    }
  }, config)
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  await crawler.run([seed])
  const wallMs = performance.now() - t0
  const cpu = process.cpuUsage(cpu0)
  await crawler.teardown().catch(() => {})
  return { seed, pages: handled, failed, wallMs, cpuMs: (cpu.user + cpu.system) / 1000 }
}

exitWithParent(() => {})
const main = async () => {
  for (const c of crawls) console.log(`result ${JSON.stringify(await crawl(c.seed, c.limit))}`)
  process.exit(0)
}
main().catch((error) => {
  console.error("crawlee runner failed:", error)
  process.exit(1)
})
