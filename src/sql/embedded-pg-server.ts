import { lstatSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import { createServer, type Server, type Socket } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { PGlite } from "@electric-sql/pglite"

/**
 * A socket path for the front in a new directory that only this user may enter (mkdtemp makes it
 * 0700), with `remove` to delete the directory when the front has closed. It lives under the OS's
 * temporary directory, not DATA_DIR: a unix socket path may not exceed about 100 bytes. Its name
 * carries the pid, so that a later start removes the directories of processes killed outright.
 */
export const privateSocketPath = (): { readonly path: string; readonly remove: () => void } => {
  removeDeadOnes()
  const dir = mkdtempSync(join(tmpdir(), `trawl-db-${process.pid}-`))
  return { path: join(dir, ".s.PGSQL.5432"), remove: () => rmSync(dir, { recursive: true, force: true }) }
}

/** Directories left by processes that were killed (SIGKILL removes nothing): named by their pid. */
const removeDeadOnes = () => {
  let names: Array<string>
  try {
    names = readdirSync(tmpdir())
  } catch {
    return
  }
  for (const name of names) {
    const pid = Number(/^trawl-db-(\d+)-/.exec(name)?.[1])
    if (!Number.isSafeInteger(pid) || pid === process.pid || isAlive(pid)) continue
    const dir = join(tmpdir(), name)
    try {
      // only this user's: another user's directory is not ours to judge
      if (lstatSync(dir).uid === process.getuid?.()) rmSync(dir, { recursive: true, force: true })
    } catch {
      // removed meanwhile by another starting node
    }
  }
}
const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    // EPERM: it lives, as another user's process
    return (e as NodeJS.ErrnoException).code === "EPERM"
  }
}

const SSL_REQUEST = 80877103
const GSSENC_REQUEST = 80877104
const CANCEL_REQUEST = 80877102

const PARSE = 0x50
const CLOSE = 0x43
const STATEMENT = 0x53

/** The NUL-terminated name at `at` of a Parse or Close message. */
const nameAt = (m: Uint8Array, at: number) => Buffer.from(m.buffer, m.byteOffset + at, m.indexOf(0, at) - at).toString()

/** Notes the named statements a message creates or closes, so they can be deallocated later. */
const trackStatements = (m: Uint8Array, names: Set<string>) => {
  if (m[0] === PARSE) {
    const name = nameAt(m, 5)
    if (name !== "") names.add(name)
  } else if (m[0] === CLOSE && m[5] === STATEMENT) {
    names.delete(nameAt(m, 6))
  }
}

