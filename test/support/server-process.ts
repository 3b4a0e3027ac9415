import { type ChildProcess, spawn } from "node:child_process"
import { cpSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { Agent, fetch as undiciFetch } from "undici"
import type { Fault } from "./fault-server.ts"
import { conformanceFailures, startRecordingRelay } from "./openapi-conformance.ts"

const root = resolve(import.meta.dirname, "../..")
export const nodeBin = join(root, "node_modules/.bin/node")
export const INTERNAL_TOKEN = "test-internal-token-0123456789"

export const freePort = () =>
  new Promise<number>((res, rej) => {
    const s = createServer()
    s.once("error", rej)
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port
      s.close(() => res(port))
    })
  })

/**
 * A blank embedded database (PGlite's initdb, nothing else), made once per machine and PGlite
 * version and copied into each new server's data directory: initdb takes seconds, a copy of the
 * closed directory a fraction of one. Servers that start on an existing directory (restarts) keep it.
 */
let blankDatabase: Promise<string> | undefined
export const blankDatabaseTemplate = () =>
  (blankDatabase ??= (async () => {
    const { version } = JSON.parse(readFileSync(join(root, "node_modules/@electric-sql/pglite/package.json"), "utf8")) as { version: string }
    const template = join(tmpdir(), `trawl-test-blank-pglite-${version}`)
    if (existsSync(template)) return template
    const { PGlite } = await import("@electric-sql/pglite")
    const building = mkdtempSync(join(tmpdir(), "trawl-test-blank-pglite-building-"))
    const db = await PGlite.create(join(building, "pg"))
    await db.close()
    try {
      // Atomic: a concurrent test process that got there first keeps its copy.
      renameSync(join(building, "pg"), template)
    } catch {
      if (!existsSync(template)) throw new Error(`could not place the blank database template at ${template}`)
    }
    rmSync(building, { recursive: true, force: true })
    return template
  })())

/** Runs one SQL statement on the PostgreSQL database at `url` (a test looking past a server's API). */
export const pgQuery = <A>(url: string, text: string, params: ReadonlyArray<unknown> = []) =>
  Effect.runPromise(
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      return (yield* sql.unsafe(text, params as Array<any>)) as unknown as ReadonlyArray<A>
    }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })), Effect.scoped)
  )

/** A fresh database on the server of DATABASE_URL; returns its URL. */
export const createTestDatabase = async (baseUrl: string): Promise<string> => {
  const name = `trawl_t_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`
  await Effect.runPromise(
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql.unsafe(`CREATE DATABASE "${name}"`)
    }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(baseUrl), maxConnections: 1 })), Effect.scoped)
  )
  const url = new URL(baseUrl)
  url.pathname = `/${name}`
  return url.toString()
}

export interface Backend {
  readonly name: "embedded" | "postgres"
  /** Env for a server of this backend, with its own fresh database. */
  readonly env: () => Promise<Record<string, string>>
}

/** Always the embedded default; PostgreSQL (and Redis) too when DATABASE_URL / REDIS_URL are set. */
export const backends = (): ReadonlyArray<Backend> => {
  const list: Array<Backend> = [{ name: "embedded", env: async () => ({}) }]
  const base = process.env.DATABASE_URL
  if (base) {
    list.push({
      name: "postgres",
      env: async () => ({
        DATABASE_URL: await createTestDatabase(base),
        ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {})
      })
    })
  }
  return list
}

export interface RunningServer {
  readonly baseUrl: string
  readonly port: number
  readonly process: ChildProcess
  readonly output: () => string
  readonly stop: (signal?: NodeJS.Signals) => Promise<void>
  readonly dataDir: string
}

/**
 * Starts the real server process and waits until it announces its URL. With `fault`, the process is
 * test/support/fault-server.ts: the same server with that one layer made faulty.
 */
