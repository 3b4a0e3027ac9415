import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { verifyWebhookSignature } from "../src/webhooks/signing.ts"
import { client, INTERNAL_TOKEN, type RunningServer, startServer } from "./support/server-process.ts"
import { until } from "./support/until.ts"

interface Received {
  readonly at: number
  readonly headers: IncomingHttpHeaders
  readonly raw: Buffer
}

/** A loopback receiver whose answers are scripted per call. */
const receiver = async (answer: (n: number) => { status: number; delayMs?: number; body?: string }) => {
  const received: Array<Received> = []
  const server: Server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c) => chunks.push(c))
    req.on("end", () => {
      received.push({ at: Date.now(), headers: req.headers, raw: Buffer.concat(chunks) })
      const { status, delayMs = 0, body } = answer(received.length)
      setTimeout(() => {
        res.writeHead(status, { "content-type": "text/plain" })
        res.end(body ?? (status >= 400 ? "nope ".repeat(2000) : "thanks"))
      }, delayMs)
    })
  })
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()))
  const port = (server.address() as { port: number }).port
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    // Trawl keeps delivery connections alive (and may still be retrying): drop them on close.
    close: () => new Promise<void>((r) => {
      server.close(() => r())
      server.closeAllConnections()
    })
  }
}

/** A page to crawl, on loopback. */
const site = async () => {
  const server = createServer((req, res) => {
    res.writeHead(200, { "content-type": "text/html" })
    res.end(`<html><head><title>t</title></head><body><p>page ${req.url}</p></body></html>`)
  })
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()))
  return { base: `http://127.0.0.1:${(server.address() as { port: number }).port}`, close: () => new Promise<void>((r) => server.close(() => r())) }
}


