import { cpSync, mkdtempSync, rmSync } from "node:fs"
import { createServer, type Socket } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer, Logger } from "effect"
import { afterAll, beforeAll, it as vit } from "vitest"
import { type AppConfig, Config, loadConfig } from "../src/config.ts"
import { Mailer, MailerLive, MailUnavailable, SMTP_TIMEOUTS } from "../src/mail/mailer.ts"
import { MailOutboxRepo, MailOutboxRepoLive } from "../src/sql/mail-outbox-repo.ts"
import { MigrationsLive } from "../src/sql/migrate.ts"
import { databaseLayer, testDatabases } from "./support/databases.ts"
import { backends, blankDatabaseTemplate, client, freePort, INTERNAL_TOKEN, type RunningServer, startServer } from "./support/server-process.ts"
import { startSmtpServer, type TestSmtpServer } from "./support/smtp.ts"

/** A reset link as a mail would carry it: long (folded by quoted-printable), with `=`, `&` and escapes. */
const link = `https://trawl.example/v1/iam/auth/password/reset?token=${"Zm9v".repeat(20)}%3D%3D&next=%2Fv1%2Fjobs&sig=a=b=c&x=${"y".repeat(90)}`
const text = `Bonjour Zoë — 日本語 ✓ 🐟\n\nReset your password: ${link}\n\nIgnore this mail if you did not ask.  `
const subject = `Réinitialisez votre mot de passe — 日本語 ${"é".repeat(30)}`

/** Every log line written while an effect runs, as JSON. */
const captureLogs = () => {
  const lines: Array<string> = []
  return { lines, layer: Logger.layer([Logger.map(Logger.formatJson, (line) => void lines.push(line))]) }
}