export const startServer = async (
  env: Record<string, string> = {},
  options: { timeoutMs?: number; dataDir?: string; keepDataDir?: boolean; fault?: Fault } = {}
): Promise<RunningServer> => {
  const port = env.PORT ? Number(env.PORT) : await freePort()
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), "trawl-test-"))
  // Each server of a test run is its own runner, so it needs its own runner port.
  const runnerPort = env.DATABASE_URL && !env.RUNNER_PORT ? { RUNNER_PORT: String(await freePort()) } : {}
  if (!env.DATABASE_URL && !existsSync(join(dataDir, "pg"))) cpSync(await blankDatabaseTemplate(), join(dataDir, "pg"), { recursive: true })
  const entry = options.fault ? ["test/support/fault-server.ts", options.fault] : ["src/main.ts"]
  const child = spawn(nodeBin, entry, {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "/tmp",
      PORT: String(port),
      DATA_DIR: dataDir,
      INTERNAL_TOKEN,
      LOG_LEVEL: "warn",
      ...runnerPort,
      ...env
    },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let out = ""
  child.stdout!.on("data", (d) => (out += d))
  child.stderr!.on("data", (d) => (out += d))
  const exited = new Promise<void>((res) => child.once("exit", () => res()))
  await new Promise<void>((res, rej) => {
    // A server that did not start in time is killed, not left running behind the failed test.
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      rej(new Error(`server did not start in time:\n${out}`))
    }, options.timeoutMs ?? 60_000)
    const check = () => {
      if (out.includes("trawl listening on")) {
        clearTimeout(timer)
        res()
      }
    }
    child.stdout!.on("data", check)
    child.once("exit", (code) => {
      clearTimeout(timer)
      rej(new Error(`server exited with ${code}:\n${out}`))
    })
  })
  // Every response a test gets through `baseUrl` is checked against the OpenAPI document when the
  // server stops (docs/api.md "The OpenAPI document"); `port` is the server's own, unrecorded.
  const relay = process.env.TRAWL_CHECK_RESPONSES === "0" ? undefined : await startRecordingRelay(port)
  return {
    baseUrl: `http://127.0.0.1:${relay?.port ?? port}`,
    port,
    process: child,
    dataDir,
    output: () => out,
    stop: async (signal = "SIGTERM") => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill(signal)
        const timer = setTimeout(() => child.kill("SIGKILL"), 10_000)
        await exited
        clearTimeout(timer)
      }
      if (!options.keepDataDir && !options.dataDir) rmSync(dataDir, { recursive: true, force: true })
      if (relay) {
        await relay.close()
        const failures = conformanceFailures(relay.exchanges())
        if (failures) throw new Error(failures)
      }
    }
  }
}

/**
 * A small JSON client for one server. With `localAddress` (another loopback address, such as
 * 127.23.5.9) its connections come from there, so limits the server counts per client address
 * (failed logins) are this client's own and not shared with other tests' runs.
 */
export const client = (baseUrl: string, options: { localAddress?: string } = {}) => {
  const dispatcher = options.localAddress === undefined ? undefined : new Agent({ localAddress: options.localAddress })
  // undici's own Response is the global one in all but its TypeScript declaration.
  const send = (url: string, init: { method: string; headers: Record<string, string>; body: string | undefined }): Promise<Response> =>
    dispatcher ? undiciFetch(url, { ...init, dispatcher }) as unknown as Promise<Response> : fetch(url, init)
  const call = async (method: string, path: string, init: { key?: string; token?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {}) => {
    const headers: Record<string, string> = { ...init.headers }
    if (init.key !== undefined) headers["x-api-key"] = init.key
    if (init.token !== undefined) headers["x-internal-token"] = init.token
    let body: string | undefined
    if (init.raw !== undefined) {
      body = init.raw
      headers["content-type"] ??= "application/json"
    } else if (init.body !== undefined) {
      body = JSON.stringify(init.body)
      headers["content-type"] = "application/json"
    }
    const res = await send(baseUrl + path, { method, headers, body })
    const text = await res.text()
    let json: any
    try {
      json = JSON.parse(text)
    } catch {
      json = undefined
    }
    return { status: res.status, headers: res.headers, json, text }
  }
  return {
    call,
    get: (path: string, key?: string) => call("GET", path, { key }),
    post: (path: string, body: unknown, key?: string) => call("POST", path, { key, body }),
    createTenant: async (body: Record<string, unknown> = {}) => {
      const res = await call("POST", "/internal/v1/tenants", {
        token: INTERNAL_TOKEN,
        body: { name: "Tenant", ownerEmail: `owner-${Math.random().toString(36).slice(2)}@example.com`, ownerPassword: "correct horse battery", ...body }
      })
      if (res.status !== 201) throw new Error(`tenant creation failed: ${res.status} ${res.text}`)
      return res.json.data as {
        tenantId: string
        organizationId: string
        ownerIdentityId: string
        roleId: string
        apiKeyId: string
        apiKey: string
      }
    }
  }
}
