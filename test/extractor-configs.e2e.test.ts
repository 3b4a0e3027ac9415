/**
 * Extractor configs end to end, through HTTP against the real server process: CRUD and every
 * bound, `scope` (tenant / global, super-admin only), visibility and write rights on global configs,
 * how configs apply to extractions (priority order, tenant before global, enabled, `urlPattern` and
 * `domainId` matching, `configId`), and the `extractor.configs.total` quota.
 *
 * Configs without `domainId`/`urlPattern` apply to every extraction of their tenant (and global ones
 * to every tenant), so each test that creates such configs uses its own tenant, and global configs
 * are limited by a `urlPattern` no other test uses.
 */
import { createServer, type Server } from "node:http"
import type { Socket } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { backends, client, INTERNAL_TOKEN, type RunningServer, startServer } from "./support/server-process.ts"
import { until } from "./support/until.ts"

type Tenant = Awaited<ReturnType<ReturnType<typeof client>["createTenant"]>>

/** The same registered pages on several loopback hosts (several domainIds). */
const startPages = async (hosts: ReadonlyArray<string>) => {
  const pages = new Map<string, string>()
  const delays = new Map<string, number>()
  const sockets = new Set<Socket>()
  const servers: Array<Server> = []
  const origins: Array<string> = []
  for (const host of hosts) {
    const server = createServer((req, res) => {
      const path = new URL(req.url ?? "/", "http://x").pathname
      const html = pages.get(path)
      setTimeout(() => res.writeHead(html ? 200 : 404, { "content-type": "text/html; charset=utf-8" }).end(html ?? "<p>missing</p>"), delays.get(path) ?? 0)
    })
    server.on("connection", (s: Socket) => {
      sockets.add(s)
      s.on("close", () => sockets.delete(s))
    })
    await new Promise<void>((r) => server.listen(0, host, () => r()))
    servers.push(server)
    origins.push(`http://${host}:${(server.address() as { port: number }).port}`)
  }
  return {
    origins,
    /** Serves `html` at `path`, `delayMs` after the request came. */
    put: (path: string, html: string, delayMs = 0) => {
      pages.set(path, html)
      delays.set(path, delayMs)
    },
    close: async () => {
      for (const s of sockets) s.destroy()
      await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))))
    }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
let counter = 0
const nonce = () => `c${Date.now().toString(36)}${(counter++).toString(36)}${Math.random().toString(36).slice(2, 7)}`


const para = "The committee met on Tuesday and discussed the long list of proposals, agreeing that the next steps would follow soon."