const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`

/**
 * Settings that make PostgreSQL end a session with FATAL. In PostgreSQL that ends one backend; PGlite
 * is the one session of every connection and cannot end, so it repeats the FATAL forever in one
 * synchronous loop and never answers again. The cluster's runner storage sets idle_session_timeout
 * (to shardLockExpiration) on its lock connection, so an event-loop stall longer than that wedged the
 * embedded database for good (docs/scaling.md, "The embedded database"). They are turned off again
 * after any batch that may have set them.
 */
const RESET_SESSION_ENDING_TIMEOUTS =
  "SELECT set_config(name, '0', false) FROM pg_settings WHERE name IN ('idle_session_timeout', 'idle_in_transaction_session_timeout', 'transaction_timeout') AND setting <> '0'"

/** How long a connection may keep the lock in a transaction without sending anything while others wait (docs/scaling.md). */
export const IDLE_IN_TRANSACTION_MS = 15_000

/** Whether a batch may set one of those timeouts (by name in a statement, a parameter or the startup options). */
const mayTouchTimeouts = (m: Uint8Array) => /(session|transaction)_timeout/i.test(Buffer.from(m.buffer, m.byteOffset, m.byteLength).toString("latin1"))

/**
 * A PostgreSQL wire-protocol front for one in-process PGlite, so the ordinary
 * PgClient (and the cluster's SQL storage) can use it over several connections.
 *
 * PGlite is a single session. To keep connections from corrupting each other, a
 * connection's messages run as whole batches (up to Sync, Query or Flush) under
 * one lock, and a connection that leaves a transaction open keeps the lock until
 * the transaction ends: other connections simply wait, as they would for a row lock.
 * A connection that keeps the lock in a transaction without sending anything for
 * `idleInTransactionMs` while others wait is rolled back and closed, as PostgreSQL's
 * idle_in_transaction_session_timeout would: a client that gave up on it (or stalled) must
 * not stop the whole database.
 * Named prepared statements live in that one session too. The client gives each
 * connection's statements names of their own, and a closed connection's statements are
 * deallocated here. They matter: planning a job's terminal statement costs PGlite more
 * than running it.
 */
export class EmbeddedPgServer {
  private server: Server | undefined
  private owner: Socket | undefined
  private waiters: Array<{ socket: Socket; resume: () => void }> = []
  /** Since when the owner has kept the lock in a transaction without sending anything; unset while it works. */
  private ownerIdleSince: number | undefined
  private idleCheck: ReturnType<typeof setInterval> | undefined

  private readonly db: PGlite
  private readonly idleInTransactionMs: number

  // Plain fields, not parameter properties: this file also runs in a worker under Node's type stripping.
  constructor(db: PGlite, options: { readonly idleInTransactionMs?: number } = {}) {
    this.db = db
    this.idleInTransactionMs = options.idleInTransactionMs ?? IDLE_IN_TRANSACTION_MS
  }

  /**
   * Listens on the unix socket `path`, in a directory only this user can enter (privateSocketPath):
   * PGlite asks no password, so a TCP port would let any local user read and write the database
   * (docs/scaling.md, "The embedded database").
   */
  async listen(path: string): Promise<void> {
    await this.db.waitReady
    const server = createServer((socket) => this.serve(socket))
    this.server = server
    this.idleCheck = setInterval(() => this.takeBackIdleLock(), Math.max(50, this.idleInTransactionMs / 4))
    this.idleCheck.unref()
    await new Promise<void>((res, rej) => {
      server.once("error", rej)
      server.listen(path, () => res())
    })
  }

  async close(): Promise<void> {
    const server = this.server
    if (!server) return
    clearInterval(this.idleCheck)
    await new Promise<void>((res) => server.close(() => res()))
  }

  private acquire(socket: Socket): Promise<void> {
    if (this.owner === undefined || this.owner === socket) {
      this.owner = socket
      return Promise.resolve()
    }
    return new Promise((resume) => this.waiters.push({ socket, resume: () => resume() }))
  }

  /** Closes the owner's connection when it sat in a transaction for too long while others waited; its close rolls back. */
  private takeBackIdleLock() {
    const owner = this.owner
    if (owner === undefined || this.ownerIdleSince === undefined || this.waiters.length === 0) return
    const idleMs = Date.now() - this.ownerIdleSince
    if (idleMs < this.idleInTransactionMs) return
    console.warn(
      `embedded database: a connection sat ${Math.round(idleMs / 1000)} s in a transaction while ${this.waiters.length} others waited; it is rolled back and closed`
    )
    this.ownerIdleSince = undefined
    owner.destroy()
  }

  private release(socket: Socket) {
    if (this.owner !== socket) return
    this.ownerIdleSince = undefined
    const next = this.waiters.shift()
    this.owner = next?.socket
    next?.resume()
  }

  private serve(socket: Socket) {
    let buffer = Buffer.alloc(0)
    let startup = true
    // Views of the current batch's messages in the received chunks; copied once, together, when it ends.
    let batch: Array<Uint8Array> = []
    let chain = Promise.resolve()
    const statements = new Set<string>()
    // A batch ending with Flush leaves an extended query half done: a statement of our own must wait for its Sync.
    let resetTimeouts = false

    /** Runs a batch of protocol messages (one buffer) in one call into PGlite; `atRest` when it ends a query cycle. */
    const run = (messages: Uint8Array, atRest: boolean) => {
      chain = chain.then(async () => {
        if (socket.destroyed) return
        await this.acquire(socket)
        this.ownerIdleSince = undefined
        // The batch's answers leave in one write instead of one per protocol message.
        socket.cork()
        try {
          await this.db.execProtocolRawStream(messages, {
            onRawData: (data) => {
              // PGlite reuses the memory behind `data`; a corked write must keep its own copy.
              if (!socket.destroyed) socket.write(Buffer.from(data))
            }
          })
          if (mayTouchTimeouts(messages)) resetTimeouts = true
          if (resetTimeouts && atRest) {
            resetTimeouts = false
            // Fails only in an aborted transaction, whose rollback undoes the setting anyway.
            await this.db.exec(RESET_SESSION_ENDING_TIMEOUTS).catch(() => {})
          }
        } finally {
          socket.uncork()
          if (!this.db.isInTransaction()) this.release(socket)
          else if (!socket.destroyed) this.ownerIdleSince = Date.now()
        }
      }).catch(() => void socket.destroy())
    }

    socket.on("data", (chunk) => {
      // Traffic of a transaction's owner, even a message still arriving, is not idleness.
      if (this.owner === socket && this.ownerIdleSince !== undefined) this.ownerIdleSince = Date.now()
      buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk])
      for (;;) {
        if (startup) {
          if (buffer.length < 8) return
          const length = buffer.readInt32BE(0)
          if (buffer.length < length) return
          const code = buffer.readInt32BE(4)
          const message = buffer.subarray(0, length)
          buffer = buffer.subarray(length)
          if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
            socket.write("N")
            continue
          }
          if (code === CANCEL_REQUEST) {
            socket.end()
            return
          }
          startup = false
          run(new Uint8Array(message), true)
          continue
        }
        if (buffer.length < 5) return
        const length = 1 + buffer.readInt32BE(1)
        if (buffer.length < length) return
        const type = String.fromCharCode(buffer[0]!)
        const message = buffer.subarray(0, length)
        buffer = buffer.subarray(length)
        if (type === "X") {
          socket.end()
          return
        }
        trackStatements(message, statements)
        batch.push(message)
        // Sync, simple Query and Flush end a unit of work the client waits on.
        if (type === "S" || type === "Q" || type === "H") {
          run(Buffer.concat(batch), type !== "H")
          batch = []
        }
      }
    })

    const cleanup = () => {
      chain = chain.then(async () => {
        this.waiters = this.waiters.filter((w) => w.socket !== socket)
        if (this.owner !== socket && statements.size === 0) return
        await this.acquire(socket)
        // A connection that died inside a transaction must not leave it open, nor its statements behind.
        if (this.db.isInTransaction()) await this.db.exec("ROLLBACK").catch(() => {})
        for (const name of statements) await this.db.exec(`DEALLOCATE ${quoteIdent(name)}`).catch(() => {})
        this.release(socket)
      }).catch(() => {
        // The database closed under it (the worker is stopping): nothing is left to clean.
        this.release(socket)
      })
    }
    socket.on("close", cleanup)
    socket.on("error", () => socket.destroy())
  }
}
