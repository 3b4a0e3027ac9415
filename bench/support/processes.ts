/**
 * Process and resource handling of the benchmarks (`npm run bench:api`, `bench:crawl`,
 * `bench:webhooks`): a cleanup list that runs once (newest first) on normal exit, on errors and on
 * signals; child processes that die with us (their stdin is our pipe); CPU time from /proc; a test
 * database to drop. Only what this run started is ever stopped, by its own handle.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { freePort, nodeBin, type RunningServer } from "../../test/support/server-process.ts"
import type { MirrorRow } from "./bare-server.ts"

export const root = resolve(import.meta.dirname, "../..")

// A bench measures the server, not the test helper's recording relay (docs/api.md, "The OpenAPI
// document"): the relay would carry every request to a Trawl server through this process, beside
// the load generator, and keep a copy of every byte; the bare servers never had it in front of
// them (docs/performance.md, "The p99 of bench:api").
process.env.TRAWL_CHECK_RESPONSES = "0"

// ---------------------------------------------------------------------------------------------
// Cleanup, exit and interruption

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

let interrupted = false
const interruptListeners = new Set<() => void>()

/** Calls `listener` when the run is interrupted (signal or unexpected error); returns an unsubscribe. */
export const onInterrupt = (listener: () => void): (() => void) => {
  interruptListeners.add(listener)
  return () => void interruptListeners.delete(listener)
}

/** Throws once the run was interrupted, so that no further phase starts while cleanup runs. */
export const checkInterrupted = () => {
  if (interrupted) throw new Error("interrupted")
}

/**
 * Cleanup also on Ctrl-C, SIGTERM, SIGHUP and unexpected errors; with `deadlineMs`, also when the
 * whole run takes longer than that (exit code 124).
 */
export const installExitHandlers = (deadlineMs?: number) => {
  const bail = (code: number) => (reason?: unknown) => {
    if (typeof reason === "string") console.error(`\n${reason}: stopping and cleaning up`)
    else if (reason !== undefined) console.error(reason)
    interrupted = true
    for (const listener of interruptListeners) listener()
    void cleanupAll().finally(() => process.exit(code))
  }
  process.once("SIGINT", bail(130))
  process.once("SIGTERM", bail(143))
  process.once("SIGHUP", bail(129))
  process.on("uncaughtException", bail(1))
  process.on("unhandledRejection", bail(1))
  if (deadlineMs !== undefined) {
    const timer = setTimeout(() => bail(124)(`the run exceeded ${Math.round(deadlineMs / 1000)} s`), deadlineMs)
    timer.unref()
  }
}

/**
 * Runs a bench's `main` and exits 0 when it is done. If it fails: `report` the error (by default
 * print it), run the cleanups, and exit with 1 or the code `report` returns.
 */
export const runMain = (main: () => Promise<void>, report: (error: unknown) => number | void = (error) => console.error(error)) =>
  main().then(
    () => process.exit(0),
    async (error) => {
      const code = report(error) ?? 1
      await cleanupAll()
      process.exit(code)
    }
  )

// ---------------------------------------------------------------------------------------------
// Child processes

/**
 * CPU time (user + system, all threads) a process has used so far, in ms, from /proc; undefined
 * where there is no /proc. On a shared machine CPU per request is steadier than requests per second.
 */
export const cpuMs = (pid: number | undefined): number | undefined => {
  if (pid === undefined) return undefined
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    // The command name is in parentheses and may contain spaces: count fields after the last ")".
    // fields[0] is field 3 (state); utime is field 14, stime field 15.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS
  } catch {
    return undefined
  }
}
const CLOCK_TICKS = 100

/**
 * CPU ms of a process per thread, keyed by thread name (threads sharing a name are summed; the main
 * thread is keyed "main"), from /proc/<pid>/task/<tid>/stat.
 */
export const threadCpuMs = (pid: number): Map<string, number> => {
  const out = new Map<string, number>()
  let tids: Array<string> = []
  try {
    tids = readdirSync(`/proc/${pid}/task`)
  } catch {
    return out
  }
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8")
      const name = Number(tid) === pid ? "main" : stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"))
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      const ms = ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS
      out.set(name, (out.get(name) ?? 0) + ms)
    } catch {
      // the thread ended while we listed it
    }
  }
  return out
}