describe.each(testDatabases)("MailerLive with SMTP_URL ($name)", (db) => {
  let smtp: TestSmtpServer
  let config: AppConfig
  beforeAll(async () => {
    smtp = await startSmtpServer()
    config = await db.config()
  })
  afterAll(async () => {
    await smtp?.close()
  })

  /** MailerLive as a node configured with `smtpUrl` builds it; the outbox repository is the suite's database's. */
  const mailerFor = (smtpUrl: string) => MailerLive.pipe(Layer.provide(Layer.succeed(Config, { ...config, smtpUrl, mailFrom: "noreply@trawl.example" })))

  const Database = Layer.unwrap(Effect.promise(async () => {
    config ??= await db.config()
    return MailOutboxRepoLive.pipe(Layer.provideMerge(MigrationsLive.pipe(Layer.provideMerge(databaseLayer(config)))))
  }))

  layer(Database, { timeout: "60 seconds", excludeTestServices: true })((it) => {
    it.effect("delivers text and subject byte-exact through a real SMTP server, and keeps nothing in the outbox", () =>
      Effect.gen(function*() {
        const to = `reader-${Date.now()}@example.com`
        const mailer = yield* Mailer
        yield* mailer.send({ to, subject, text })
        yield* mailer.send({ to, subject: "with html", text, html: `<p><a href="${link.replace(/&/g, "&amp;")}">reset</a></p>` })

        const plain = yield* Effect.promise(() => smtp.waitForMail(to, (m) => m.subject === subject))
        expect(plain.text).toBe(text)
        expect(plain.text).toContain(link)
        expect(plain.recipients).toEqual([to])
        expect(plain.from).toBe("noreply@trawl.example")
        expect(plain.headers.get("from")).toBe("noreply@trawl.example")
        expect(plain.to).toBe(to)
        // The link really was folded and escaped on the wire, so the decoding above did work.
        expect(plain.raw).not.toContain(link)
        expect(plain.raw).toContain("=3D")

        const alternative = yield* Effect.promise(() => smtp.waitForMail(to, (m) => m.subject === "with html"))
        expect(alternative.text).toBe(text)
        expect(alternative.html).toBe(`<p><a href="${link.replace(/&/g, "&amp;")}">reset</a></p>`)

        expect((yield* (yield* MailOutboxRepo).listByRecipient(to, 0, 10)).total).toBe(0)
      }).pipe(Effect.provide(mailerFor(smtp.url))))

    it.effect("sends to the one recipient given, never to a list or an address smuggled into it", () =>
      Effect.gen(function*() {
        const mailer = yield* Mailer
        const received = smtp.mails().length
        for (const to of ["a@example.com, evil@example.org", "x,evil@example.org", "a@example.com\r\nBcc: evil@example.org", "Name <evil@example.org>"]) {
          const failed = yield* mailer.send({ to, subject: "s", text: "t" }).pipe(Effect.flip)
          expect(failed, JSON.stringify(to)).toBeInstanceOf(MailUnavailable)
        }
        const international = `zoë-${Date.now()}@exämple.com`
        yield* mailer.send({ to: international, subject: "ok", text: "t" })
        const mail = yield* Effect.promise(() => smtp.waitForMail(international))
        expect(mail.recipients).toEqual([international])
        // A line break in the subject stays inside the Subject header.
        const plain = `plain-${Date.now()}@example.com`
        yield* mailer.send({ to: plain, subject: "Hi\r\nBcc: evil@example.org\r\n\r\nbody", text: "t" })
        const injected = yield* Effect.promise(() => smtp.waitForMail(plain))
        expect(injected.recipients).toEqual([plain])
        expect(injected.headers.has("bcc")).toBe(false)
        expect(injected.subject).toBe("Hi Bcc: evil@example.org  body")
        expect(smtp.mails()).toHaveLength(received + 2)
      }).pipe(Effect.provide(mailerFor(smtp.url))))

    it.effect("fails as MailUnavailable at once when nothing listens, and logs no credential", () =>
      Effect.gen(function*() {
        const port = yield* Effect.promise(() => freePort())
        const logs = captureLogs()
        const started = Date.now()
        const failure = yield* Effect.gen(function*() {
          return yield* (yield* Mailer).send({ to: "nobody@example.com", subject: "s", text: `secret link ${link}` })
        }).pipe(
          Effect.provide(mailerFor(`smtp://mailer:pa55-w0rd-xyz@127.0.0.1:${port}`)),
          Effect.provide(logs.layer),
          Effect.flip
        )
        expect(failure).toBeInstanceOf(MailUnavailable)
        expect(failure.message).toMatch(/^mail could not be sent \(/)
        expect(Date.now() - started).toBeLessThan(3_000)
        expect(logs.lines).toHaveLength(1)
        expect(logs.lines[0]).toContain("mail not sent")
        expect(logs.lines[0]).toContain(`127.0.0.1:${port}`)
        expect(logs.lines[0]).not.toContain("pa55-w0rd-xyz")
        expect(logs.lines[0]).not.toContain(link)
      }))

    it.effect("fails as MailUnavailable within the greeting timeout when the server accepts but never greets", () =>
      Effect.gen(function*() {
        const sockets = new Set<Socket>()
        const silent = createServer((socket) => void sockets.add(socket))
        yield* Effect.acquireRelease(
          Effect.promise(() => new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve))),
          () => Effect.sync(() => {
            for (const s of sockets) s.destroy()
            silent.close()
          })
        )
        const port = (silent.address() as { port: number }).port
        const started = Date.now()
        const failure = yield* Effect.gen(function*() {
          return yield* (yield* Mailer).send({ to: "nobody@example.com", subject: "s", text: "t" })
        }).pipe(Effect.provide(mailerFor(`smtp://127.0.0.1:${port}`)), Effect.flip)
        const elapsed = Date.now() - started
        expect(failure).toBeInstanceOf(MailUnavailable)
        // The connection was made, so it was the missing greeting that ended the wait.
        expect(sockets.size).toBe(1)
        expect(elapsed).toBeGreaterThanOrEqual(SMTP_TIMEOUTS.greetingTimeout - 500)
        expect(elapsed).toBeLessThan(SMTP_TIMEOUTS.greetingTimeout + 3_000)
      }).pipe(Effect.scoped), { timeout: 30_000 })
  })
})

