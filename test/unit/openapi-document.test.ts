import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { Schema } from "effect"
import { HttpApi, HttpApiGroup, OpenApi } from "effect/http-api"
import { describe, expect, it } from "vitest"
import { auditActions } from "../../src/schema/audit.ts"
import { MagicLinkVerifyBody, ResetPasswordBody } from "../../src/schema/account-recovery.ts"
import { LoginBody } from "../../src/schema/auth.ts"
import { isValidPermission, permissionCatalogue, resources, services } from "../../src/schema/permission.ts"
import { RegisterBody } from "../../src/schema/invitation.ts"
import { Api } from "../../src/http/api.ts"
import { operationCodes } from "../../src/http/error-codes.ts"
import { credentialsOf, securitySchemes, SESSION_COOKIE } from "../../src/http/security.ts"
import { MAX_REQUESTED_LIMIT } from "../../src/schema/quota-request.ts"
import { generateToken } from "../../src/iam/secrets.ts"
import { newRecoveryCodes } from "../../src/iam/totp.ts"
import { makeConformance, openApiDocument } from "../support/openapi-conformance.ts"
import { defaultPlan, planQuota, quotaKeys } from "../../src/billing/plans.ts"
import { IDEMPOTENCY_TTL_HOURS } from "../../src/schema/common.ts"
import { DEFAULT_TOLERANCE_SECONDS } from "../../src/webhooks/signing.ts"

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

  it("states the spec's limits that are no field's bound: idempotency validity, the quota catalogue, webhook tolerance and retries", () => {
    const key = doc.paths["/v1/scraper/jobs"].post.parameters.find((p: any) => p.name === "idempotency-key").schema
    expect(JSON.stringify(key)).toContain(`for ${IDEMPOTENCY_TTL_HOURS} hours`)
    const quotaKey = JSON.stringify(doc.components.schemas.Quota.properties.key)
    for (const k of quotaKeys) expect(quotaKey).toContain(`${k} ${planQuota(defaultPlan, k)}`)
    expect(quotaKey).toContain(`"enum":${JSON.stringify(quotaKeys)}`)
    expect(doc.info.description).toContain(`more than ${DEFAULT_TOLERANCE_SECONDS} seconds from its clock`)
    expect(doc.info.description).toMatch(/retried with exponential backoff \d+ times, the last about 7 hours after the first try/)
  })

  describe("states the bounds of credentials, codes, tokens and addresses", () => {
    const body = (path: string, method = "post") => doc.paths[path][method].requestBody.content["application/json"].schema
    // A check's keywords may sit in an `allOf` beside the type: read them as one schema.
    const flat = (schema: any): any => {
      const { allOf = [], ...rest } = schema
      return Object.assign({}, rest, ...allOf.map(flat))
    }
    const query = (path: string, name: string) => flat(doc.paths[path].get.parameters.find((p: any) => p.name === name).schema)
    const matches = (schema: any, value: string) => {
      expect(typeof schema.pattern, JSON.stringify(schema)).toBe("string")
      return new RegExp(schema.pattern, "u").test(value)
    }
    const current = { type: "string", minLength: 1, maxLength: 1024, format: "password" }
    const fresh = { type: "string", minLength: 12, maxLength: 1024, format: "password" }
    const email = { type: "string", maxLength: 255, format: "email" }

    it("passwords: 1-1024 where one is re-entered, 12-1024 where one is chosen (checked after any token, as weak_password)", () => {
      expect(body("/v1/iam/auth/login").properties.password).toMatchObject(current)
      expect(body("/v1/iam/auth/password/change").properties).toMatchObject({ currentPassword: current, newPassword: fresh })
      expect(body("/v1/iam/auth/password/setup").properties.password).toMatchObject(fresh)
      expect(body("/v1/iam/auth/password/reset").properties.password).toMatchObject(fresh)
      expect(body("/v1/iam/auth/register").properties.password).toMatchObject({ ...fresh, description: expect.stringContaining("weak_password") })
      for (const path of ["/v1/iam/auth/totp/disable", "/v1/iam/auth/totp/recovery-codes/regenerate"]) {
        expect(body(path).properties.currentPassword, path).toMatchObject(current)
      }
    })

    it("the internal bootstrap routes' passwords (not in the public document) have the same 12-1024 check", () => {
      const control = Api.groups.control.endpoints as Record<string, any>
      const field = (name: string, path: string, key: string): any => {
        const probe: any = OpenApi.fromApi(HttpApi.make("probe").add(HttpApiGroup.make("g").add(control[name])))
        return probe.paths[path].post.requestBody.content["application/json"].schema.properties[key]
      }
      // optionalKey (no null, so that no message quotes a password back): the field itself carries the bounds.
      expect(field("createTenant", "/internal/v1/tenants", "ownerPassword")).toMatchObject(fresh)
      expect(field("createInternalAdmin", "/internal/v1/internal-admins", "password")).toMatchObject(fresh)
    })

    it("TOTP codes: six digits; recovery codes: the service's, 8-64 characters", () => {
      const code = body("/v1/iam/auth/totp/verify").properties.code
      expect(code).toMatchObject({ type: "string", pattern: "^[0-9]{6}$" })
      expect(matches(code, "012345")).toBe(true)
      expect(matches(code, "12345")).toBe(false)
      expect(matches(code, "١٢٣٤٥٦")).toBe(false)
      for (const path of ["/v1/iam/auth/login", "/v1/iam/auth/totp/disable", "/v1/iam/auth/totp/recovery-codes/regenerate", "/v1/iam/auth/magic-link/verify"]) {
        expect(body(path).properties.totpCode, path).toEqual(code)
        const recovery = body(path).properties.recoveryCode
        expect(recovery, path).toMatchObject({ type: "string", minLength: 8, maxLength: 64 })
        for (const issued of newRecoveryCodes()) expect([...issued].length).toBeGreaterThanOrEqual(recovery.minLength)
      }
    })

    it("mailed tokens: 43 base64url characters, as they are made", () => {
      const paths = ["/v1/iam/auth/password/reset", "/v1/iam/auth/email/verify", "/v1/iam/auth/magic-link/verify"]
      const invitation = Object.keys(doc.paths).filter((p) => /invitations\/(accept|decline)$/.test(p))
      expect(invitation).toHaveLength(2)
      const schemas = [...paths, ...invitation].map((p) => body(p).properties.token)
      for (const schema of schemas) {
        expect(schema).toMatchObject({ type: "string", pattern: "^[A-Za-z0-9_-]{43}$" })
        for (let i = 0; i < 20; i++) expect(matches(schema, generateToken())).toBe(true)
        expect(matches(schema, "short")).toBe(false)
      }
      // registration takes any string up to 1024 characters: a malformed token is refused like an unknown one (403)
      expect(body("/v1/iam/auth/register").properties.invitationToken).toMatchObject({ type: "string", maxLength: 1024 })
      expect(body("/v1/iam/auth/register").required).not.toContain("invitationToken")
    })

    it("e-mail addresses: format email, and the pattern the server checks", () => {
      const schemas = [
        body("/v1/iam/auth/login").properties.email,
        body("/v1/iam/auth/password/forgot").properties.email,
        body("/v1/iam/auth/magic-link").properties.email,
        body("/v1/iam/auth/register").properties.email,
        ...Object.keys(doc.paths).filter((p) => /invitations$/.test(p) && doc.paths[p].post).map((p) => body(p).properties.email)
      ]
      expect(schemas.length).toBeGreaterThanOrEqual(5)
      for (const schema of schemas) {
        expect(schema).toMatchObject(email)
        expect(matches(schema, "notanemail")).toBe(false)
        expect(matches(schema, "a b@example.com")).toBe(false)
        expect(matches(schema, "ann@example.com")).toBe(true)
      }
    })

    it("a quota request's requestedLimit: 1 to 100000000 in digits; a lookup's ip: IPv4 or IPv6", () => {
      const path = Object.keys(doc.paths).find((p) => p.endsWith("/quotas/me/requests"))!
      const limit = body(path).properties.requestedLimit
      expect(limit).toMatchObject({ type: "string", minLength: 1, maxLength: 9 })
      for (const ok of ["1", "42", "99999999", String(MAX_REQUESTED_LIMIT)]) expect(matches(limit, ok), ok).toBe(true)
      for (const bad of ["0", "01", "-1", "1.5", String(MAX_REQUESTED_LIMIT + 1), "999999999", ""]) expect(matches(limit, bad), bad).toBe(false)
      expect(query("/v1/network/ip/lookup", "ip")).toMatchObject({
        type: "string",
        maxLength: 64,
        anyOf: [{ type: "string", format: "ipv4" }, { type: "string", format: "ipv6" }]
      })
    })

    it("list filters the handlers read: sort terms from the sort fields, filter lengths", () => {
      const sort = query("/v1/scraper/jobs", "sort")
      for (const ok of ["createdAt:desc,id:desc", "priority", " status:asc , id ", ""]) expect(matches(sort, ok), ok).toBe(true)
      for (const bad of ["color:asc", "createdAt:down", "id,id,id,id,id,id", "createdAt:desc:x"]) expect(matches(sort, bad), bad).toBe(false)
      expect(matches(query("/v1/extractor/configs", "sort"), "updatedAt:desc")).toBe(true)
      expect(matches(query("/v1/extractor/extractions", "sort"), "type:asc")).toBe(true)
      expect(query("/v1/iam/audit", "identityId")).toMatchObject({ minLength: 1, maxLength: 200 })
    })

    it("a role's permissions: the catalogue the validator takes, exactly; Last-Event-ID: an event id", () => {
      const items = flat(flat(body("/v1/iam/roles").properties.permissions).items)
      expect(new Set(items.enum)).toEqual(new Set(permissionCatalogue()))
      const names = [...new Set(resources.map((r) => r.split(":")[1]!))]
      let valid = 0
      for (const service of [...services, "*", "cross_tenant", "unknown"]) {
        for (const resource of [...names, "*", "unknown"]) {
          for (const action of ["read", "write", "*", "delete"]) {
            const p = `${service}:${resource}:${action}`
            expect(items.enum.includes(p), p).toBe(isValidPermission(p))
            if (isValidPermission(p)) valid++
          }
        }
      }
      expect(valid).toBe(items.enum.length)
      const lastEventId = flat(doc.paths["/v1/scraper/events"].get.parameters.find((p: any) => p.name === "last-event-id").schema)
      expect(matches(lastEventId, "12345")).toBe(true)
      expect(matches(lastEventId, "12a")).toBe(false)
    })

    it("a password, code or token is never quoted back by the validator", () => {
      const secret = "s3cret-Value-9"
      // The options the API decodes bodies with (api.ts): every issue, and the input reported.
      const options = { errors: "all", onExcessProperty: "error", reportInput: true } as const
      const decode = (schema: any, value: unknown) => Schema.decodeUnknownExit(schema)(value, options)
      // The control: a plain bounded string does quote what it was given.
      expect(String(decode(Schema.Struct({ password: Schema.String.check(Schema.isMinLength(100)) }), { password: secret }))).toContain(secret)
      for (const [schema, input] of [
        [LoginBody, { email: "a@example.com", password: 12345 }],
        [LoginBody, { email: "a@example.com", password: secret, totpCode: secret }],
        [ResetPasswordBody, { token: secret, password: secret }],
        [RegisterBody, { invitationToken: secret, email: "a@example.com", password: secret.repeat(80) }],
        [MagicLinkVerifyBody, { token: secret, totpCode: null, recoveryCode: 7 }]
      ] as const) {
        const exit = decode(schema, input)
        expect(exit._tag).toBe("Failure")
        const text = String(exit)
        expect(text).not.toContain(secret)
        expect(text).not.toContain("12345")
      }
    })
  })

  it("states how each operation authenticates, from the middleware that checks it", () => {
    expect(doc.components.securitySchemes).toEqual({
      apiKey: securitySchemes.apiKey,
      sessionBearer: expect.objectContaining({ type: "http", scheme: "bearer" }),
      sessionCookie: expect.objectContaining({ type: "apiKey", in: "cookie", name: SESSION_COOKIE, "x-csrf-header": "x-csrf-token" })
    })
    expect(doc.components.securitySchemes.sessionCookie.description).toContain("x-csrf-token")
    const byId = new Map(operations.map((op) => [op.operationId as string, op]))
    const security = (id: string) => byId.get(id).security
    const any = [{ apiKey: [] }, { sessionBearer: [] }, { sessionCookie: [] }]
    const session = [{ sessionBearer: [] }, { sessionCookie: [] }]
    expect(security("jobs.create")).toEqual(any)
    expect(security("auth.me")).toEqual(any)
    expect(security("auth.csrf")).toEqual(session)
    expect(security("auth.refresh")).toEqual(session)
    expect(security("auth.logout")).toEqual(session)
    for (const open of ["auth.login", "auth.forgotPassword", "auth.resetPassword", "auth.verifyEmail", "auth.requestMagicLink", "auth.verifyMagicLink", "registration.register", "system.healthz"]) {
      expect(security(open), open).toEqual([])
    }
    // Every operation's, and what the document says matches the endpoint it came from.
    for (const group of Object.values(Api.groups) as Array<any>) {
      for (const [name, endpoint] of Object.entries<any>(group.endpoints)) {
        const op = byId.get(`${group.identifier}.${name}`)
        if (op === undefined) continue
        expect(op.security, op.operationId).toEqual(credentialsOf(endpoint).map((s) => ({ [s]: [] })))
      }
    }
    // The control plane is not in the public document; its routes take the internal token.
    for (const endpoint of Object.values<any>(Api.groups.control.endpoints)) expect(credentialsOf(endpoint)).toEqual(["internalToken"])
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
    // stopping work is never refused by the plan (requiresToStop)
    for (const stop of ["jobs.cancel", "extractions.cancel", "crawls.cancel"]) {
      expect(codes(stop, 403), stop).not.toContain("no_active_plan")
      expect(codes(stop, 403), stop).not.toContain("service_disabled_on_plan")
    }
    expect(codes("quotaRequests.create", 403)).toContain("service_disabled_on_plan")
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

  it("states what a screenshot is served as and how large inline extraction input may be", () => {
    expect(Object.keys(doc.paths["/v1/scraper/jobs/{id}/screenshot"].get.responses["200"].content).sort()).toEqual(["image/jpeg", "image/png"])
    const input = doc.paths["/v1/extractor/extractions"].post.requestBody.content["application/json"].schema.properties.input
    expect(JSON.stringify(input)).toContain(String(5 * 1024 * 1024))
  })
})

