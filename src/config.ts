import { randomBytes } from "node:crypto"
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { BlockList, isIPv4, isIPv6 } from "node:net"
import { join, resolve } from "node:path"
import { Context } from "effect"

/** Every setting of the Configuration table in README.md, parsed and validated once at start. */
export interface AppConfig {
  readonly nodeEnv: string
  readonly port: number
  readonly host: string
  readonly databaseUrl: string | undefined
  readonly dataDir: string
  readonly redisUrl: string | undefined
  readonly internalTokens: ReadonlyArray<string>
  /** True when no INTERNAL_TOKEN was given and one was generated for this start. */
  readonly internalTokenGenerated: boolean
  readonly secretKey: Buffer
  /** True when no SECRET_KEY was given and the key kept in DATA_DIR is used. */
  readonly secretKeyGenerated: boolean
  readonly allowPrivateTargets: boolean
  readonly smtpUrl: string | undefined
  readonly mailFrom: string
  readonly publicBaseUrl: string
  /** Sessions end after this long without a request, and this long after login whatever happens (docs/identity.md). */
  readonly sessionIdleSeconds: number
  readonly sessionLifetimeSeconds: number
  /** REQUEST_TIMEOUT_SECONDS: the longest a client may take to send a request's headers and body (then 408). */
  readonly requestTimeoutSeconds: number
  /** SHUTDOWN_TIMEOUT_SECONDS: a stop (SIGTERM, SIGINT) that has not ended after this long ends the process (docs/scaling.md). */
  readonly shutdownTimeoutSeconds: number
  /** The LLM endpoint for refinement (LLM_BASE_URL), and its default model. */
  readonly llm: {
    readonly baseUrl: string
    readonly apiKey: string | undefined
    readonly model: string
  } | undefined
  /**
   * The models extractor configs may name (LLM_MODELS, with LLM_MODEL among them), whether or not an
   * endpoint is set now: a config written while none is must not name one the operator will not pay
   * for later. Undefined lets a config name any, at the operator's cost.
   */
  readonly llmModels: ReadonlyArray<string> | undefined
  readonly bravePath: string
  readonly camoufoxPath: string | undefined
  readonly alternateProxyUrl: string | undefined
  readonly runnerHost: string
  readonly runnerPort: number | undefined
  readonly logLevel: "debug" | "info" | "warn" | "error"
  /**
   * Loopback addresses the SSRF guard treats as public, so a test can stand a "public" site on
   * loopback beside a private one (tests only; refused in production).
   */
  readonly ssrfTestPublicAddresses: ReadonlyArray<string>
  /** Shrinks the webhook retry schedule (tests only; always 1 in production). */
  readonly webhookRetryScale: number
  /** SUBSCRIPTION_PERIOD_SECONDS: a subscription period this long instead of a calendar month (tests only; refused in production). */
  readonly subscriptionPeriodSeconds: number | undefined
  /** GEOIP_DB_PATH: the MMDB country database of IP lookups (default: the packaged one, docs/api.md "Network"). */
  readonly geoipDbPath: string
  /** TRUST_PROXY: the proxies whose X-Forwarded-For is believed (none by default; src/http/client-context.ts). */
  readonly trustProxy: TrustedProxies
  /**
   * OpenTelemetry export (OTEL_EXPORTER_OTLP_ENDPOINT and friends; docs/observability.md): traces,
   * metrics and logs over OTLP/HTTP. Undefined when the endpoint is unset or OTEL_SDK_DISABLED.
   */
  readonly otel: OtelConfig | undefined
  /** METRICS_PORT: a second listener that serves only `GET /metrics`, without the internal token. */
  readonly metricsPort: number | undefined
}

