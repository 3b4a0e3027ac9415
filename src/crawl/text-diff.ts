type Op = { kind: " " | "-" | "+"; line: string }

/**
 * Edit steps the search may take before it gives up on the shortest script. The search costs
 * O((N+M)·D) time and O(D²) memory, so this bounds both (about 4 MB and some 10⁸ comparisons at
 * worst); texts further apart than that get one replacement of everything between their common
 * start and end.
 */
export const MAX_EDIT_STEPS = 1000

/**
 * Line comparisons the search may make before it gives up the same way: with long texts even a
 * few hundred edit steps cost (N+M) comparisons each, so the steps alone do not bound the time.
 */
export const MAX_COMPARISONS = 10_000_000

/**
 * An edit script between two line lists: the shortest one (Myers' algorithm) when the lines that
 * differ, after the common start and end are set aside, need at most `MAX_EDIT_STEPS` edits.
 */
const editScript = (a: ReadonlyArray<string>, b: ReadonlyArray<string>, maxSteps: number, maxComparisons: number): Array<Op> => {
  let head = 0
  while (head < a.length && head < b.length && a[head] === b[head]) head++
  let tail = 0
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++
  const same = (from: number, to: number) => a.slice(from, to).map((line): Op => ({ kind: " ", line }))
  const middle = shortestMiddle(a.slice(head, a.length - tail), b.slice(head, b.length - tail), maxSteps, maxComparisons) ??
    [...a.slice(head, a.length - tail).map((line): Op => ({ kind: "-", line })), ...b.slice(head, b.length - tail).map((line): Op => ({ kind: "+", line }))]
  return [...same(0, head), ...middle, ...same(a.length - tail, a.length)]
}

/** Myers' shortest edit script, or undefined when it needs more than `maxSteps` edits or `maxComparisons` line comparisons. */
const shortestMiddle = (a: ReadonlyArray<string>, b: ReadonlyArray<string>, maxSteps: number, maxComparisons: number): Array<Op> | undefined => {
  const n = a.length
  const m = b.length
  const max = Math.min(n + m, maxSteps)
  const offset = max + 1
  const v = new Int32Array(2 * max + 3)
  // trace[d] keeps only diagonals -d..d of V before step d: O(D²) in all.
  const trace: Array<Int32Array> = []
  let found = n === 0 && m === 0
  let comparisons = 0
  for (let d = 0; d <= max && !found; d++) {
    trace.push(v.slice(offset - d, offset + d + 1))
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[offset + k - 1]! < v[offset + k + 1]!) ? v[offset + k + 1]! : v[offset + k - 1]! + 1
      let y = x - k
      const from = x
      while (x < n && y < m && a[x] === b[y]) {
        x++
        y++
      }
      comparisons += x - from + 1
      if (comparisons > maxComparisons) return undefined
      v[offset + k] = x
      if (x >= n && y >= m) {
        found = true
        break
      }
    }
  }
  if (!found) return undefined
  // Walk the trace backwards to recover the operations.
  const ops: Array<Op> = []
  let x = n
  let y = m
  for (let d = trace.length - 1; d >= 0; d--) {
    const vd = trace[d]!
    const at = (k: number) => vd[k + d]!
    const k = x - y
    const prevK = k === -d || (k !== d && at(k - 1) < at(k + 1)) ? k + 1 : k - 1
    const prevX = d === 0 ? 0 : at(prevK)
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
  context = 3,
  maxSteps = MAX_EDIT_STEPS,
  maxComparisons = MAX_COMPARISONS
): string => {
  const ops = editScript(a, b, maxSteps, maxComparisons)
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
