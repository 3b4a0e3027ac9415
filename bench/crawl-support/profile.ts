/**
 * Summary of a V8 `.cpuprofile` (from `node --cpu-prof`): self time per function and per module,
 * idle time left out.
 */
import { readFileSync } from "node:fs"

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number }
  children?: Array<number>
}
interface CpuProfile {
  nodes: Array<ProfileNode>
  samples: Array<number>
  timeDeltas: Array<number>
  startTime: number
  endTime: number
}

const shortUrl = (url: string, root: string) => {
  let u = url.replace(/^file:\/\//, "")
  if (u.startsWith(root)) u = u.slice(root.length + 1)
  const nm = u.lastIndexOf("node_modules/")
  if (nm >= 0) u = u.slice(nm + "node_modules/".length)
  return u || "(native)"
}

/** The module a frame belongs to: the package (node_modules), the src/ folder, or node itself. */
const moduleOf = (url: string, root: string) => {
  const u = shortUrl(url, root)
  if (u === "(native)") return "(native / vm)"
  if (url.startsWith("node:")) return "node:" + u.replace(/^node:/, "").split("/")[0]
  if (url.includes("node_modules/")) {
    const parts = u.split("/")
    return parts[0]!.startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0]!
  }
  const parts = u.split("/")
  return parts.length > 2 ? `${parts[0]}/${parts[1]}` : u
}

export interface ProfileSummary {
  readonly totalMs: number
  readonly idleMs: number
  readonly functions: Array<{ name: string; where: string; selfMs: number }>
  readonly modules: Array<{ module: string; selfMs: number }>
}

export const summarizeProfile = (file: string, root: string): ProfileSummary => {
  const p = JSON.parse(readFileSync(file, "utf8")) as CpuProfile
  const byId = new Map(p.nodes.map((n) => [n.id, n]))
  const self = new Map<number, number>()
  for (let i = 0; i < p.samples.length; i++) {
    const dt = (p.timeDeltas[i + 1] ?? 0) / 1000
    self.set(p.samples[i]!, (self.get(p.samples[i]!) ?? 0) + dt)
  }
  let totalMs = 0
  let idleMs = 0
  const fns = new Map<string, { name: string; where: string; selfMs: number }>()
  const mods = new Map<string, number>()
  for (const [id, ms] of self) {
    const n = byId.get(id)!
    const { functionName, url, lineNumber } = n.callFrame
    if (functionName === "(idle)") {
      idleMs += ms
      continue
    }
    totalMs += ms
    const name = functionName || "(anonymous)"
    const where = url ? `${shortUrl(url, root)}:${lineNumber + 1}` : ""
    const key = `${name}@${where}`
    const f = fns.get(key) ?? { name, where, selfMs: 0 }
    f.selfMs += ms
    fns.set(key, f)
    const m = url ? moduleOf(url, root) : name.startsWith("(") ? name : "(native / vm)"
    mods.set(m, (mods.get(m) ?? 0) + ms)
  }
  return {
    totalMs,
    idleMs,
    functions: [...fns.values()].sort((a, b) => b.selfMs - a.selfMs),
    modules: [...mods.entries()].map(([module, selfMs]) => ({ module, selfMs })).sort((a, b) => b.selfMs - a.selfMs)
  }
}
