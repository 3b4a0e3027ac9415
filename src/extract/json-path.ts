/**
 * Minimal JSON paths for selectors on JSON input: `$.a.b[0]`, `a.b.0`, `$['a b'].c`, `$.items[*].name`,
 * and `$..name` (first match anywhere below).
 */

type Step = { kind: "key"; key: string } | { kind: "index"; index: number } | { kind: "all" } | { kind: "deep"; key: string }

export function parseJsonPath(path: string): Step[] {
  let p = path.trim()
  if (p.startsWith("$")) p = p.slice(1)
  const steps: Step[] = []
  let i = 0
  while (i < p.length) {
    const c = p[i]!
    if (c === ".") {
      if (p[i + 1] === ".") {
        const m = /^[^.[\]]+/.exec(p.slice(i + 2))
        if (m === null) throw new Error(`bad JSON path '${path}'`)
        steps.push({ kind: "deep", key: m[0] })
        i += 2 + m[0].length
        continue
      }
      i++
      continue
    }
    if (c === "[") {
      const end = p.indexOf("]", i)
      if (end < 0) throw new Error(`bad JSON path '${path}'`)
      const inner = p.slice(i + 1, end).trim()
      if (inner === "*") steps.push({ kind: "all" })
      else if (/^-?\d+$/.test(inner)) steps.push({ kind: "index", index: parseInt(inner, 10) })
      else steps.push({ kind: "key", key: inner.replace(/^['"]|['"]$/g, "") })
      i = end + 1
      continue
    }
    const m = /^[^.[\]]+/.exec(p.slice(i))!
    const seg = m[0]
    if (seg === "*") steps.push({ kind: "all" })
    else if (/^\d+$/.test(seg)) steps.push({ kind: "index", index: parseInt(seg, 10) })
    else steps.push({ kind: "key", key: seg })
    i += seg.length
  }
  return steps
}

function deepFind(v: unknown, key: string, out: unknown[], depth = 0): void {
  if (depth > 50 || v === null || typeof v !== "object") return
  if (Array.isArray(v)) {
    for (const x of v) deepFind(x, key, out, depth + 1)
    return
  }
  const o = v as Record<string, unknown>
  if (key in o) out.push(o[key])
  for (const x of Object.values(o)) deepFind(x, key, out, depth + 1)
}

/** All values the path selects (an empty list when nothing matches). */
export function evalJsonPath(root: unknown, path: string): unknown[] {
  let cur: unknown[] = [root]
  for (const s of parseJsonPath(path)) {
    const next: unknown[] = []
    for (const v of cur) {
      if (s.kind === "deep") deepFind(v, s.key, next)
      else if (v === null || typeof v !== "object") continue
      else if (s.kind === "all") next.push(...(Array.isArray(v) ? v : Object.values(v as object)))
      else if (s.kind === "index") {
        if (Array.isArray(v)) {
          const x = v[s.index < 0 ? v.length + s.index : s.index]
          if (x !== undefined) next.push(x)
        } else {
          const x = (v as Record<string, unknown>)[String(s.index)]
          if (x !== undefined) next.push(x)
        }
      } else if (!Array.isArray(v)) {
        const x = (v as Record<string, unknown>)[s.key]
        if (x !== undefined) next.push(x)
      }
    }
    cur = next
  }
  return cur
}
