/**
 * Summarizes a V8 `.cpuprofile` (as written by `npm run bench:webhooks -- --cpu-prof DIR`):
 * self time by category (module area), top self-time functions, and inclusive time of chosen
 * functions.
 *
 *   node --import tsx bench/webhooks-support/profile-summary.ts <file.cpuprofile> [--top 30] [--from <ms>] [--to <ms>]
 *
 * `--from/--to`: only samples within this window (ms since the profile's start).
 */
import { readFileSync } from "node:fs"

interface Node {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  children?: Array<number>
}
interface Profile {
  nodes: Array<Node>
  startTime: number
  endTime: number
  samples: Array<number>
  timeDeltas: Array<number>
}

const args = process.argv.slice(2)
const file = args[0]!
const opt = (name: string, d: number) => {
  const i = args.indexOf(`--${name}`)
  return i >= 0 ? Number(args[i + 1]) : d
}
const top = opt("top", 30)
const from = opt("from", 0)
const to = opt("to", Number.POSITIVE_INFINITY)
const profile = JSON.parse(readFileSync(file, "utf8")) as Profile
const byId = new Map(profile.nodes.map((n) => [n.id, n]))
const parent = new Map<number, number>()
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)

const selfUs = new Map<number, number>()
let t = 0
let total = 0
for (let i = 0; i < profile.samples.length; i++) {
  t += profile.timeDeltas[i]!
  const ms = t / 1000
  if (ms < from || ms > to) continue
  const dt = profile.timeDeltas[i + 1] ?? 0
  selfUs.set(profile.samples[i]!, (selfUs.get(profile.samples[i]!) ?? 0) + dt)
  total += dt
}

const short = (url: string) => url.replace(/^file:\/\//, "").replace(/.*node_modules\//, "nm:").replace(/.*\/(src|bench|test)\//, "$1/")
const category = (n: Node): string => {
  const { url, functionName } = n.callFrame
  if (functionName === "(idle)") return "idle"
  if (functionName === "(garbage collector)") return "gc"
  if (functionName === "(program)") return "program (native, unattributed)"
  if (url.includes("pglite")) return "pglite (embedded postgres, wasm)"
  if (url.includes("embedded-pg-server")) return "embedded-pg-server"
  if (url.includes("@effect/sql-pg") || url.includes("/pg/") || url.includes("postgres")) return "sql-pg client"
  if (url.includes("effect/") && url.includes("/cluster/")) return "effect cluster"
  if (url.includes("effect/") && url.includes("/sql/")) return "effect sql"
  if (url.includes("effect/") && (url.includes("/http") || url.includes("platform"))) return "effect http/platform"
  if (url.includes("effect/") && url.includes("/schema/")) return "effect schema"
  if (url.includes("effect/")) return "effect core"
  if (url.includes("undici")) return "undici"
  if (url.includes("tsx") || url.includes("esbuild")) return "tsx"
  if (url.includes("/src/")) return `src/${url.split("/src/")[1]!.split("/")[0]}`
  if (url.startsWith("node:")) return `node:${url.slice(5).split("/")[0]}`
  if (url === "") return `native ${functionName || "(anonymous)"}`
  return short(url).split("/").slice(0, 2).join("/")
}

const cats = new Map<string, number>()
const fns = new Map<string, number>()
for (const [id, us] of selfUs) {
  const n = byId.get(id)!
  const c = category(n)
  cats.set(c, (cats.get(c) ?? 0) + us)
  const key = `${n.callFrame.functionName || "(anonymous)"} ${short(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`
  fns.set(key, (fns.get(key) ?? 0) + us)
}
const pct = (us: number) => `${((100 * us) / total).toFixed(1)}%`.padStart(6)
const ms = (us: number) => `${(us / 1000).toFixed(0)} ms`.padStart(9)
console.log(`profile ${file}: ${(total / 1e6).toFixed(2)} s sampled in the window`)
console.log("self time by area:")
for (const [c, us] of [...cats].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`  ${pct(us)} ${ms(us)}  ${c}`)
console.log(`top ${top} functions by self time:`)
for (const [k, us] of [...fns].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(us)} ${ms(us)}  ${k}`)

// Inclusive time of frames whose source is ours (src/), by function: where our code spends.
const incl = new Map<string, number>()
for (const [id, us] of selfUs) {
  const seen = new Set<string>()
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const n = byId.get(cur)!
    if (!n.callFrame.url.includes("/src/") || n.callFrame.url.includes("node_modules")) continue
    const key = `${n.callFrame.functionName || "(anonymous)"} ${short(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`
    if (seen.has(key)) continue
    seen.add(key)
    incl.set(key, (incl.get(key) ?? 0) + us)
  }
}
console.log(`top ${top} functions of src/ by inclusive time (stack-attributed; async continuations are not linked):`)
for (const [k, us] of [...incl].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(us)} ${ms(us)}  ${k}`)