export interface Child {
  readonly process: ChildProcess
  /** stdout and stderr so far. */
  readonly output: () => string
  /** Resolves with the first stdout line that starts with `prefix` (rest of the line). */
  readonly line: (prefix: string, timeoutMs?: number) => Promise<string>
  /** Resolves with the exit code. */
  readonly exited: Promise<number | null>
  readonly stop: () => Promise<void>
}

/**
 * Spawns `node --import tsx <script>` (cwd: the repo) with a minimal env and registers its stop.
 * Its stdin stays a pipe, so a child written for a bench (see `exitWithParent`) exits when this
 * process goes away, even by SIGKILL.
 */
export const spawnTs = (name: string, script: string, env: Record<string, string>): Child => {
  checkInterrupted()
  const child = spawn(nodeBin, ["--import", "tsx", script], {
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
  const exited = new Promise<number | null>((res) => child.once("exit", (code) => res(code)))
  let exitCode: number | undefined
  child.once("exit", (code, signal) => {
    exitCode = code ?? (signal ? -1 : 0)
    for (const l of listeners) l()
  })
  const stop = onCleanup(name, async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.stdin!.end()
    child.kill("SIGTERM")
    const timer = setTimeout(() => child.kill("SIGKILL"), 5_000)
    await exited
    clearTimeout(timer)
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
  return { process: child, output: () => out, line, exited, stop }
}

/** For children: exit when the parent closes our stdin (it died or is done with us), or on SIGTERM/SIGINT. */
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

// ---------------------------------------------------------------------------------------------
// Bare baseline server of bench:api

export interface BareServer {
  readonly pid: number | undefined
  readonly baseUrl: string
  readonly output: () => string
  readonly stop: () => Promise<void>
}

/**
 * Starts bench/support/bare-server.ts: on its own PGlite (embedded case, filled with `rows`)
 * or on `databaseUrl` (the database Trawl used). Its temp dir is removed on stop.
 */
export const startBare = async (
  options: { databaseUrl?: string | undefined; rows: ReadonlyArray<MirrorRow>; timeoutMs?: number; nodeOptions?: string }
): Promise<BareServer> => {
  checkInterrupted()
  const port = await freePort()
  const dir = mkdtempSync(join(tmpdir(), "trawl-bench-bare-"))
  // Registered before the server, so that it runs after the server's stop.
  const removeDir = onCleanup("bare server dir", () => rmSync(dir, { recursive: true, force: true }))
  const rowsFile = join(dir, "rows.json")
  writeFileSync(rowsFile, JSON.stringify(options.rows))
  const child = spawnTs("bare server", "bench/support/bare-server.ts", {
    BARE_PORT: String(port),
    ...(options.nodeOptions ? { NODE_OPTIONS: options.nodeOptions } : {}),
    ...(options.databaseUrl ? { BARE_DATABASE_URL: options.databaseUrl } : { BARE_DATA_DIR: dir, BARE_ROWS_FILE: rowsFile })
  })
  const stop = async () => {
    await child.stop()
    await removeDir()
  }
  // As long as Trawl is given (compare.ts): a loaded machine can take over a minute to start a process.
  await child.line("bare listening on", options.timeoutMs ?? 180_000)
  return { pid: child.process.pid, baseUrl: `http://127.0.0.1:${port}`, output: child.output, stop }
}

// ---------------------------------------------------------------------------------------------
// Test database (DATABASE_URL case)

/** Drops a database created by `createTestDatabase` (on the server of `baseUrl`). */
export const dropDatabase = async (baseUrl: string, url: string): Promise<void> => {
  const name = decodeURIComponent(new URL(url).pathname.slice(1))
  if (!/^trawl_t_[a-z0-9_]+$/.test(name)) throw new Error(`refusing to drop database ${name}`)
  await Effect.runPromise(
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)
    }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(baseUrl), maxConnections: 1 })), Effect.scoped)
  )
}

/**
 * Starts (first call) or stops and writes (second call) the CPU profile of a server started with
 * bench/crawl-support/profile-hook.mjs preloaded; waits until the server says it did.
 */
export const toggleProfiler = async (server: RunningServer, marker: string) => {
  const before = server.output().split(marker).length
  server.process.kill("SIGUSR2")
  for (let i = 0; i < 200 && server.output().split(marker).length === before; i++) await new Promise((r) => setTimeout(r, 50))
}
