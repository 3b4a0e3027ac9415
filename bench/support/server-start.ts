/**
 * What a test server costs to start: wall time until it announces its URL and the CPU time its
 * process used by then, for `runs` starts on the embedded database (docs/performance.md "Running TypeScript").
 *
 *   node --import tsx bench/support/server-start.ts [runs]
 */
import { readFileSync } from "node:fs"
import { startServer } from "../../test/support/server-process.ts"

process.env.TRAWL_CHECK_RESPONSES = "0"
const runs = Math.max(1, Number(process.argv[2] ?? 5))
const ticks = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  // utime and stime (fields 14 and 15 of stat), in clock ticks of 10 ms
  return (Number(stat[11]) + Number(stat[12])) * 10
}
const walls: number[] = [], cpus: number[] = []
for (let i = 0; i < runs; i++) {
  const t0 = performance.now()
  const server = await startServer({})
  walls.push(performance.now() - t0)
  cpus.push(ticks(server.process.pid!))
  await server.stop()
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
console.log(`server start over ${runs} runs: median ${median(walls).toFixed(0)} ms wall, ${median(cpus).toFixed(0)} ms CPU of the server process`)