export interface OtelConfig {
  /** The base URL; signals go to `/v1/traces`, `/v1/metrics` and `/v1/logs` below it. */
  readonly endpoint: string
  readonly serviceName: string
  readonly protocol: "http/protobuf" | "http/json"
  /** The share of traces started here that are exported (OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG), 0 to 1. */
  readonly sampleRatio: number
  /** OTEL_BSP_SCHEDULE_DELAY / OTEL_METRIC_EXPORT_INTERVAL / OTEL_BLRP_SCHEDULE_DELAY, in milliseconds. */
  readonly traceExportMs: number
  readonly metricExportMs: number
  readonly logExportMs: number
}

/** The proxies whose `X-Forwarded-For` is believed (TRUST_PROXY). */
export interface TrustedProxies {
  /** The entries as configured. */
  readonly entries: ReadonlyArray<string>
  readonly trusts: (address: string) => boolean
}

export const noTrustedProxies: TrustedProxies = { entries: [], trusts: () => false }

/**
 * Parses TRUST_PROXY: comma-separated IPv4/IPv6 addresses or CIDRs (`10.0.0.0/8`, `fd00::/8`).
 * Answers the matcher, or the first entry that is neither.
 */
export const parseTrustProxy = (raw: string | undefined): TrustedProxies | { readonly invalid: string } => {
  const entries = (raw ?? "").split(",").map((e) => e.trim()).filter((e) => e !== "")
  if (entries.length === 0) return noTrustedProxies
  const list = new BlockList()
  for (const entry of entries) {
    const [address = "", bits, ...rest] = entry.split("/")
    const family = isIPv4(address) ? "ipv4" : isIPv6(address) && !address.includes("%") ? "ipv6" : undefined
    if (family === undefined || rest.length > 0) return { invalid: entry }
    if (bits === undefined) {
      list.addAddress(address, family)
      continue
    }
    if (!/^\d{1,3}$/.test(bits) || Number(bits) > (family === "ipv4" ? 32 : 128)) return { invalid: entry }
    list.addSubnet(address, Number(bits), family)
  }
  // BlockList matches an IPv4-mapped IPv6 address against IPv4 entries too.
  return { entries, trusts: (address) => list.check(address, isIPv4(address) ? "ipv4" : "ipv6") }
}

/** The country database shipped with the package @ip-location-db/geo-whois-asn-country-mmdb (IPv4 and IPv6). */
export const packagedGeoipDbPath = (): string =>
  createRequire(import.meta.url).resolve("@ip-location-db/geo-whois-asn-country-mmdb/geo-whois-asn-country.mmdb")

export class ConfigError extends Error {}

export class Config extends Context.Service<Config, AppConfig>()("trawl/Config") {}

/** The cluster runner port of a node when RUNNER_PORT is not given. */
export const DEFAULT_RUNNER_PORT = 34431

type Env = Readonly<Record<string, string | undefined>>

const bad = (name: string, why: string): never => {
  throw new ConfigError(`invalid configuration: ${name} ${why}`)
}

const port = (env: Env, name: string, fallback: number | undefined): number | undefined => {
  const raw = env[name]
  if (raw === undefined || raw === "") return fallback
  if (!/^\d+$/.test(raw)) return bad(name, `must be a port number, got "${raw}"`)
  const n = Number(raw)
  if (n < 0 || n > 65535) return bad(name, `must be between 0 and 65535, got ${n}`)
  return n
}

const bool = (env: Env, name: string): boolean => {
  const raw = env[name]
  if (raw === undefined || raw === "" || raw === "false" || raw === "0") return false
  if (raw === "true" || raw === "1") return true
  return bad(name, `must be true or false, got "${raw}"`)
}

const url = (env: Env, name: string, schemes: ReadonlyArray<string>): string | undefined => {
  const raw = env[name]
  if (raw === undefined || raw === "") return undefined
  let parsed: URL
  try {
    parsed = new URL(raw)
  } catch {
    return bad(name, "is not a valid URL")
  }
  if (!schemes.includes(parsed.protocol.replace(/:$/, ""))) {
    return bad(name, `must use one of ${schemes.join(", ")}, got "${parsed.protocol}"`)
  }
  return raw
}

