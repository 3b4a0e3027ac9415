/**
 * Process handling of `npm run bench:crawl`: a cleanup list that runs once (normal end, errors,
 * signals), child processes that die with us (their stdin is our pipe), CPU time from /proc.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import { resolve } from "node:path"
import { nodeBin } from "../../test/support/server-process.ts"

export const root = resolve(import.meta.dirname, "../..")

const cleanups: Array<{ name: string; run: () => Promise<void> | void }> = []
let cleaning: Promise<void> | undefined

/** Registers a cleanup step; returns a function that runs it now (once) and unregisters it. */
export const onCleanup = (name: string, run: () => Promise<void> | void): (() => Promise<void>) => {
  const entry = { name, run }
  cleanups.push(entry)
  return async () => {
    const i = cleanups.indexOf(entry)
    if (i < 0) return
    cleanups.splice(i, 1)
    await entry.run()
  }
}

/** Runs all registered cleanups, newest first; never throws. */
export const cleanupAll = (): Promise<void> => {
  cleaning ??= (async () => {
    while (cleanups.length > 0) {
      const entry = cleanups.pop()!
      try {
        await entry.run()
      } catch (error) {
        console.error(`cleanup of ${entry.name} failed:`, error)
      }
    }
  })()
  return cleaning
}

export const installExitHandlers = () => {
  const bail = (code: number) => (reason?: unknown) => {
    if (reason !== undefined && typeof reason !== "string") console.error(reason)
    void cleanupAll().finally(() => process.exit(code))
  }
  process.once("SIGINT", bail(130))
  process.once("SIGTERM", bail(143))
  process.once("SIGHUP", bail(129))
  process.on("uncaughtException", bail(1))
  process.on("unhandledRejection", bail(1))
}

const CLK_TCK = 100

/** utime + stime of a process (all its threads) in ms, from /proc/<pid>/stat. */
export const procCpuMs = (pid: number): number => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
  // The command name is in parentheses and may contain spaces: count fields after the last ")".
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  // fields[0] is field 3 (state); utime is field 14, stime field 15.
  const utime = Number(fields[11])
  const stime = Number(fields[12])
  return ((utime + stime) * 1000) / CLK_TCK
}

export interface Child {
  readonly process: ChildProcess
  readonly output: () => string
  /** Resolves with the first stdout line that starts with `prefix` (rest of the line). */
  readonly line: (prefix: string, timeoutMs?: number) => Promise<string>
  readonly stop: () => Promise<void>
}

/**
 * Spawns `node --import tsx <script>` (cwd: the repo) with a minimal env. Its stdin stays a pipe,
 * so a child written for this bench exits when this process goes away, even by SIGKILL.
 */
export const spawnChild = (name: string, script: string, env: Record<string, string>, nodeArgs: ReadonlyArray<string> = []): Child => {
  const child = spawn(nodeBin, [...nodeArgs, "--import", "tsx", script], {
    cwd: root,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...env },
    stdio: ["pipe", "pipe", "pipe"]
  })
  let out = ""
  let pending = ""
  const lines: Array<string> = []
  const listeners = new Set<() => void>()
  child.stdout!.on("data", (d: Buffer) => {
    out += d
    pending += d
    let nl: number
    while ((nl = pending.indexOf("\n")) >= 0) {
      lines.push(pending.slice(0, nl))
      pending = pending.slice(nl + 1)
    }
    for (const l of listeners) l()
  })
  child.stderr!.on("data", (d) => (out += d))
  child.stdin!.on("error", () => {})
  const exited = new Promise<void>((res) => child.once("exit", () => res()))
  let exitCode: number | null | undefined
  child.once("exit", (code, signal) => {
    exitCode = code ?? (signal ? -1 : 0)
    for (const l of listeners) l()
  })
  const stop = onCleanup(name, async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM")
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000)
      await exited
      clearTimeout(timer)
    }
  })
  const line = (prefix: string, timeoutMs = 120_000) =>
    new Promise<string>((res, rej) => {
      const check = () => {
        const found = lines.find((l) => l.startsWith(prefix))
        if (found !== undefined) {
          done()
          res(found.slice(prefix.length).trim())
        } else if (exitCode !== undefined) {
          done()
          rej(new Error(`${name} exited (${exitCode}) before printing "${prefix}":\n${out.slice(-4000)}`))
        }
      }
      const timer = setTimeout(() => {
        done()
        rej(new Error(`${name}: no "${prefix}" within ${timeoutMs} ms:\n${out.slice(-4000)}`))
      }, timeoutMs)
      const done = () => {
        clearTimeout(timer)
        listeners.delete(check)
      }
      listeners.add(check)
      check()
    })
  return { process: child, output: () => out, line, stop }
}

/** For children: exit when the parent closes our stdin (it died or is done with us). */
export const exitWithParent = (shutdown: () => void | Promise<void>) => {
  let closing = false
  const go = () => {
    if (closing) return
    closing = true
    void Promise.resolve()
      .then(shutdown)
      .catch(() => {})
      .finally(() => process.exit(0))
  }
  process.stdin.on("end", go)
  process.stdin.on("error", go)
  process.stdin.resume()
  process.on("SIGTERM", go)
  process.on("SIGINT", go)
}
