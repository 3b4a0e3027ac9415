/**
 * A node that cannot start says why in one line on stderr and exits non-zero (README,
 * "Configuration"): no stack frames, nothing on stdout, which carries the JSON-lines log. Before,
 * a database or Redis out of reach, or a taken port, printed the runtime's multi-line error dump
 * to stdout.
 */
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { describe, expect, it } from "vitest"
import { freePort, INTERNAL_TOKEN, nodeBin } from "./support/server-process.ts"

const root = resolve(import.meta.dirname, "..")

/** Runs a node with `env` until it exits (at most 60 s); its status, stdout and stderr. */
const startFailing = (env: Record<string, string>) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((done) => {
    const dataDir = mkdtempSync(join(tmpdir(), "trawl-fail-"))
    const child = spawn(nodeBin, ["--import", "tsx", "src/main.ts"], {
      cwd: root,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", DATA_DIR: dataDir, INTERNAL_TOKEN, LOG_LEVEL: "warn", ...env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout!.on("data", (d) => (stdout += d))
    child.stderr!.on("data", (d) => (stderr += d))
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000)
    child.once("exit", (code) => {
      clearTimeout(timer)
      rmSync(dataDir, { recursive: true, force: true })
      done({ code, stdout, stderr })
    })
  })

const expectOneLine = (run: { code: number | null; stdout: string; stderr: string }, says: RegExp) => {
  expect(run.code, run.stderr + run.stdout).toBe(1)
  const lines = run.stderr.trim().split("\n")
  expect(lines, run.stderr).toHaveLength(1)
  expect(lines[0]).toMatch(/^fatal: /)
  expect(lines[0]).toMatch(says)
  // the log stream on stdout stays JSON lines: no dump, no stack frame
  for (const line of run.stdout.split("\n").filter((l) => l.trim() !== "")) expect(() => JSON.parse(line), line).not.toThrow()
  expect(run.stdout + run.stderr).not.toMatch(/\n\s+at /)
}

describe("a node that cannot start", () => {
  it("names a database out of reach, without its password", async () => {
    const port = await freePort()
    const run = await startFailing({ PORT: String(await freePort()), RUNNER_PORT: String(await freePort()), DATABASE_URL: `postgres://postgres:Sekrit-pw-42@127.0.0.1:${port}/nowhere` })
    expectOneLine(run, new RegExp(`ECONNREFUSED 127\\.0\\.0\\.1:${port}`))
    expect(run.stdout + run.stderr).not.toContain("Sekrit-pw-42")
  }, 90_000)

  it("names a Redis out of reach, without its password", async () => {
    const port = await freePort()
    const run = await startFailing({ PORT: String(await freePort()), REDIS_URL: `redis://:Sekrit-pw-42@127.0.0.1:${port}/1` })
    expectOneLine(run, new RegExp(`REDIS_URL: no answer from redis://127\\.0\\.0\\.1:${port}/1`))
    expect(run.stdout + run.stderr).not.toContain("Sekrit-pw-42")
  }, 90_000)

  it("names a port taken by another process", async () => {
    const taken = createServer()
    await new Promise<void>((r) => taken.listen(0, "127.0.0.1", () => r()))
    const port = (taken.address() as { port: number }).port
    try {
      expectOneLine(await startFailing({ PORT: String(port) }), new RegExp(`EADDRINUSE.*127\\.0\\.0\\.1:${port}`))
    } finally {
      taken.close()
    }
  }, 90_000)
})
