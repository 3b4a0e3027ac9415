/**
 * `--sql-stats`: row and transaction counters of Trawl's database (pg_stat_user_tables,
 * pg_stat_database) before and after a phase, to show what each crawled page costs in SQL.
 * For the embedded default the PGlite front listens on an undisclosed loopback port of the server
 * process; it is found through /proc (the process's listening sockets) and tried with PgClient.
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, ManagedRuntime, Redacted } from "effect"
import { SqlClient } from "effect/sql"

/** TCP ports the process listens on at 127.0.0.1. */
export const listeningPorts = (pid: number): Array<number> => {
  const inodes = new Set<string>()
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))
      if (m) inodes.add(m[1]!)
    } catch {
      // closed meanwhile
    }
  }
  const ports: Array<number> = []
  for (const line of readFileSync(`/proc/${pid}/net/tcp`, "utf8").split("\n").slice(1)) {
    const cols = line.trim().split(/\s+/)
    if (cols.length < 10 || cols[3] !== "0A") continue
    const [addr, port] = cols[1]!.split(":")
    if (addr === "0100007F" && inodes.has(cols[9]!)) ports.push(parseInt(port!, 16))
  }
  return ports
}

export interface TableCounts {
  readonly tables: Record<string, { ins: number; upd: number; del: number }>
  readonly commits: number
  readonly rollbacks: number
}

export interface SqlStats {
  readonly read: () => Promise<TableCounts>
  readonly close: () => Promise<void>
}

const layerFor = (target: { url: string } | { port: number }) =>
  "url" in target
    ? PgClient.layer({ url: Redacted.make(target.url), maxConnections: 1 })
    : PgClient.layer({ host: "127.0.0.1", port: target.port, database: "postgres", username: "postgres", maxConnections: 1, prepare: false })

const readCounts = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ relname: string; ins: string; upd: string; del: string }>`
    SELECT relname, n_tup_ins AS ins, n_tup_upd AS upd, n_tup_del AS del FROM pg_stat_user_tables`
  const [db] = yield* sql<{ commits: string; rollbacks: string }>`
    SELECT xact_commit AS commits, xact_rollback AS rollbacks FROM pg_stat_database WHERE datname = current_database()`
  const tables: TableCounts["tables"] = {}
  for (const r of rows) tables[r.relname] = { ins: Number(r.ins), upd: Number(r.upd), del: Number(r.del) }
  return { tables, commits: Number(db?.commits ?? 0), rollbacks: Number(db?.rollbacks ?? 0) }
})

/** Connects to the server's database: `databaseUrl`, or the embedded front among `candidates`. */
export const connectStats = async (databaseUrl: string | undefined, candidates: ReadonlyArray<number>): Promise<SqlStats | undefined> => {
  const targets: Array<{ url: string } | { port: number }> = databaseUrl ? [{ url: databaseUrl }] : candidates.map((port) => ({ port }))
  for (const target of targets) {
    const runtime = ManagedRuntime.make(layerFor(target) as Layer.Layer<SqlClient.SqlClient, unknown>)
    try {
      await runtime.runPromise(readCounts.pipe(Effect.timeout("3 seconds")))
      return {
        read: () => runtime.runPromise(readCounts),
        close: () => runtime.dispose()
      }
    } catch {
      await runtime.dispose().catch(() => {})
    }
  }
  return undefined
}

/** Per-page differences, largest first. */
export const diffCounts = (before: TableCounts, after: TableCounts, per: number) => {
  const tables: Array<{ table: string; ins: number; upd: number; del: number }> = []
  for (const [table, a] of Object.entries(after.tables)) {
    const b = before.tables[table] ?? { ins: 0, upd: 0, del: 0 }
    const row = { table, ins: (a.ins - b.ins) / per, upd: (a.upd - b.upd) / per, del: (a.del - b.del) / per }
    if (row.ins + row.upd + row.del > 0) tables.push(row)
  }
  tables.sort((x, y) => y.ins + y.upd + y.del - (x.ins + x.upd + x.del))
  return { tables, commits: (after.commits - before.commits) / per, rollbacks: (after.rollbacks - before.rollbacks) / per }
}
