import { type ChildProcessByStdio, spawn } from "node:child_process"
import type { Readable } from "node:stream"
import { join, resolve } from "node:path"
import { nodeBin } from "../support/server-process.ts"

export const root = resolve(import.meta.dirname, "../..")

export interface CliRun {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/**
 * Runs the `trawl` binary as a child process, from the source (TRAWL_CLI_FROM_SOURCE), with only
 * the given environment beside PATH and HOME.
 */
export const runCli = (args: ReadonlyArray<string>, env: Record<string, string>, options: { bin?: string; cwd?: string } = {}) =>
  runToExit(spawn(nodeBin, [options.bin ?? join(root, "bin/trawl.mjs"), ...args], {
    cwd: options.cwd ?? root,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", TRAWL_CLI_FROM_SOURCE: "1", ...env },
    stdio: ["ignore", "pipe", "pipe"]
  }))

/** Collects a child's output until it exits; one that runs past 150 s is killed. */
const runToExit = (child: ChildProcessByStdio<null, Readable, Readable>) =>
  new Promise<CliRun>((res, rej) => {
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d) => (stdout += d))
    child.stderr.on("data", (d) => (stderr += d))
    const timer = setTimeout(() => child.kill("SIGKILL"), 150_000)
    child.once("error", rej)
    child.once("exit", (code) => {
      clearTimeout(timer)
      res({ code, stdout, stderr })
    })
  })

/** Starts the binary and leaves it running (a watch, a server); the caller ends it. */
export const startCli = (args: ReadonlyArray<string>, env: Record<string, string>) => {
  const child = spawn(nodeBin, [join(root, "bin/trawl.mjs"), ...args], {
    cwd: root,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", TRAWL_CLI_FROM_SOURCE: "1", ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let stdout = ""
  let stderr = ""
  child.stdout!.on("data", (d) => (stdout += d))
  child.stderr!.on("data", (d) => (stderr += d))
  const exited = new Promise<CliRun>((res) => child.once("exit", (code) => res({ code, stdout, stderr })))
  return { child, exited, output: () => ({ stdout, stderr }) }
}

/** Runs a shell command line under `script`, which gives it a pseudo-terminal: what a person at a terminal sees. */
export const runScript = (command: string, env: Record<string, string>) =>
  runToExit(spawn("script", ["-qfec", command, "/dev/null"], {
    cwd: root,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", TERM: "xterm", ...env },
    stdio: ["ignore", "pipe", "pipe"]
  }))
