import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { describe, expect, it } from "vitest"
import { auditActions } from "../../src/schema/audit.ts"
import { operationCodes } from "../../src/http/error-codes.ts"
import { makeConformance, openApiDocument } from "../support/openapi-conformance.ts"

const root = resolve(import.meta.dirname, "../..")

describe("the OpenAPI document", () => {
  const doc = openApiDocument()
  const operations = Object.values<any>(doc.paths).flatMap((item) => Object.values<any>(item))

  it("passes `redocly lint` (recommended rules) with no error", () => {
    const dir = mkdtempSync(join(tmpdir(), "trawl-openapi-"))
    try {
      const file = join(dir, "openapi.json")
      writeFileSync(file, JSON.stringify(doc))
      // Node 24 first on PATH: the machine's default node is older than redocly wants.
      const res = spawnSync(join(root, "node_modules/.bin/redocly"), ["lint", file, "--format=stylish", "--max-problems=200"], {
        cwd: root,
        encoding: "utf8",
        env: { ...process.env, PATH: `${join(root, "node_modules/.bin")}:${process.env.PATH ?? ""}`, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" },
        timeout: 60_000
      })
      expect(res.status, `${res.stdout}\n${res.stderr}`).toBe(0)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("gives every operation a summary and a description, and every tag a description", () => {
    expect(operations.length).toBeGreaterThan(80)
    for (const op of operations) {
      expect(op.summary, op.operationId).toMatch(/\S/)
      expect(op.description, op.operationId).toMatch(/\S/)
    }
    for (const tag of doc.tags) expect(tag.description, tag.name).toMatch(/\S/)
    expect(doc.info.license.name).toBeTruthy()
    expect(doc.servers).toEqual([expect.objectContaining({ url: "/" })])
  })

  it("says null once in every union", () => {
    const repeated: Array<string> = []
    const walk = (node: unknown, path: string) => {
      if (Array.isArray(node)) return node.forEach((n, i) => walk(n, `${path}/${i}`))
      if (typeof node !== "object" || node === null) return
      const anyOf = (node as { anyOf?: Array<unknown> }).anyOf
      if (anyOf && new Set(anyOf.map((a) => JSON.stringify(a))).size !== anyOf.length) repeated.push(path)
      for (const [k, v] of Object.entries(node)) walk(v, `${path}/${k}`)
    }
    walk(doc, "#")
    expect(repeated).toEqual([])
  })

  it("states the bounds the server enforces", () => {
    const list = doc.paths["/v1/scraper/jobs"].get.parameters
    const param = (name: string) => list.find((p: any) => p.name === name).schema
    expect(param("offset")).toMatchObject({ type: "integer", minimum: 0, maximum: 999_999_999_999_999 })
    expect(param("limit")).toMatchObject({ type: "integer", minimum: 1, maximum: 200 })
    const create = doc.paths["/v1/scraper/jobs"].post
    const body = create.requestBody.content["application/json"].schema
    expect(body.properties.url).toMatchObject({ type: "string", maxLength: 2048, format: "uri" })
    expect(body.required).toContain("url")
    const key = create.parameters.find((p: any) => p.name === "idempotency-key").schema
    expect(key).toMatchObject({ pattern: "^[\\x20-\\x7e]{1,255}$" })
    const bulk = doc.paths["/v1/scraper/jobs/bulk"].post.requestBody.content["application/json"].schema
    expect(bulk.properties.jobs).toMatchObject({ minItems: 1, maxItems: 100, items: body })
    const apiKey = doc.paths["/v1/iam/identities/{id}/api-keys"].post.requestBody.content["application/json"].schema
    expect(apiKey.properties.name).toMatchObject({ minLength: 1, maxLength: 100 })
    expect(JSON.stringify(apiKey.properties.expiresAt)).toContain("\"format\":\"date-time\"")
  })

  it("validates what it describes, and refuses what it does not", () => {
    const { check } = makeConformance(doc)
    const ok = { status: "success", code: "200-ok", data: { alive: true } }
    const exchange = (status: number, body: unknown, contentType = "application/json") => ({
      method: "GET",
      target: "/healthz",
      status,
      contentType,
      contentEncoding: undefined,
      body: Buffer.from(JSON.stringify(body))
    })
    expect(check(exchange(200, ok))).toBeUndefined()
    expect(check(exchange(200, { ...ok, data: { alive: "yes" } }))).toMatch(/does not match/)
    expect(check(exchange(200, ok, "text/plain"))).toMatch(/content type/)
    expect(check(exchange(418, ok))).toMatch(/not in the document/)
    // a route the document does not describe is not judged by it
    expect(check({ ...exchange(404, {}), target: "/internal/v1/tenants" })).toBeUndefined()
  })

  it("lists on each error response exactly its operation's codes, as an enum on the envelope's code", () => {
    const byId = new Map(operations.map((op) => [op.operationId as string, op]))
    for (const op of operations) {
      for (const [status, response] of Object.entries<any>(op.responses)) {
        if (Number(status) < 400) continue
        const codes = response["x-error-codes"]
        expect(codes, `${op.operationId} ${status}`).toEqual(expect.arrayContaining([expect.stringMatching(/^[a-z_]+$/)]))
        const schema = response.content["application/json"].schema
        expect(schema.allOf[1].properties.code.enum, `${op.operationId} ${status}`).toEqual(codes)
      }
    }
    const codes = (id: string, status: number) => byId.get(id).responses[String(status)]["x-error-codes"]
    // The middleware's: a key's or session's, the CSRF header only on unsafe methods.
    expect(codes("jobs.list", 401)).toEqual(["unauthorized"])
    expect(codes("jobs.list", 403)).not.toContain("csrf_failed")
    expect(codes("jobs.create", 403)).toContain("csrf_failed")
    // Acting on behalf of a delegator: refused with delegation_required where it is allowed at all.
    expect(codes("jobs.list", 403)).toContain("delegation_required")
    expect(codes("auth.me", 403)).not.toContain("delegation_required")
    expect(codes("iam.createApiKey", 403)).not.toContain("delegation_required")
    // The plan gate's, from the permission: paid work may meet no_active_plan, reading may not.
    // (config/plans.json: the free plan lacks extractor and network; every plan has scraper.)
    expect(codes("network.lookup", 403)).toEqual(expect.arrayContaining(["service_disabled_on_plan", "no_active_plan"]))
    expect(codes("extractions.get", 403)).toContain("service_disabled_on_plan")
    expect(codes("extractions.get", 403)).not.toContain("no_active_plan")
    expect(codes("jobs.create", 403)).toContain("no_active_plan")
    expect(codes("jobs.get", 403)).not.toContain("service_disabled_on_plan")
    expect(codes("billing.balance", 403)).not.toContain("service_disabled_on_plan")
    // An Idempotency-Key's, and the operation's own.
    expect(codes("jobs.create", 409)).toEqual(["idempotency_mismatch", "idempotency_conflict", "idempotency_in_progress"])
    expect(codes("jobs.create", 402)).toEqual(["insufficient_credit"])
    expect(codes("jobs.cancel", 409)).toEqual(["cannot_cancel_done", "cannot_cancel_failed", "cannot_cancel_dead"])
    expect(codes("roles.remove", 409)).toEqual(["role_in_use", "system_role_immutable"])
    expect(codes("auth.login", 401)).toEqual(["unauthorized", "totp_required"])
    expect(codes("jobs.get", 500)).toEqual(["internal_error"])
  })

  it("has no code table entry for an operation or a status the document does not have", () => {
    const byId = new Map(operations.map((op) => [op.operationId as string, op]))
    for (const [id, parts] of Object.entries(operationCodes)) {
      const op = byId.get(id)
      expect(op, id).toBeDefined()
      for (const part of parts) for (const status of Object.keys(part)) expect(op.responses[status], `${id} ${status}`).toBeDefined()
    }
  })

  it("refuses a response whose code its operation does not list", () => {
    const { check } = makeConformance(doc)
    const exchange = (code: string) => ({
      method: "GET",
      target: "/v1/network/ip/lookup?ip=1.1.1.1",
      status: 402,
      contentType: "application/json",
      contentEncoding: undefined,
      body: Buffer.from(JSON.stringify({ status: "error", code, error: { message: "no", requestId: "req_1" } }))
    })
    expect(check(exchange("insufficient_credit"))).toBeUndefined()
    expect(check(exchange("quota_exceeded"))).toMatch(/code quota_exceeded is not one the document lists for network.lookup 402/)
  })

  it("lists the audit log's actions for its filter", () => {
    const action = doc.paths["/v1/iam/audit"].get.parameters.find((p: any) => p.name === "action").schema
    expect(action.anyOf[0].enum).toEqual([...auditActions])
    expect(action.anyOf[0].enum).toContain("role.create")
    expect(new RegExp(action.anyOf[1].pattern).test("session.*")).toBe(true)
    expect(new RegExp(action.anyOf[1].pattern).test("session")).toBe(false)
  })
})
