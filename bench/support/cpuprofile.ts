/** Self-time summary of a V8 `.cpuprofile` (as written by `node --cpu-prof`). */
import { readFileSync } from "node:fs"

interface CallFrame {
  functionName: string
  url: string
  lineNumber: number
  columnNumber: number
}
interface ProfileNode {
  id: number
  callFrame: CallFrame
  children?: Array<number>
}
interface CpuProfile {
  nodes: Array<ProfileNode>
  startTime: number
  endTime: number
  samples: Array<number>
  timeDeltas: Array<number>
}

export interface SelfTime {
  readonly name: string
  readonly ms: number
  readonly share: number
}

const shortUrl = (url: string) => {
  if (url === "") return ""
  const nm = url.lastIndexOf("node_modules/")
  if (nm >= 0) return url.slice(nm + "node_modules/".length)
  const src = url.indexOf("/src/")
  return src >= 0 ? url.slice(src + 1) : url.replace(/^file:\/\//, "")
}

/** The package (or `src/<folder>`, `node:internal`, `(native)`) a frame belongs to. */
const area = (frame: CallFrame) => {
  const url = frame.url
  if (url === "") return frame.functionName.startsWith("(") ? frame.functionName : "(native/builtin)"
  if (url.startsWith("node:")) return "node:" + (url.split("/")[1] ?? url)
  const nm = url.lastIndexOf("node_modules/")
  if (nm >= 0) {
    const rest = url.slice(nm + "node_modules/".length).split("/")
    if (rest[0]!.startsWith("@")) return `${rest[0]}/${rest[1]}`
    if (rest[0] === "effect") return `effect/${(rest[2] ?? "").replace(/\.(js|ts)$/, "")}`
    return rest[0]!
  }
  const s = shortUrl(url).split("/")
  return s.slice(0, Math.min(2, s.length - 1)).join("/") || s[0]!
}

/** Microseconds on the monotonic clock V8 stamps samples with (the same as process.hrtime). */
export const nowUs = () => Number(process.hrtime.bigint() / 1000n)

export interface Window {
  readonly fromUs: number
  readonly toUs: number
}

/**
 * Self time per function and per package; with `window`, only samples taken inside it (e.g. the
 * measured load, leaving out start-up and bootstrap). `callersOf` lists, for the hottest
 * functions, the stacks (up to `depth` frames of callers) their self time came from.
 */
export const summarise = (file: string, top = 30, window?: Window, callersOf = 0, depth = 8) => {
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const selfUs = new Map<number, number>()
  let t = profile.startTime
  for (let i = 0; i < profile.samples.length; i++) {
    const delta = profile.timeDeltas[i] ?? 0
    t += delta
    if (window && (t < window.fromUs || t > window.toUs)) continue
    const id = profile.samples[i]!
    selfUs.set(id, (selfUs.get(id) ?? 0) + delta)
  }
  const total = [...selfUs.values()].reduce((a, b) => a + b, 0)
  const frameName = (frame: CallFrame) =>
    `${frame.functionName || "(anonymous)"} ${shortUrl(frame.url)}${frame.url ? `:${frame.lineNumber + 1}` : ""}`
  const fn = new Map<string, number>()
  const areas = new Map<string, number>()
  const stacks = new Map<string, Map<string, number>>()
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)!.callFrame
    const name = frameName(frame)
    fn.set(name, (fn.get(name) ?? 0) + us)
    const a = area(frame)
    areas.set(a, (areas.get(a) ?? 0) + us)
    if (callersOf > 0) {
      const chain: Array<string> = []
      for (let p = parent.get(id); p !== undefined && chain.length < depth; p = parent.get(p)) {
        const f = byId.get(p)!.callFrame
        if (f.functionName === "(root)") break
        chain.push(frameName(f))
      }
      const m = stacks.get(name) ?? new Map<string, number>()
      const key = chain.join("\n          <- ")
      m.set(key, (m.get(key) ?? 0) + us)
      stacks.set(name, m)
    }
  }
  const rank = (m: Map<string, number>, n = top): Array<SelfTime> =>
    [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([name, us]) => ({ name, ms: us / 1000, share: us / total }))
  const functions = rank(fn)
  const callers = functions
    .filter((f) => !f.name.startsWith("("))
    .slice(0, callersOf)
    .map((f) => ({ name: f.name, stacks: rank(stacks.get(f.name)!, 3) }))
  return { totalMs: total / 1000, functions, areas: rank(areas), callers }
}

export const printSummary = (file: string, top = 30, window?: Window, callersOf = 0) => {
  const s = summarise(file, top, window, callersOf)
  console.log(`profile ${file}: ${(s.totalMs / 1000).toFixed(1)} s sampled${window ? " (measured window only)" : ""}`)
  console.log(`\ntop self time by function:`)
  for (const f of s.functions) console.log(`${(f.share * 100).toFixed(1).padStart(6)}%  ${f.ms.toFixed(0).padStart(7)} ms  ${f.name}`)
  console.log(`\nself time by package / source folder:`)
  for (const f of s.areas) console.log(`${(f.share * 100).toFixed(1).padStart(6)}%  ${f.ms.toFixed(0).padStart(7)} ms  ${f.name}`)
  if (s.callers.length > 0) console.log(`\nwhere the self time of the hottest functions comes from:`)
  for (const c of s.callers) {
    console.log(`\n${c.name}`)
    for (const st of c.stacks) console.log(`  ${(st.share * 100).toFixed(1).padStart(5)}%  <- ${st.name}`)
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const file = process.argv[2]
  if (!file) {
    console.error("usage: node --import tsx bench/support/cpuprofile.ts FILE.cpuprofile [TOP]")
    process.exit(2)
  }
  printSummary(file, Number(process.argv[3] ?? 30))
}
