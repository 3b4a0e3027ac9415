/**
 * End-to-end tests of the scraper jobs API, page history and the event stream, against the real
 * server process and a local fixture site (loopback only; see test/support/fixture-site.ts).
 */
import { existsSync } from "node:fs"
import { request as httpRequest } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  ARTICLE_HTML,
  BLOCKED_CONTENT_MARKER,
  type FixtureSite,
  loopbackOnlyEnv,
  PNG_MAGIC,
  SCRIPT_BUILT_MARKER,
  startFixtureSite
} from "./support/fixture-site.ts"
import { backends, client, pgQuery, type RunningServer, startServer } from "./support/server-process.ts"

const hasChromium = existsSync("/usr/bin/chromium")
const terminal = ["done", "failed", "dead"]
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

// One loopback address per concern: Trawl allows 2 concurrent fetches per domainId and learns per
// domain which engine works, so slow, blocked and failing pages get hosts of their own.
const HOSTS = ["127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6", "127.0.0.7", "127.0.0.8", "127.0.0.9"]
const H = { main: 0, replay: 1, cancel: 2, blocked: 3, error: 4, list: 5, waiting: 6, empty: 7, scripted: 8 } as const

const expectError = (res: { status: number; json: any; headers: Headers }, status: number, code: string) => {
  expect(res.status, JSON.stringify(res.json)).toBe(status)
  expect(res.json?.status).toBe("error")
  expect(res.json.code).toBe(code)
  expect(typeof res.json.error.message).toBe("string")
  expect(res.json.error.requestId).toBe(res.headers.get("x-request-id"))
}

const detailPaths = (res: { json: any }) => ((res.json?.error?.details ?? []) as Array<{ path: string }>).map((d) => d.path).sort()

interface SseEvent {
  id: string
  event: string
  data: any
}

/** Reads a server-sent-event stream in the background; `until` waits for a condition on the events seen. */
/** A stream opened with an API key, or with the headers given (a session as a bearer token or a cookie). */
const openStream = async (baseUrl: string, key: string | Record<string, string>, lastEventId?: string, path = "/v1/scraper/events") => {
  const controller = new AbortController()
  const res = await fetch(`${baseUrl}${path}`, {
    headers: { ...(typeof key === "string" ? { "x-api-key": key } : key), accept: "text/event-stream", ...(lastEventId ? { "last-event-id": lastEventId } : {}) },
    signal: controller.signal
  })
  const events: Array<SseEvent> = []
  const comments: Array<string> = []
  let connected = false
  let buffer = ""
  const pump = (async () => {
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
    for (;;) {
      const { value, done } = await reader.read()
      if (done) return
      buffer += value
      let cut: number
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, cut)
        buffer = buffer.slice(cut + 2)
        const e: Partial<SseEvent> = {}
        let data = ""
        for (const line of frame.split("\n")) {
          if (line.startsWith(":")) {
            if (line.includes("connected")) connected = true
            comments.push(line.slice(1).trim())
            continue
          }
          const i = line.indexOf(":")
          const field = i < 0 ? line : line.slice(0, i)
          const val = i < 0 ? "" : line.slice(i + 1).replace(/^ /, "")
          if (field === "id") e.id = val
          else if (field === "event") e.event = val
          else if (field === "data") data += val
        }
        if (e.event) events.push({ id: e.id!, event: e.event, data: JSON.parse(data) })
      }
    }
  })().catch(() => undefined)
  const until = async (cond: (events: ReadonlyArray<SseEvent>) => boolean, timeoutMs = 30_000) => {
    const deadline = Date.now() + timeoutMs
    while (!cond(events)) {
      if (Date.now() > deadline) throw new Error(`stream condition not met in ${timeoutMs} ms; events: ${JSON.stringify(events)}`)
      await sleep(50)
    }
  }
  return {
    status: res.status,
    contentType: res.headers.get("content-type"),
    events,
    comments,
    connected: () => connected,
    /** Settles when the server ends the stream (or it is closed here). */
    ended: pump,
    until,
    close: async () => {
      controller.abort()
      await pump
    }
  }
}

