import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { ConfigError, loadConfig } from "../../src/config.ts"

const dataDir = () => mkdtempSync(join(tmpdir(), "trawl-config-"))

describe("configuration", () => {
  it("has the defaults of the Configuration table in README.md", () => {
    const c = loadConfig({ DATA_DIR: dataDir() })
    expect(c.port).toBe(8080)
    expect(c.host).toBe("127.0.0.1")
    expect(c.databaseUrl).toBeUndefined()
    expect(c.redisUrl).toBeUndefined()
    expect(c.allowPrivateTargets).toBe(false)
    expect(c.internalTokenGenerated).toBe(true)
    expect(c.internalTokens[0]!.length).toBeGreaterThanOrEqual(16)
    expect(c.mailFrom).toBe("trawl@localhost")
    expect(c.publicBaseUrl).toBe("http://127.0.0.1:8080")
    expect(c.bravePath).toBe("/usr/bin/chromium")
    expect(c.secretKey.length).toBeGreaterThanOrEqual(32)
  })

  it("reads the LLM models configs may name: LLM_MODELS and the default, or any when unset", () => {
    const base = { DATA_DIR: dataDir(), LLM_BASE_URL: "http://127.0.0.1:9/v1", LLM_MODEL: "small" }
    expect(loadConfig(base).llm).toMatchObject({ model: "small" })
    expect(loadConfig(base).llmModels).toBeUndefined()
    expect(loadConfig({ ...base, LLM_MODELS: " large, small ,,medium" }).llmModels).toEqual(["small", "large", "medium"])
    expect(loadConfig({ ...base, LLM_MODELS: " " }).llmModels).toBeUndefined()
    // without an endpoint too: a config written now must not name a model refused later
    expect(loadConfig({ DATA_DIR: dataDir(), LLM_MODELS: "large" }).llmModels).toEqual(["gpt-4o-mini", "large"])
  })

  it("reads the OpenTelemetry variables and METRICS_PORT (docs/observability.md)", () => {
    const base = { DATA_DIR: dataDir() }
    expect(loadConfig(base).otel).toBeUndefined()
    expect(loadConfig(base).metricsPort).toBeUndefined()
    expect(loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318/" }).otel).toEqual({
      endpoint: "http://127.0.0.1:4318",
      serviceName: "trawl",
      protocol: "http/json",
      sampleRatio: 1,
      traceExportMs: 5000,
      metricExportMs: 60000,
      logExportMs: 1000
    })
    expect(loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_SERVICE_NAME: "crawler", OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf", OTEL_BSP_SCHEDULE_DELAY: "250" }).otel)
      .toMatchObject({ serviceName: "crawler", protocol: "http/protobuf", traceExportMs: 250 })
    expect(loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_SDK_DISABLED: "true" }).otel).toBeUndefined()
    expect(() => loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" })).toThrow(/OTEL_EXPORTER_OTLP_PROTOCOL/)
    expect(() => loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: "ftp://collector" })).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT/)
    expect(() => loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_METRIC_EXPORT_INTERVAL: "0" })).toThrow(/OTEL_METRIC_EXPORT_INTERVAL/)
    const otlp = { ...base, OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" }
    expect(loadConfig({ ...otlp, OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.25" }).otel?.sampleRatio).toBe(0.25)
    expect(loadConfig({ ...otlp, OTEL_TRACES_SAMPLER: "parentbased_always_off" }).otel?.sampleRatio).toBe(0)
    expect(() => loadConfig({ ...otlp, OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "2" })).toThrow(/OTEL_TRACES_SAMPLER_ARG/)
    expect(() => loadConfig({ ...otlp, OTEL_TRACES_SAMPLER: "jaeger_remote" })).toThrow(/OTEL_TRACES_SAMPLER/)
    expect(loadConfig({ ...base, METRICS_PORT: "9464" }).metricsPort).toBe(9464)
    expect(() => loadConfig({ ...base, METRICS_PORT: "8080" })).toThrow(/METRICS_PORT must differ from PORT/)
    expect(() => loadConfig({ ...base, METRICS_PORT: "x" })).toThrow(/METRICS_PORT/)
  })

  it("keeps the generated SECRET_KEY across starts", () => {
    const dir = dataDir()
    expect(loadConfig({ DATA_DIR: dir }).secretKey.equals(loadConfig({ DATA_DIR: dir }).secretKey)).toBe(true)
  })

  it("accepts both internal tokens", () => {
    const c = loadConfig({ DATA_DIR: dataDir(), INTERNAL_TOKEN: "a".repeat(20), INTERNAL_TOKEN_SECONDARY: "b".repeat(20) })
    expect(c.internalTokens).toEqual(["a".repeat(20), "b".repeat(20)])
    expect(c.internalTokenGenerated).toBe(false)
  })

  it.each([
    [{ NODE_ENV: "production", ALLOW_PRIVATE_TARGETS: "true", SECRET_KEY: "ab".repeat(32), INTERNAL_TOKEN: "t".repeat(20) }, "ALLOW_PRIVATE_TARGETS"],
    [{ NODE_ENV: "production", INTERNAL_TOKEN: "t".repeat(20) }, "SECRET_KEY"],
    [{ NODE_ENV: "production", SECRET_KEY: "ab".repeat(32) }, "INTERNAL_TOKEN"],
    [{ PORT: "70000" }, "PORT"],
    [{ REDIS_URL: "http://x" }, "REDIS_URL"],
    [{ SECRET_KEY: "too-short" }, "SECRET_KEY"],
    [{ INTERNAL_TOKEN: "short" }, "INTERNAL_TOKEN"],
    [{ INTERNAL_TOKEN_SECONDARY: "s".repeat(20) }, "INTERNAL_TOKEN_SECONDARY needs INTERNAL_TOKEN"],
    [{ INTERNAL_TOKEN: "", INTERNAL_TOKEN_SECONDARY: "s".repeat(20) }, "INTERNAL_TOKEN_SECONDARY needs INTERNAL_TOKEN"],
    [{ RUNNER_PORT: "34431" }, "RUNNER_PORT"],
    [{ LOG_LEVEL: "loud" }, "LOG_LEVEL"],
    [{ MAIL_FROM: "nobody" }, "MAIL_FROM"],
    [{ REQUEST_TIMEOUT_SECONDS: "0" }, "REQUEST_TIMEOUT_SECONDS"],
    [{ REQUEST_TIMEOUT_SECONDS: "3601" }, "REQUEST_TIMEOUT_SECONDS"],
    [{ SHUTDOWN_TIMEOUT_SECONDS: "0" }, "SHUTDOWN_TIMEOUT_SECONDS"],
    [{ SHUTDOWN_TIMEOUT_SECONDS: "2.5" }, "SHUTDOWN_TIMEOUT_SECONDS"],
    [{ SHUTDOWN_TIMEOUT_SECONDS: "3601" }, "SHUTDOWN_TIMEOUT_SECONDS"]
  ])("refuses %o", (env, name) => {
    expect(() => loadConfig({ DATA_DIR: dataDir(), ...env })).toThrow(ConfigError)
    expect(() => loadConfig({ DATA_DIR: dataDir(), ...env })).toThrow(name)
  })

  it("ends a stuck stop after 30 s unless SHUTDOWN_TIMEOUT_SECONDS says otherwise", () => {
    expect(loadConfig({ DATA_DIR: dataDir() }).shutdownTimeoutSeconds).toBe(30)
    expect(loadConfig({ DATA_DIR: dataDir(), SHUTDOWN_TIMEOUT_SECONDS: "120" }).shutdownTimeoutSeconds).toBe(120)
  })

  it("accepts SECRET_KEY in hex and base64", () => {
    expect(loadConfig({ DATA_DIR: dataDir(), SECRET_KEY: "ab".repeat(32) }).secretKey.length).toBe(32)
    expect(loadConfig({ DATA_DIR: dataDir(), SECRET_KEY: Buffer.alloc(32, 7).toString("base64") }).secretKey.length).toBe(32)
  })
})
