/**
 * Ceiling (c) of `npm run bench:crawl`: a bare undici loop, CONCURRENCY workers each taking the next
 * URL and reading the whole body, over one keep-alive Agent.
 *
 * Env: URLS_FILE (JSON {warm: string[], measured: string[]}), CONCURRENCY.
 * Prints `result <json>` for the measured run (after a warm-up run).
 */
import { readFileSync } from "node:fs"
import { Agent, request } from "undici"
import { exitWithParent } from "../support/processes.ts"

const { warm, measured } = JSON.parse(readFileSync(process.env.URLS_FILE!, "utf8")) as { warm: Array<string>; measured: Array<string> }
const concurrency = Number(process.env.CONCURRENCY ?? 32)
const agent = new Agent({ keepAliveTimeout: 30_000 })

const crawl = async (urls: ReadonlyArray<string>) => {
  let next = 0
  let ok = 0
  let failed = 0
  let bytes = 0
  const worker = async () => {
    for (let i = next++; i < urls.length; i = next++) {
      try {
        const res = await request(urls[i]!, { dispatcher: agent })
        const body = Buffer.from(await res.body.arrayBuffer())
        bytes += body.length
        if (res.statusCode === 200) ok++
        else failed++
      } catch {
        failed++
      }
    }
  }
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  await Promise.all(Array.from({ length: concurrency }, worker))
  const wallMs = performance.now() - t0
  const cpu = process.cpuUsage(cpu0)
  return { pages: urls.length, ok, failed, bytes, wallMs, cpuMs: (cpu.user + cpu.system) / 1000 }
}

exitWithParent(() => agent.close())
const main = async () => {
  if (warm.length > 0) await crawl(warm)
  const result = await crawl(measured)
  console.log(`result ${JSON.stringify(result)}`)
  await agent.close()
  process.exit(0)
}
main().catch((error) => {
  console.error("undici runner failed:", error)
  process.exit(1)
})