describe.each(backends())("GET /internal/v1/outbox ($name)", (backend) => {
  let server: RunningServer
  let api: ReturnType<typeof client>
  let dataDir: string
  const reader = `reader-${Date.now()}@example.com`
  const tokenLink = (n: number) => `https://trawl.example/v1/iam/auth/magic-link/verify?token=t${n}${"k".repeat(80)}%3D&next=a=b&c=d`

  beforeAll(async () => {
    // The outbox is filled by the Mailer (no SMTP_URL) on the database the server then opens.
    const env = await backend.env()
    dataDir = mkdtempSync(join(tmpdir(), "trawl-mail-"))
    if (!env.DATABASE_URL) cpSync(await blankDatabaseTemplate(), join(dataDir, "pg"), { recursive: true })
    const config = loadConfig({ DATA_DIR: dataDir, ...env })
    await Effect.runPromise(
      Effect.gen(function*() {
        const mailer = yield* Mailer
        for (const n of [1, 2, 3]) yield* mailer.send({ to: reader, subject: `Sign in ${n} — ✓`, text: `Sign in: ${tokenLink(n)}` })
        yield* mailer.send({ to: `other-${reader}`, subject: "not the reader's", text: "x" })
      }).pipe(
        Effect.provide(MailerLive.pipe(
          Layer.provide(MailOutboxRepoLive),
          Layer.provide(MigrationsLive.pipe(Layer.provideMerge(databaseLayer(config))))
        )),
        Effect.provide(Logger.layer([])),
        Effect.scoped
      )
    )
    server = await startServer(env, { dataDir })
    api = client(server.baseUrl)
  }, 120_000)
  afterAll(async () => {
    await server?.stop()
    if (dataDir) rmSync(dataDir, { recursive: true, force: true })
  })

  const outbox = (query: string, auth: { token?: string } = { token: INTERNAL_TOKEN }) => api.call("GET", `/internal/v1/outbox${query}`, auth)

  vit("needs the internal token", async () => {
    for (const auth of [{}, { token: INTERNAL_TOKEN + "x" }]) {
      const res = await outbox(`?to=${reader}`, auth)
      expect(res.status).toBe(401)
      expect(res.json).toMatchObject({ status: "error", code: "unauthorized" })
      expect(res.text).not.toContain("Sign in")
    }
  })

  vit("needs `to`, and `to` must be an e-mail address (400 with details)", async () => {
    for (const query of ["", "?to=", "?to=not-an-address", `?to=${"a".repeat(250)}@example.com`]) {
      const res = await outbox(query)
      expect(res.status, query).toBe(400)
      expect(res.json).toMatchObject({ status: "error", code: "validation_error" })
      expect(res.json.error.details.map((d: { path: string }) => d.path), query).toEqual(["to"])
    }
  })

  vit("lists the recipient's mails newest first, any letter case, with the body intact", async () => {
    const res = await outbox(`?to=${encodeURIComponent(reader.toUpperCase())}`)
    expect(res.status).toBe(200)
    expect(res.json.code).toBe("200-ok")
    const { items, pagination } = res.json.data
    expect(pagination).toEqual({ offset: 0, limit: 50, total: 3, hasMore: false })
    expect(items.map((m: { subject: string }) => m.subject)).toEqual(["Sign in 3 — ✓", "Sign in 2 — ✓", "Sign in 1 — ✓"])
    expect(items[0]).toEqual({ id: expect.stringMatching(/^mail_[0-9a-z]{26}$/), to: reader, subject: "Sign in 3 — ✓", body: `Sign in: ${tokenLink(3)}`, createdAt: expect.any(String) })
    expect(Date.parse(items[0].createdAt)).toBeGreaterThanOrEqual(Date.parse(items[2].createdAt))
    const none = await outbox("?to=nobody@example.com")
    expect(none.json.data).toEqual({ items: [], pagination: { offset: 0, limit: 50, total: 0, hasMore: false } })
  })

  vit("pages with offset and limit, within their bounds", async () => {
    const first = await outbox(`?to=${reader}&limit=2`)
    expect(first.json.data.items.map((m: { subject: string }) => m.subject)).toEqual(["Sign in 3 — ✓", "Sign in 2 — ✓"])
    expect(first.json.data.pagination).toEqual({ offset: 0, limit: 2, total: 3, hasMore: true })
    const rest = await outbox(`?to=${reader}&limit=2&offset=2`)
    expect(rest.json.data.items.map((m: { subject: string }) => m.subject)).toEqual(["Sign in 1 — ✓"])
    expect(rest.json.data.pagination).toEqual({ offset: 2, limit: 2, total: 3, hasMore: false })
    expect((await outbox(`?to=${reader}&limit=200`)).status).toBe(200)
    for (const bad of ["limit=0", "limit=201", "limit=-1", "limit=abc", "offset=-1", "offset=1e3"]) {
      const res = await outbox(`?to=${reader}&${bad}`)
      expect(res.status, bad).toBe(400)
      expect(res.json.code, bad).toBe("validation_error")
      expect(res.json.error.details[0].path, bad).toBe(bad.split("=")[0])
    }
  })
})
