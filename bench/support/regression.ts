/**
 * A benchmark of this checkout against an earlier commit, run alternately so that the load of a
 * shared machine hits both alike: base, current, current, base, base, current, ... Each run is the
 * bench's own process (`bench/<name>.ts`), whose last line holds its figures (`api ratio=0.52
 * p99_ratio=1.8`, `crawl ratio_crawlee=... create_ratio=...`); each figure is already measured
 * against the bench's bare baseline of the same run. Printed: per figure the median over the runs
 * of each side, and current / base.
 *
 *   npm run bench:regression -- --bench api --runs 2 -- --duration 4 --warmup 1 --rounds 1
 *   npm run bench:regression -- --bench crawl --base main -- --pages 400 --warm 100 --rounds 1
 *
 * --bench api | crawl (any bench/<name>.ts with such a last line); --base REV (default HEAD~1: the
 * commit before this one); --runs N (default 2): runs of each side. Arguments after a second `--`
 * go to the bench. The current side is the working tree as it is (uncommitted changes included);
 * the base is a detached git worktree in a temporary directory, removed at the end.
 */
import { execFileSync, spawn } from "node:child_process"
import { mkdtempSync, rmSync, symlinkSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { nodeBin } from "../../test/support/server-process.ts"
import { median } from "./load.ts"
import { cleanupAll, installExitHandlers, onCleanup, root, runMain } from "./processes.ts"

const argv = process.argv.slice(2)
const split = argv.indexOf("--", argv[0] === "--" ? 1 : 0)
const own = (split >= 0 ? argv.slice(0, split) : argv).filter((a) => a !== "--")
const benchArgs = split >= 0 ? argv.slice(split + 1) : []
const option = (name: string, dflt: string) => {
  const i = own.indexOf(`--${name}`)
  return i >= 0 && own[i + 1] !== undefined ? own[i + 1]! : dflt
}

const bench = option("bench", "api")
const base = option("base", "HEAD~1")
const runs = Number(option("runs", "2"))
if (!/^[a-z]+$/.test(bench)) throw new Error("--bench names a file of bench/, such as api or crawl")
if (!Number.isInteger(runs) || runs < 1) throw new Error("--runs must be a positive whole number")

const git = (...args: Array<string>) => execFileSync("git", args, { cwd: root, encoding: "utf8" }).trim()

/** The figures of a bench's last line `name key=value key=value ...`. */
export const parseFigures = (output: string): Record<string, number> => {
  const line = output.trim().split("\n").reverse().find((l) => new RegExp(`^${bench} (\\w+=\\S+ ?)+$`).test(l.trim()))
  if (!line) throw new Error(`bench:${bench} printed no figures line:\n${output.slice(-2000)}`)
  return Object.fromEntries(line.trim().split(" ").slice(1).map((pair) => {
    const [key, value] = pair.split("=")
    return [key!, Number(value)]
  }))
}

/** Runs `bench/<bench>.ts` in `dir`, echoing its output; its figures. */
const runBench = (dir: string, label: string) =>
  new Promise<Record<string, number>>((resolve, reject) => {
    console.log(`--- ${label}: bench:${bench} ${benchArgs.join(" ")}`)
    const child = spawn(nodeBin, ["--import", "tsx", `bench/${bench}.ts`, ...benchArgs], { cwd: dir, stdio: ["pipe", "pipe", "inherit"] })
    let out = ""
    child.stdout.on("data", (d: Buffer) => {
      out += d
      process.stdout.write(d)
    })
    child.once("error", reject)
    child.once("exit", (code) => {
      if (code !== 0) reject(new Error(`bench:${bench} (${label}) exited with ${code}`))
      else {
        try {
          resolve(parseFigures(out))
        } catch (e) {
          reject(e)
        }
      }
    })
  })

installExitHandlers()
runMain(async () => {
  const baseCommit = git("rev-parse", "--verify", `${base}^{commit}`)
  const dir = mkdtempSync(join(tmpdir(), "trawl-bench-base-"))
  rmSync(dir, { recursive: true })
  git("worktree", "add", "--detach", dir, baseCommit)
  onCleanup("base worktree", () => {
    git("worktree", "remove", "--force", dir)
  })
  // The base runs on this checkout's packages (no install).
  symlinkSync(join(root, "node_modules"), join(dir, "node_modules"))

  const sides = { base: [] as Array<Record<string, number>>, current: [] as Array<Record<string, number>> }
  // ABBA order: a drift of the machine's load over the runs favours neither side.
  type Side = keyof typeof sides
  const order = Array.from({ length: runs }, (_, i): Array<Side> => (i % 2 === 0 ? ["base", "current"] : ["current", "base"])).flat()
  for (const [i, side] of order.entries()) {
    const figures = await runBench(side === "base" ? dir : root, `${side} (${side === "base" ? baseCommit.slice(0, 10) : "working tree"}), run ${i + 1}/${order.length}`)
    sides[side].push(figures)
  }

  const keys = Object.keys(sides.current[0]!)
  console.log(`\nbench:${bench} current (working tree) against ${base} (${baseCommit.slice(0, 10)}), ${runs} run(s) each, medians:`)
  const ratios: Array<string> = []
  for (const key of keys) {
    const b = median(sides.base.map((f) => f[key] ?? NaN))
    const c = median(sides.current.map((f) => f[key] ?? NaN))
    console.log(`  ${key.padEnd(16)} base ${b.toFixed(3).padStart(8)}  current ${c.toFixed(3).padStart(8)}  current/base ${(c / b).toFixed(3)}   runs: base ${sides.base.map((f) => f[key]).join(", ")}; current ${sides.current.map((f) => f[key]).join(", ")}`)
    ratios.push(`${key}=${(c / b).toFixed(3)}`)
  }
  console.log(`regression ${bench} ${ratios.join(" ")}`)
  await cleanupAll()
})
