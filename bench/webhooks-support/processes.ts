/**
 * Process and resource handling of `npm run bench:webhooks`: a cleanup list that runs once (newest
 * first) on normal exit, on errors and on signals; child processes of this run; a test database to
 * drop. Only what this run started is ever stopped, by its own handle.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { resolve } from "node:path"
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
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

/** Runs every registered cleanup, newest first; never throws. */
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

/** Throws once the run was interrupted, so that no further phase starts while cleanup runs. */
export const checkInterrupted = () => {
  if (interrupted) throw new Error("interrupted")
}

/** Cleanup on Ctrl-C, SIGTERM, SIGHUP and unexpected errors; a hard deadline for the whole run. */
export const installExitHandlers = (deadlineMs: number) => {
  const bail = (code: number) => (reason?: unknown) => {
    if (reason instanceof Error) console.error(reason)
    else if (typeof reason === "string") console.error(`\n${reason}: stopping and cleaning up`)
    interrupted = true
    void cleanupAll().finally(() => process.exit(code))
  }
  process.once("SIGINT", bail(130))
  process.once("SIGTERM", bail(143))
  process.once("SIGHUP", bail(129))
  process.on("uncaughtException", bail(1))
  process.on("unhandledRejection", bail(1))
  const timer = setTimeout(() => bail(124)(`the run exceeded ${Math.round(deadlineMs / 1000)} s`), deadlineMs)
  timer.unref()
}

export interface Child {
  readonly process: ChildProcess
  readonly output: () => string
  /** Resolves with the exit code. */
  readonly exited: Promise<number | null>
  readonly stop: () => Promise<void>
}

/**
 * Runs `node --import tsx <script>` with a piped stdin (the child is expected to exit when it
 * closes, so it never outlives this process) and registers its stop.
 */
export const spawnTs = (name: string, script: string, env: Record<string, string>): Child => {
  checkInterrupted()
  const child = spawn(nodeBin, ["--import", "tsx", script], {
    cwd: root,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...env },
    stdio: ["pipe", "pipe", "pipe"]
  })
  let out = ""
  child.stdout!.on("data", (d) => (out += d))
  child.stderr!.on("data", (d) => (out += d))
  const exited = new Promise<number | null>((res) => child.once("exit", (code) => res(code)))
  const stop = onCleanup(name, async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.stdin?.end()
    child.kill("SIGTERM")
    const timer = setTimeout(() => child.kill("SIGKILL"), 5_000)
    await exited
    clearTimeout(timer)
  })
  return { process: child, output: () => out, exited, stop }
}

/** Drops a database created by `createTestDatabase` (on the server of `baseUrl`). */
export const dropDatabase = async (baseUrl: string, databaseUrl: string): Promise<void> => {
  const name = new URL(databaseUrl).pathname.slice(1)
  if (!/^trawl_t_[a-z0-9_]+$/.test(name)) return
  await Effect.runPromise(
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)
    }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(baseUrl), maxConnections: 1 })), Effect.scoped)
  )
}