const decodeKey = (raw: string): Buffer | undefined => {
  const hex = /^[0-9a-fA-F]+$/.test(raw) && raw.length % 2 === 0 ? Buffer.from(raw, "hex") : undefined
  if (hex && hex.length >= 32) return hex
  const b64 = Buffer.from(raw, /[-_]/.test(raw) ? "base64url" : "base64")
  return b64.length >= 32 ? b64 : undefined
}

const seconds = (env: Env, name: string, fallback: number, max: number): number => {
  const raw = env[name]
  if (raw === undefined || raw === "") return fallback
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > max) return bad(name, `must be a whole number of seconds from 1 to ${max}, got "${raw}"`)
  return Number(raw)
}

const tokenPattern = /^[\x21-\x7e]{16,512}$/

export const loadConfig = (env: Env = process.env): AppConfig => {
  const nodeEnv = env.NODE_ENV ?? "development"
  const production = nodeEnv === "production"
  const host = env.HOST || "127.0.0.1"
  const listenPort = port(env, "PORT", 8080)!
  const dataDir = resolve(env.DATA_DIR || "./.trawl")
  const databaseUrl = url(env, "DATABASE_URL", ["postgres", "postgresql"])
  const redisUrl = url(env, "REDIS_URL", ["redis", "rediss"])

  const allowPrivateTargets = bool(env, "ALLOW_PRIVATE_TARGETS")
  if (allowPrivateTargets && production) {
    bad("ALLOW_PRIVATE_TARGETS", "cannot be true when NODE_ENV=production")
  }

  const tokens: Array<string> = []
  for (const name of ["INTERNAL_TOKEN", "INTERNAL_TOKEN_SECONDARY"] as const) {
    const raw = env[name]
    if (raw === undefined || raw === "") continue
    if (!tokenPattern.test(raw)) bad(name, "must be 16 to 512 printable characters without spaces")
    tokens.push(raw)
  }
  // A secondary token is the one being rotated in or out, beside a primary one.
  if (!env.INTERNAL_TOKEN && env.INTERNAL_TOKEN_SECONDARY) bad("INTERNAL_TOKEN_SECONDARY", "needs INTERNAL_TOKEN")
  const internalTokenGenerated = tokens.length === 0
  if (internalTokenGenerated) {
    if (production) bad("INTERNAL_TOKEN", "is required when NODE_ENV=production")
    tokens.push(randomBytes(24).toString("base64url"))
  }

  let secretKey: Buffer
  if (env.SECRET_KEY) {
    secretKey = decodeKey(env.SECRET_KEY) ?? bad("SECRET_KEY", "must be at least 32 bytes, hex or base64")
  } else if (production) {
    secretKey = bad("SECRET_KEY", "is required when NODE_ENV=production")
  } else {
    secretKey = generatedSecretKey(dataDir)
  }

  const llmBase = url(env, "LLM_BASE_URL", ["http", "https"])
  const llmModel = env.LLM_MODEL || "gpt-4o-mini"
  const llmModels = env.LLM_MODELS?.trim()
    ? [...new Set([llmModel, ...env.LLM_MODELS.split(",").map((m) => m.trim()).filter((m) => m !== "")])]
    : undefined
  const smtpUrl = url(env, "SMTP_URL", ["smtp", "smtps"])
  const publicBaseUrl = url(env, "PUBLIC_BASE_URL", ["http", "https"]) ?? `http://${host}:${listenPort}`
  const mailFrom = env.MAIL_FROM || "trawl@localhost"
  if (!/^[^\s@]+@[^\s@]+$/.test(mailFrom)) bad("MAIL_FROM", `must be an e-mail address, got "${mailFrom}"`)

  const sessionIdleSeconds = seconds(env, "SESSION_IDLE_SECONDS", 12 * 3600, 366 * 86400)
  const sessionLifetimeSeconds = seconds(env, "SESSION_LIFETIME_SECONDS", 30 * 86400, 366 * 86400)
  const requestTimeoutSeconds = seconds(env, "REQUEST_TIMEOUT_SECONDS", 60, 3600)
  const shutdownTimeoutSeconds = seconds(env, "SHUTDOWN_TIMEOUT_SECONDS", 30, 3600)

  const runnerPort = port(env, "RUNNER_PORT", databaseUrl ? DEFAULT_RUNNER_PORT : undefined)
  if (databaseUrl === undefined && runnerPort !== undefined) {
    bad("RUNNER_PORT", "needs DATABASE_URL: the embedded database serves a single runner")
  }
  const logLevel = (env.LOG_LEVEL || "info") as AppConfig["logLevel"]
  if (!["debug", "info", "warn", "error"].includes(logLevel)) bad("LOG_LEVEL", "must be debug, info, warn or error")

  const scaleRaw = env.WEBHOOK_RETRY_SCALE
  const webhookRetryScale = scaleRaw === undefined || scaleRaw === "" ? 1 : Number(scaleRaw)
  if (!(webhookRetryScale > 0 && webhookRetryScale <= 1)) bad("WEBHOOK_RETRY_SCALE", "must be a number in (0, 1]")
  if (production && webhookRetryScale !== 1) bad("WEBHOOK_RETRY_SCALE", "cannot be changed when NODE_ENV=production")

  const periodRaw = env.SUBSCRIPTION_PERIOD_SECONDS
  const subscriptionPeriodSeconds = periodRaw === undefined || periodRaw === "" ? undefined : seconds(env, "SUBSCRIPTION_PERIOD_SECONDS", 0, 31 * 86400)
  if (production && subscriptionPeriodSeconds !== undefined) bad("SUBSCRIPTION_PERIOD_SECONDS", "cannot be set when NODE_ENV=production")

  const ssrfTestPublicAddresses = (env.SSRF_TEST_PUBLIC_ADDRESSES ?? "").split(",").map((a) => a.trim()).filter(Boolean)
  for (const a of ssrfTestPublicAddresses) {
    if (!/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(a)) bad("SSRF_TEST_PUBLIC_ADDRESSES", `may only name 127.x.y.z addresses, got "${a}"`)
  }
  if (production && ssrfTestPublicAddresses.length > 0) bad("SSRF_TEST_PUBLIC_ADDRESSES", "cannot be set when NODE_ENV=production")


  const trustProxy = parseTrustProxy(env.TRUST_PROXY)
  if ("invalid" in trustProxy) bad("TRUST_PROXY", `must list IP addresses or CIDRs separated by commas, got "${trustProxy.invalid}"`)

  const metricsPort = port(env, "METRICS_PORT", undefined)
  if (metricsPort !== undefined && metricsPort !== 0 && metricsPort === listenPort) bad("METRICS_PORT", "must differ from PORT")

  return {
    nodeEnv,
    otel: otelConfig(env),
    metricsPort,
    geoipDbPath: env.GEOIP_DB_PATH ? resolve(env.GEOIP_DB_PATH) : packagedGeoipDbPath(),
    trustProxy: trustProxy as TrustedProxies,
    ssrfTestPublicAddresses,
    secretKeyGenerated: !env.SECRET_KEY,
    webhookRetryScale,
    subscriptionPeriodSeconds,
    port: listenPort,
    host,
    databaseUrl,
    dataDir,
    redisUrl,
    internalTokens: tokens,
    internalTokenGenerated,
    secretKey,
    allowPrivateTargets,
    smtpUrl,
    mailFrom,
    publicBaseUrl,
    sessionIdleSeconds,
    sessionLifetimeSeconds,
    requestTimeoutSeconds,
    shutdownTimeoutSeconds,
    llm: llmBase ? { baseUrl: llmBase.replace(/\/$/, ""), apiKey: env.LLM_API_KEY || undefined, model: llmModel } : undefined,
    llmModels,
    bravePath: env.BRAVE_PATH || "/usr/bin/chromium",
    camoufoxPath: env.CAMOUFOX_PATH || undefined,
    alternateProxyUrl: url(env, "ALTERNATE_PROXY_URL", ["http", "https"]),
    runnerHost: env.RUNNER_HOST || "127.0.0.1",
    runnerPort,
    logLevel
  }
}

