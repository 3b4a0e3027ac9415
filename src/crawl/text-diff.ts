type Op = { kind: " " | "-" | "+"; line: string }

/** The shortest edit script between two line lists (Myers' O((N+M)·D) algorithm). */
const editScript = (a: ReadonlyArray<string>, b: ReadonlyArray<string>): Array<Op> => {
  const n = a.length
  const m = b.length
  const max = n + m
  const offset = max + 1
  const v = new Int32Array(2 * max + 3)
  const trace: Array<Int32Array> = []
  let found = false
  for (let d = 0; d <= max && !found; d++) {
    trace.push(v.slice())
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[offset + k - 1]! < v[offset + k + 1]!) ? v[offset + k + 1]! : v[offset + k - 1]! + 1
      let y = x - k
      while (x < n && y < m && a[x] === b[y]) {
        x++
        y++
      }
      v[offset + k] = x
      if (x >= n && y >= m) {
        found = true
        break
      }
    }
  }
  // Walk the trace backwards to recover the operations.
  const ops: Array<Op> = []
  let x = n
  let y = m
  for (let d = trace.length - 1; d >= 0; d--) {
    const vd = trace[d]!
    const k = x - y
    const prevK = k === -d || (k !== d && vd[offset + k - 1]! < vd[offset + k + 1]!) ? k + 1 : k - 1
    const prevX = vd[offset + prevK]!
    const prevY = prevX - prevK
    while (x > prevX && y > prevY) ops.push({ kind: " ", line: a[--x]! }), y--
    if (d > 0) {
      if (x === prevX) ops.push({ kind: "+", line: b[--y]! })
      else ops.push({ kind: "-", line: a[--x]! })
    }
  }
  return ops.reverse()
}

/** A hunk range as diff -u writes it: `start,count`, just `start` for one line, `start-1,0` for none. */
const range = (start: number, count: number) => count === 1 ? `${start}` : `${count === 0 ? start - 1 : start},${count}`

/** A unified diff (`---`/`+++` headers, `@@` hunks with `context` lines around changes); "" when equal. */
export const unifiedDiff = (
  a: ReadonlyArray<string>,
  b: ReadonlyArray<string>,
  labels: { from: string; to: string },
  context = 3
): string => {
  const ops = editScript(a, b)
  if (!ops.some((o) => o.kind !== " ")) return ""
  const out = [`--- ${labels.from}`, `+++ ${labels.to}`]
  let i = 0
  let aLine = 1
  let bLine = 1
  const positions = ops.map((o) => {
    const p = { a: aLine, b: bLine }
    if (o.kind !== "+") aLine++
    if (o.kind !== "-") bLine++
    return p
  })
  while (i < ops.length) {
    if (ops[i]!.kind === " ") {
      i++
      continue
    }
    let start = Math.max(0, i - context)
    let end = i
    // Extend the hunk while changes are closer than 2·context lines apart.
    for (let j = i; j < ops.length; j++) {
      if (ops[j]!.kind !== " ") end = j
      else if (j - end > 2 * context) break
    }
    const stop = Math.min(ops.length, end + context + 1)
    const hunk = ops.slice(start, stop)
    const from = positions[start]!
    const aCount = hunk.filter((o) => o.kind !== "+").length
    const bCount = hunk.filter((o) => o.kind !== "-").length
    out.push(`@@ -${range(from.a, aCount)} +${range(from.b, bCount)} @@`)
    for (const o of hunk) out.push(`${o.kind}${o.line}`)
    i = stop
    start = stop
  }
  return out.join("\n") + "\n"
}
