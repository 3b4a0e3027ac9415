/**
 * Process and resource handling of `npm run bench:api`: the bare baseline server, a test database
 * to drop, and a cleanup list that runs once, on normal exit, on errors and on signals.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { freePort, nodeBin } from "../../test/support/server-process.ts"
import type { MirrorRow } from "./bare-server.ts"

const root = resolve(import.meta.dirname, "../..")

// ---------------------------------------------------------------------------------------------
// Cleanup

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

/** Cleanup also on Ctrl-C, SIGTERM and unexpected errors. */
export const installExitHandlers = () => {
  const bail = (code: number) => (reason?: unknown) => {
    if (reason instanceof Error) console.error(reason)
    else if (typeof reason === "string") console.error(`\n${reason}: stopping and cleaning up`)
    interrupted = true
    for (const listener of interruptListeners) listener()
    void cleanupAll().finally(() => process.exit(code))
  }
  process.once("SIGINT", bail(130))
  process.once("SIGTERM", bail(143))
  process.once("SIGHUP", bail(129))
  process.on("uncaughtException", bail(1))
  process.on("unhandledRejection", bail(1))
}

// ---------------------------------------------------------------------------------------------
// Bare baseline server

/**
 * CPU seconds (user + system, all threads) a process has used so far, from /proc; undefined where
 * there is no /proc. On a shared machine CPU per request is steadier than requests per second.
 */
export const cpuSeconds = (pid: number | undefined): number | undefined => {
  if (pid === undefined) return undefined
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS
  } catch {
    return undefined
  }
}
const CLOCK_TICKS = 100

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
  const removeDir = () => rmSync(dir, { recursive: true, force: true })
  const rowsFile = join(dir, "rows.json")
  writeFileSync(rowsFile, JSON.stringify(options.rows))
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "/tmp",
    BARE_PORT: String(port),
    ...(options.nodeOptions ? { NODE_OPTIONS: options.nodeOptions } : {}),
    ...(options.databaseUrl ? { BARE_DATABASE_URL: options.databaseUrl } : { BARE_DATA_DIR: dir, BARE_ROWS_FILE: rowsFile })
  }
  let child: ChildProcess
  try {
    // stdin stays a pipe: the server exits when it closes, even if this process is killed.
    child = spawn(nodeBin, ["--import", "tsx", "bench/support/bare-server.ts"], { cwd: root, env, stdio: ["pipe", "pipe", "pipe"] })
  } catch (error) {
    removeDir()
    throw error
  }
  let out = ""
  child.stdout!.on("data", (d) => (out += d))
  child.stderr!.on("data", (d) => (out += d))
  const exited = new Promise<void>((res) => child.once("exit", () => res()))
  const stop = onCleanup("bare server", async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM")
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000)
      await exited
      clearTimeout(timer)
    }
    removeDir()
  })
  checkInterrupted()
  await new Promise<void>((res, rej) => {
    const timer = setTimeout(() => rej(new Error(`bare server did not start in time:\n${out}`)), options.timeoutMs ?? 60_000)
    const check = () => {
      if (out.includes("bare listening on")) {
        clearTimeout(timer)
        res()
      }
    }
    child.stdout!.on("data", check)
    child.once("exit", (code) => {
      clearTimeout(timer)
      rej(new Error(`bare server exited with ${code}:\n${out}`))
    })
  })
  return { pid: child.pid, baseUrl: `http://127.0.0.1:${port}`, output: () => out, stop }
}

// ---------------------------------------------------------------------------------------------
// Test database (DATABASE_URL case)

/** Drops the database of `url` through the server of `baseUrl`. */
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