describe.each(backends())("scraper jobs over HTTP ($name)", (backend) => {
  let server: RunningServer
  let site: FixtureSite
  let api: ReturnType<typeof client>
  let key: string
  let tenantId: string
  /** The PostgreSQL database of the server, on that backend. */
  let serverDbUrl: string | undefined

  beforeAll(async () => {
    site = await startFixtureSite({ hosts: HOSTS })
    const env = await backend.env()
    serverDbUrl = env.DATABASE_URL
    server = await startServer({ ...env, ALLOW_PRIVATE_TARGETS: "true", ...loopbackOnlyEnv() })
    api = client(server.baseUrl)
    const t = await api.createTenant({ credits: "1000.00" })
    key = t.apiKey
    tenantId = t.tenantId
  })
  afterAll(async () => {
    await server?.stop()
    await site?.close()
  })

  /**
   * Creates a job. A refusal by the key's per-second rate limit is waited out: these tests send
   * bursts from one key, faster on a fast machine, and the limiter has tests of its own.
   */
  const create = async (body: Record<string, unknown>, k = key, headers: Record<string, string> = {}) => {
    for (let tries = 1; ; tries++) {
      const res = await api.call("POST", "/v1/scraper/jobs", { key: k, body, headers })
      if (res.status !== 429 || res.json?.code !== "rate_limited" || tries === 5) return res
      await sleep(1000 * Number(res.headers.get("retry-after") ?? 1))
    }
  }

  const getJob = async (id: string, k = key) => (await api.get(`/v1/scraper/jobs/${id}`, k)).json.data

  const waitFor = async (id: string, pred: (job: any) => boolean, timeoutMs = 45_000, k = key) => {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const job = await getJob(id, k)
      if (pred(job)) return job
      if (Date.now() > deadline) throw new Error(`job ${id} not as expected after ${timeoutMs} ms: ${JSON.stringify(job)}`)
      await sleep(200)
    }
  }
  const waitTerminal = (id: string, timeoutMs?: number, k = key) => waitFor(id, (j) => terminal.includes(j?.status), timeoutMs, k)

  const createAndWait = async (body: Record<string, unknown>, k = key) => {
    const res = await create(body, k)
    expect(res.status, JSON.stringify(res.json)).toBe(201)
    return waitTerminal(res.json.data.id, 45_000, k)
  }

  it("crawls a page to done with a full result, and serves its HTML", async () => {
    const before = site.hits("/page")
    const url = site.url("/page?case=basic")
    const res = await create({ url })
    expect(res.status).toBe(201)
    expect(res.json.code).toBe("201-created")
    const created = res.json.data
    expect(created).toMatchObject({ url, status: "queued", priority: 0, attempts: 0, finishedAt: null, domainId: "127.0.0.1", tenantId })
    expect(created.id).toMatch(/^job_/)
    expect(Number.isNaN(Date.parse(created.createdAt))).toBe(false)
    expect(created.webhookSecret).toBeUndefined()

    const job = await waitTerminal(created.id)
    expect(job.status).toBe("done")
    expect(job.attempts).toBe(1)
    expect(Date.parse(job.finishedAt)).toBeGreaterThanOrEqual(Date.parse(job.createdAt))
    expect(job.replayOf).toBeNull()
    const r = job.result
    expect(r).toMatchObject({
      httpStatus: 200,
      finalUrl: url,
      classification: "ok",
      engine: "http",
      bytes: Buffer.byteLength(ARTICLE_HTML)
    })
    expect(r.contentType).toMatch(/^text\/html/)
    expect(Number.isInteger(r.durationMs) && r.durationMs >= 0).toBe(true)
    expect(r.attempts).toHaveLength(1)
    expect(r.attempts[0]).toMatchObject({ engine: "http", classification: "ok", httpStatus: 200, finalUrl: url, error: null })
    expect(site.hits("/page")).toBe(before + 1)

    // a server that may reach private targets says so when it starts
    expect(server.output()).toContain("warning: ALLOW_PRIVATE_TARGETS=true")
    const html = await fetch(`${server.baseUrl}/v1/scraper/jobs/${created.id}/html`, { headers: { "x-api-key": key } })
    expect(html.status).toBe(200)
    expect(html.headers.get("content-type")).toMatch(/^text\/html/)
    // the crawled page is served from the API's origin, so a browser must not run it
    expect(html.headers.get("x-content-type-options")).toBe("nosniff")
    expect(html.headers.get("content-security-policy")).toMatch(/^sandbox;/)
    expect(await html.text()).toBe(ARTICLE_HTML)

    // an http-only result has no screenshot
    const shot = await api.get(`/v1/scraper/jobs/${created.id}/screenshot`, key)
    expectError(shot, 404, "not_found")
    expect(shot.json.error.message).toMatch(/no screenshot was asked for/)
  })

  it("follows a redirect to another fixture page", async () => {
    const url = site.url("/redirect?to=/page%3Fcase%3Dredirected")
    const job = await createAndWait({ url })
    expect(job.status).toBe("done")
    expect(job.result.httpStatus).toBe(200)
    expect(job.result.finalUrl).toBe(site.url("/page?case=redirected"))
    const html = await api.get(`/v1/scraper/jobs/${job.id}/html`, key)
    expect(html.text).toBe(ARTICLE_HTML)
  })

  it("reports a screenshot that an http-only crawl could not take", async () => {
    const job = await createAndWait({ url: site.url("/page?case=shot-http"), screenshot: true, escalation: [{ engine: "http", attempts: 1, timeoutMs: 5000 }] })
    expect(job.status).toBe("done")
    expect(job.result.engine).toBe("http")
    expect(job.result.screenshot.taken).toBe(false)
    expect(typeof job.result.screenshot.reason).toBe("string")
    const shot = await api.get(`/v1/scraper/jobs/${job.id}/screenshot`, key)
    expectError(shot, 404, "not_found")
    // the 404 says why, in the job's own words
    expect(shot.json.error.message).toBe(`this job has no screenshot: ${job.result.screenshot.reason}`)
  })

  it("says a failed job has no screenshot because no attempt succeeded, though its block page is kept", async () => {
    const job = await createAndWait({ url: site.url("/blocked?case=shot-blocked", H.blocked), screenshot: true, escalation: [{ engine: "http", attempts: 1, timeoutMs: 5000 }] })
    expect(job.status).toBe("failed")
    expect(job.result.screenshot).toEqual({ taken: false, reason: "no attempt succeeded (blocked): screenshots are taken of a page that was fetched" })
    expect((await api.get(`/v1/scraper/jobs/${job.id}/html`, key)).status).toBe(200)
  })

  it("enforces permissions: a read-only key may read jobs but not create, replay or cancel them", async () => {
    const t = await api.createTenant()
    const roles = (await api.get("/v1/iam/roles", t.apiKey)).json.data.items as Array<any>
    const read = roles.find((r) => r.name === "read")
    const rk = (await api.post(`/v1/iam/identities/${t.ownerIdentityId}/api-keys`, { name: "reader", roleId: read.id }, t.apiKey)).json.data.rawKey
    const job = await createAndWait({ url: site.url("/page?case=perm") }, t.apiKey)
    expectError(await create({ url: site.url("/page?case=perm2") }, rk), 403, "forbidden")
    expectError(await api.post("/v1/scraper/jobs/bulk", { jobs: [{ url: site.url("/page?case=perm3") }] }, rk), 403, "forbidden")
    expectError(await api.post(`/v1/scraper/jobs/${job.id}/replay`, undefined, rk), 403, "forbidden")
    expectError(await api.post(`/v1/scraper/jobs/${job.id}/cancel`, undefined, rk), 403, "forbidden")
    expect((await api.get(`/v1/scraper/jobs/${job.id}`, rk)).status).toBe(200)
    expect((await api.get("/v1/scraper/jobs", rk)).json.data.pagination.total).toBe(1)
    expect((await api.post("/v1/scraper/jobs/search", {}, rk)).status).toBe(200)
    expect((await api.get(`/v1/scraper/jobs/${job.id}/html`, rk)).status).toBe(200)
    expect((await api.get(`/v1/page-history?url=${encodeURIComponent(job.url)}`, rk)).json.data.pagination.total).toBe(1)
  })

  it("ends a 404 target done with httpStatus 404", async () => {
    const job = await createAndWait({ url: site.url("/missing") })
    expect(job.status).toBe("done")
    expect(job.result).toMatchObject({ httpStatus: 404, classification: "not_found", engine: "http" })
    const html = await api.get(`/v1/scraper/jobs/${job.id}/html`, key)
    expect(html.status).toBe(200)
    expect(html.text).toContain("No such page")
  })

  it("retries a 500 target per its escalation, then ends failed with server_error", async () => {
    const before = site.hits("/error")
    const job = await createAndWait({ url: site.url("/error", H.error), escalation: [{ engine: "http", attempts: 2, timeoutMs: 5000 }] })
    expect(job.status).toBe("failed")
    expect(job.result.classification).toBe("server_error")
    expect(job.result.httpStatus).toBe(500)
    expect(job.result.attempts.map((a: any) => [a.engine, a.classification])).toEqual([["http", "server_error"], ["http", "server_error"]])
    expect(job.attempts).toBe(2)
    expect(site.hits("/error") - before).toBe(2)
    // The error page the last attempt got is kept for inspection, but is no version of the page.
    const html = await api.get(`/v1/scraper/jobs/${job.id}/html`, key)
    expect(html.status).toBe(200)
    expect(html.text).toContain("Internal fixture error")
    // The result describes that content, as it does a done job's.
    expect(job.result.contentType).toBe(html.headers.get("content-type"))
    expect(job.result.bytes).toBe(Buffer.byteLength(html.text))
    const history = await api.get(`/v1/page-history?url=${encodeURIComponent(site.url("/error", H.error))}`, key)
    expect(history.json.data.items.map((v: any) => v.jobId)).not.toContain(job.id)
  })

  it("keeps a page history: newest first, changed flags, raw content, unified diff", async () => {
    // An identical refetch is not a change.
    const stable = site.url("/page?case=history")
    const s1 = await createAndWait({ url: stable })
    const s2 = await createAndWait({ url: stable })
    const st = await api.get(`/v1/page-history?url=${encodeURIComponent(stable)}`, key)
    expect(st.status).toBe(200)
    expect(st.json.code).toBe("200-ok")
    expect(st.json.data.pagination).toEqual({ offset: 0, limit: 50, total: 2, hasMore: false })
    const [sNew, sOld] = st.json.data.items
    expect(sNew.jobId).toBe(s2.id)
    expect(sOld.jobId).toBe(s1.id)
    expect(sNew.changed).toBe(false)
    expect(sNew.contentHash).toBe(sOld.contentHash)
    expect(sNew.size).toBe(Buffer.byteLength(ARTICLE_HTML))
    expect(sNew).toMatchObject({ url: stable, httpStatus: 200 })
    expect(Date.parse(sNew.fetchedAt)).toBeGreaterThanOrEqual(Date.parse(sOld.fetchedAt))
    // A fragment is never sent: the same page's timeline, and the version's url has none.
    const s3 = await createAndWait({ url: `${stable}#part` })
    const fragmentVersion = (await api.get(`/v1/page-history?url=${encodeURIComponent(`${stable}#part`)}&limit=1`, key)).json.data.items[0]
    expect(fragmentVersion).toMatchObject({ jobId: s3.id, url: stable, normalizedUrl: sNew.normalizedUrl, changed: false })

    // A page that changes on every fetch.
    const changing = site.url("/changing")
    const v0 = site.changingVersion()
    const c1 = await createAndWait({ url: changing })
    const c2 = await createAndWait({ url: changing })
    const c3 = await createAndWait({ url: changing })
    const tl = await api.get(`/v1/page-history?url=${encodeURIComponent(changing)}`, key)
    expect(tl.json.data.pagination.total).toBe(3)
    const items = tl.json.data.items as Array<any>
    expect(items.map((v) => v.jobId)).toEqual([c3.id, c2.id, c1.id])
    expect(items.map((v) => v.changed)).toEqual([true, true, true])
    expect(new Set(items.map((v) => v.contentHash)).size).toBe(3)

    // pagination of the timeline
    const p1 = await api.get(`/v1/page-history?url=${encodeURIComponent(changing)}&limit=1`, key)
    expect(p1.json.data.items).toHaveLength(1)
    expect(p1.json.data.items[0].id).toBe(items[0].id)
    expect(p1.json.data.pagination).toEqual({ offset: 0, limit: 1, total: 3, hasMore: true })
    const p3 = await api.get(`/v1/page-history?url=${encodeURIComponent(changing)}&offset=2&limit=1`, key)
    expect(p3.json.data.items[0].id).toBe(items[2].id)
    expect(p3.json.data.pagination.hasMore).toBe(false)

    // raw content of one version
    const raw = await fetch(`${server.baseUrl}/v1/page-history/${items[1].id}/content`, { headers: { "x-api-key": key } })
    expect(raw.status).toBe(200)
    expect(raw.headers.get("content-type")).toMatch(/^text\/html/)
    const rawText = await raw.text()
    expect(rawText).toContain(`Version number ${v0 + 2}`)

    // diff against the previous version
    const diff = await api.get(`/v1/page-history/${items[0].id}/diff`, key)
    expect(diff.status).toBe(200)
    expect(diff.json.data).toMatchObject({ versionId: items[0].id, previousVersionId: items[1].id, changed: true, binary: false, truncated: false })
    const text: string = diff.json.data.diff
    expect(text).toMatch(/^--- /m)
    expect(text).toMatch(/^\+\+\+ /m)
    expect(text).toMatch(/^@@ /m)
    expect(text).toMatch(new RegExp(`^-.*Version number ${v0 + 2}`, "m"))
    expect(text).toMatch(new RegExp(`^\\+.*Version number ${v0 + 3}`, "m"))
    expect(text).not.toMatch(/^[-+].*Stable line one/m)
    // text that is not HTML is diffed line by line as it is
    const plain = site.url("/changing.txt")
    await createAndWait({ url: plain })
    await createAndWait({ url: plain })
    const plainLatest = (await api.get(`/v1/page-history?url=${encodeURIComponent(plain)}`, key)).json.data.items[0]
    const plainDiff: string = (await api.get(`/v1/page-history/${plainLatest.id}/diff`, key)).json.data.diff
    expect(plainDiff.split("\n").filter((l) => /^[-+](?![-+]{2} )/.test(l))).toEqual([expect.stringMatching(/^-Version number \d+$/), expect.stringMatching(/^\+Version number \d+$/)])
    // bytes that came without a type are a page only when they are text: these are not
    const untyped = site.url("/changing.bin")
    await createAndWait({ url: untyped })
    const untypedJob = await createAndWait({ url: untyped })
    const untypedLatest = (await api.get(`/v1/page-history?url=${encodeURIComponent(untyped)}`, key)).json.data.items[0]
    expect(untypedLatest.contentType).toBeNull()
    expect((await api.get(`/v1/page-history/${untypedLatest.id}/diff`, key)).json.data).toMatchObject({ binary: true, diff: "", changed: true })
    for (const path of [`/v1/page-history/${untypedLatest.id}/content`, `/v1/scraper/jobs/${untypedJob.id}/html`]) {
      const served = await fetch(`${server.baseUrl}${path}`, { headers: { "x-api-key": key } })
      expect(served.status, path).toBe(200)
      expect(served.headers.get("content-type"), path).toBe("application/octet-stream")
      expect(new Uint8Array(await served.arrayBuffer())[0]).toBe(0x89)
    }
    expect(plainDiff).toMatch(/^ Stable line one\.$/m)
    // untyped text is served in the charset its <meta> names, as its diff reads it
    const cp1251Job = await createAndWait({ url: site.url("/untyped-cp1251") })
    const cp1251 = (await api.get(`/v1/page-history?url=${encodeURIComponent(site.url("/untyped-cp1251"))}`, key)).json.data.items[0]
    expect((await api.get(`/v1/page-history/${cp1251.id}/diff`, key)).json.data.diff).toContain("+\u041f\u0440\u0438\u0432\u0435\u0442")
    for (const path of [`/v1/page-history/${cp1251.id}/content`, `/v1/scraper/jobs/${cp1251Job.id}/html`]) {
      const served = await fetch(`${server.baseUrl}${path}`, { headers: { "x-api-key": key } })
      expect(served.headers.get("content-type"), path).toBe("text/html; charset=windows-1251")
      expect(new TextDecoder("windows-1251").decode(await served.arrayBuffer())).toContain("\u041f\u0440\u0438\u0432\u0435\u0442")
    }
    // the first version diffs against nothing
    const first = await api.get(`/v1/page-history/${items[2].id}/diff`, key)
    expect(first.json.data.previousVersionId).toBeNull()
    // unchanged refetch: an empty change set
    const same = await api.get(`/v1/page-history/${sNew.id}/diff`, key)
    expect(same.json.data.changed).toBe(false)
    expect(same.json.data.diff).not.toMatch(/^[-+](?![-+]{2} )/m)

    // unknown version, bad url
    expectError(await api.get(`/v1/page-history/pv_nope/content`, key), 404, "not_found")
    expectError(await api.get(`/v1/page-history/pv_nope/diff`, key), 404, "not_found")
    const none = await api.get(`/v1/page-history?url=${encodeURIComponent(site.url("/never-fetched"))}`, key)
    expect(none.json.data).toMatchObject({ items: [], pagination: { total: 0, hasMore: false } })
    expectError(await api.get(`/v1/page-history`, key), 400, "validation_error")
  })

  it("refuses a page-history timeline query whose url is not an absolute URL (400 invalid_filter)", async () => {
    for (const url of ["not-a-url", "", "ftp://a/b", `http://a/${"x".repeat(2048)}`]) {
      const bad = await api.get(`/v1/page-history?url=${encodeURIComponent(url)}`, key)
      expectError(bad, 400, "invalid_filter")
      expect(detailPaths(bad)).toEqual(["url"])
    }
  })

  it("creates in bulk: 201 all created, 207 partial, 422 invalid_bulk_body", async () => {
    const urls = [0, 1, 2].map((i) => site.url(`/page?case=bulk${i}`))
    const all = await api.post("/v1/scraper/jobs/bulk", { jobs: urls.map((url, i) => ({ url, priority: i })) }, key)
    expect(all.status, all.text).toBe(201)
    expect(all.json.code).toBe("201-created")
    expect(all.json.data).toMatchObject({ processed: true, summary: { total: 3, created: 3, failed: 0 }, failed: [] })
    expect(all.json.data.created.map((j: any) => [j.url, j.priority, j.status])).toEqual(urls.map((u, i) => [u, i, "queued"]))

    const mixed = await api.post("/v1/scraper/jobs/bulk", {
      jobs: [
        { url: site.url("/page?case=bulk-ok1") },
        { url: "file:///etc/passwd" },
        { url: "http://user:pw@127.0.0.1/" },
        { url: site.url("/page?case=bulk-ok2"), priority: 11 },
        { url: "ftp://127.0.0.1/x" },
        { url: site.url("/page?case=bulk-ok3") }
      ]
    }, key)
    expect(mixed.status, mixed.text).toBe(207)
    expect(mixed.json.code).toBe("207-partial_success")
    const d = mixed.json.data
    expect(d.processed).toBe(true)
    expect(d.summary).toEqual({ total: 6, created: 2, failed: 4 })
    expect(d.created.map((j: any) => j.url)).toEqual([site.url("/page?case=bulk-ok1"), site.url("/page?case=bulk-ok3")])
    expect(d.failed.map((f: any) => f.index)).toEqual([1, 2, 3, 4])
    expect(d.failed.map((f: any) => f.url)).toEqual(["file:///etc/passwd", "http://user:pw@127.0.0.1/", site.url("/page?case=bulk-ok2"), "ftp://127.0.0.1/x"])
    expect(d.failed[0].reason).toMatch(/unsafe_url/)
    expect(d.failed[1].reason).toMatch(/unsafe_url/)
    expect(d.failed[2].reason).toMatch(/validation_error/)
    expect(d.failed[2].reason).toMatch(/priority/)
    expect(d.failed[4 - 1].reason).toMatch(/unsafe_url/)
    for (const j of d.created) await waitTerminal(j.id)

    // One body, one verdict: an optional field given as null is absent in a bulk item as in a single job.
    const withNulls = { timeoutMs: null, priority: null, escalation: null, webhookUrl: null, webhookSecret: null }
    expect((await create({ url: site.url("/page?case=single-null"), ...withNulls })).status).toBe(201)
    const bulkNulls = await api.post("/v1/scraper/jobs/bulk", { jobs: [{ url: site.url("/page?case=bulk-null"), ...withNulls }] }, key)
    expect(bulkNulls.status, bulkNulls.text).toBe(201)
    expect(bulkNulls.json.data.created[0]).toMatchObject({ priority: 0 })

    const empty = await api.post("/v1/scraper/jobs/bulk", { jobs: [] }, key)
    expectError(empty, 422, "invalid_bulk_body")
    const over = await api.post("/v1/scraper/jobs/bulk", { jobs: Array.from({ length: 101 }, (_, i) => ({ url: site.url(`/page?over=${i}`) })) }, key)
    expectError(over, 422, "invalid_bulk_body")
    // nothing of an over-cap body was created
    const search = await api.post("/v1/scraper/jobs/search", { where: { url: { prefix: site.url("/page?over=") } } }, key)
    expect(search.json.data.pagination.total).toBe(0)
    // a body that is no list of jobs at all is malformed, a 400 as on every route, naming what is wrong
    for (const [body, paths] of [
      [{ jobs: "nope" }, ["jobs"]],
      [{ jobs: null }, ["jobs"]],
      [{}, ["jobs"]],
      [[{ url: site.url("/page?case=bare-array") }], [""]],
      [{ jobs: [{ url: site.url("/page?case=extra") }], extra: 1 }, ["extra"]],
      // malformed besides an empty list: the count is not its only fault
      [{ jobs: [], extra: 1 }, ["extra", "jobs"]]
    ] as const) {
      const res = await api.post("/v1/scraper/jobs/bulk", body, key)
      expectError(res, 400, "validation_error")
      expect(detailPaths(res), JSON.stringify(body)).toEqual(paths)
    }
    // ...however the route's path is spelled (a trailing slash is the route too)
    expectError(await api.post("/v1/scraper/jobs/bulk/", { jobs: "x" }, key), 400, "validation_error")
    expectError(await api.post("/v1/scraper/jobs/bulk/", { jobs: [] }, key), 422, "invalid_bulk_body")
    // a value that merely reads like a parse error is still that value's fault
    const wordy = await api.post("/v1/scraper/jobs/bulk", { jobs: "Expected a valid JSON body" }, key)
    expectError(wordy, 400, "validation_error")
    expect(detailPaths(wordy)).toEqual(["jobs"])
    const wordyItem = await api.post("/v1/scraper/jobs", { url: site.url("/page?case=wordy"), priority: "not valid JSON" }, key)
    expectError(wordyItem, 400, "validation_error")
    expect(wordyItem.json.error.details.map((d: any) => [d.path, d.code])).toEqual([["priority", "invalid_type"]])
    // a body that is not JSON is a malformed request, as everywhere
    expectError(await api.call("POST", "/v1/scraper/jobs/bulk", { key, raw: "{\"jobs\": [" }), 400, "validation_error")
  })

  it("honours Idempotency-Key: replayed response, mismatch, concurrent duplicates, bad keys", async () => {
    // A tenant of its own: its key's per-second share (84 at 5000 a minute) must not be spent by the
    // tests before it, as a fast machine did within one second.
    const key = (await api.createTenant({ credits: "1000.00" })).apiKey
    const url = site.url("/page?case=i1")
    const k1 = `idem-${Date.now()}`
    const first = await create({ url, priority: 3 }, key, { "idempotency-key": k1 })
    expect(first.status).toBe(201)
    const again = await create({ url, priority: 3 }, key, { "idempotency-key": k1 })
    expect(again.status).toBe(201)
    // the stored first response, byte for byte
    expect(again.text).toBe(first.text)
    expect(again.headers.get("content-type")).toBe(first.headers.get("content-type"))
    // An optional field given as null is the same request as one without it (webhookUrl included).
    for (const nulls of [{ webhookUrl: null }, { timeoutMs: null, escalation: null, screenshot: null }]) {
      const same = await create({ url, priority: 3, ...nulls }, key, { "idempotency-key": k1 })
      expect(same.text, JSON.stringify(nulls)).toBe(first.text)
    }
    const count = async (prefix: string) =>
      (await api.post("/v1/scraper/jobs/search", { where: { url: { prefix } } }, key)).json.data.pagination.total
    expect(await count(url)).toBe(1)

    const other = await create({ url, priority: 4 }, key, { "idempotency-key": k1 })
    expectError(other, 409, "idempotency_mismatch")
    expect(await count(url)).toBe(1)

    // keys are per tenant
    const t2 = await api.createTenant()
    const foreign = await create({ url, priority: 3 }, t2.apiKey, { "idempotency-key": k1 })
    expect(foreign.status).toBe(201)
    expect(foreign.json.data.id).not.toBe(first.json.data.id)

    // 10 concurrent duplicates: exactly one job
    const url2 = site.url("/page?case=i2")
    const k2 = `idem-conc-${Date.now()}`
    const results = await Promise.all(Array.from({ length: 10 }, () => create({ url: url2 }, key, { "idempotency-key": k2 })))
    expect(results.map((r) => r.status)).toEqual(Array(10).fill(201))
    expect(new Set(results.map((r) => r.json.data.id)).size).toBe(1)
    expect(await count(url2)).toBe(1)

    // bulk is idempotent too
    const k3 = `idem-bulk-${Date.now()}`
    const bulkBody = { jobs: [{ url: site.url("/page?case=i3") }] }
    const b1 = await api.call("POST", "/v1/scraper/jobs/bulk", { key, body: bulkBody, headers: { "idempotency-key": k3 } })
    const b2 = await api.call("POST", "/v1/scraper/jobs/bulk", { key, body: bulkBody, headers: { "idempotency-key": k3 } })
    expect(b1.status).toBe(201)
    expect(b2.json).toEqual(b1.json)
    expect(await count(site.url("/page?case=i3"))).toBe(1)

    expectError(
      await api.call("POST", "/v1/scraper/jobs/bulk", { key, body: { jobs: [{ url: site.url("/page?case=i5") }] }, headers: { "idempotency-key": k3 } }),
      409,
      "idempotency_mismatch"
    )

    // the same bulk body with its keys in another order is the same request; a body nested
    // thousands deep is refused whole before it is parsed (docs/api.md: at most 64 levels)
    const kOrder = `idem-bulk-order-${Date.now()}`
    const ordered = await api.call("POST", "/v1/scraper/jobs/bulk", {
      key, raw: `{"jobs":[{"url":${JSON.stringify(site.url("/page?case=i7"))},"priority":2}]}`, headers: { "idempotency-key": kOrder }
    })
    expect(ordered.status, ordered.text).toBe(201)
    const reordered = await api.call("POST", "/v1/scraper/jobs/bulk", {
      key, raw: `{"jobs":[{"priority":2,"url":${JSON.stringify(site.url("/page?case=i7"))}}]}`, headers: { "idempotency-key": kOrder }
    })
    expect(reordered.json).toEqual(ordered.json)
    const deep = await api.call("POST", "/v1/scraper/jobs/bulk", {
      key, raw: `{"jobs":[${"[".repeat(20_000)}${"]".repeat(20_000)},{"url":${JSON.stringify(site.url("/page?case=i8"))}}]}`,
      headers: { "idempotency-key": `idem-deep-${Date.now()}` }
    })
    expect(deep.status, deep.text).toBe(400)
    expect(deep.json.error.details.map((d: { code: string }) => d.code)).toEqual(["too_deep"])

    // ALLOW_PRIVATE_TARGETS (on for this server) lets loopback and private targets through, never
    // link-local (the cloud metadata address) or multicast; a webhook URL alike. Refused before any connection.
    for (const url of ["http://169.254.169.254/latest/meta-data/", "http://[fe80::1]/", "http://224.0.0.1/"]) {
      expectError(await create({ url }, key), 422, "unsafe_url")
      expectError(await create({ url: site.url("/page?case=meta"), webhookUrl: url }, key), 422, "unsafe_url")
    }

    // a refused request leaves its key free
    const k4 = `idem-free-${Date.now()}`
    const refused = await create({ url: "file:///etc/passwd" }, key, { "idempotency-key": k4 })
    expectError(refused, 422, "unsafe_url")
    const invalid = await create({ url: site.url("/page?case=i6"), priority: 99 }, key, { "idempotency-key": k4 })
    expectError(invalid, 400, "validation_error")
    const freed = await create({ url: site.url("/page?case=i6") }, key, { "idempotency-key": k4 })
    expect(freed.status, freed.text).toBe(201)

    // concurrent duplicates of a failing request: each meets the real error (the key is freed, and
    // a duplicate waiting on it runs itself), never a conflict
    const k5 = `idem-conc-fail-${Date.now()}`
    const failing = await Promise.all(Array.from({ length: 8 }, () => create({ url: "file:///etc/passwd" }, key, { "idempotency-key": k5 })))
    for (const r of failing) expectError(r, 422, "unsafe_url")

    // bounds of the key: 255 printable ASCII is fine, 256 or non-ASCII is not
    const ok255 = await create({ url: site.url("/page?case=i4") }, key, { "idempotency-key": "k".repeat(255) })
    expect(ok255.status).toBe(201)
    expectError(await create({ url }, key, { "idempotency-key": "k".repeat(256) }), 400, "invalid_idempotency_key")
    expectError(await create({ url }, key, { "idempotency-key": "clé-unique" }), 400, "invalid_idempotency_key")
    expectError(await create({ url }, key, { "idempotency-key": "tab\there" }), 400, "invalid_idempotency_key")
    const badBulk = await api.call("POST", "/v1/scraper/jobs/bulk", { key, body: bulkBody, headers: { "idempotency-key": "x".repeat(256) } })
    expectError(badBulk, 400, "invalid_idempotency_key")
    // two Idempotency-Key headers are not one key made of both (Node joins them as "a, b"); an
    // endpoint that reads no key ignores them
    const withTwoKeys = (method: string, path: string, body?: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = httpRequest(`${server.baseUrl}${path}`, { method }, (res) => {
          let text = ""
          res.on("data", (d) => (text += d))
          res.on("end", () => resolve({ status: res.statusCode!, body: text }))
        })
        req.setHeader("x-api-key", key)
        if (body !== undefined) req.setHeader("content-type", "application/json")
        req.setHeader("idempotency-key", [`twice-a-${Date.now()}`, `twice-b-${Date.now()}`])
        req.on("error", reject)
        req.end(body)
      })
    const twice = await withTwoKeys("POST", "/v1/scraper/jobs", JSON.stringify({ url }))
    expect(twice.status, twice.body).toBe(400)
    expect(JSON.parse(twice.body).code).toBe("invalid_idempotency_key")
    const listed = await withTwoKeys("GET", "/v1/scraper/jobs")
    expect(listed.status, listed.body).toBe(200)
    // a bad key is named along with the body's own faults, so that one answer lists everything
    const both = await create({}, key, { "idempotency-key": "k".repeat(256) })
    expectError(both, 400, "validation_error")
    expect(detailPaths(both)).toEqual(["Idempotency-Key", "url"])
    const bothBulk = await api.call("POST", "/v1/scraper/jobs/bulk", { key, body: { jobs: [] }, headers: { "idempotency-key": "tab\there" } })
    expectError(bothBulk, 422, "invalid_bulk_body")
    expect(detailPaths(bothBulk)).toEqual(["Idempotency-Key", "jobs"])
    // whatever spelling of the path the router takes, and however many other faults there are (it comes first)
    const spelled = await api.call("POST", "/v1/scraper/jobs/", { key, body: {}, headers: { "idempotency-key": "k".repeat(256) } })
    expect(detailPaths(spelled)).toEqual(["Idempotency-Key", "url"])
    const crowded = await create({ url, ...Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`f${i}`, i])) }, key, { "idempotency-key": "k".repeat(256) })
    expect(crowded.json.error.details[0].path).toBe("Idempotency-Key")
    expect(await count(url)).toBe(1)
    for (const r of [first, results[0]!, ok255, freed]) await waitTerminal(r.json.data.id, undefined, key)
  })

  it("validates every bound of the create body with detail paths", async () => {
    // Its own tenant: a burst of some thirty requests stays within one key's per-second rate limit.
    const own = (await api.createTenant()).apiKey
    const url = site.url("/page?case=bounds")
    const entry = { engine: "http", attempts: 1, timeoutMs: 5000 }
    const cases: Array<[Record<string, unknown>, Array<string>]> = [
      [{ url, priority: 11 }, ["priority"]],
      [{ url, priority: -1001 }, ["priority"]],
      [{ url, priority: 1.5 }, ["priority"]],
      [{ url, timeoutMs: 14_999 }, ["timeoutMs"]],
      [{ url, timeoutMs: 300_001 }, ["timeoutMs"]],
      [{ url, escalation: [] }, ["escalation"]],
      [{ url, escalation: Array(9).fill(entry) }, ["escalation"]],
      [{ url, escalation: [{ ...entry, attempts: 0 }] }, ["escalation.0.attempts"]],
      [{ url, escalation: [entry, { ...entry, attempts: 6 }] }, ["escalation.1.attempts"]],
      [{ url, escalation: [{ ...entry, timeoutMs: 999 }] }, ["escalation.0.timeoutMs"]],
      [{ url, escalation: [{ ...entry, timeoutMs: 180_001 }] }, ["escalation.0.timeoutMs"]],
      [{ url, escalation: [{ ...entry, engine: "curl" }] }, ["escalation.0.engine"]],
      [{ url, escalation: [{ engine: "http" }] }, ["escalation.0.attempts", "escalation.0.timeoutMs"]],
      [{ url, webhookSecret: "s".repeat(15) }, ["webhookSecret"]],
      // A value that breaks two checks (not whole, out of range) is one offending input: one detail.
      [{ url, priority: 11.5 }, ["priority"]],
      [{ url, timeoutMs: 300000.5 }, ["timeoutMs"]],
      [{ url, escalation: [{ ...entry, attempts: 5.5 }] }, ["escalation.0.attempts"]],
      [{ url, webhookSecret: "s".repeat(257) }, ["webhookSecret"]],
      [{ url, webhookUrl: url, webhookSecret: " ".repeat(16) }, ["webhookSecret"]],
      [{ url, webhookUrl: url, webhookSecret: "\t \n".repeat(8) }, ["webhookSecret"]],
      // a NUL cannot be stored, and a trailing one would sign as the secret without it
      [{ url, webhookUrl: url, webhookSecret: "supersecret-01234567\u0000" }, ["webhookSecret"]],
      [{ url: `${url}?q=${"a".repeat(2048)}` }, ["url"]],
      [{ url, webhookUrl: `${url}?q=${"a".repeat(2048)}` }, ["webhookUrl"]],
      // Within 2048 as written, not once percent-encoded (each é is six characters there).
      [{ url: `${url}&q=${"é".repeat(1000)}` }, ["url"]],
      [{ url, colour: "blue" }, ["colour"]],
      [{ priority: 1 }, ["url"]],
      [{ url: "not a url" }, ["url"]],
      [{ url: "" }, ["url"]],
      [{ url: "   " }, ["url"]],
      [{ url, webhookUrl: "" }, ["webhookUrl"]],
      // Malformed, not unsafe: the parser would quietly drop or encode these characters.
      [{ url: `${url}&q=a b` }, ["url"]],
      [{ url: `${url}&q=a\tb` }, ["url"]],
      [{ url, webhookUrl: `${url}&q=a\nb` }, ["webhookUrl"]],
      [{ url: `${url}&q=a\u0000b` }, ["url"]],
      // Nor fetched from another host: the parser would read part of these paths as the host.
      [{ url: url.replace("http://", "http:///") }, ["url"]],
      [{ url: url.replace("http://", "http:") }, ["url"]],
      [{ url: url.replace("http://", "http:\\\\") }, ["url"]],
      [{ url: url.replace(/\/page/, "\\page") }, ["url"]],
      [{ url, webhookUrl: url.replace("http://", "HTTP:/") }, ["webhookUrl"]],
      [{ url: site.url("/page").replace(/:\d+\//, ":0/") }, ["url"]],
      [{ url, webhookUrl: "http://127.0.0.1:0/hook" }, ["webhookUrl"]],
      [{ url, screenshot: { format: "gif" } }, ["screenshot.format"]],
      // every offending path at once
      [{ url, priority: 11, timeoutMs: 1, webhookSecret: "short", extra: true }, ["extra", "priority", "timeoutMs", "webhookSecret"]],
      // a rule across fields is named with the schema's faults
      [{ url: 1, webhookSecret: "s".repeat(16) }, ["url", "webhookSecret"]]
    ]
    for (const [body, paths] of cases) {
      const res = await create(body, own)
      expectError(res, 400, "validation_error")
      // Exactly the offending paths: each named once, none invented.
      expect(detailPaths(res).sort(), `${JSON.stringify(body)} → ${JSON.stringify(res.json.error.details)}`).toEqual([...paths].sort())
      for (const d of res.json.error.details) expect(Object.keys(d).sort()).toEqual(["code", "message", "path"])
      // A refused secret is not sent back.
      if (typeof body.webhookSecret === "string") expect(res.text).not.toContain(body.webhookSecret)
    }
    // the spec bounds priority only above (≤ 10): a negative one is a low priority
    for (const priority of [-1000, -1, 10]) {
      const ok = await create({ url, priority }, own)
      expect([ok.status, ok.json.data?.priority], String(priority)).toEqual([201, priority])
    }
    // a secret without a webhook to sign is a mistake worth telling
    const orphan = await create({ url, webhookSecret: "s".repeat(16) }, own)
    expectError(orphan, 400, "validation_error")
    expect(detailPaths(orphan)).toEqual(["webhookSecret"])
    const unknown = await create({ url, colour: "blue" }, own)
    expect(unknown.json.error.details.find((d: any) => d.path === "colour")?.code).toBe("unknown_field")
    // a value of the wrong JSON type is named as such
    const wrongType = await create({ url, priority: "5", screenshot: 1 }, own)
    expect(wrongType.json.error.details.map((d: any) => [d.path, d.code]).sort()).toEqual([["priority", "invalid_type"], ["screenshot", "invalid_type"]])
    // a string that is none of the choices is a wrong value, and the error quotes a short one back
    const wrongValue = await create({ url, screenshot: { format: "gif" }, escalation: [{ engine: "curl", attempts: 1, timeoutMs: 1000 }] }, own)
    expect(wrongValue.json.error.details.map((d: any) => [d.path, d.code]).sort()).toEqual([["escalation.0.engine", "invalid_value"], ["screenshot.format", "invalid_value"]])
    expect(wrongValue.json.error.details.find((d: any) => d.path === "screenshot.format").message).toContain('"gif"')
    // ...but not a long one: an error answer does not grow with the input
    const longValue = await create({ url, screenshot: { format: "g".repeat(100_000) } }, own)
    expect(longValue.status).toBe(400)
    expect(longValue.text.length).toBeLessThan(2000)
    // ...nor with its path, on a route that does not exist
    const longPath = await api.get(`/v1/scraper/jobs/${"a".repeat(12_000)}/nowhere`, own)
    expectError(longPath, 404, "not_found")
    expect(longPath.text.length).toBeLessThan(1000)
    // a secret's bounds count characters, not UTF-16 units (an emoji is one character, two units)
    expectError(await create({ url, webhookUrl: site.url("/page?case=hook"), webhookSecret: "\u{1F600}".repeat(8) }, own), 400, "validation_error")
    expect((await create({ url, webhookUrl: site.url("/page?case=hook"), webhookSecret: "\u{1F600}".repeat(256) }, own)).status).toBe(201)
    expectError(await create({ url, webhookUrl: site.url("/page?case=hook"), webhookSecret: "\u{1F600}".repeat(257) }, own), 400, "validation_error")
    // the 2048 bound is on the URL, not the blanks around it, which are trimmed
    const longUrl = site.url("/page?case=") + "u".repeat(2048 - site.url("/page?case=").length)
    expect((await create({ url: ` ${longUrl} ` }, own)).status).toBe(201)
    expectError(await create({ url: ` ${longUrl}u ` }, own), 400, "validation_error")

    // the edges themselves are accepted
    const edges = await create({
      url,
      priority: 10,
      timeoutMs: 15_000,
      webhookUrl: site.url("/page?case=edges-hook"),
      webhookSecret: "s".repeat(16),
      escalation: [
        { engine: "http", attempts: 1, timeoutMs: 1000 },
        ...Array(6).fill({ engine: "http", attempts: 5, timeoutMs: 180_000 }),
        { engine: "alternate", attempts: 5, timeoutMs: 180_000 }
      ]
    }, own)
    expect(edges.status, edges.text).toBe(201)
    expect(edges.json.data.priority).toBe(10)
    const top = await create({ url, priority: 0, timeoutMs: 300_000 }, own)
    expect(top.status, top.text).toBe(201)
    await waitTerminal(edges.json.data.id, undefined, own)
    await waitTerminal(top.json.data.id, undefined, own)

    // malformed JSON and unauthenticated
    expectError(await api.call("POST", "/v1/scraper/jobs", { key: own, raw: "{nope" }), 400, "validation_error")
    expectError(await api.post("/v1/scraper/jobs", { url }), 401, "unauthorized")
  })

  describe("list and search", () => {
    let lk: string
    let jobs: Array<any>
    beforeAll(async () => {
      const t = await api.createTenant()
      lk = t.apiKey
      // five jobs with priorities 0..4 on the list host, one more on the main host
      const bulk = await api.post("/v1/scraper/jobs/bulk", {
        jobs: [0, 1, 2, 3, 4].map((p) => ({ url: site.url(`/page?list=${p}`, H.list), priority: p }))
      }, lk)
      expect(bulk.status).toBe(201)
      const extra = await create({ url: site.url("/missing?list=x"), priority: 7 }, lk)
      expect(extra.status).toBe(201)
      jobs = []
      for (const j of [...bulk.json.data.created, extra.json.data]) jobs.push(await waitTerminal(j.id, 45_000, lk))
    })

    // These tests send many requests on one key: one refused by its per-second rate limit is sent again.
    const unlimited = async <R extends { status: number }>(send: () => Promise<R>): Promise<R> => {
      for (;;) {
        const res = await send()
        if (res.status !== 429) return res
        await sleep(1_000)
      }
    }
    const list = (q: string) => unlimited(() => api.get(`/v1/scraper/jobs${q}`, lk))
    const search = (body: unknown) => unlimited(() => api.post("/v1/scraper/jobs/search", body, lk))

    it("lists with pagination edges and hasMore exactly right", async () => {
      const all = await list("")
      expect(all.status).toBe(200)
      expect(all.json.data.pagination).toEqual({ offset: 0, limit: 50, total: 6, hasMore: false })
      // default sort createdAt desc, id desc
      const created = all.json.data.items.map((j: any) => Date.parse(j.createdAt))
      expect([...created].sort((a, b) => b - a)).toEqual(created)
      expect(all.json.data.sort).toEqual([{ field: "createdAt", dir: "desc" }, { field: "id", dir: "desc" }])

      const one = await list("?limit=1")
      expect(one.json.data.items).toHaveLength(1)
      expect(one.json.data.pagination).toEqual({ offset: 0, limit: 1, total: 6, hasMore: true })
      // `take`, the legacy name of `limit`, is honoured; with a different `limit` it is refused.
      const taken = await list("?take=1")
      expect(taken.json.data.pagination).toEqual({ offset: 0, limit: 1, total: 6, hasMore: true })
      expect(taken.json.data.items.map((j: any) => j.id)).toEqual(one.json.data.items.map((j: any) => j.id))
      const both = await list("?take=1&limit=2")
      expectError(both, 400, "validation_error")
      expect(detailPaths(both)).toEqual(["take"])
      expectError(await list("?take=0"), 400, "validation_error")
      // Answered on its own, before the sort and filters, as a bad limit is.
      expect(detailPaths(await list("?take=1&limit=2&sort=bogus:asc&status=nope"))).toEqual(["take"])
      const last = await list("?offset=5&limit=1")
      expect(last.json.data.items).toHaveLength(1)
      expect(last.json.data.pagination).toEqual({ offset: 5, limit: 1, total: 6, hasMore: false })
      const atTotal = await list("?offset=6")
      expect(atTotal.json.data.items).toEqual([])
      expect(atTotal.json.data.pagination).toEqual({ offset: 6, limit: 50, total: 6, hasMore: false })
      const beyond = await list("?offset=60&limit=5")
      expect(beyond.json.data.items).toEqual([])
      expect(beyond.json.data.pagination.hasMore).toBe(false)
      expect((await list("?offset=4&limit=2")).json.data.pagination.hasMore).toBe(false)
      expect((await list("?offset=3&limit=2")).json.data.pagination.hasMore).toBe(true)

      // pages never overlap or skip
      const seen: Array<string> = []
      for (let off = 0; off < 6; off += 2) seen.push(...(await list(`?offset=${off}&limit=2&sort=priority:asc`)).json.data.items.map((j: any) => j.id))
      expect(new Set(seen).size).toBe(6)
      expect(seen).toEqual((await list("?sort=priority:asc")).json.data.items.map((j: any) => j.id))

      // numbers in decimal digits only
      for (const q of ["?limit=0", "?limit=201", "?offset=-1", "?limit=abc", "?limit=0x10", "?offset=1e3", "?limit=%2010", "?offset=", "?limit=", "?offset=1.0"]) {
        const bad = await list(q)
        expectError(bad, 400, "validation_error")
        expect(detailPaths(bad), q).toEqual([q.slice(1).split("=")[0]])
      }
      expect((await list("?offset=0002&limit=010")).json.data.pagination).toMatchObject({ offset: 2, limit: 10 })
    })

    it("sorts and filters the list; refuses unknown sort fields and statuses", async () => {
      const asc = await list("?sort=priority:asc")
      expect(asc.json.data.items.map((j: any) => j.priority)).toEqual([0, 1, 2, 3, 4, 7])
      expect(asc.json.data.sort[0]).toEqual({ field: "priority", dir: "asc" })
      const desc = await list("?sort=priority:desc,id:asc")
      expect(desc.json.data.items.map((j: any) => j.priority)).toEqual([7, 4, 3, 2, 1, 0])
      const byId = await list("?sort=id:asc")
      const ids = byId.json.data.items.map((j: any) => j.id)
      expect([...ids].sort()).toEqual(ids)

      expectError(await list("?sort=url:asc"), 400, "invalid_sort_field")
      expectError(await list("?sort=priority:sideways"), 400, "validation_error")
      // A field named twice: the second term could never order anything.
      const twice = await list("?sort=priority,priority:desc")
      expectError(twice, 400, "validation_error")
      expect(detailPaths(twice)).toEqual(["sort.1"])
      const badStatus = await list("?status=bogus")
      expectError(badStatus, 400, "invalid_filter")
      expect(detailPaths(badStatus)).toEqual(["status"])
      expectError(await list("?status=done,bogus"), 400, "invalid_filter")
      // Every fault is named: several of one kind keep its code, faults of several kinds are a validation error.
      const twoSorts = await list("?sort=url:asc,colour:desc")
      expectError(twoSorts, 400, "invalid_sort_field")
      expect(detailPaths(twoSorts)).toEqual(["sort.0", "sort.1"])
      const mixed = await list("?sort=url:asc&status=nope")
      expectError(mixed, 400, "validation_error")
      expect(detailPaths(mixed)).toEqual(["sort.0", "status"])
      expect((await list("?status=done")).json.data.pagination.total).toBe(6)
      expect((await list("?status=queued,claimed")).json.data.pagination.total).toBe(0)
      expect((await list("?status=failed,dead")).json.data.items).toEqual([])
    })

    it("searches with where, sort and pagination", async () => {
      const all = await search({})
      expect(all.status).toBe(200)
      expect(all.json.data.pagination).toEqual({ offset: 0, limit: 50, total: 6, hasMore: false })

      expect((await search({ where: { status: ["done"] } })).json.data.pagination.total).toBe(6)
      expect((await search({ where: { status: ["queued", "claimed", "failed"] } })).json.data.pagination.total).toBe(0)

      const prefix = await search({ where: { url: { prefix: site.url("/page?list=", H.list) } } })
      expect(prefix.json.data.pagination.total).toBe(5)
      expect((await search({ where: { url: { prefix: site.url("/missing", H.main) } } })).json.data.items.map((j: any) => j.priority)).toEqual([7])

      expect((await search({ where: { domainId: "127.0.0.6" } })).json.data.pagination.total).toBe(5)
      expect((await search({ where: { domainId: "127.0.0.1" } })).json.data.pagination.total).toBe(1)
      expect((await search({ where: { domainId: "example.com" } })).json.data.pagination.total).toBe(0)

      const pr = await search({ where: { priority: { gte: 1, lte: 3 } }, sort: [{ field: "priority", dir: "asc" }] })
      expect(pr.json.data.items.map((j: any) => j.priority)).toEqual([1, 2, 3])
      // The sort echoed is the order applied, its tie-breaker included; an empty one is the default.
      expect(pr.json.data.sort).toEqual([{ field: "priority", dir: "asc" }, { field: "id", dir: "desc" }])
      expect((await search({ sort: [] })).json.data.sort).toEqual([{ field: "createdAt", dir: "desc" }, { field: "id", dir: "desc" }])
      // Oldest first breaks ties oldest first too: the bulk's jobs (one statement, so one createdAt) come in the order given.
      const bulkIds = jobs.slice(0, 5).map((j) => j.id)
      for (const oldest of [await search({ sort: [{ field: "createdAt", dir: "asc" }] }), await list("?sort=createdAt:asc")]) {
        expect(oldest.json.data.sort).toEqual([{ field: "createdAt", dir: "asc" }, { field: "id", dir: "asc" }])
        expect(oldest.json.data.items.slice(0, 5).map((j: any) => j.id)).toEqual(bulkIds)
      }

      const times = jobs.map((j) => Date.parse(j.createdAt)).sort((a, b) => a - b)
      const min = new Date(times[0]!).toISOString()
      const after = new Date(times[times.length - 1]! + 1).toISOString()
      expect((await search({ where: { createdAt: { gte: min, lt: after } } })).json.data.pagination.total).toBe(6)
      expect((await search({ where: { createdAt: { lt: min } } })).json.data.pagination.total).toBe(0)
      expect((await search({ where: { createdAt: { gte: after } } })).json.data.pagination.total).toBe(0)

      // combined filters, multi-field sort, pagination
      const combo = await search({
        where: { status: ["done"], domainId: "127.0.0.6", priority: { gte: 1 } },
        sort: [{ field: "status", dir: "asc" }, { field: "priority", dir: "desc" }],
        pagination: { offset: 1, limit: 2 }
      })
      expect(combo.json.data.items.map((j: any) => j.priority)).toEqual([3, 2])
      expect(combo.json.data.pagination).toEqual({ offset: 1, limit: 2, total: 4, hasMore: true })
      const tail = await search({ where: { domainId: "127.0.0.6" }, sort: [{ field: "priority", dir: "asc" }], pagination: { offset: 3, limit: 2 } })
      expect(tail.json.data.items.map((j: any) => j.priority)).toEqual([3, 4])
      expect(tail.json.data.pagination.hasMore).toBe(false)
      const atTotal = await search({ pagination: { offset: 6, limit: 1 } })
      expect(atTotal.json.data.items).toEqual([])
      expect(atTotal.json.data.pagination).toEqual({ offset: 6, limit: 1, total: 6, hasMore: false })

      // errors
      const badSort = await search({ sort: [{ field: "url", dir: "asc" }] })
      expectError(badSort, 400, "invalid_sort_field")
      expect(detailPaths(badSort)).toEqual(["sort.0.field"])
      const badDate = await search({ where: { createdAt: { gte: "yesterday" } } })
      expectError(badDate, 400, "invalid_filter")
      expect(detailPaths(badDate)).toEqual(["where.createdAt.gte"])
      // Strings Date.parse takes but that are no real instant, or that PostgreSQL cannot read.
      for (const bad of ["2020", "1", "2020-02-30T00:00:00Z", "2021-02-29", "0000-01-01T00:00:00Z", "-000001-01-01T00:00:00Z",
        "+275760-09-13T00:00:00.000Z", "12/31/2019 10:00", "2020-01-01T24:00:00Z", "2020-01-01T10:00:00+15:00"]) {
        const res = await search({ where: { createdAt: { lt: bad } } })
        expectError(res, 400, "invalid_filter")
        expect(detailPaths(res)).toEqual(["where.createdAt.lt"])
      }
      // Date only, offsets and fractions are real instants: nothing created after 9999 or before 0001.
      expect((await search({ where: { createdAt: { gte: "2024-02-29" } } })).json.data.pagination.total).toBe(6)
      expect((await search({ where: { createdAt: { lt: "0001-01-01T14:00:00.123456+14:00" } } })).json.data.pagination.total).toBe(0)
      expect((await search({ where: { createdAt: { gte: "9999-12-31T09:59:59-14:00" } } })).json.data.pagination.total).toBe(0)
      // ...but not when the offset carries them out of those years.
      expectError(await search({ where: { createdAt: { lt: "0001-01-01T00:00:00+01:00" } } }), 400, "invalid_filter")
      expectError(await search({ where: { createdAt: { gte: "9999-12-31T23:00:00-01:00" } } }), 400, "invalid_filter")
      // A NUL character cannot be stored, so no filter holding one can match: 400, not a database error.
      expectError(await search({ where: { url: { prefix: "http://a\u0000" } } }), 400, "invalid_filter")
      expectError(await search({ where: { domainId: "a\u0000b" } }), 400, "invalid_filter")
      expectError(await list("?sort=createdAt:desc,id:desc,priority:asc,attempts:asc,status:asc,url:asc"), 400, "validation_error")
    })

    it("answers a bad search body with invalid_filter for its where, validation_error otherwise, with paths", async () => {
      // A key of its own: these requests on top of the others above would pass one key's per-second limit.
      const own = (await api.createTenant()).apiKey
      const search = (body: unknown) => api.post("/v1/scraper/jobs/search", body, own)
      const list = (q: string) => api.get(`/v1/scraper/jobs${q}`, own)
      // A bad filter in the body is invalid_filter, as a bad status in the list's query is.
      const badStatus = await search({ where: { status: ["bogus"] } })
      expectError(badStatus, 400, "invalid_filter")
      expect(detailPaths(badStatus)).toEqual(["where.status.0"])
      expectError(await search({ where: { colour: "x" } }), 400, "invalid_filter")
      expectError(await search({ where: { priority: { gte: 1.5 } } }), 400, "invalid_filter")
      // Bounds the priority column cannot hold are a bad filter, not a database error.
      const tooLarge = await search({ where: { priority: { gte: 0, lte: 3_000_000_000 } } })
      expectError(tooLarge, 400, "invalid_filter")
      expect(detailPaths(tooLarge)).toEqual(["where.priority.lte"])
      expect((await search({ where: { priority: { gte: -(2 ** 31), lte: 2 ** 31 - 1 } } })).status).toBe(200)
      // Other bounds of the body: validation_error, with the path of each.
      for (const [body, path] of [
        [{ pagination: { limit: 201 } }, "pagination.limit"],
        [{ pagination: { limit: 0 } }, "pagination.limit"],
        [{ pagination: { offset: -1 } }, "pagination.offset"],
        [{ pagination: { offset: 1.5 } }, "pagination.offset"],
        [{ sort: [{ field: "priority", dir: "sideways" }] }, "sort.0.dir"],
        [{ sort: Array.from({ length: 6 }, () => ({ field: "id", dir: "asc" })) }, "sort"]
      ] as const) {
        const res = await search(body)
        expectError(res, 400, "validation_error")
        expect(detailPaths(res), JSON.stringify(body)).toEqual([path])
      }
      // A filter that mixes in another error is a validation error as a whole, naming every path.
      expectError(await search({ where: { colour: "x" }, pagination: { limit: 0 } }), 400, "validation_error")
      const mixed = await search({ where: { createdAt: { gte: "bad" } }, pagination: { limit: 0 } })
      expectError(mixed, 400, "validation_error")
      expect(detailPaths(mixed).sort()).toEqual(["pagination.limit", "where.createdAt.gte"])
      const filterAndSort = await search({ where: { status: ["x"] }, sort: [{ field: "url", dir: "asc" }] })
      expectError(filterAndSort, 400, "validation_error")
      expect(detailPaths(filterAndSort).sort()).toEqual(["sort.0.field", "where.status.0"])
      // Unsortable fields alone are invalid_sort_field, each named; a field of the wrong type is not a field name.
      const twoBad = await search({ sort: [{ field: "url", dir: "asc" }, { field: "id", dir: "asc" }, { field: "colour", dir: "desc" }] })
      expectError(twoBad, 400, "invalid_sort_field")
      expect(detailPaths(twoBad)).toEqual(["sort.0.field", "sort.2.field"])
      expectError(await search({ sort: [{ field: 3, dir: "asc" }] }), 400, "validation_error")
      expectError(await search({ sort: [{ field: "priority", dir: "asc" }, { field: "priority", dir: "desc" }] }), 400, "validation_error")
      // A string outside a set of choices is a wrong value; another JSON type is a wrong type.
      const wrongValue = await search({ where: { status: ["bogus"] }, sort: [{ field: "id", dir: "up" }] })
      expect(wrongValue.json.error.details.map((d: any) => [d.path, d.code]).sort()).toEqual([["sort.0.dir", "invalid_value"], ["where.status.0", "invalid_value"]])
      const wrongType = await search({ where: { status: [1] } })
      expect(wrongType.json.error.details.map((d: any) => [d.path, d.code])).toEqual([["where.status.0", "invalid_type"]])
      // The largest page is allowed.
      expect((await search({ pagination: { limit: 200 } })).json.data.pagination.limit).toBe(200)
      expect((await list("?limit=200")).json.data.pagination.limit).toBe(200)
    })
  })

  it("replays a done job as a new job, and refuses to replay a running one", async () => {
    const url = site.url("/page?case=replay")
    const original = await createAndWait({ url, priority: 2 })
    const replay = await api.post(`/v1/scraper/jobs/${original.id}/replay`, undefined, key)
    expect(replay.status, replay.text).toBe(201)
    expect(replay.json.code).toBe("201-created")
    expect(replay.json.data.id).not.toBe(original.id)
    expect(replay.json.data).toMatchObject({ url, status: "queued", priority: 2, tenantId, replayOf: original.id })
    const replayed = await waitTerminal(replay.json.data.id)
    expect(replayed.status).toBe("done")
    expect(replayed.replayOf).toBe(original.id)

    // a job that is still running
    const slow = await create({
      url: site.url("/slow?ms=30000&case=replay", H.replay),
      timeoutMs: 60_000,
      escalation: [{ engine: "http", attempts: 1, timeoutMs: 45_000 }]
    })
    expect(slow.status).toBe(201)
    const early = await api.post(`/v1/scraper/jobs/${slow.json.data.id}/replay`, undefined, key)
    expect(early.status).toBe(409)
    expect(early.json.code).toMatch(/^cannot_replay_(queued|claimed)$/)
    await waitFor(slow.json.data.id, (j) => j.status === "claimed")
    const claimed = await api.post(`/v1/scraper/jobs/${slow.json.data.id}/replay`, undefined, key)
    expectError(claimed, 409, "cannot_replay_claimed")
    expect((await api.post(`/v1/scraper/jobs/${slow.json.data.id}/cancel`, undefined, key)).status).toBe(200)
    expectError(await api.post(`/v1/scraper/jobs/job_nope/replay`, undefined, key), 404, "not_found")
  })

  it("shows the attempts a running job has made so far", async () => {
    const res = await create({
      url: site.url("/slow?ms=30000&case=progress", H.waiting),
      timeoutMs: 60_000,
      escalation: [{ engine: "http", attempts: 5, timeoutMs: 1000 }]
    })
    expect(res.status).toBe(201)
    const running = await waitFor(res.json.data.id, (j) => j.status === "claimed" && j.attempts >= 2, 20_000)
    expect(running.result).toBeNull()
    expect((await api.post(`/v1/scraper/jobs/${res.json.data.id}/cancel`, undefined, key)).status).toBe(200)
  })

  it("cancels a running job: it ends dead with classification cancelled; cancel again is 409", async () => {
    const stream = await openStream(server.baseUrl, key)
    await stream.until(() => stream.connected(), 10_000)
    const before = site.hits("/slow")
    const res = await create({
      url: site.url("/slow?ms=40000&case=cancel", H.cancel),
      timeoutMs: 60_000,
      escalation: [{ engine: "http", attempts: 1, timeoutMs: 50_000 }]
    })
    expect(res.status).toBe(201)
    const id = res.json.data.id
    await waitFor(id, (j) => j.status === "claimed")
    // the fetch is under way at the fixture
    const deadline = Date.now() + 10_000
    while (site.hits("/slow") === before && Date.now() < deadline) await sleep(50)
    expect(site.hits("/slow")).toBeGreaterThan(before)

    const cancel = await api.post(`/v1/scraper/jobs/${id}/cancel`, undefined, key)
    expect(cancel.status, cancel.text).toBe(200)
    expect(cancel.json.data).toMatchObject({ id, status: "dead", cancelled: true })
    expect(Number.isNaN(Date.parse(cancel.json.data.finishedAt))).toBe(false)
    const job = await getJob(id)
    expect(job.status).toBe("dead")
    expect(job.result.classification).toBe("cancelled")

    // the aborted crawl does not overwrite the outcome, but records the attempt it had under way
    const later = await waitFor(id, (j) => j.attempts === 1, 10_000)
    expect(later.status).toBe("dead")
    expect(later.result.classification).toBe("cancelled")
    expect(later.finishedAt).toBe(job.finishedAt)
    expect(later.result.attempts).toHaveLength(1)
    expect(later.result.attempts[0]).toMatchObject({ engine: "http", classification: "cancelled" })
    expect(later.result.startedWith).toMatchObject({ engine: "http" })

    // exactly one job.dead event, with classification cancelled
    await stream.until((es) => es.some((e) => e.event === "job.dead" && e.data.id === id))
    await stream.close()
    const mine = stream.events.filter((e) => e.data.id === id)
    expect(mine.map((e) => e.event)).toEqual(["job.created", "job.claimed", "job.dead"])
    expect(mine[2]!.data).toMatchObject({ status: "dead", classification: "cancelled" })

    expectError(await api.post(`/v1/scraper/jobs/${id}/cancel`, undefined, key), 409, "cannot_cancel_dead")
    const done = await createAndWait({ url: site.url("/page?case=cancel-done") })
    expectError(await api.post(`/v1/scraper/jobs/${done.id}/cancel`, undefined, key), 409, "cannot_cancel_done")
    expect((await getJob(done.id)).status).toBe("done")
    expectError(await api.post(`/v1/scraper/jobs/job_nope/cancel`, undefined, key), 404, "not_found")

    // a dead (cancelled) job is terminal: it may be replayed
    const replay = await api.post(`/v1/scraper/jobs/${id}/replay`, undefined, key)
    expect(replay.status).toBe(201)
    expect((await api.post(`/v1/scraper/jobs/${replay.json.data.id}/cancel`, undefined, key)).status).toBe(200)
  })

  // Whether a run has ended is only seen in the cluster's message table, which the embedded database
  // keeps inside the server process: this one runs on PostgreSQL.
  it.skipIf(backend.name !== "postgres")("ends the run of a job cancelled while it waits for its domain's slot at once, not when its turn comes", async () => {
    const slow = { timeoutMs: 60_000, escalation: [{ engine: "http", attempts: 1, timeoutMs: 50_000 }] }
    // Two slow jobs take both of the domain's slots (config/crawl.json perDomainConcurrency: 2): a job
    // is claimed only when its fetch begins. (The fixture's hit count is not used: a /slow job of an
    // earlier test may still make an attempt meanwhile.)
    const holders = await Promise.all([1, 2].map((i) => create({ url: site.url(`/slow?ms=20000&case=holder-${i}`, H.waiting), ...slow })))
    for (const h of holders) await waitFor(h.json.data.id, (j) => j.status === "claimed", 10_000)
    const waiting = await create({ url: site.url("/page?case=waiting", H.waiting) })
    const id = waiting.json.data.id
    const runs = () => pgQuery<{ processed: boolean }>(serverDbUrl!, "SELECT processed FROM cluster_messages WHERE entity_type = 'Job' AND entity_id = $1 AND tag = 'Run'", [id])
    const runEnded = async () => (await runs()).every((m) => m.processed)
    const handedOn = Date.now() + 10_000
    while ((await runs()).length === 0 && Date.now() < handedOn) await sleep(50)
    await sleep(500)
    expect(await runEnded()).toBe(false)
    // It waits queued: a job is claimed only when its fetch can begin.
    expect((await getJob(id)).status).toBe("queued")
    expect((await api.post(`/v1/scraper/jobs/${id}/cancel`, undefined, key)).status).toBe(200)
    // Its run ends within seconds, while the holders still have some 15 s to go.
    const until = Date.now() + 5_000
    while (!(await runEnded()) && Date.now() < until) await sleep(100)
    expect(await runEnded()).toBe(true)
    expect(holders.every((h) => h.status === 201)).toBe(true)
    for (const h of holders) expect((await getJob(h.json.data.id)).status).toBe("claimed")
    for (const h of holders) await api.post(`/v1/scraper/jobs/${h.json.data.id}/cancel`, undefined, key)
    expect(await getJob(id)).toMatchObject({ status: "dead", result: { classification: "cancelled" } })
  })

  it.skipIf(!hasChromium)("a job that asks for a screenshot and gives no escalation starts at the browser, and gets one", async () => {
    const job = await createAndWait({ url: site.url("/page?case=shot-default", H.main), screenshot: true })
    expect(job.status, JSON.stringify(job.result)).toBe("done")
    expect(job.result).toMatchObject({ engine: "brave", classification: "ok", screenshot: { taken: true, reason: null } })
    expect(job.result.attempts.map((a: any) => a.engine)).toEqual(["brave"])
    expect(job.result.startedWith.engine).toBe("brave")
    expect(job.result.startedWith.reason).toContain("a screenshot was asked for")
    const shot = await fetch(`${server.baseUrl}/v1/scraper/jobs/${job.id}/screenshot`, { headers: { "x-api-key": key } })
    expect([shot.status, shot.headers.get("content-type")]).toEqual([200, "image/png"])
    expect(Buffer.from(await shot.arrayBuffer()).subarray(0, 8).equals(PNG_MAGIC)).toBe(true)
  })

  it.skipIf(!hasChromium)("escalates a blocked page from http to brave, with a PNG screenshot", async () => {
    // The default plan's steps, given: a screenshot job without an escalation would start at brave.
    const job = await createAndWait({
      url: site.url("/blocked", H.blocked),
      screenshot: true,
      escalation: [{ engine: "http", attempts: 2, timeoutMs: 15_000 }, { engine: "brave", attempts: 1, timeoutMs: 60_000 }]
    })
    expect(job.status, JSON.stringify(job.result)).toBe("done")
    const r = job.result
    expect(r.engine).toBe("brave")
    expect(r.classification).toBe("ok")
    expect(r.httpStatus).toBe(200)
    expect(r.attempts[0]).toMatchObject({ engine: "http", classification: "blocked", httpStatus: 403 })
    expect(r.attempts[r.attempts.length - 1]).toMatchObject({ engine: "brave", classification: "ok" })
    expect(r.attempts.filter((a: any) => a.engine === "http").every((a: any) => a.classification === "blocked")).toBe(true)
    expect(r.screenshot).toEqual({ taken: true, reason: null })
    expect(job.attempts).toBe(r.attempts.length)

    const html = await api.get(`/v1/scraper/jobs/${job.id}/html`, key)
    expect(html.text).toContain(BLOCKED_CONTENT_MARKER)
    const shot = await fetch(`${server.baseUrl}/v1/scraper/jobs/${job.id}/screenshot`, { headers: { "x-api-key": key } })
    expect(shot.status).toBe(200)
    expect(shot.headers.get("content-type")).toBe("image/png")
    const bytes = Buffer.from(await shot.arrayBuffer())
    expect(bytes.length).toBeGreaterThan(100)
    expect(bytes.subarray(0, 8).equals(PNG_MAGIC)).toBe(true)
  })

  it.skipIf(!hasChromium)("escalates a page its scripts build from http (a shell, empty) to brave, which shows its text", async () => {
    const job = await createAndWait({ url: site.url("/script-built", H.scripted) })
    expect(job.status, JSON.stringify(job.result)).toBe("done")
    expect(job.result.attempts.map((a: any) => [a.engine, a.classification])).toEqual([["http", "empty"], ["brave", "ok"]])
    expect(job.result.attempts[0].error).toMatch(/scripts/)
    expect((await api.get(`/v1/scraper/jobs/${job.id}/html`, key)).text).toContain(SCRIPT_BUILT_MARKER)
  })

  it.skipIf(!hasChromium)("ends an empty 404 fetched by the browser done/not_found with its status and no content (the browser shows its own error page)", async () => {
    const url = site.url("/missing-empty?case=browser", H.empty)
    const job = await createAndWait({ url, escalation: [{ engine: "brave", attempts: 1, timeoutMs: 20_000 }] })
    expect(job.status, JSON.stringify(job.result)).toBe("done")
    expect(job.result).toMatchObject({ classification: "not_found", httpStatus: 404, engine: "brave", bytes: 0, contentType: null })
    expectError(await api.get(`/v1/scraper/jobs/${job.id}/html`, key), 404, "not_found")
    // No content, so no version of the page.
    expect((await api.get(`/v1/page-history?url=${encodeURIComponent(url)}`, key)).json.data.pagination.total).toBe(0)
  })

  it("ends an empty page failed/empty on every engine, and does not send the domain's next job to the browser for it", async () => {
    const job = await createAndWait({ url: site.url("/empty", H.empty) })
    expect(job.status, JSON.stringify(job.result)).toBe("failed")
    expect(job.result.classification).toBe("empty")
    expect(job.result.attempts.map((a: any) => a.classification).every((c: string) => c === "empty")).toBe(true)
    if (hasChromium) expect(job.result.attempts.map((a: any) => a.engine)).toContain("brave")
    // The result describes what /html serves: the http engine kept no bytes, so there is none (a
    // browser keeps the markup of the empty document it shows).
    const httpOnly = await createAndWait({ url: site.url("/empty?case=http-only", H.empty), escalation: [{ engine: "http", attempts: 1, timeoutMs: 5000 }] })
    expect(httpOnly.result).toMatchObject({ bytes: 0, contentType: null })
    for (const j of [job, httpOnly]) {
      const served = await api.get(`/v1/scraper/jobs/${j.id}/html`, key)
      if (j.result.bytes === 0) expectError(served, 404, "not_found")
      else expect([served.status, Buffer.byteLength(served.text), served.headers.get("content-type")]).toEqual([200, j.result.bytes, j.result.contentType])
    }
    // An empty URL says nothing about the engines on its domain: the next job starts at http.
    const next = await createAndWait({ url: site.url("/page?case=after-empty", H.empty) })
    expect(next.status).toBe("done")
    expect(next.result.startedWith.engine).toBe("http")
    expect(next.result.engine).toBe("http")
  })

  it("ends an open event stream soon after its key is revoked", async () => {
    const t = await api.createTenant()
    const roles = (await api.get("/v1/iam/roles", t.apiKey)).json.data.items as Array<{ id: string; name: string }>
    const made = await api.post(`/v1/iam/identities/${t.ownerIdentityId}/api-keys`, { name: "stream", roleId: roles.find((r) => r.name === "read")!.id }, t.apiKey)
    expect(made.status, made.text).toBe(201)
    const stream = await openStream(server.baseUrl, made.json.data.rawKey)
    try {
      await stream.until(() => stream.connected(), 10_000)
      const revoked = await api.call("DELETE", `/v1/iam/identities/${t.ownerIdentityId}/api-keys/${made.json.data.id}`, { key: t.apiKey })
      expect(revoked.status).toBe(200)
      // The stream re-checks its key every 5 s; it must not carry the tenant's events on after that.
      const ended = await Promise.race([stream.ended.then(() => "ended"), sleep(15_000).then(() => "still open")])
      expect(ended).toBe("ended")
    } finally {
      await stream.close()
    }
  })

  it("keeps a session's stream (bearer or cookie) open while the session holds, and ends it after logout", async () => {
    const email = `sse-${Date.now()}@example.com`
    const t = await api.createTenant({ ownerEmail: email, ownerPassword: "correct horse battery" })
    const login = await api.post("/v1/iam/auth/login", { email, password: "correct horse battery" })
    expect(login.status, login.text).toBe(200)
    const token = login.json.data.sessionId as string
    const bearer = await openStream(server.baseUrl, { authorization: `Bearer ${token}` })
    const cookie = await openStream(server.baseUrl, { cookie: `trawl_session=${token}` })
    try {
      for (const s of [bearer, cookie]) {
        expect(s.status).toBe(200)
        await s.until(() => s.connected(), 10_000)
      }
      // past two of the stream's 5 s re-checks, both still carry the tenant's events
      await sleep(11_000)
      const job = (await create({ url: site.url("/page?case=sse-session") }, t.apiKey)).json.data.id
      for (const s of [bearer, cookie]) await s.until((es) => es.some((e) => e.event === "job.done" && e.data.id === job))
      const out = await api.call("POST", "/v1/iam/auth/logout", { headers: { authorization: `Bearer ${token}` } })
      expect(out.status, out.text).toBe(200)
      for (const s of [bearer, cookie]) {
        const ended = await Promise.race([s.ended.then(() => "ended"), sleep(15_000).then(() => "still open")])
        expect(ended).toBe("ended")
      }
    } finally {
      await bearer.close()
      await cookie.close()
    }
  })

  it("streams each tenant only its own events, and resumes with Last-Event-ID", async () => {
    const a = await api.createTenant()
    const b = await api.createTenant()
    const sa = await openStream(server.baseUrl, a.apiKey)
    const sb = await openStream(server.baseUrl, b.apiKey)
    try {
      expect(sa.status).toBe(200)
      expect(sa.contentType).toMatch(/^text\/event-stream/)
      await sa.until(() => sa.connected(), 10_000)
      await sb.until(() => sb.connected(), 10_000)
      const ja = (await create({ url: site.url("/page?case=sse-a") }, a.apiKey)).json.data.id
      const jb = (await create({ url: site.url("/page?case=sse-b") }, b.apiKey)).json.data.id
      await sa.until((es) => es.some((e) => e.event === "job.done" && e.data.id === ja))
      await sb.until((es) => es.some((e) => e.event === "job.done" && e.data.id === jb))

      for (const [s, t, j] of [[sa, a, ja], [sb, b, jb]] as const) {
        expect(s.events.map((e) => e.event)).toEqual(["job.created", "job.claimed", "job.done"])
        for (const e of s.events) {
          expect(e.data).toMatchObject({ id: j, tenantId: t.tenantId })
          expect(typeof e.data.status).toBe("string")
          expect(Number.isNaN(Date.parse(e.data.at))).toBe(false)
        }
        expect(s.events.map((e) => e.data.status)).toEqual(["queued", "claimed", "done"])
        const ids = s.events.map((e) => BigInt(e.id))
        expect(ids[0]! < ids[1]! && ids[1]! < ids[2]!).toBe(true)
      }
    } finally {
      await sa.close()
      await sb.close()
    }

    // resume after the first event: exactly the later ones
    const createdId = sa.events[0]!.id
    const resumed = await openStream(server.baseUrl, a.apiKey, createdId)
    try {
      await resumed.until((es) => es.length >= 2, 10_000)
      await sleep(750)
      expect(resumed.events.map((e) => [e.id, e.event])).toEqual(sa.events.slice(1).map((e) => [e.id, e.event]))
    } finally {
      await resumed.close()
    }
    // resuming from the last event gives nothing
    const none = await openStream(server.baseUrl, a.apiKey, sa.events[2]!.id)
    try {
      await none.until(() => none.connected(), 10_000)
      await sleep(750)
      expect(none.events).toEqual([])
    } finally {
      await none.close()
    }
    // events past their retention (deleted here, as the retention sweep would): the gap is said, then the rest comes
    if (backend.name === "postgres") {
      await pgQuery(serverDbUrl!, "DELETE FROM events WHERE tenant_id = $1 AND seq <= $2", [a.tenantId, sa.events[1]!.id])
      const late = await openStream(server.baseUrl, a.apiKey, sa.events[0]!.id)
      try {
        await late.until((es) => es.length >= 1, 10_000)
        expect(late.events.map((e) => e.id)).toEqual([sa.events[2]!.id])
        expect(late.comments).toContain(`events ${sa.events[1]!.id} to ${sa.events[1]!.id} have expired (events are kept 48 hours)`)
      } finally {
        await late.close()
      }
      // every event past the resume point expired: said at once, not only when the next event comes
      await pgQuery(serverDbUrl!, "DELETE FROM events WHERE tenant_id = $1 AND seq <= $2", [a.tenantId, sa.events[2]!.id])
      const gone = await openStream(server.baseUrl, a.apiKey, sa.events[0]!.id)
      try {
        const said = `events ${sa.events[1]!.id} to ${sa.events[2]!.id} have expired (events are kept 48 hours)`
        await gone.until(() => gone.comments.includes(said), 10_000)
        expect(gone.events).toEqual([])
      } finally {
        await gone.close()
      }
    }
    // an id the tenant never reached resumes from now, rather than waiting until the sequence gets there
    // (also one of more digits than any 64-bit sequence holds)
    const ahead = await openStream(server.baseUrl, a.apiKey, "99999999999999999999999")
    try {
      await ahead.until(() => ahead.connected(), 10_000)
      const later = (await create({ url: site.url("/page?case=sse-ahead") }, a.apiKey)).json.data.id
      await ahead.until((es) => es.some((e) => e.event === "job.done" && e.data.id === later))
      expect(ahead.events.map((e) => e.event)).toEqual(["job.created", "job.claimed", "job.done"])
    } finally {
      await ahead.close()
    }
    const bad = await api.call("GET", "/v1/scraper/events", { key: a.apiKey, headers: { "last-event-id": "abc" } })
    expectError(bad, 400, "validation_error")
    expectError(await api.get("/v1/scraper/events"), 401, "unauthorized")
  })

  it("holds at most 10 event streams of a tenant on a node, however the path is spelled (429 beyond)", async () => {
    const t = await api.createTenant()
    const other = await api.createTenant()
    // Spellings the router takes are streams like any other: watched, and counted.
    const spellings = ["/v1/scraper/events", "/v1/scraper/events/"]
    const open = await Promise.all(Array.from({ length: 10 }, (_, i) => openStream(server.baseUrl, t.apiKey, undefined, spellings[i % spellings.length])))
    try {
      for (const s of open) await s.until(() => s.connected(), 10_000)
      const refused = await api.get("/v1/scraper/events", t.apiKey)
      expectError(refused, 429, "rate_limited")
      expect(refused.headers.get("retry-after")).toBe("5")
      const elsewhere = await openStream(server.baseUrl, other.apiKey)
      await elsewhere.until(() => elsewhere.connected(), 10_000)
      await elsewhere.close()
      // A closed stream gives its place back.
      await open.pop()!.close()
      let again: Awaited<ReturnType<typeof openStream>> | undefined
      for (let tries = 0; !again && tries < 50; tries++) {
        const s = await openStream(server.baseUrl, t.apiKey)
        if (s.status === 200) again = s
        else {
          await s.close()
          await new Promise((r) => setTimeout(r, 100))
        }
      }
      expect(again).toBeDefined()
      await again!.until(() => again!.connected(), 10_000)
      await again!.close()
    } finally {
      await Promise.all(open.map((s) => s.close()))
    }
  })

  it("delivers every event live, the same as a replay from the log, under concurrent jobs", async () => {
    const BURST = 30
    const t = await api.createTenant()
    const live = await openStream(server.baseUrl, t.apiKey)
    try {
      await live.until(() => live.connected(), 10_000)
      const bulk = await api.post("/v1/scraper/jobs/bulk", {
        jobs: Array.from({ length: BURST }, (_, i) => ({ url: site.url(`/page?case=sse-burst-${i}`, i % HOSTS.length) }))
      }, t.apiKey)
      expect(bulk.status).toBe(201)
      const ids = bulk.json.data.created.map((j: any) => j.id)
      for (const id of ids) await waitTerminal(id, 45_000, t.apiKey)
      await live.until((es) => es.filter((e) => e.event === "job.done").length >= BURST, 10_000).catch(() => undefined)
      await sleep(500)
    } finally {
      await live.close()
    }
    const replay = await openStream(server.baseUrl, t.apiKey, "0")
    try {
      await replay.until((es) => es.length >= 3 * BURST, 10_000).catch(() => undefined)
      await sleep(500)
    } finally {
      await replay.close()
    }
    const perJob = new Map<string, Array<string>>()
    for (const e of replay.events) perJob.set(e.data.id, [...(perJob.get(e.data.id) ?? []), e.event])
    const odd = [...perJob].filter(([, evs]) => evs.join() !== "job.created,job.claimed,job.done")
    expect(odd, "each job's logged events are created, claimed, done").toEqual([])
    expect(replay.events).toHaveLength(3 * BURST)
    const liveIds = live.events.map((e) => `${e.id} ${e.event} ${e.data.id}`)
    const logIds = replay.events.map((e) => `${e.id} ${e.event} ${e.data.id}`)
    const missing = logIds.filter((x) => !liveIds.includes(x))
    const outOfOrder = live.events.filter((e, i) => i > 0 && BigInt(e.id) < BigInt(live.events[i - 1]!.id)).length
    expect(missing, `${missing.length} of ${logIds.length} events never delivered live (${live.events.length} delivered, ${outOfOrder} out of order); first missing: ${missing.slice(0, 5).join(" | ")}`).toEqual([])
    expect(liveIds).toEqual(logIds)
  })

  it("hides another tenant's job on every job route (404)", async () => {
    const mine = await createAndWait({ url: site.url("/page?case=isolation") })
    const other = await api.createTenant()
    const ok = other.apiKey
    const routes: Array<[string, string]> = [
      ["GET", `/v1/scraper/jobs/${mine.id}`],
      ["GET", `/v1/scraper/jobs/${mine.id}/html`],
      ["GET", `/v1/scraper/jobs/${mine.id}/screenshot`],
      ["POST", `/v1/scraper/jobs/${mine.id}/replay`],
      ["POST", `/v1/scraper/jobs/${mine.id}/cancel`]
    ]
    for (const [method, path] of routes) {
      const res = await api.call(method, path, { key: ok })
      expectError(res, 404, "not_found")
      // An id with a NUL character names nothing either (the database could not even compare it).
      expectError(await api.call(method, path.replace(mine.id, "a%00b"), { key }), 404, "not_found")
    }
    expectError(await api.get("/v1/page-history/%00/content", key), 404, "not_found")
    const nulQuery = await api.get("/v1/scraper/jobs?limit=%00&offset=0&status=%00x", key)
    expectError(nulQuery, 400, "validation_error")
    expect(detailPaths(nulQuery)).toEqual(["limit", "status"])
    // ...once the caller is known: without a valid key, every one of them is a 401
    for (const path of ["/v1/page-history/%00/content", "/v1/scraper/jobs?limit=%00", "/v1/scraper/events?x=%00"]) {
      expectError(await api.get(path, undefined), 401, "unauthorized")
      expectError(await api.get(path, "trawl_" + "A".repeat(43)), 401, "unauthorized")
    }
    // A NUL in a search filter's text is a bad filter, named by its path.
    const nulFilter = await api.post("/v1/scraper/jobs/search", { where: { url: { prefix: "http://a/\u0000" }, domainId: "x\u0000" } }, key)
    expectError(nulFilter, 400, "invalid_filter")
    expect(detailPaths(nulFilter)).toEqual(["where.domainId", "where.url.prefix"])
    // page history of my page is invisible to the other tenant
    const tl = await api.get(`/v1/page-history?url=${encodeURIComponent(mine.url)}`, key)
    const version = tl.json.data.items[0]
    expect(version.jobId).toBe(mine.id)
    expectError(await api.get(`/v1/page-history/${version.id}/content`, ok), 404, "not_found")
    expectError(await api.get(`/v1/page-history/${version.id}/diff`, ok), 404, "not_found")
    const theirs = await api.get(`/v1/page-history?url=${encodeURIComponent(mine.url)}`, ok)
    expect(theirs.json.data.pagination.total).toBe(0)
    // nor in their list or search
    expect((await api.get("/v1/scraper/jobs", ok)).json.data.pagination.total).toBe(0)
    expect((await api.post("/v1/scraper/jobs/search", { where: { url: { prefix: mine.url } } }, ok)).json.data.pagination.total).toBe(0)
    // and it still exists for me, untouched
    expect((await getJob(mine.id)).status).toBe("done")
  })
})

describe("shutdown", () => {
  it("ends open event streams when the node is asked to stop, instead of waiting out the server's grace period", async () => {
    const server = await startServer({})
    try {
      expect(server.output()).not.toContain("ALLOW_PRIVATE_TARGETS")
      const api = client(server.baseUrl)
      const t = await api.createTenant()
      const stream = await openStream(server.baseUrl, t.apiKey)
      for (let i = 0; i < 200 && !stream.connected(); i++) await sleep(50)
      expect(stream.connected()).toBe(true)
      const exited = new Promise<number | null>((resolve) => server.process.once("exit", (code) => resolve(code)))
      const asked = Date.now()
      server.process.kill("SIGTERM")
      await stream.ended
      const code = await Promise.race([exited, sleep(15_000).then(() => "still running" as const)])
      // Without draining, the open stream held the process for the server's grace period (about 20 s).
      expect(code, server.output()).not.toBe("still running")
      expect(Date.now() - asked).toBeLessThan(10_000)
    } finally {
      await server.stop("SIGKILL")
    }
  }, 60_000)
})