describe("webhook deliveries over HTTP", () => {
  let server: RunningServer
  let api: ReturnType<typeof client>
  let pages: Awaited<ReturnType<typeof site>>
  const receivers: Array<{ close: () => Promise<void> }> = []

  beforeAll(async () => {
    pages = await site()
    // The retry schedule is scaled down 1000× here: 30 s becomes 30 ms.
    server = await startServer({ ALLOW_PRIVATE_TARGETS: "true", WEBHOOK_RETRY_SCALE: "0.001" })
    api = client(server.baseUrl)
  })
  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((r) => r.close()))
  })
  afterAll(async () => {
    await server?.stop()
    await pages?.close()
  })

  it("sends exactly the described headers and body, signed with the given secret", async () => {
    const hook = await receiver(() => ({ status: 200 }))
    receivers.push(hook)
    const t = await api.createTenant()
    const secret = "given-secret-0123456789"
    const created = await api.post("/v1/scraper/jobs", { url: `${pages.base}/a`, webhookUrl: hook.url, webhookSecret: secret }, t.apiKey)
    expect(created.status).toBe(201)
    expect(created.json.data.webhookSecret).toBeUndefined()
    const got = await until("delivery", () => hook.received[0])
    const h = got.headers
    expect(h["content-type"]).toBe("application/json")
    expect(h["user-agent"]).toBe("service-webhook/1.0")
    expect(h["x-service-webhook-version"]).toBe("1")
    expect(h["x-service-jobid"]).toBe(created.json.data.id)
    expect(h["x-service-timestamp"]).toMatch(/^\d{10}$/)
    expect(Math.abs(Number(h["x-service-timestamp"]) - Date.now() / 1000)).toBeLessThan(60)
    expect(h["x-service-signature"]).toMatch(/^sha256=[0-9a-f]{64}$/)
    expect(h["x-service-delivery-id"]).toMatch(/^whd_/)
    expect(h["webhook-id"]).toBe(h["x-service-delivery-id"])
    expect(h["webhook-signature"]).toMatch(/^v1,/)
    const body = JSON.parse(got.raw.toString("utf8"))
    expect(Object.keys(body)).toEqual(["jobId", "status", "httpStatus", "finalUrl", "classification", "durationMs", "requestId", "deliveredAt"])
    expect(body).toMatchObject({ jobId: created.json.data.id, status: "done", httpStatus: 200, finalUrl: `${pages.base}/a`, classification: "ok" })
    expect(body.requestId).toBe(created.headers.get("x-request-id"))
    expect(Number.isNaN(Date.parse(body.deliveredAt))).toBe(false)
    const verified = verifyWebhookSignature({ rawBody: got.raw, headers: h as Record<string, string>, secret })
    expect(verified).toMatchObject({ ok: true, deliveryId: h["x-service-delivery-id"] })
    // A tampered body or another secret does not verify.
    expect(verifyWebhookSignature({ rawBody: got.raw.toString().replace("done", "dead"), headers: h as Record<string, string>, secret }).ok).toBe(false)
    expect(verifyWebhookSignature({ rawBody: got.raw, headers: h as Record<string, string>, secret: secret + "x" }).ok).toBe(false)
  })

  it("generates a secret when none is given, shows it once, and signs with it", async () => {
    const hook = await receiver(() => ({ status: 204 }))
    receivers.push(hook)
    const t = await api.createTenant()
    const created = await api.post("/v1/scraper/jobs", { url: `${pages.base}/b`, webhookUrl: hook.url }, t.apiKey)
    const secret = created.json.data.webhookSecret as string
    expect(secret.length).toBeGreaterThanOrEqual(43)
    const again = await api.get(`/v1/scraper/jobs/${created.json.data.id}`, t.apiKey)
    expect(JSON.stringify(again.json)).not.toContain(secret)
    const got = await until("delivery", () => hook.received[0])
    expect(verifyWebhookSignature({ rawBody: got.raw, headers: got.headers as Record<string, string>, secret }).ok).toBe(true)
  })

  it("retries a receiver that answers 500 twice, and the log shows every attempt", async () => {
    // The first answer takes 1.5 s: an attempt's time is when it was sent, not when it was recorded.
    const hook = await receiver((n) => ({ status: n <= 2 ? 500 : 200, delayMs: n === 1 ? 1500 : 0 }))
    receivers.push(hook)
    const t = await api.createTenant()
    const created = await api.post("/v1/scraper/jobs", { url: `${pages.base}/c`, webhookUrl: hook.url }, t.apiKey)
    await until("third attempt", () => hook.received.length >= 3 ? true : undefined)
    const ids = new Set(hook.received.map((r) => r.headers["x-service-delivery-id"]))
    expect(ids.size).toBe(1)
    const log = await until("delivered log", async () => {
      const res = await api.get(`/v1/scraper/jobs/${created.json.data.id}/webhook-deliveries`, t.apiKey)
      return res.json.data.items[0]?.status === "delivered" ? res.json.data.items[0] : undefined
    })
    expect(log.attempts.map((a: any) => a.httpStatus)).toEqual([500, 500, 200])
    expect(log.attempts[0].responseBody.length).toBeLessThanOrEqual(4096)
    expect(log.attempts[0].durationMs).toBeGreaterThanOrEqual(1400)
    expect(Math.abs(Date.parse(log.attempts[0].at) - hook.received[0]!.at)).toBeLessThan(700)
    expect(log.nextAttemptAt).toBeNull()
    await new Promise((r) => setTimeout(r, 500))
    expect(hook.received).toHaveLength(3)
    // The log is a list like any other: paged, with its bounds checked.
    const path = `/v1/scraper/jobs/${created.json.data.id}/webhook-deliveries`
    expect((await api.get(path, t.apiKey)).json.data.pagination).toEqual({ offset: 0, limit: 50, total: 1, hasMore: false })
    expect((await api.get(`${path}?limit=1&offset=1`, t.apiKey)).json.data).toEqual({ items: [], pagination: { offset: 1, limit: 1, total: 1, hasMore: false } })
    for (const bad of ["limit=abc", "limit=0", "limit=201", "offset=-1"]) {
      const res = await api.get(`${path}?${bad}`, t.apiKey)
      expect(res.status, bad).toBe(400)
      expect(res.json.code, bad).toBe("validation_error")
    }
    // Another tenant cannot see the log.
    const other = await api.createTenant()
    expect((await api.get(`/v1/scraper/jobs/${created.json.data.id}/webhook-deliveries`, other.apiKey)).status).toBe(404)
  })

  it("records answers holding a NUL byte (as U+FFFD) and goes on by the schedule: no resend storm", async () => {
    const hook = await receiver((n) => (n === 1 ? { status: 500, body: "bad\u0000answer" } : { status: 200, body: "ok\u0000done" }))
    receivers.push(hook)
    const t = await api.createTenant()
    const created = await api.post("/v1/scraper/jobs", { url: `${pages.base}/nul`, webhookUrl: hook.url }, t.apiKey)
    const log = await until("delivered log", async () => {
      const res = await api.get(`/v1/scraper/jobs/${created.json.data.id}/webhook-deliveries`, t.apiKey)
      return res.json.data.items[0]?.status === "delivered" ? res.json.data.items[0] : undefined
    })
    expect(log.attempts.map((a: any) => [a.httpStatus, a.responseBody])).toEqual([[500, "bad\ufffdanswer"], [200, "ok\ufffddone"]])
    await new Promise((r) => setTimeout(r, 1000))
    // An answer that could not be recorded had the delivery sent again and again, past the schedule.
    expect(hook.received).toHaveLength(2)
  })

  it("retries a receiver whose 2xx answer does not complete in time (its body stalls)", async () => {
    // The first answer sends 200 and part of its body, then nothing: the attempt times out after 10 s.
    let calls = 0
    const stalling = createServer((req, res) => {
      req.resume()
      calls++
      if (calls === 1) {
        res.writeHead(200, { "content-length": "100" })
        res.write("partial")
        return
      }
      res.writeHead(200).end("ok")
    })
    await new Promise<void>((resolve) => stalling.listen(0, "127.0.0.1", resolve))
    receivers.push({ close: () => new Promise<void>((resolve) => { stalling.closeAllConnections(); stalling.close(() => resolve()) }) })
    const t = await api.createTenant()
    const created = await api.post("/v1/scraper/jobs", {
      url: `${pages.base}/stall`,
      webhookUrl: `http://127.0.0.1:${(stalling.address() as { port: number }).port}/hook`
    }, t.apiKey)
    expect(created.status).toBe(201)
    const log = await until("delivered after the stalled answer", async () => {
      const res = await api.get(`/v1/scraper/jobs/${created.json.data.id}/webhook-deliveries`, t.apiKey)
      return res.json.data.items[0]?.status === "delivered" ? res.json.data.items[0] : undefined
    }, 40_000)
    expect(log.attempts.map((a: any) => [a.httpStatus, a.error])).toEqual([[200, "timeout"], [200, null]])
  }, 60_000)

  it("counts distinct webhook URLs of jobs and extractions against webhooks.endpoints.total, also within a bulk and in parallel", async () => {
    const admin = (await api.call("POST", "/internal/v1/internal-admins", { token: INTERNAL_TOKEN, body: { email: `quota-${Date.now()}@trawl.dev` } })).json.data.apiKey
    const limitTo = async (tenantId: string, limit: number) =>
      expect((await api.call("PUT", `/v1/admin/tenants/${tenantId}/quotas/webhooks.endpoints.total`, { key: admin, body: { limit } })).status).toBe(200)
    const hookUrl = (n: number) => `http://127.0.0.1:9/hook-${n}` // nothing listens: deliveries just fail and retry
    const job = (n: number, hook: number) => ({ url: `${pages.base}/q${n}`, webhookUrl: hookUrl(hook) })

    // within one bulk request: the first two new URLs fit, the others are refused item by item
    const a = await api.createTenant()
    await limitTo(a.tenantId, 2)
    const bulk = await api.post("/v1/scraper/jobs/bulk", { jobs: [job(1, 1), job(2, 2), job(3, 1), job(4, 3), job(5, 4)] }, a.apiKey)
    expect(bulk.status, bulk.text).toBe(207)
    expect(bulk.json.data.summary).toEqual({ total: 5, created: 3, failed: 2 })
    expect(bulk.json.data.failed.map((f: any) => f.reason.split(":")[0])).toEqual(["quota_exceeded", "quota_exceeded"])
    expect((await api.post("/v1/scraper/jobs", job(6, 2), a.apiKey)).status).toBe(201)
    const over = await api.post("/v1/scraper/jobs", job(7, 5), a.apiKey)
    expect(over.status).toBe(429)
    expect(over.json.code).toBe("quota_exceeded")
    expect(over.json.error.details[0].path).toBe("webhookUrl")

    // in parallel: one new URL of five wins the last place
    const b = await api.createTenant()
    await limitTo(b.tenantId, 1)
    const racing = await Promise.all([1, 2, 3, 4, 5].map((n) => api.post("/v1/scraper/jobs", job(10 + n, 10 + n), b.apiKey)))
    expect(racing.map((r) => r.status).sort()).toEqual([201, 429, 429, 429, 429])

    // extractions' URLs count too, and a URL already counted stays usable by either
    const c = await api.createTenant()
    await limitTo(c.tenantId, 1)
    const extraction = await api.post("/v1/extractor/extractions", { type: "article", input: `<h1>Quota ${Date.now()}</h1><p>text</p>`, webhookUrl: hookUrl(20) }, c.apiKey)
    expect(extraction.status, extraction.text).toBe(201)
    expect((await api.post("/v1/scraper/jobs", job(21, 21), c.apiKey)).status).toBe(429)
    expect((await api.post("/v1/scraper/jobs", job(22, 20), c.apiKey)).status).toBe(201)
    // spellings of one URL are one endpoint, stored in its one form
    for (const spelling of [` ${hookUrl(20)}`, hookUrl(20).replace("http://", "HTTP://"), hookUrl(20).replace(":9/", ":9/./")]) {
      const res = await api.post("/v1/scraper/jobs", { url: `${pages.base}/q23`, webhookUrl: spelling }, c.apiKey)
      expect(res.status, `${spelling}: ${res.text}`).toBe(201)
    }

    // a request refused for another reason takes no place: a bad jobId, a full concurrent-job quota
    const d = await api.createTenant()
    await limitTo(d.tenantId, 1)
    const badJob = await api.post("/v1/extractor/extractions", { type: "article", jobId: "job_00000000000000000000000000", webhookUrl: hookUrl(30) }, d.apiKey)
    expect(badJob.status, badJob.text).toBe(422)
    expect((await api.call("PUT", `/v1/admin/tenants/${d.tenantId}/quotas/scraper.jobs.concurrent`, { key: admin, body: { limit: 0 } })).status).toBe(200)
    const noSlot = await api.post("/v1/scraper/jobs", job(31, 31), d.apiKey)
    expect(noSlot.status, noSlot.text).toBe(429)
    expect(noSlot.json.code).toBe("concurrent_limit_exceeded")
    expect((await api.call("PUT", `/v1/admin/tenants/${d.tenantId}/quotas/scraper.jobs.concurrent`, { key: admin, body: { limit: 50 } })).status).toBe(200)
    const first = await api.post("/v1/scraper/jobs", job(32, 32), d.apiKey)
    expect(first.status, first.text).toBe(201)
  })

  it("lets a super-admin redeliver, with the same payload and a fresh signature, and refuses a tenant owner", async () => {
    const hook = await receiver(() => ({ status: 200 }))
    receivers.push(hook)
    const t = await api.createTenant()
    const secret = "redeliver-secret-0123456789"
    const created = await api.post("/v1/scraper/jobs", { url: `${pages.base}/d`, webhookUrl: hook.url, webhookSecret: secret }, t.apiKey)
    const first = await until("delivery", () => hook.received[0])
    const deliveryId = first.headers["x-service-delivery-id"] as string
    const owner = await api.post(`/v1/scraper/webhooks/${deliveryId}/redeliver`, {}, t.apiKey)
    expect(owner.status).toBe(403)
    const admin = await api.call("POST", "/internal/v1/internal-admins", { token: INTERNAL_TOKEN, body: { email: `ops-${Date.now()}@trawl.dev` } })
    await new Promise((r) => setTimeout(r, 1100)) // a new second, so the timestamp is fresh
    const redo = await api.post(`/v1/scraper/webhooks/${deliveryId}/redeliver`, {}, admin.json.data.apiKey)
    expect(redo.status).toBe(200)
    expect(redo.json.data).toMatchObject({ deliveryId, ok: true, httpStatus: 200 })
    const second = hook.received[1]!
    expect(second.raw.equals(first.raw)).toBe(true)
    expect(second.headers["x-service-delivery-id"]).toBe(deliveryId)
    expect(second.headers["x-service-timestamp"]).not.toBe(first.headers["x-service-timestamp"])
    expect(verifyWebhookSignature({ rawBody: second.raw, headers: second.headers as Record<string, string>, secret }).ok).toBe(true)
    const log = await api.get(`/v1/scraper/jobs/${created.json.data.id}/webhook-deliveries`, t.apiKey)
    expect(log.json.data.items[0].attempts.map((a: any) => a.manual)).toEqual([false, true])
    expect((await api.post("/v1/scraper/webhooks/whd_missing/redeliver", {}, admin.json.data.apiKey)).status).toBe(404)
  })

  it("does not let slow, failing receivers delay job completion", async () => {
    const hook = await receiver(() => ({ status: 500, delayMs: 4000 }))
    receivers.push(hook)
    const tenants = await Promise.all([api.createTenant(), api.createTenant()])
    const started = Date.now()
    const ids: Array<{ id: string; key: string }> = []
    for (const t of tenants) {
      const bulk = await api.post("/v1/scraper/jobs/bulk", {
        jobs: Array.from({ length: 40 }, (_, i) => ({ url: `${pages.base}/slow-hook-${i}`, webhookUrl: hook.url }))
      }, t.apiKey)
      expect(bulk.status).toBe(201)
      for (const j of bulk.json.data.created) ids.push({ id: j.id, key: t.apiKey })
    }
    // Only the jobs not yet seen done are read again: 80 reads every 100 ms would pass the keys'
    // per-second rate limit, and a refused read (429) is just not done yet.
    const done = new Set<string>()
    await until("all jobs done", async () => {
      const open = ids.filter(({ id }) => !done.has(id))
      const states = await Promise.all(open.map(({ id, key }) => api.get(`/v1/scraper/jobs/${id}`, key)))
      states.forEach((s, i) => {
        if (s.status === 200 && s.json.data.status === "done") done.add(open[i]!.id)
      })
      return done.size === ids.length ? true : undefined
    }, 30_000)
    const elapsed = Date.now() - started
    // Every receiver call takes 4 s; 80 deliveries at 8 per host would need 40 s if jobs waited on them.
    expect(elapsed).toBeLessThan(20_000)
    // The deliveries were really being made meanwhile (a dispatch that never ran would not delay jobs either).
    await until("deliveries under way", () => (hook.received.length > 0 ? true : undefined), 20_000)
  }, 60_000)
})

