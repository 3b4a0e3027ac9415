import { spawn } from "node:child_process"
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { browserUsage } from "../../src/observability/browser-processes.ts"

/**
 * The browser gauges of `/metrics` read /proc: a child of this process whose command is a
 * browser's counts, with the memory of its own children; any other child does not.
 */
describe.skipIf(process.platform !== "linux")("browserUsage", () => {
  const dir = mkdtempSync(join(tmpdir(), "trawl-browser-procs-"))
  const started: Array<ReturnType<typeof spawn>> = []
  afterAll(() => {
    for (const c of started) c.kill("SIGKILL")
    rmSync(dir, { recursive: true, force: true })
  })
  const run = (command: string, args: Array<string>) => {
    const child = spawn(command, args, { stdio: "ignore" })
    started.push(child)
    return child
  }
  const settle = () => new Promise((r) => setTimeout(r, 300))

  it("counts a child named like a browser, with its children's memory, and nothing else", async () => {
    const before = await browserUsage()
    run("sleep", ["30"])
    await settle()
    expect(await browserUsage()).toEqual(before)

    // A "browser": a shell named chromium-under-test that starts two sleeping children of its own.
    const fake = join(dir, "chromium-under-test")
    copyFileSync("/bin/sh", fake)
    run(fake, ["-c", "sleep 30 & sleep 30 & wait"])
    await settle()
    const alone = await browserUsage()
    expect(alone.processes).toBe(before.processes + 1)
    expect(alone.rssBytes).toBeGreaterThan(before.rssBytes)
    // Its two children count in its memory: more than the shell's own RSS.
    const shellOnly = Number(readFileSync(`/proc/${started[1]!.pid}/stat`, "utf8").split(") ")[1]!.split(" ")[21]) * 4096
    expect(alone.rssBytes - before.rssBytes).toBeGreaterThan(shellOnly)
  })
})