const millis = (env: Env, name: string, fallback: number): number => {
  const raw = env[name]
  if (raw === undefined || raw === "") return fallback
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 3_600_000) return bad(name, `must be a whole number of milliseconds from 1 to 3600000, got "${raw}"`)
  return Number(raw)
}

/**
 * The standard OpenTelemetry variables Trawl reads (docs/observability.md). Only OTLP over HTTP is
 * spoken: `grpc` is refused rather than silently sent as HTTP. The default is `http/json`, not the
 * specification's `http/protobuf`: Effect's protobuf encoder is plain JavaScript and cost about
 * 0.3 ms of CPU per traced request in `npm run bench:api -- --tracing`, where JSON costs next to
 * nothing (docs/observability.md, "Cost").
 */
const otelConfig = (env: Env): OtelConfig | undefined => {
  const endpoint = url(env, "OTEL_EXPORTER_OTLP_ENDPOINT", ["http", "https"])
  if (endpoint === undefined || bool(env, "OTEL_SDK_DISABLED")) return undefined
  const protocol = env.OTEL_EXPORTER_OTLP_PROTOCOL || "http/json"
  if (protocol !== "http/protobuf" && protocol !== "http/json") bad("OTEL_EXPORTER_OTLP_PROTOCOL", `must be http/protobuf or http/json, got "${protocol}"`)
  // Parent-based, as the specification's default: a trace that came with the request or message
  // keeps its caller's decision; only the traces that start here are sampled by the ratio.
  const sampler = env.OTEL_TRACES_SAMPLER || "parentbased_always_on"
  const samplers = ["parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"]
  if (!samplers.includes(sampler)) bad("OTEL_TRACES_SAMPLER", `must be one of ${samplers.join(", ")}, got "${sampler}"`)
  const ratioRaw = env.OTEL_TRACES_SAMPLER_ARG
  const ratio = ratioRaw === undefined || ratioRaw === "" ? 1 : Number(ratioRaw)
  if (sampler === "parentbased_traceidratio" && !(ratio >= 0 && ratio <= 1)) bad("OTEL_TRACES_SAMPLER_ARG", `must be a number from 0 to 1, got "${ratioRaw}"`)
  return {
    sampleRatio: sampler === "parentbased_always_on" ? 1 : sampler === "parentbased_always_off" ? 0 : ratio,
    endpoint: endpoint.replace(/\/+$/, ""),
    serviceName: env.OTEL_SERVICE_NAME || "trawl",
    protocol: protocol as OtelConfig["protocol"],
    traceExportMs: millis(env, "OTEL_BSP_SCHEDULE_DELAY", 5_000),
    metricExportMs: millis(env, "OTEL_METRIC_EXPORT_INTERVAL", 60_000),
    logExportMs: millis(env, "OTEL_BLRP_SCHEDULE_DELAY", 1_000)
  }
}

/** Development default: a key generated once and kept in DATA_DIR. */
const generatedSecretKey = (dataDir: string): Buffer => {
  const file = join(dataDir, "secret.key")
  if (existsSync(file)) {
    const key = decodeKey(readFileSync(file, "utf8").trim())
    if (key) return key
    bad("SECRET_KEY", `file ${file} is corrupt`)
  }
  mkdirSync(dataDir, { recursive: true })
  const key = randomBytes(32)
  writeFileSync(file, key.toString("hex") + "\n", { mode: 0o600 })
  return key
}

/**
 * A configuration for unit tests: the defaults of a development node with a fixed secret key and
 * no file written; `env` overrides any variable.
 */
export const configForTests = (env: Env = {}): AppConfig =>
  loadConfig({ SECRET_KEY: "0123456789abcdef".repeat(4), DATA_DIR: "/nonexistent/trawl-test", INTERNAL_TOKEN: "test-internal-token-0123456789", ...env })
