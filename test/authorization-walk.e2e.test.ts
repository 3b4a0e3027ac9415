/**
 * Every route of the API definition, walked with four callers: nobody (401), a read-only key and a
 * key of the system `write` role (403 exactly where the route's declared permission is beyond
 * them), and another tenant's owner given this tenant's resource ids (404: another tenant's
 * resource does not exist for it). The routes come from the definition itself, so a route added
 * later is walked too; one with a path parameter this test cannot fill fails the walk.
 */
import { createServer, type Server } from "node:http"
import { Context } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Api } from "../src/http/api.ts"
import { Anonymous, ANY_KEY, Requires } from "../src/http/security.ts"
import { allows, tenantSystemRoles } from "../src/iam/permissions.ts"
import { backends, client, INTERNAL_TOKEN, type RunningServer, startServer } from "./support/server-process.ts"

interface Route {
  readonly name: string
  readonly method: string
  readonly path: string
  readonly required: string | undefined
}

const routes: ReadonlyArray<Route> = Object.values(Api.groups)
  .filter((g) => g.identifier !== "control" && g.identifier !== "system")
  .flatMap((g) =>
    Object.values(g.endpoints)
      .filter((e) => !e.middlewares.has(Anonymous as never))
      .map((e) => ({
        name: `${g.identifier}.${e.identifier}`,
        method: e.method,
        path: e.path,
        required: Context.get(e.annotations, Requires) ?? Context.get(g.annotations, Requires)
      }))
  )

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const roleHolds = (role: string, required: string) => allows(tenantSystemRoles.find((r) => r.name === role)!.permissions, required)

