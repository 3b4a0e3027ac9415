import { randomUUID } from "node:crypto"
import { Context, Effect, Layer, type Scope } from "effect"
import { Redis, type RedisOptions } from "ioredis"
import { Config } from "../config.ts"

/**
 * Shared short-lived state: counters for rate limits, locks, and pub/sub fan-out
 * between nodes. Redis when REDIS_URL is set; otherwise an in-process version of
 * the same interface, which is only correct for a single node.
 */
export interface KvShape {
  readonly kind: "redis" | "memory"
  /** Increments a counter that expires `ttlMs` after its first increment; returns the new value. */
  readonly incr: (key: string, ttlMs: number) => Effect.Effect<number>
  /**
   * Admits one more event under `key` if fewer than `limit` were admitted within the last
   * `windowMs` (a sliding window, not clock-aligned buckets); true when admitted. Refused events
   * are not counted.
   */
  readonly admitInWindow: (key: string, windowMs: number, limit: number) => Effect.Effect<boolean>
  /** Sets `key` only when absent; true when this call set it. */
  readonly setIfAbsent: (key: string, value: string, ttlMs: number) => Effect.Effect<boolean>
  readonly get: (key: string) => Effect.Effect<string | undefined>
  readonly set: (key: string, value: string, ttlMs: number) => Effect.Effect<void>
  /** Deletes the keys, all in one round trip. */
  readonly del: (key: string, ...more: Array<string>) => Effect.Effect<void>
  readonly publish: (channel: string, message: string) => Effect.Effect<void>
  /** Calls `onMessage` for every message on `channel` until the scope closes. */
  readonly subscribe: (channel: string, onMessage: (message: string) => void) => Effect.Effect<void, never, Scope.Scope>
  readonly ping: Effect.Effect<boolean>
}

export class Kv extends Context.Service<Kv, KvShape>()("trawl/Kv") {}

export const makeMemoryKv = (): KvShape => {
  const values = new Map<string, { value: string; expiresAt: number }>()
  // Per key, the times of the events admitted within its window, oldest first.
  const windows = new Map<string, { times: Array<number>; windowMs: number }>()
  const listeners = new Map<string, Set<(m: string) => void>>()
  const live = (key: string) => {
    const entry = values.get(key)
    if (entry && entry.expiresAt <= Date.now()) {
      values.delete(key)
      return undefined
    }
    return entry
  }
  // Expired entries are also swept periodically so unused keys do not pile up.
  const sweep = setInterval(() => {
    const now = Date.now()
    for (const [k, v] of values) if (v.expiresAt <= now) values.delete(k)
    for (const [k, w] of windows) if ((w.times.at(-1) ?? 0) <= now - w.windowMs) windows.delete(k)
  }, 10_000)
  sweep.unref()
  return {
    kind: "memory",
    incr: (key, ttlMs) =>
      Effect.sync(() => {
        const entry = live(key)
        if (entry) {
          const next = Number(entry.value) + 1
          entry.value = String(next)
          return next
        }
        values.set(key, { value: "1", expiresAt: Date.now() + ttlMs })
        return 1
      }),
    admitInWindow: (key, windowMs, limit) =>
      Effect.sync(() => {
        const now = Date.now()
        let w = windows.get(key)
        if (!w) windows.set(key, (w = { times: [], windowMs }))
        let expired = 0
        while (expired < w.times.length && w.times[expired]! <= now - windowMs) expired++
        if (expired > 0) w.times.splice(0, expired)
        if (w.times.length >= limit) return false
        w.times.push(now)
        return true
      }),
    setIfAbsent: (key, value, ttlMs) =>
      Effect.sync(() => {
        if (live(key)) return false
        values.set(key, { value, expiresAt: Date.now() + ttlMs })
        return true
      }),
    get: (key) => Effect.sync(() => live(key)?.value),
    set: (key, value, ttlMs) => Effect.sync(() => void values.set(key, { value, expiresAt: Date.now() + ttlMs })),
    del: (key, ...more) =>
      Effect.sync(() => {
        values.delete(key)
        for (const k of more) values.delete(k)
      }),
    publish: (channel, message) =>
      Effect.sync(() => {
        for (const l of listeners.get(channel) ?? []) queueMicrotask(() => l(message))
      }),
    subscribe: (channel, onMessage) =>
      Effect.acquireRelease(
        Effect.sync(() => {
          const set = listeners.get(channel) ?? new Set()
          set.add(onMessage)
          listeners.set(channel, set)
        }),
        () => Effect.sync(() => listeners.get(channel)?.delete(onMessage))
      ),
    ping: Effect.succeed(true)
  }
}

const INCR_WITH_TTL = `
local v = redis.call('INCR', KEYS[1])
if v == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return v`

