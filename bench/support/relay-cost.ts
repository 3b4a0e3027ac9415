/**
 * What the tests' recording relay (test/support/openapi-conformance.ts) costs a load generator
 * that sends through it: a trivial `node:http` server (a child process answering a 323-byte JSON
 * body) loaded directly and through the relay, in alternating rounds from this one process.
 * Prints each side's rate, p50, p99 and this process's CPU per request (docs/performance.md).
 *
 *   node --import tsx bench/support/relay-cost.ts [rounds=10] [seconds per round=2]
 */
import { spawn } from "node:child_process"
import { startRecordingRelay } from "../../test/support/openapi-conformance.ts"
import { type LoadResult, mergeResults, runLoad } from "./load.ts"
import { freePort } from "../../test/support/server-process.ts"

const rounds = Number(process.argv[2] ?? 10)
const seconds = Number(process.argv[3] ?? 2)
const port = await freePort()
const server = spawn(process.execPath, [
  "-e",
  `const b = JSON.stringify({ data: { id: "x".repeat(300) } })
   require("node:http").createServer((q, s) => s.writeHead(200, { "content-type": "application/json" }).end(b))
     .listen(${port}, "127.0.0.1", () => console.log("up"))`
], { stdio: ["ignore", "pipe", "inherit"] })
await new Promise<void>((resolve) => server.stdout!.once("data", () => resolve()))
const relay = await startRecordingRelay(port)
const urls = { direct: `http://127.0.0.1:${port}`, relay: `http://127.0.0.1:${relay.port}` }
const targets = [{ path: "/x", headers: { "x-api-key": "k" } }]
const parts = { relay: [] as Array<LoadResult>, direct: [] as Array<LoadResult> }
const cpuMs = { relay: 0, direct: 0 }
for (const side of ["direct", "relay"] as const) await runLoad(urls[side], targets, { connections: 64, duration: 1 })
for (let r = 0; r < rounds; r++) {
  for (const side of r % 2 === 0 ? (["relay", "direct"] as const) : (["direct", "relay"] as const)) {
    const before = process.cpuUsage()
    parts[side].push(await runLoad(urls[side], targets, { connections: 64, duration: seconds }))
    const used = process.cpuUsage(before)
    cpuMs[side] += (used.user + used.system) / 1000
  }
}
const m = { direct: mergeResults(parts.direct), relay: mergeResults(parts.relay) }
const perRequestUs = (side: "direct" | "relay") => (cpuMs[side] / m[side].requests) * 1000
for (const side of ["direct", "relay"] as const) {
  console.log(`${side.padEnd(6)} ${m[side].rps.toFixed(0)} req/s  p50 ${m[side].p50.toFixed(2)} ms  p99 ${m[side].p99.toFixed(2)} ms  load generator ${perRequestUs(side).toFixed(1)} us CPU/request`)
}
console.log(
  `relay/direct: req/s ${(m.relay.rps / m.direct.rps).toFixed(3)}  p50 ${(m.relay.p50 / m.direct.p50).toFixed(2)}  p99 ${(m.relay.p99 / m.direct.p99).toFixed(2)}` +
    `  load generator CPU/request ${(perRequestUs("relay") / perRequestUs("direct")).toFixed(2)}`
)
server.kill()
await relay.close()