describe.each(backends())("extractor configs over HTTP ($name)", (backend) => {
  let server: RunningServer
  let api: ReturnType<typeof client>
  let pages: Awaited<ReturnType<typeof startPages>>
  let admin: string // a super-admin's raw key
  let t: Tenant

  const createConfig = (body: Record<string, unknown>, key = t.apiKey) => api.post("/v1/extractor/configs", body, key)
  const patch = (id: string, body: unknown, key = t.apiKey) => api.call("PATCH", `/v1/extractor/configs/${id}`, { key, body })
  const remove = (id: string, key = t.apiKey) => api.call("DELETE", `/v1/extractor/configs/${id}`, { key })

  const extract = async (body: Record<string, unknown>, key: string) => {
    const res = await api.post("/v1/extractor/extractions", body, key)
    expect(res.status, res.text).toBe(201)
    const e = await until(`extraction ${res.json.data.id}`, async () => {
      const r = await api.get(`/v1/extractor/extractions/${res.json.data.id}`, key)
      return ["done", "dead", "cancelled"].includes(r.json.data.status) ? r.json.data : undefined
    })
    expect(e.status, JSON.stringify(e)).toBe("done")
    return e
  }

  beforeAll(async () => {
    pages = await startPages(["127.0.0.1", "127.0.0.2"])
    server = await startServer({ ALLOW_PRIVATE_TARGETS: "true", WEBHOOK_RETRY_SCALE: "0.001", ...(await backend.env()) }, { timeoutMs: 110_000 })
    api = client(server.baseUrl)
    t = await api.createTenant()
    const ops = await api.call("POST", "/internal/v1/internal-admins", { token: INTERNAL_TOKEN, body: { email: `ops-${nonce()}@trawl.dev` } })
    expect(ops.status, ops.text).toBe(201)
    admin = ops.json.data.apiKey
  })
  afterAll(async () => {
    await server?.stop()
    await pages?.close()
  })

  // ---------------------------------------------------------------- CRUD

  it("creates, reads, lists, updates and deletes a tenant config", async () => {
    const body = {
      scope: "tenant",
      type: "product",
      domainId: "Example.COM.",
      urlPattern: "https://shop.example.com/p/*",
      priority: 42,
      enabled: true,
      payload: {
        selectors: { name: [{ css: "h1.title", trim: true }], price: [{ css: ".price", attr: "content" }, { css: ".price", textOnly: true }] },
        llm: { enabled: false, model: "some-model", temperature: 0.2, promptOverride: "Be precise.", mode: "correct" },
        fields: ["name", "price"],
        postProcess: { price: { parseNumber: { locale: "de" } } }
      },
      notes: "for the shop"
    }
    const created = await createConfig(body)
    expect(created.status, created.text).toBe(201)
    expect(created.json.code).toBe("201-created")
    const c = created.json.data
    expect(c).toMatchObject({
      tenantId: t.tenantId,
      scope: "tenant",
      type: "product",
      domainId: "example.com",
      urlPattern: body.urlPattern,
      priority: 42,
      enabled: true,
      payload: body.payload,
      notes: "for the shop"
    })
    expect(c.id).toEqual(expect.any(String))
    expect(Number.isNaN(Date.parse(c.createdAt))).toBe(false)
    expect(c.updatedAt).toBe(c.createdAt)

    const got = await api.get(`/v1/extractor/configs/${c.id}`, t.apiKey)
    expect(got.status).toBe(200)
    expect(got.json.data).toEqual(c)

    const list = await api.get("/v1/extractor/configs", t.apiKey)
    expect(list.status).toBe(200)
    expect(list.json.data.items.map((x: any) => x.id)).toContain(c.id)
    expect(list.json.data.pagination).toMatchObject({ offset: 0, limit: 50 })

    await sleep(10)
    const updated = await patch(c.id, { priority: 1000, notes: null, enabled: false, type: null, domainId: null, urlPattern: null, payload: { fields: ["name"] } })
    expect(updated.status, updated.text).toBe(200)
    expect(updated.json.data).toMatchObject({
      id: c.id, scope: "tenant", tenantId: t.tenantId, priority: 1000, notes: null, enabled: false, type: null, domainId: null, urlPattern: null,
      payload: { fields: ["name"] }, createdAt: c.createdAt
    })
    expect(Date.parse(updated.json.data.updatedAt)).toBeGreaterThan(Date.parse(c.updatedAt))
    expect((await api.get(`/v1/extractor/configs/${c.id}`, t.apiKey)).json.data).toEqual(updated.json.data)
    // A partial update changes only what it names.
    const partial = await patch(c.id, { notes: "again" })
    expect(partial.json.data).toMatchObject({ priority: 1000, enabled: false, notes: "again", payload: { fields: ["name"] } })

    const deleted = await remove(c.id)
    expect(deleted.status).toBe(200)
    expect(deleted.json.data).toMatchObject({ deleted: true, id: c.id })
    expect(Number.isNaN(Date.parse(deleted.json.data.deletedAt))).toBe(false)
    expect((await api.get(`/v1/extractor/configs/${c.id}`, t.apiKey)).status).toBe(404)
    expect((await remove(c.id)).status).toBe(404)
    expect((await patch(c.id, { notes: "x" })).status).toBe(404)
  })

  it("enforces every bound (priority, notes, promptOverride, scope, types, unknown fields)", async () => {
    const ok = await createConfig({ scope: "tenant", priority: 1000, notes: "n".repeat(1000), payload: { llm: { promptOverride: "p".repeat(8000) } } })
    expect(ok.status, ok.text).toBe(201)
    // Characters are counted as characters: an emoji is one, not two UTF-16 units.
    const emoji = await createConfig({ scope: "tenant", notes: "\u{1F600}".repeat(1000), payload: { llm: { promptOverride: "\u{1F600}".repeat(8000) } } })
    expect(emoji.status, emoji.text).toBe(201)
    const id = ok.json.data.id
    const bad: Array<[string, Record<string, unknown>, string]> = [
      ["priority 1001", { scope: "tenant", priority: 1001 }, "priority"],
      ["priority not an integer", { scope: "tenant", priority: 1.5 }, "priority"],
      ["notes 1001", { scope: "tenant", notes: "n".repeat(1001) }, "notes"],
      ["promptOverride 8001", { scope: "tenant", payload: { llm: { promptOverride: "p".repeat(8001) } } }, "payload.llm.promptOverride"],
      ["no scope", { type: "article" }, "scope"],
      ["unknown scope", { scope: "world" }, "scope"],
      ["unknown type", { scope: "tenant", type: "video" }, "type"],
      ["unknown llm mode", { scope: "tenant", payload: { llm: { mode: "rewrite" } } }, "payload.llm.mode"],
      ["temperature not a number", { scope: "tenant", payload: { llm: { temperature: "hot" } } }, "payload.llm.temperature"],
      ["unknown field", { scope: "tenant", colour: "red" }, "colour"],
      // What would fail every extraction the config applies to is refused when it is written.
      ["root selector that does not parse", { scope: "tenant", payload: { rootSelector: "div[[[" } }, "payload.rootSelector"],
      ["css selector that does not parse", { scope: "tenant", payload: { selectors: { title: [{ css: "h1[[[" }] } } }, "payload.selectors.title.0.css"],
      ["unknown post-processing", { scope: "tenant", payload: { postProcess: { title: { bogusOp: {} } } } }, "payload.postProcess.title.bogusOp"],
      ["regex that does not compile", { scope: "tenant", payload: { postProcess: { title: { regexReplace: { pattern: "[unclosed" } } } } }, "payload.postProcess.title.regexReplace"],
      ["unknown regex flags", { scope: "tenant", payload: { postProcess: { title: { regexReplace: { pattern: "a", flags: "zz" } } } } }, "payload.postProcess.title.regexReplace"],
      ["negative truncate", { scope: "tenant", payload: { postProcess: { title: { truncate: { length: -5 } } } } }, "payload.postProcess.title.truncate"],
      // Size and shape: every matching extraction reads the payload.
      ["51 selector fields", { scope: "tenant", payload: { selectors: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`f${i}`, [{ css: "h1" }]])) } }, "payload.selectors"],
      ["a field name of 101 characters", { scope: "tenant", payload: { selectors: { ["f".repeat(101)]: [{ css: "h1" }] } } }, "payload.selectors"],
      ["51 post-processed fields", { scope: "tenant", payload: { postProcess: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`f${i}`, { trim: {} }])) } }, "payload.postProcess"],
      ["21 operations on one field", { scope: "tenant", payload: { postProcess: { title: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`op${i}`, {}])) } } }, "payload.postProcess.title"],
      ["a payload over 64 KiB", { scope: "tenant", payload: { postProcess: { price: { default: { value: "x".repeat(70_000) } } } } }, "payload"],
      ["a selector with neither css nor json", { scope: "tenant", payload: { selectors: { title: [{ attr: "content" }] } } }, "payload.selectors.title.0"],
      ["an empty name in fields", { scope: "tenant", payload: { fields: ["title", ""] } }, "payload.fields.1"],
      ["a name of spaces in fields", { scope: "tenant", payload: { fields: ["  "] } }, "payload.fields.0"],
      ["a fields name of 101 characters", { scope: "tenant", payload: { fields: ["f".repeat(101)] } }, "payload.fields.0"],
      // A domainId no extraction's can equal would make a config that never applies.
      ["a domainId with a path", { scope: "tenant", domainId: "example.com/shop" }, "domainId"],
      ["a domainId with a port", { scope: "tenant", domainId: "example.com:8080" }, "domainId"],
      ["a domainId of words", { scope: "tenant", domainId: "not a domain!!" }, "domainId"],
      ["a domainId of escapes", { scope: "tenant", domainId: "%%%" }, "domainId"],
      ["a domainId below its registrable domain", { scope: "tenant", domainId: "shop.example.co.uk" }, "domainId"]
    ]
    for (const [what, body, path] of bad) {
      const res = await createConfig(body)
      expect(res.status, what).toBe(400)
      expect(res.json.code, what).toBe("validation_error")
      expect(res.json.error.details.map((d: any) => d.path), what).toContain(path)
      // Each message says what was expected, in words a client can act on.
      for (const d of res.json.error.details) expect(d.message, what).not.toMatch(/Infinity|NaN/)
    }
    // Options nested deeper than their 8 levels, within the body's 64 (docs/api.md); a body nested
    // deeper than 64 is refused whole (test/foundation.e2e.test.ts).
    const deep = await api.call("POST", "/v1/extractor/configs", {
      key: t.apiKey,
      raw: `{"scope":"tenant","payload":{"postProcess":{"title":{"default":{"value":${"[".repeat(40)}${"]".repeat(40)}}}}}}`
    })
    expect(deep.status, deep.text).toBe(400)
    expect(deep.json.error.details.map((d: any) => d.path)).toEqual(["payload.postProcess.title"])
    const badPatches: Array<[string, unknown, string]> = [
      ["priority 1001", { priority: 1001 }, "priority"],
      ["notes 1001", { notes: "n".repeat(1001) }, "notes"],
      ["promptOverride 8001", { payload: { llm: { promptOverride: "p".repeat(8001) } } }, "payload.llm.promptOverride"],
      ["scope", { scope: "global" }, "scope"],
      ["tenantId", { tenantId: null }, "tenantId"],
      ["root selector that does not parse", { payload: { rootSelector: "div[[[" } }, "payload.rootSelector"],
      ["a domainId below its registrable domain", { domainId: "www.example.com" }, "domainId"]
    ]
    for (const [what, body, path] of badPatches) {
      const res = await patch(id, body)
      expect(res.status, what).toBe(400)
      expect(res.json.code, what).toBe("validation_error")
      const detail = res.json.error.details.find((d: any) => d.path === path)
      expect(detail, what).toBeDefined()
      if (what === "scope" || what === "tenantId") expect(detail.code).toBe("unknown_field")
    }
    // The refusal names the domain to use.
    const sub = await createConfig({ scope: "tenant", domainId: "Shop.Example.co.UK" })
    expect(sub.json.error.details[0].message).toContain("example.co.uk")
    // What no extraction's domainId can differ by is kept in the extraction's form.
    for (const [given, kept] of [["BÜCHER.de.", "xn--bcher-kva.de"], ["[0:0:0:0:0:0:0:1]", "::1"], ["127.0.0.2", "127.0.0.2"], ["localhost", "localhost"]]) {
      const res = await patch(id, { domainId: given })
      expect(res.status, res.text).toBe(200)
      expect(res.json.data.domainId, given).toBe(kept)
    }
    expect((await patch(id, { domainId: null })).json.data.domainId).toBeNull()
    // Nothing of the refused patches stuck.
    expect((await api.get(`/v1/extractor/configs/${id}`, t.apiKey)).json.data).toMatchObject({ scope: "tenant", priority: 1000, notes: "n".repeat(1000) })
    // A tenant config cannot name another tenant.
    const other = await api.createTenant()
    const foreign = await createConfig({ scope: "tenant", tenantId: other.tenantId })
    expect(foreign.status).toBe(422)
    await remove(id)
  })

  it("refuses a read-only key (403) and hides another tenant's configs (404)", async () => {
    const tenant = await api.createTenant()
    const roles = await api.get("/v1/iam/roles", tenant.apiKey)
    const readRole = roles.json.data.items.find((r: any) => r.name === "read")
    const key = await api.post(`/v1/iam/identities/${tenant.ownerIdentityId}/api-keys`, { name: "reader", roleId: readRole.id }, tenant.apiKey)
    expect(key.status, key.text).toBe(201)
    const reader = key.json.data.rawKey as string
    const mine = await createConfig({ scope: "tenant", notes: "mine" }, tenant.apiKey)
    expect((await createConfig({ scope: "tenant" }, reader)).status).toBe(403)
    expect((await patch(mine.json.data.id, { notes: "x" }, reader)).status).toBe(403)
    expect((await remove(mine.json.data.id, reader)).status).toBe(403)
    expect((await api.get(`/v1/extractor/configs/${mine.json.data.id}`, reader)).status).toBe(200)
    // Another tenant sees nothing of it.
    for (const res of [
      await api.get(`/v1/extractor/configs/${mine.json.data.id}`, t.apiKey),
      await patch(mine.json.data.id, { notes: "x" }, t.apiKey),
      await remove(mine.json.data.id, t.apiKey)
    ]) {
      expect(res.status).toBe(404)
      expect(res.json.code).toBe("not_found")
    }
    const list = await api.get("/v1/extractor/configs?limit=200", t.apiKey)
    expect(list.json.data.items.map((c: any) => c.id)).not.toContain(mine.json.data.id)
  })

  it("lists configs in the sort asked for, echoed with its tie-break; refuses unknown sort fields", async () => {
    const tenant = await api.createTenant()
    const ids: Array<string> = []
    for (const priority of [5, 1, 9]) {
      const res = await createConfig({ scope: "tenant", priority }, tenant.apiKey)
      expect(res.status, res.text).toBe(201)
      ids.push(res.json.data.id)
    }
    // Global configs of other tests are listed too: only this tenant's are compared.
    const mine = (res: { json: any }) => res.json.data.items.map((c: any) => c.id).filter((id: string) => ids.includes(id))
    const list = (q: string) => api.get(`/v1/extractor/configs?limit=200${q}`, tenant.apiKey)
    const byPriority = await list("&sort=priority:desc")
    expect(mine(byPriority)).toEqual([ids[2], ids[0], ids[1]])
    expect(byPriority.json.data.sort).toEqual([{ field: "priority", dir: "desc" }, { field: "id", dir: "desc" }])
    const oldest = await list("&sort=createdAt:asc")
    expect(mine(oldest)).toEqual(ids)
    expect(oldest.json.data.sort).toEqual([{ field: "createdAt", dir: "asc" }, { field: "id", dir: "asc" }])
    const newest = await list("")
    expect(mine(newest)).toEqual([...ids].reverse())
    expect(newest.json.data.sort).toEqual([{ field: "createdAt", dir: "desc" }, { field: "id", dir: "desc" }])
    const badField = await list("&sort=notes:asc")
    expect([badField.status, badField.json.code]).toEqual([400, "invalid_sort_field"])
    expect(badField.json.error.details).toEqual([expect.objectContaining({ path: "sort.0" })])
    const badDir = await list("&sort=priority:up")
    expect([badDir.status, badDir.json.code]).toEqual([400, "validation_error"])
  })

  // ---------------------------------------------------------------- global scope

  it("lets only a super-admin create a global config; tenants see it but cannot change it; it applies below a tenant's own", async () => {
    const [base] = pages.origins
    const n = nonce()
    const pattern = `${base}/global-${n}-*`
    const refused = await createConfig({ scope: "global", type: "article", urlPattern: pattern })
    expect(refused.status).toBe(403)
    expect(refused.json.code).toBe("forbidden")

    // A global config has no tenant: one given is refused rather than dropped.
    const withTenant = await createConfig({ scope: "global", tenantId: t.tenantId, type: "article", urlPattern: pattern }, admin)
    expect(withTenant.status, withTenant.text).toBe(422)
    expect(withTenant.json).toMatchObject({ code: "invalid_tenant", error: { details: [{ path: "tenantId" }] } })

    const created = await createConfig({ scope: "global", type: "article", urlPattern: pattern, priority: 5, payload: { selectors: { title: [{ css: ".g-title" }] } } }, admin)
    expect(created.status, created.text).toBe(201)
    const g = created.json.data
    expect(g).toMatchObject({ scope: "global", tenantId: null, priority: 5 })
    try {
      // Every tenant sees it …
      const tenant = await api.createTenant()
      expect((await api.get(`/v1/extractor/configs/${g.id}`, tenant.apiKey)).json.data).toEqual(g)
      expect((await api.get("/v1/extractor/configs?limit=200", tenant.apiKey)).json.data.items.map((c: any) => c.id)).toContain(g.id)
      // … but cannot change or delete it.
      for (const res of [await patch(g.id, { priority: 1 }, tenant.apiKey), await remove(g.id, tenant.apiKey)]) {
        expect(res.status).toBe(403)
        expect(res.json.code).toBe("forbidden")
      }
      expect((await api.get(`/v1/extractor/configs/${g.id}`, tenant.apiKey)).json.data.priority).toBe(5)

      // It applies to a tenant's extraction of a matching URL.
      const html = `<html><body><article><h1>Plain heading</h1><div class="g-title">Global title</div><div class="t-title">Tenant title</div><p>${para}</p></article></body></html>`
      pages.put(`/global-${n}-a`, html)
      pages.put(`/global-${n}-b`, html)
      const viaGlobal = await extract({ type: "article", url: `${base}/global-${n}-a` }, tenant.apiKey)
      expect(viaGlobal.data.title).toBe("Global title")
      expect(viaGlobal.metadata.configsApplied).toEqual([g.id])
      // A tenant's own config of the same priority wins over the global one.
      const own = await createConfig({ scope: "tenant", type: "article", urlPattern: pattern, priority: 5, payload: { selectors: { title: [{ css: ".t-title" }] } } }, tenant.apiKey)
      expect(own.status).toBe(201)
      const viaOwn = await extract({ type: "article", url: `${base}/global-${n}-b` }, tenant.apiKey)
      expect(viaOwn.data.title).toBe("Tenant title")
      expect(viaOwn.metadata.configsApplied[0]).toBe(own.json.data.id)
      // A global config may be requested by configId, and is then applied to input without a URL.
      const byId = await extract({ type: "article", input: html, configId: g.id }, tenant.apiKey)
      expect(byId.metadata.configsApplied).toEqual([g.id])
      expect(byId.data.title).toBe("Global title")

      // The super-admin can change it.
      const changed = await patch(g.id, { notes: "ops note" }, admin)
      expect(changed.status).toBe(200)
      expect(changed.json.data).toMatchObject({ scope: "global", tenantId: null, notes: "ops note" })
    } finally {
      const gone = await remove(g.id, admin)
      expect(gone.status).toBe(200)
    }
  })

  // ---------------------------------------------------------------- application

  it("applies configs by priority: the higher one wins a field, both are listed in configsApplied", async () => {
    const tenant = await api.createTenant()
    const high = await createConfig({ scope: "tenant", type: "product", priority: 10, payload: { selectors: { name: [{ css: ".n-high" }] } } }, tenant.apiKey)
    const low = await createConfig({ scope: "tenant", type: "product", priority: 5, payload: { selectors: { name: [{ css: ".n-low" }], brand: [{ css: ".b-low" }] } } }, tenant.apiKey)
    // An article config does not apply to a product.
    const article = await createConfig({ scope: "tenant", type: "article", priority: 100, payload: { selectors: { title: [{ css: ".n-low" }] } } }, tenant.apiKey)
    for (const r of [high, low, article]) expect(r.status, r.text).toBe(201)
    const html = (n: string) => `<html><body><h1>Heuristic name ${n}</h1><div class="n-high">High name ${n}</div><div class="n-low">Low name ${n}</div><div class="b-low">LowBrand</div></body></html>`
    const n1 = nonce()
    const first = await extract({ type: "product", input: html(n1) }, tenant.apiKey)
    expect(first.data.name).toBe(`High name ${n1}`)
    expect(first.data.brand).toBe("LowBrand")
    expect(first.metadata.configsApplied).toEqual([high.json.data.id, low.json.data.id])
    // Raise the low one above: it wins the name now.
    expect((await patch(low.json.data.id, { priority: 20 }, tenant.apiKey)).status).toBe(200)
    const second = await extract({ type: "product", input: html(n1) }, tenant.apiKey)
    expect(second.cacheHits).toBe(0) // the config changed, so the cached result does not apply
    expect(second.data.name).toBe(`Low name ${n1}`)
    expect(second.metadata.configsApplied).toEqual([low.json.data.id])
    // An explicitly requested config comes first, whatever its priority.
    const third = await extract({ type: "product", input: html(nonce()), configId: high.json.data.id }, tenant.apiKey)
    expect(third.data.name).toMatch(/^High name /)
    expect(third.metadata.configsApplied[0]).toBe(high.json.data.id)
  })

  it("runs a field's post-processing in the order written, as stored and as changed", async () => {
    const tenant = await api.createTenant()
    // regexReplace before uppercase: "By Jane Doe" -> "Jane Doe" -> "JANE DOE" (the other way round the
    // pattern no longer matches); the keys are in an order a sorting store would change
    const made = await createConfig({ scope: "tenant", type: "article", payload: {
      selectors: { title: [{ css: "p.by" }] },
      postProcess: { title: { regexReplace: { pattern: "^By ", replacement: "" }, uppercase: {} } }
    } }, tenant.apiKey)
    expect(made.status, made.text).toBe(201)
    expect(Object.keys(made.json.data.payload.postProcess.title)).toEqual(["regexReplace", "uppercase"])
    expect(Object.keys((await api.get(`/v1/extractor/configs/${made.json.data.id}`, tenant.apiKey)).json.data.payload.postProcess.title)).toEqual(["regexReplace", "uppercase"])
    const html = `<html><body><p class="by">By Jane Doe</p>${"<p>Body text of the page that is long enough to read.</p>".repeat(3)}</body></html>`
    expect((await extract({ type: "article", input: html }, tenant.apiKey)).data.title).toBe("JANE DOE")
    // truncate, then prefix: "By J" -> "XXBy J"
    const changed = await patch(made.json.data.id, { payload: { selectors: { title: [{ css: "p.by" }] }, postProcess: { title: { truncate: { length: 4 }, prefix: { value: "XX" } } } } }, tenant.apiKey)
    expect(changed.status, changed.text).toBe(200)
    expect(Object.keys(changed.json.data.payload.postProcess.title)).toEqual(["truncate", "prefix"])
    expect((await extract({ type: "article", input: html }, tenant.apiKey)).data.title).toBe("XXBy J")
  })

  it("does not apply a disabled config, and applies it again once enabled", async () => {
    const tenant = await api.createTenant()
    const cfg = await createConfig({ scope: "tenant", type: "article", enabled: false, payload: { selectors: { title: [{ css: ".cfg-title" }] } } }, tenant.apiKey)
    expect(cfg.status).toBe(201)
    const html = (n: string) => `<html><body><article><h1>Heading ${n}</h1><div class="cfg-title">Config title</div><p>${para}</p></article></body></html>`
    const off = await extract({ type: "article", input: html(nonce()) }, tenant.apiKey)
    expect(off.data.title).toMatch(/^Heading /)
    expect(off.metadata.configsApplied).toEqual([])
    expect((await patch(cfg.json.data.id, { enabled: true }, tenant.apiKey)).status).toBe(200)
    const on = await extract({ type: "article", input: html(nonce()) }, tenant.apiKey)
    expect(on.data.title).toBe("Config title")
    expect(on.metadata.configsApplied).toEqual([cfg.json.data.id])
  })

  it("refuses a disabled config requested by configId (422 invalid_config, detail configId disabled)", async () => {
    const tenant = await api.createTenant()
    const cfg = await createConfig({ scope: "tenant", type: "article", enabled: false, payload: { selectors: { title: [{ css: ".cfg-title" }] } } }, tenant.apiKey)
    const n = nonce()
    const res = await api.post("/v1/extractor/extractions", {
      type: "article",
      input: `<html><body><article><h1>Heading ${n}</h1><div class="cfg-title">Config title</div><p>${para}</p></article></body></html>`,
      configId: cfg.json.data.id
    }, tenant.apiKey)
    expect(res.status, res.text).toBe(422)
    expect(res.json.code).toBe("invalid_config")
    expect(res.json.error.details).toEqual([expect.objectContaining({ path: "configId", code: "disabled" })])
    expect((await api.get("/v1/extractor/extractions", tenant.apiKey)).json.data.pagination.total).toBe(0)
  })

  it("says so in the metadata when the config a waiting extraction named was deleted before it ran", async () => {
    const tenant = await api.createTenant()
    const cfg = await createConfig({ scope: "tenant", type: "article", payload: { selectors: { title: [{ css: ".cfg-title" }] } } }, tenant.apiKey)
    const n = nonce()
    pages.put(`/late-${n}`, `<html><body><article><h1>Heading ${n}</h1><div class="cfg-title">Config title</div><p>${para}</p></article></body></html>`, 2500)
    const res = await api.post("/v1/extractor/extractions", { type: "article", url: `${pages.origins[0]}/late-${n}`, configId: cfg.json.data.id }, tenant.apiKey)
    expect(res.status, res.text).toBe(201)
    expect((await remove(cfg.json.data.id, tenant.apiKey)).status).toBe(200)
    const e = await until(`extraction ${res.json.data.id}`, async () => {
      const r = await api.get(`/v1/extractor/extractions/${res.json.data.id}`, tenant.apiKey)
      return ["done", "dead", "cancelled"].includes(r.json.data.status) ? r.json.data : undefined
    })
    expect(e.status).toBe("done")
    expect(e.data.title).toBe(`Heading ${n}`)
    expect(e.metadata.configsApplied).toEqual([])
    expect(e.metadata.configNotApplied).toEqual({ id: cfg.json.data.id, reason: "deleted" })
  })

  it("matches configs by urlPattern and domainId (and not on input without a URL)", async () => {
    const [one, two] = pages.origins as [string, string]
    const tenant = await api.createTenant()
    const n = nonce()
    const byDomain = await createConfig({ scope: "tenant", domainId: "127.0.0.2", payload: { selectors: { title: [{ css: ".d-title" }] } } }, tenant.apiKey)
    const byPattern = await createConfig({ scope: "tenant", urlPattern: `http://127.0.0.1:*/pattern-${n}*`, payload: { selectors: { title: [{ css: ".p-title" }] } } }, tenant.apiKey)
    for (const r of [byDomain, byPattern]) expect(r.status, r.text).toBe(201)
    const html = `<html><body><article><h1>Plain ${n}</h1><div class="d-title">Domain title</div><div class="p-title">Pattern title</div><p>${para}</p></article></body></html>`
    for (const p of [`/pattern-${n}-x`, `/other-${n}`, `/pattern-${n}-y`]) pages.put(p, html)
    const viaPattern = await extract({ type: "article", url: `${one}/pattern-${n}-x` }, tenant.apiKey)
    expect(viaPattern.data.title).toBe("Pattern title")
    expect(viaPattern.metadata.configsApplied).toEqual([byPattern.json.data.id])
    const none = await extract({ type: "article", url: `${one}/other-${n}` }, tenant.apiKey)
    expect(none.data.title).toBe(`Plain ${n}`)
    expect(none.metadata.configsApplied).toEqual([])
    const viaDomain = await extract({ type: "article", url: `${two}/other-${n}` }, tenant.apiKey)
    expect(viaDomain.domainId).toBe("127.0.0.2")
    expect(viaDomain.data.title).toBe("Domain title")
    expect(viaDomain.metadata.configsApplied).toEqual([byDomain.json.data.id])
    // The pattern is for host 127.0.0.1 only.
    const otherHost = await extract({ type: "article", url: `${two}/pattern-${n}-y` }, tenant.apiKey)
    expect(otherHost.metadata.configsApplied).toEqual([byDomain.json.data.id])
    // Inline input has no URL and no domain: neither applies.
    const inline = await extract({ type: "article", input: html.replace(`Plain ${n}`, `Inline ${n}`) }, tenant.apiKey)
    expect(inline.data.title).toBe(`Inline ${n}`)
    expect(inline.metadata.configsApplied).toEqual([])
  })

  it("bounds an extraction whose config makes it run away (a backtracking regex), while the service answers everyone else", async () => {
    const own = await api.createTenant()
    const cfg = await createConfig({ scope: "tenant", type: "product", payload: { postProcess: { name: { regexReplace: { pattern: "(a+)+$" } } } } }, own.apiKey)
    expect(cfg.status, cfg.text).toBe(201)
    const res = await api.post("/v1/extractor/extractions", { type: "product", input: `<html><body><h1>${"a".repeat(40)}!</h1></body></html>` }, own.apiKey)
    expect(res.status, res.text).toBe(201)
    // The regex would run for hours; meanwhile the node answers at once.
    await new Promise((resolve) => setTimeout(resolve, 1000))
    const t0 = Date.now()
    expect((await api.get("/healthz")).status).toBe(200)
    expect(Date.now() - t0).toBeLessThan(2000)
    const e = await until(`extraction ${res.json.data.id}`, async () => {
      const r = await api.get(`/v1/extractor/extractions/${res.json.data.id}`, own.apiKey)
      return ["done", "dead", "cancelled"].includes(r.json.data.status) ? r.json.data : undefined
    }, 60_000)
    expect(e).toMatchObject({ status: "dead", errorClass: "invalid_input" })
    expect(e.errorMessage).toMatch(/took longer than 20 s/)
  }, 90_000)

  it("refuses a configId of another tenant or an unknown one (422)", async () => {
    const other = await api.createTenant()
    const theirs = await createConfig({ scope: "tenant", notes: "theirs" }, other.apiKey)
    for (const configId of [theirs.json.data.id, "cfg_doesnotexist"]) {
      const res = await api.post("/v1/extractor/extractions", { type: "article", input: "<h1>x</h1>", configId }, t.apiKey)
      expect(res.status, configId).toBe(422)
      expect(res.json.status).toBe("error")
      expect(res.json.error.details[0].path).toBe("configId")
    }
  })

  // This server has no LLM_BASE_URL: a config or request that wants the LLM gets llm_unavailable.
  it("reports llm_unavailable when no LLM is configured, keeping the heuristic result", async () => {
    const n = nonce()
    const res = await api.post("/v1/extractor/extractions", { type: "product", llm: { enabled: true }, input: `<h1>No model ${n}</h1>` }, t.apiKey)
    expect(res.status).toBe(201)
    const e = await until("extraction", async () => {
      const r = await api.get(`/v1/extractor/extractions/${res.json.data.id}`, t.apiKey)
      return r.json.data.status === "done" ? r.json.data : undefined
    })
    expect(e.data.name).toBe(`No model ${n}`)
    expect(e.errorClass).toBe("llm_unavailable")
    expect(e.metadata.llm).toMatchObject({ model: "none", status: "failed_request", refinedFields: [], correctedFields: [] })
    // A config whose LLM options were the ones asked for is listed as applied, with the model it named.
    const cfg = await createConfig({ scope: "tenant", type: "product", urlPattern: `*llm-only-${n}*`, payload: { llm: { enabled: true, model: "cfg-model" } } })
    expect(cfg.status, cfg.text).toBe(201)
    const viaConfig = await api.post("/v1/extractor/extractions", { type: "product", configId: cfg.json.data.id, input: `<h1>Config model ${n}</h1>` }, t.apiKey)
    expect(viaConfig.status, viaConfig.text).toBe(201)
    const c = await until("extraction", async () => {
      const r = await api.get(`/v1/extractor/extractions/${viaConfig.json.data.id}`, t.apiKey)
      return r.json.data.status === "done" ? r.json.data : undefined
    })
    expect(c.metadata.configsApplied).toEqual([cfg.json.data.id])
    expect(c.metadata.llm).toMatchObject({ model: "cfg-model", status: "failed_request" })
  })

  // Quota `extractor.configs.total`: a super-admin override (`PUT /v1/admin/tenants/{id}/quotas/{key}`,
  // docs/api.md "Quotas") lowers it to 3 for one tenant; global configs do not count against a tenant.
  it("refuses a config over the tenant's extractor.configs.total (429 quota_exceeded) and frees a slot on delete", async () => {
    const tenant = await api.createTenant()
    const override = await api.call("PUT", `/v1/admin/tenants/${tenant.tenantId}/quotas/extractor.configs.total`, { key: admin, body: { limit: 3 } })
    expect(override.status, override.text).toBe(200)
    // Only a super-admin may set it.
    expect((await api.call("PUT", `/v1/admin/tenants/${tenant.tenantId}/quotas/extractor.configs.total`, { key: tenant.apiKey, body: { limit: 1000 } })).status).toBe(403)
    const ids: Array<string> = []
    for (let i = 0; i < 3; i++) {
      const r = await createConfig({ scope: "tenant", type: "article", domainId: `quota-${i}.example`, enabled: false }, tenant.apiKey)
      expect(r.status, `config ${i}: ${r.text}`).toBe(201)
      ids.push(r.json.data.id)
    }
    const over = await createConfig({ scope: "tenant", notes: "one too many" }, tenant.apiKey)
    expect(over.status).toBe(429)
    expect(over.json.code).toBe("quota_exceeded")
    // A global config by the super-admin is not the tenant's.
    const global = await createConfig({ scope: "global", type: "article", urlPattern: `http://quota-${nonce()}.invalid/*`, enabled: false }, admin)
    expect(global.status).toBe(201)
    expect((await remove(global.json.data.id, admin)).status).toBe(200)
    expect((await remove(ids[0]!, tenant.apiKey)).status).toBe(200)
    expect((await createConfig({ scope: "tenant", notes: "fits again" }, tenant.apiKey)).status).toBe(201)
    expect((await createConfig({ scope: "tenant", notes: "full again" }, tenant.apiKey)).status).toBe(429)
    // Raising the override makes room.
    await api.call("PUT", `/v1/admin/tenants/${tenant.tenantId}/quotas/extractor.configs.total`, { key: admin, body: { limit: 4 } })
    expect((await createConfig({ scope: "tenant", notes: "room after raise" }, tenant.apiKey)).status).toBe(201)
    // Concurrent creations cannot together pass it: two places free, twelve asking at once.
    await api.call("PUT", `/v1/admin/tenants/${tenant.tenantId}/quotas/extractor.configs.total`, { key: admin, body: { limit: 6 } })
    const burst = await Promise.all(Array.from({ length: 12 }, (_, i) => createConfig({ scope: "tenant", notes: `burst ${i}` }, tenant.apiKey)))
    expect(burst.map((r) => r.status).sort()).toEqual([201, 201, ...Array(10).fill(429)])
    const quotas = (await api.get("/v1/iam/quotas/me", tenant.apiKey)).json.data.items
    expect(quotas.find((q: any) => q.key === "extractor.configs.total")).toMatchObject({ limit: 6, used: 6 })
  }, 60_000)
})
