/**
 * The bare baseline of `npm run bench:webhooks`, in its own process (as Trawl's sender is): a loop
 * that signs each body with the service's own `buildDeliveryHeaders` (fresh timestamp, both HMACs)
 * and POSTs it to the receiver with undici at a fixed concurrency, reading each answer. No database,
 * no queue, no retry bookkeeping.
 *
 * Env: BARE_URL, BARE_BODIES_FILE (JSON `{ secret, sets: [{ name, bodies: [{ jobId, deliveryId, body }] }] }`),
 * BARE_CONCURRENCY, BARE_WARMUP_MS, BARE_DURATION_MS.
 * Prints one `bare-result <json>` line per set; exits when done or when stdin closes.
 */
import { readFileSync } from "node:fs"
import { Agent, request } from "undici"
import { buildDeliveryHeaders } from "../../src/webhooks/sender.ts"

interface BodySet {
  readonly name: string
  readonly bodies: ReadonlyArray<{ jobId: string; deliveryId: string; body: string }>
}

process.stdin.on("end", () => process.exit(0))
process.stdin.resume()

const url = process.env.BARE_URL!
const input = JSON.parse(readFileSync(process.env.BARE_BODIES_FILE!, "utf8")) as { secret: string; sets: ReadonlyArray<BodySet> }
const concurrency = Number(process.env.BARE_CONCURRENCY ?? 16)
const warmupMs = Number(process.env.BARE_WARMUP_MS ?? 500)
const durationMs = Number(process.env.BARE_DURATION_MS ?? 3000)

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!

const runSet = async (set: BodySet) => {
  const agent = new Agent({ keepAliveTimeout: 10_000, pipelining: 1 })
  const target = new URL(url)
  let next = 0
  let done = 0
  let errors = 0
  let measuring = false
  let stop = false
  const latencies: Array<number> = []
  const worker = async () => {
    while (!stop) {
      const item = set.bodies[next++ % set.bodies.length]!
      const started = performance.now()
      try {
        const headers = buildDeliveryHeaders({ kind: "job", resourceId: item.jobId, deliveryId: item.deliveryId, secret: input.secret, body: item.body })
        const res = await request(target, { dispatcher: agent, method: "POST", headers, body: item.body })
        await res.body.text()
        if (res.statusCode < 200 || res.statusCode >= 300) errors++
      } catch {
        errors++
      }
      if (measuring) {
        done++
        latencies.push(performance.now() - started)
      }
    }
  }
  const workers = Array.from({ length: concurrency }, worker)
  await new Promise((r) => setTimeout(r, warmupMs))
  measuring = true
  const t0 = performance.now()
  await new Promise((r) => setTimeout(r, durationMs))
  const elapsed = performance.now() - t0
  const counted = done
  measuring = false
  stop = true
  await Promise.all(workers)
  await agent.close()
  latencies.sort((a, b) => a - b)
  const bytes = Math.round(set.bodies.reduce((a, b) => a + Buffer.byteLength(b.body), 0) / set.bodies.length)
  return {
    name: set.name,
    bodyBytes: bytes,
    concurrency,
    requests: counted,
    errors,
    seconds: elapsed / 1000,
    rate: counted / (elapsed / 1000),
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99)
  }
}

for (const set of input.sets) {
  const result = await runSet(set)
  console.log(`bare-result ${JSON.stringify(result)}`)
}
process.exit(0)