describe.each(backends())("authorization of every route ($name)", (backend) => {
  let server: RunningServer
  let site: Server
  let api: ReturnType<typeof client>
  let a: Awaited<ReturnType<ReturnType<typeof client>["createTenant"]>>
  let b: typeof a
  let readKey: string
  let writeKey: string
  /** Tenant A's resource ids by path parameter, per route group where a name means different things. */
  const ids: Record<string, string> = {}
  /** Bodies valid enough to reach the handler (a body is decoded before it runs). */
  const bodies: Record<string, unknown> = {}

  beforeAll(async () => {
    site = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/html" })
      res.end("<html><head><title>walk</title></head><body><h1>A page</h1><p>Some text to keep.</p></body></html>")
    })
    await new Promise<void>((r) => site.listen(0, "127.0.0.1", r))
    server = await startServer({ ...(await backend.env()), ALLOW_PRIVATE_TARGETS: "true" })
    api = client(server.baseUrl)
    a = await api.createTenant()
    b = await api.createTenant()
    const roles = (await api.get("/v1/iam/roles?limit=200", a.apiKey)).json.data.items as Array<{ id: string; name: string }>
    const keyOf = async (role: string) => {
      const made = await api.post(`/v1/iam/identities/${a.ownerIdentityId}/api-keys`, { name: role, roleId: roles.find((r) => r.name === role)!.id, rateLimitPerMinute: 5000 }, a.apiKey)
      expect(made.status, made.text).toBe(201)
      return made.json.data.rawKey as string
    }
    readKey = await keyOf("read")
    writeKey = await keyOf("write")
    const bRead = ((await api.get("/v1/iam/roles?limit=200", b.apiKey)).json.data.items as Array<{ id: string; name: string }>).find((r) => r.name === "read")!.id

    const created = async (path: string, body: unknown, key = a.apiKey) => {
      const res = await api.post(path, body, key)
      expect(res.status, `${path}: ${res.text}`).toBeLessThan(300)
      return res.json.data
    }
    const port = (site.address() as { port: number }).port
    const url = `http://127.0.0.1:${port}/walk`
    const job = await created("/v1/scraper/jobs", { url })
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; await sleep(200)) {
      if (["done", "failed", "dead"].includes((await api.get(`/v1/scraper/jobs/${job.id}`, a.apiKey)).json.data.status)) break
    }
    const history = (await api.get(`/v1/page-history?url=${encodeURIComponent(url)}`, a.apiKey)).json.data.items
    expect(history.length, "the job's page is in the history").toBeGreaterThan(0)
    const crawl = await created("/v1/scraper/crawls", { url, maxDepth: 0, sitemap: "skip" })
    const extraction = await created("/v1/extractor/extractions", { type: "article", input: "<html><body><h1>T</h1><p>text</p></body></html>" })
    const config = await created("/v1/extractor/configs", { scope: "tenant", type: "article", payload: {} })
    const role = await created("/v1/iam/roles", { name: "walker", permissions: ["scraper:jobs:read"] })
    const delegation = await created("/v1/iam/users/me/delegations", {
      delegateId: `delegate-${Date.now()}@example.com`,
      reason: "walk",
      expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
      currentPassword: "correct horse battery"
    })
    const invitation = await created(`/v1/iam/organizations/${a.organizationId}/invitations`, {
      email: `invitee-${Date.now()}@example.com`,
      roleId: roles.find((r) => r.name === "read")!.id
    })
    const quotaRequest = await created("/v1/iam/quotas/me/requests", { quotaKey: "scraper.jobs.daily", requestedLimit: "20000", reason: "walk" })
    const login = await api.post("/v1/iam/auth/login", { email: (await api.get("/v1/iam/users/me", a.apiKey)).json.data.emails[0].email, password: "correct horse battery" })
    expect(login.status, login.text).toBe(200)
    const sessions = (await api.call("GET", "/v1/iam/users/me/sessions", { headers: { authorization: `Bearer ${login.json.data.sessionId}` } })).json.data.items

    Object.assign(ids, {
      "jobs:id": job.id,
      "crawls:id": crawl.id,
      "page-history:versionId": history[0].id,
      "extractions:id": extraction.id,
      "extractor-configs:id": config.id,
      "roles:id": role.id,
      "delegations:id": delegation.id,
      "invitations:orgIdentityId": a.organizationId,
      "invitations:invitationId": invitation.id,
      "quotaRequests:id": quotaRequest.id,
      "users:sessionId": sessions[0].id,
      "iam:id": a.ownerIdentityId,
      "iam:kid": a.apiKeyId
    })
    Object.assign(bodies, {
      "iam.createApiKey": { name: "x", roleId: bRead },
      "iam.updateApiKey": { description: "x" },
      "roles.update": { description: "x" },
      "extractor-configs.update": { notes: "x" },
      "invitations.create": { email: "someone@example.com", roleId: bRead }
    })
  }, 120_000)

  afterAll(async () => {
    await server?.stop()
    await new Promise((r) => site?.close(r))
  })

  /** The route's path with tenant A's ids; undefined when a parameter has no id here. */
  const pathOf = (route: Route) => {
    const group = route.name.split(".")[0]!
    let missing = false
    const path = route.path.replace(/:([A-Za-z]+)/g, (_, param: string) => {
      const id = ids[`${group}:${param}`]
      if (id === undefined) missing = true
      return id ?? "x"
    })
    return missing ? undefined : path
  }
  /** Sends the route's request; a per-second rate-limit refusal is waited out and sent again. */
  const send = async (route: Route, headers: Record<string, string>, path = route.path.replace(/:([A-Za-z]+)/g, "x")) => {
    if (route.name === "jobs.events") {
      // An open event stream never ends: its status and first bytes are enough.
      const aborter = new AbortController()
      const res = await fetch(server.baseUrl + path, { headers, signal: aborter.signal })
      const json = res.headers.get("content-type")?.startsWith("application/json") ? await res.json() : undefined
      aborter.abort()
      return { status: res.status, json, text: "", headers: res.headers }
    }
    for (;;) {
      const res = await api.call(route.method, path, { headers, ...(bodies[route.name] !== undefined ? { body: bodies[route.name] } : {}) })
      if (res.status !== 429 || res.json?.code !== "rate_limited") return res
      await sleep(Number(res.headers.get("retry-after") ?? 1) * 1000)
    }
  }

  it("answers 401 to a request without credentials on every route but the open ones", async () => {
    for (const route of routes) {
      const res = await send(route, {})
      expect([route.name, res.status, res.json?.code]).toEqual([route.name, 401, "unauthorized"])
    }
  })

  it("answers 403 to a read-only key exactly where the route needs more than reading", async () => {
    for (const route of routes) {
      // Unknown ids: what the key may do is decided before the resource is looked up, and nothing is changed.
      const res = await send(route, { "x-api-key": readKey })
      const beyond = route.required !== ANY_KEY && (route.required!.startsWith("cross_tenant:") || !roleHolds("read", route.required!))
      if (beyond) expect([route.name, res.status, res.json?.code]).toEqual([route.name, 403, "forbidden"])
      else expect([route.name, res.status], res.text).not.toEqual([route.name, 403])
    }
  })

  it("a read-only key cannot change its identity's credentials or profile", async () => {
    const attempts: ReadonlyArray<[string, string, unknown]> = [
      ["POST", "/v1/iam/auth/password/setup", { password: "a new owner passphrase" }],
      ["POST", "/v1/iam/auth/password/change", { currentPassword: "correct horse battery", newPassword: "a new owner passphrase" }],
      ["POST", "/v1/iam/auth/totp/enable", undefined],
      ["POST", "/v1/iam/auth/totp/verify", { code: "123456" }],
      ["POST", "/v1/iam/auth/totp/disable", { currentPassword: "correct horse battery" }],
      ["POST", "/v1/iam/auth/totp/recovery-codes/regenerate", { currentPassword: "correct horse battery" }],
      ["POST", "/v1/iam/auth/email/verify/send", undefined],
      ["PATCH", "/v1/iam/users/me", { firstName: "Mallory" }],
      ["DELETE", "/v1/iam/users/me/sessions", undefined],
      ["DELETE", `/v1/iam/users/me/sessions/${ids["users:sessionId"]}`, undefined]
    ]
    for (const [method, path, body] of attempts) {
      const res = await api.call(method, path, { headers: { "x-api-key": readKey }, ...(body !== undefined ? { body } : {}) })
      expect([method, path, res.status, res.json?.code]).toEqual([method, path, 403, "forbidden"])
    }
    const me = (await api.get("/v1/iam/users/me", a.apiKey)).json.data
    expect(me).toMatchObject({ firstName: null, totpEnabledAt: null })
    // The owner's own password still opens a session.
    const login = await api.post("/v1/iam/auth/login", { email: me.emails[0].email, password: "correct horse battery" })
    expect(login.status, login.text).toBe(200)
  })

  it("answers 403 to a key of the write role exactly where the route needs iam, billing or super-admin writes", async () => {
    for (const route of routes) {
      const res = await send(route, { "x-api-key": writeKey })
      const beyond = route.required !== ANY_KEY && (route.required!.startsWith("cross_tenant:") || !roleHolds("write", route.required!))
      if (beyond) expect([route.name, res.status, res.json?.code]).toEqual([route.name, 403, "forbidden"])
      else expect([route.name, res.status], res.text).not.toEqual([route.name, 403])
    }
  })

  it("answers 404 to another tenant's owner for each of this tenant's resources, and 403 on the super-admin plane", async () => {
    const walked: Array<string> = []
    for (const route of routes) {
      if (!route.path.includes(":")) continue
      const res = await send(route, { "x-api-key": b.apiKey }, pathOf(route))
      if (route.required!.startsWith("cross_tenant:")) {
        expect([route.name, res.status], res.text).toEqual([route.name, 403])
        continue
      }
      expect(pathOf(route), `${route.name}: no id of tenant A for its path parameters`).toBeDefined()
      expect([route.name, res.status, res.json?.code], res.text).toEqual([route.name, 404, "not_found"])
      walked.push(route.name)
    }
    expect(walked.length).toBeGreaterThan(25)
    // Tenant A still sees its own.
    expect((await api.get(`/v1/scraper/jobs/${ids["jobs:id"]}`, a.apiKey)).status).toBe(200)
    expect((await api.get(`/v1/extractor/configs/${ids["extractor-configs:id"]}`, a.apiKey)).status).toBe(200)
    // The super-admin reaches the plane the owner may not.
    const admin = await api.call("POST", "/internal/v1/internal-admins", { token: INTERNAL_TOKEN, body: { email: `root-${Date.now()}@example.com` } })
    expect((await api.get(`/v1/admin/tenants/${a.tenantId}`, admin.json.data.apiKey)).status).toBe(200)
  })
})