describe("the OpenAPI document's envelopes and legacy elements", () => {
  const doc = openApiDocument()
  const resolve = (schema: any): any => schema?.$ref ? resolve(doc.components.schemas[schema.$ref.split("/").pop()]) : schema
  const success = resolve(doc.paths["/v1/billing/me/transactions"].get.responses["200"].content["application/json"].schema)

  it("states the success envelope's optional cache, timing and deprecation (spec 'Response envelopes')", () => {
    expect(success.required.sort()).toEqual(["code", "data", "status"])
    expect(resolve(success.properties.deprecation)).toMatchObject({ required: ["sunset"], properties: { sunset: { format: "date-time" } } })
    expect(resolve(success.properties.timing).required).toEqual(["totalMs"])
    expect(resolve(success.properties.cache).required).toEqual(["hit"])
  })

  it("says a page's limit is above 0, and marks the legacy take as deprecated", () => {
    const pagination = resolve(resolve(resolve(success.properties.data).properties.pagination))
    expect(pagination.properties.limit.minimum).toBe(1)
    expect(pagination.properties.offset.minimum).toBe(0)
    const take = doc.paths["/v1/billing/me/transactions"].get.parameters.find((p: any) => p.name === "take")
    expect(take.deprecated).toBe(true)
    expect(take.schema.description).toMatch(/legacy name of limit/)
  })
})