// A sorted set of admitted events scored by the server's clock (microseconds), so every node
// counts against the same time; members are unique per call.
const ADMIT_IN_WINDOW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local window = tonumber(ARGV[1]) * 1000
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], now, now .. ':' .. ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1`

/** Redis could not be reached (down, or its connection lost past the client's retries): a 503, not a 500. */
export class KvUnavailable extends Error {
  readonly _tag = "KvUnavailable"
}

const unavailableOrSelf = (e: unknown): unknown => {
  const error = e as { name?: unknown; message?: unknown; code?: unknown }
  const lost = error?.name === "MaxRetriesPerRequestError" ||
    /Connection is closed|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE/.test(`${String(error?.message)} ${String(error?.code)}`)
  return lost ? new KvUnavailable(String(error.message), { cause: e }) : e
}

/**
 * Redis through ioredis. Every key and channel is prefixed with `namespace`, so that deployments
 * (or test servers) sharing one Redis never share a counter, a lock or an event channel.
 */
export const makeRedisKv = (url: string, namespace = "") =>
  Effect.gen(function*() {
    const k = (key: string) => (namespace === "" ? key : `${namespace}:${key}`)
    const open = (options: RedisOptions) =>
      new Redis(url, { maxRetriesPerRequest: 2, enableOfflineQueue: true, lazyConnect: false, ...options })
    // Commands issued in the same tick (rate-limit counters, event wake-ups) share one write.
    const client = yield* Effect.acquireRelease(
      Effect.sync(() => open({ enableAutoPipelining: true })),
      (c) => Effect.promise(() => c.quit()).pipe(Effect.ignore)
    )
    // ioredis writes a SUBSCRIBE made while it connects at once, ahead of its own INFO ready check
    // and CLIENT SETINFO; once subscribed, those are refused and the refused ready check failed the
    // SUBSCRIBE. The subscriber connection sends neither (only SELECT, before anything else).
    const subscriber = yield* Effect.acquireRelease(
      Effect.sync(() => open({ enableReadyCheck: false, disableClientInfo: true })),
      (c) => Effect.promise(() => c.quit()).pipe(Effect.ignore)
    )
    client.on("error", () => {})
    subscriber.on("error", () => {})
    // A channel's listeners and its SUBSCRIBE, stored before that round trip: a second subscriber
    // that comes meanwhile joins the same set and waits for the same SUBSCRIBE.
    const channels = new Map<string, { readonly listeners: Set<(m: string) => void>; readonly ready: Promise<unknown> }>()
    subscriber.on("message", (channel: string, message: string) => {
      for (const l of channels.get(channel)?.listeners ?? []) l(message)
    })
    const leave = (channel: string, onMessage: (m: string) => void) =>
      Effect.suspend(() => {
        const entry = channels.get(channel)
        if (!entry || !entry.listeners.delete(onMessage) || entry.listeners.size > 0) return Effect.void
        channels.delete(channel)
        // Commands keep their order on the connection: a SUBSCRIBE sent after this one still wins.
        return call(() => subscriber.unsubscribe(channel)).pipe(Effect.ignore)
      })
    const call = <A>(f: () => Promise<A>) => Effect.orDie(Effect.tryPromise({ try: f, catch: unavailableOrSelf }))
    const kv: KvShape = {
      kind: "redis",
      incr: (key, ttlMs) => call(() => client.eval(INCR_WITH_TTL, 1, k(key), String(ttlMs)) as Promise<number>),
      admitInWindow: (key, windowMs, limit) =>
        call(() => client.eval(ADMIT_IN_WINDOW, 1, k(key), String(windowMs), String(limit), randomUUID()) as Promise<number>).pipe(
          Effect.map((admitted) => admitted === 1)
        ),
      setIfAbsent: (key, value, ttlMs) =>
        call(() => client.set(k(key), value, "PX", ttlMs, "NX")).pipe(Effect.map((r) => r === "OK")),
      get: (key) => call(() => client.get(k(key))).pipe(Effect.map((v) => v ?? undefined)),
      set: (key, value, ttlMs) => call(() => client.set(k(key), value, "PX", ttlMs)).pipe(Effect.asVoid),
      del: (key, ...more) => call(() => client.del(k(key), ...more.map(k))).pipe(Effect.asVoid),
      publish: (channel, message) => call(() => client.publish(k(channel), message)).pipe(Effect.asVoid),
      subscribe: (name, onMessage) => {
        const channel = k(name)
        return Effect.acquireRelease(
          Effect.suspend(() => {
            let entry = channels.get(channel)
            if (!entry) {
              entry = { listeners: new Set(), ready: subscriber.subscribe(channel) }
              entry.ready.catch(() => {})
              channels.set(channel, entry)
            }
            entry.listeners.add(onMessage)
            const ready = entry.ready
            return call(() => ready).pipe(Effect.onError(() => leave(channel, onMessage)))
          }),
          () => leave(channel, onMessage)
        )
      },
      ping: Effect.tryPromise(() => client.ping()).pipe(
        Effect.timeout("1 second"),
        Effect.map(() => true),
        Effect.orElseSucceed(() => false)
      )
    }
    return kv
  })

/**
 * The prefix of this deployment's Redis keys: its database's name (README, "Several nodes"). Every
 * node of a cluster names the same database, however it spells the host; two deployments on one
 * Redis need databases of different names.
 */
export const redisNamespace = (databaseUrl: string | undefined) => {
  if (databaseUrl === undefined) return "trawl"
  const name = decodeURIComponent(new URL(databaseUrl).pathname.slice(1))
  return `trawl:${name === "" ? "postgres" : name}`
}

/** A URL to print: its password (and user) left out. */
const withoutPassword = (url: string) => {
  const u = new URL(url)
  u.username = ""
  u.password = ""
  return u.href
}

export const KvLive = Layer.effect(
  Kv,
  Effect.gen(function*() {
    const config = yield* Config
    if (config.redisUrl) {
      const kv = yield* makeRedisKv(config.redisUrl, redisNamespace(config.databaseUrl))
      // A node that cannot reach its Redis at start stops with one line that names it (about 15 s
      // of tries, for a Redis that starts beside the node), instead of failing on a first command.
      for (let tries = 1; !(yield* kv.ping); tries++) {
        if (tries === 10) return yield* Effect.die(new Error(`REDIS_URL: no answer from ${withoutPassword(config.redisUrl)}`))
        yield* Effect.sleep("500 millis")
      }
      return kv
    }
    yield* Effect.logWarning("REDIS_URL is not set: rate limits, locks and event fan-out are in-process (single node only)")
    return makeMemoryKv()
  })
)

/** The in-process store as a layer, for unit tests (each build starts empty). */
export const KvTest = Layer.sync(Kv, makeMemoryKv)