describe("webhook targets are checked like crawl targets", () => {
  it("refuses a loopback webhookUrl when private targets are not allowed (422 unsafe_url)", async () => {
    const server = await startServer({})
    try {
      const api = client(server.baseUrl)
      const t = await api.createTenant()
      const res = await api.post("/v1/scraper/jobs", { url: "http://127.0.0.1:9/", webhookUrl: "http://127.0.0.1:9/hook" }, t.apiKey)
      expect(res.status).toBe(422)
      expect(res.json.code).toBe("unsafe_url")
      expect(res.json.error.details.map((d: any) => d.path).sort()).toEqual(["url", "webhookUrl"])
    } finally {
      await server.stop()
    }
  })
})

describe("the retry schedule survives a node's death", () => {
  it("makes the next attempt after the only node was killed and restarted", async () => {
    const pagesSite = await site()
    const hook = await receiver((n) => ({ status: n === 1 ? 503 : 200 }))
    // Scaled 0.1×: the second attempt is due about 3 s after the first.
    const env = { ALLOW_PRIVATE_TARGETS: "true", WEBHOOK_RETRY_SCALE: "0.1" }
    let server = await startServer(env, { keepDataDir: true })
    try {
      const api = client(server.baseUrl)
      const t = await api.createTenant()
      await api.post("/v1/scraper/jobs", { url: `${pagesSite.base}/k`, webhookUrl: hook.url }, t.apiKey)
      await until("first attempt", () => hook.received[0])
      await server.stop("SIGKILL")
      expect(hook.received).toHaveLength(1)
      server = await startServer({ ...env, PORT: String(server.port) }, { dataDir: server.dataDir })
      const second = await until("second attempt after restart", () => hook.received[1], 40_000)
      expect(second.headers["x-service-delivery-id"]).toBe(hook.received[0]!.headers["x-service-delivery-id"])
      expect(second.raw.equals(hook.received[0]!.raw)).toBe(true)
    } finally {
      await server.stop()
      await hook.close()
      await pagesSite.close()
    }
  }, 90_000)
})
