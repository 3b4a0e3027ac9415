import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { describe, expect, it } from "vitest"
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
})
