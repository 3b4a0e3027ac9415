/**
 * The chaos campaign's own PostgreSQL and Redis (never the machine's: scenarios stop and restart
 * them). PostgreSQL: initdb into a temp dir as the `postgres` OS user (initdb refuses root), trust
 * auth, a free port on 127.0.0.1 and its unix socket in the temp dir. Redis: a child process on a
 * free port, no persistence.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { chmodSync, chownSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freePort } from "../../test/support/server-process.ts"

const pgBin = () => {
  const versions = readdirSync("/usr/lib/postgresql").sort()
  return join("/usr/lib/postgresql", versions[versions.length - 1]!, "bin")
}

const asPostgres = (args: ReadonlyArray<string>) => {
  const root = process.getuid?.() === 0
  const [cmd, rest] = root ? ["runuser", ["-u", "postgres", "--", ...args]] : [args[0]!, args.slice(1)]
  return execFileSync(cmd as string, rest as Array<string>, { stdio: ["ignore", "pipe", "pipe"] }).toString()
}

/** `extra`: more server settings, as `-c name=value` options (the capacity bench loads pg_stat_statements). */
export const startPostgres = async (extra = "") => {
  const dir = mkdtempSync(join(tmpdir(), "trawl-chaos-pg-"))
  chmodSync(dir, 0o755)
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync("id", ["-u", "postgres"]).toString())
    const gid = Number(execFileSync("id", ["-g", "postgres"]).toString())
    chownSync(dir, uid, gid)
  }
  const data = join(dir, "data")
  const port = await freePort()
  const bin = pgBin()
  asPostgres([join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "--no-sync"])
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300 -c shared_buffers=64MB ${extra}`
  const start = () => asPostgres([join(bin, "pg_ctl"), "-D", data, "-w", "-l", join(dir, "log"), "-o", options, "start"])
  const stop = () => asPostgres([join(bin, "pg_ctl"), "-D", data, "-w", "-m", "fast", "stop"])
  start()
  return {
    /** The postmaster's pid: its process tree is all of this server's CPU. */
    pid: () => Number(readFileSync(join(data, "postmaster.pid"), "utf8").split("\n")[0]),
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    dbUrl: (name: string) => `postgres://postgres@127.0.0.1:${port}/${name}`,
    start,
    stop,
    destroy: () => {
      try {
        stop()
      } catch {
        // already stopped
      }
      rmSync(dir, { recursive: true, force: true })
    }
  }
}

export const startRedis = async () => {
  const port = await freePort()
  let child: ChildProcess | undefined
  const start = async () => {
    child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { stdio: "ignore" })
    // Wait until it accepts connections.
    const { createConnection } = await import("node:net")
    for (let i = 0; i < 100; i++) {
      const ok = await new Promise<boolean>((res) => {
        const s = createConnection(port, "127.0.0.1")
        s.once("connect", () => (s.destroy(), res(true)))
        s.once("error", () => res(false))
      })
      if (ok) return
      await new Promise((r) => setTimeout(r, 100))
    }
    throw new Error("redis-server did not start")
  }
  const stop = async () => {
    const c = child
    if (!c || c.exitCode !== null || c.signalCode !== null) return
    const exited = new Promise<void>((res) => c.once("exit", () => res()))
    c.kill("SIGTERM")
    await exited
  }
  await start()
  return { url: `redis://127.0.0.1:${port}`, start, stop }
}