describe("the OpenAPI document's bounds checked beyond the schema", () => {
  const doc = openApiDocument()
  const body = (path: string, method: string) => doc.paths[path][method].requestBody.content["application/json"].schema
  const objectOf = (s: any) => s.anyOf ? s.anyOf.find((x: any) => x.type === "object") : s

  it("states a config payload's field counts, name lengths and size on both writes", () => {
    for (const [path, method] of [["/v1/extractor/configs", "post"], ["/v1/extractor/configs/{id}", "patch"]]) {
      const payload = objectOf(body(path, method).properties.payload)
      expect(payload.description).toMatch(/64 KiB/)
      expect(objectOf(payload.properties.selectors)).toMatchObject({ maxProperties: 50, propertyNames: { minLength: 1, maxLength: 100 } })
      const postProcess = objectOf(payload.properties.postProcess)
      expect(postProcess).toMatchObject({ maxProperties: 50, additionalProperties: { maxProperties: 20 } })
      expect(postProcess.propertyNames.not.enum).toContain("__proto__")
      const fields = payload.properties.fields.anyOf ? payload.properties.fields.anyOf.find((x: any) => x.type === "array") : payload.properties.fields
      expect(fields.items).toMatchObject({ minLength: 1, maxLength: 100 })
    }
  })

  it("tags every operation with one of the description's functional areas, and describes each", () => {
    const areas = ["auth", "iam", "billing", "jobs", "page-history", "network", "webhooks", "extractions", "extractor-configs", "quotas", "system"]
    expect(doc.tags.map((t: any) => t.name)).toEqual(areas)
    for (const t of doc.tags) expect(t.description, t.name).toBeTruthy()
    const tagOf = (path: string, method: string) => doc.paths[path][method].tags
    for (const op of Object.values<any>(doc.paths).flatMap((item) => Object.values<any>(item))) expect(areas).toContain(op.tags[0])
    expect(tagOf("/v1/iam/auth/register", "post")).toEqual(["auth"])
    expect(tagOf("/v1/iam/roles", "post")).toEqual(["iam"])
    expect(tagOf("/v1/iam/quotas/me", "get")).toEqual(["quotas"])
    expect(tagOf("/v1/iam/quotas/me/requests", "post")).toEqual(["quotas"])
    expect(tagOf("/v1/billing/me/subscription", "get")).toEqual(["billing"])
    expect(tagOf("/v1/scraper/jobs/{id}/webhook-deliveries", "get")).toEqual(["webhooks"])
  })

  it("states the extraction resource as the description does: image sizes, dates, error classes", () => {
    const extraction = doc.components.schemas.Extraction
    const data = extraction.properties.data.allOf[0]
    const [article, product] = data.anyOf
    for (const image of [article.properties.images.items, product.properties.images.items]) {
      expect(image.properties.width).toMatchObject({ type: "integer", minimum: 1 })
      expect(image.properties.height).toMatchObject({ type: "integer", minimum: 1 })
    }
    expect(article.properties.publishedAt.format).toBe("date-time")
    expect(article.properties.modifiedAt.format).toBe("date-time")
    expect(data.anyOf.map((s: any) => s.title)).toEqual(["ArticleData", "ProductData"])
    const errorClass = extraction.properties.errorClass.anyOf.find((s: any) => s.type === "string")
    expect(errorClass.enum).toEqual(expect.arrayContaining(["parse_error", "llm_unavailable", "cancelled_by_admin", "unknown"]))
    expect(errorClass.enum).toHaveLength(10)
    expect(doc.components.schemas.ApiKey.properties.rateLimitPerMinute).toMatchObject({ minimum: 1, maximum: 5000 })
    expect(doc.components.schemas.Role.properties.name).toMatchObject({ minLength: 2, maxLength: 60 })
  })

  it("names its components stably: an envelope after its data and code, never a generator's counter", () => {
    const names = Object.keys(doc.components.schemas)
    expect(names.filter((n) => /_\d+$|Encoded/.test(n))).toEqual([])
    expect(names).toEqual(expect.arrayContaining(["RoleEnvelope", "RoleEnvelope201Created", "Error409"]))
    const roleGet = doc.paths["/v1/iam/roles/{id}"].get.responses["200"].content["application/json"].schema.$ref
    expect(doc.paths["/v1/iam/roles/{id}"].patch.responses["200"].content["application/json"].schema.$ref).toBe(roleGet)
  })

  it("states the fields some error codes add to `error`, so that generated clients type them", () => {
    const deref = (schema: any): any => schema?.$ref ? deref(doc.components.schemas[schema.$ref.split("/").pop()]) : schema
    const errorOf = (status: number) => deref(doc.components.schemas[`Error${status}`].properties.error)
    expect(Object.keys(errorOf(402).properties)).toEqual(expect.arrayContaining(["balance", "required"]))
    expect(Object.keys(errorOf(409).properties)).toEqual(expect.arrayContaining(["uses", "currentStatus", "delegationStatus", "pendingRequestId"]))
    expect(deref(errorOf(409).properties.uses).required).toEqual(["identityAccesses", "apiKeys", "defaultRoles", "invitations"])
    expect(errorOf(422).properties.currentLimit).toMatchObject({ type: "integer", description: expect.stringContaining("requested_limit_not_higher") })
    // present only with their codes: never required
    for (const status of [402, 403, 409, 422, 503]) expect(errorOf(status).required).toEqual(["message", "requestId"])
  })

  it("states the bounds of a delegation's and a key's expiry", () => {
    expect(body("/v1/iam/users/me/delegations", "post").properties.expiresAt.description).toMatch(/one year/)
    expect(JSON.stringify(body("/v1/iam/identities/{id}/api-keys", "post").properties.expiresAt)).toMatch(/in the future/)
  })

  it("declares the headers the middlewares send and read", () => {
    for (const item of Object.values<any>(doc.paths)) {
      for (const op of Object.values<any>(item)) {
        for (const [status, response] of Object.entries<any>(op.responses)) {
          expect(response.headers?.["x-request-id"], `${op.operationId} ${status}`).toBeDefined()
          if (status === "429" || status === "503") expect(response.headers["Retry-After"], op.operationId).toBeDefined()
          if (status === "401") expect(response.headers["WWW-Authenticate"], op.operationId).toBeDefined()
        }
      }
    }
    const jobs = doc.paths["/v1/scraper/jobs"].get
    expect(Object.keys(jobs.responses["200"].headers)).toEqual(expect.arrayContaining(["RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "Deprecation", "Sunset"]))
    expect(jobs.parameters.map((p: any) => p.name)).toContain("x-on-behalf-of")
    // a delegate may not change the delegator's profile, nor log in as it
    expect((doc.paths["/v1/iam/users/me"].patch.parameters ?? []).map((p: any) => p.name)).not.toContain("x-on-behalf-of")
    expect(doc.paths["/v1/iam/auth/login"].post.responses["200"].headers["Set-Cookie"]).toBeDefined()
    // a registration opens a session too (its 201), a logout ends one; a read sets no cookie
    expect(doc.paths["/v1/iam/auth/register"].post.responses["201"].headers["Set-Cookie"]).toBeDefined()
    expect(doc.paths["/v1/iam/auth/logout"].post.responses["200"].headers["Set-Cookie"]).toBeDefined()
    expect(doc.paths["/v1/iam/auth/me"].get.responses["200"].headers["Set-Cookie"]).toBeUndefined()
    expect(doc.components.headers.RetryAfter.schema.type).toBe("integer")
  })

  it("states the crawl filters' bounds as the handler reads them", () => {
    const pattern = (path: string, name: string) => {
      const schema = doc.paths[path].get.parameters.find((p: any) => p.name === name).schema
      const patterns = [schema, ...(schema.allOf ?? [])].map((s: any) => s.pattern).filter((p: any) => p !== undefined && p !== "^[^\\u0000]*$")
      expect(patterns, name).toHaveLength(1)
      return patterns[0]
    }
    const depth = new RegExp(pattern("/v1/scraper/crawls/{id}/pages", "depth"))
    expect(["0", "05", "19", "20"].every((d) => depth.test(d))).toBe(true)
    expect(["21", "99", "-1", "100"].some((d) => depth.test(d))).toBe(false)
    const sort = new RegExp(pattern("/v1/scraper/crawls", "sort"))
    expect(sort.test("createdAt:desc,id")).toBe(true)
    expect(sort.test("priority:asc")).toBe(false)
    const url = new RegExp(pattern("/v1/page-history", "url"))
    expect([url.test("https://example.org/a"), url.test("ftp://example.org/"), url.test("example.org")]).toEqual([true, false, false])
  })
})
