import { readdir, readFile } from "node:fs/promises"

/**
 * The browsers this process runs and the memory they hold, read from /proc (Linux): Playwright
 * starts each browser as a direct child of the node process, and the browser starts its renderers
 * and helpers below itself. A browser is a child whose command is a browser's; its RSS is its own
 * plus all its descendants'. Elsewhere than Linux (no /proc) the answer is zero browsers.
 * Read at each scrape, so it stays cheap when no browser runs (the usual case on an HTTP-only node).
 */
const BROWSER_COMMAND = /chrom|brave|firefox|camoufox/i

interface Proc {
  readonly pid: number
  readonly ppid: number
  readonly command: string
  readonly rssBytes: number
}

const PAGE_BYTES = 4096

const readProc = async (pid: number): Promise<Proc | undefined> => {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8")
    // The command sits in parentheses and may hold spaces or parentheses itself: split after the last ")".
    const close = stat.lastIndexOf(")")
    const command = stat.slice(stat.indexOf("(") + 1, close)
    const fields = stat.slice(close + 2).split(" ")
    // After the command: state, ppid, ... field 24 of the whole line (index 21 here) is RSS in pages.
    return { pid, ppid: Number(fields[1]), command, rssBytes: Number(fields[21]) * PAGE_BYTES }
  } catch {
    // Gone between the listing and the read.
    return undefined
  }
}

/** The direct children of `pid`, from each of its threads' `children` list. */
const childrenOf = async (pid: number): Promise<Array<number>> => {
  const tasks = await readdir(`/proc/${pid}/task`)
  const lists = await Promise.all(tasks.map((t) => readFile(`/proc/${pid}/task/${t}/children`, "utf8").catch(() => "")))
  return [...new Set(lists.join(" ").split(/\s+/).filter((p) => p !== "").map(Number))]
}

export const browserUsage = async (root: number = process.pid): Promise<{ processes: number; rssBytes: number }> => {
  // The node's own children first, a few reads: most scrapes find no browser and stop here.
  const direct = await childrenOf(root).catch(() => [])
  const browsers = (await Promise.all(direct.map(readProc))).filter((p) => p !== undefined && BROWSER_COMMAND.test(p.command)) as Array<Proc>
  if (browsers.length === 0) return { processes: 0, rssBytes: 0 }
  // Browsers run: one pass over /proc gives every process's parent, and so each browser's tree.
  const entries = await readdir("/proc")
  const procs = (await Promise.all(entries.filter((e) => /^\d+$/.test(e)).map((e) => readProc(Number(e))))).filter((p) => p !== undefined)
  const children = new Map<number, Array<Proc>>()
  for (const p of procs) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p])
  const treeRss = (p: Proc): number => p.rssBytes + (children.get(p.pid) ?? []).reduce((sum, c) => sum + treeRss(c), 0)
  return { processes: browsers.length, rssBytes: browsers.reduce((sum, b) => sum + treeRss(b), 0) }
}
