import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, Layer, Logger } from "effect"
import { Mailer, MailerLive, MailerTest, MailUnavailable, SentMails } from "../../src/mail/mailer.ts"
import { isEmailAddress } from "../../src/schema/common.ts"
import { MailOutboxRepo, MailOutboxRepoLive } from "../../src/sql/mail-outbox-repo.ts"
import { MigrationsLive } from "../../src/sql/migrate.ts"
import { databaseLayer, testDatabases } from "../support/databases.ts"

/** Recipients nodemailer would read as something else than one address: a list, a name, a header. */
const unmailable = [
  "a@example.com, b@example.com",
  "x,y@example.com",
  "a@example.com;b@example.com",
  "a@example.com\r\nBcc: evil@example.org",
  "a@example.com\nBcc: evil@example.org",
  "Name <c@example.com>",
  "\"quoted\"@example.com",
  "no-at-sign",
  "two@@example.com",
  "a b@example.com",
  `${"a".repeat(250)}@example.com`,
  "",
  // no address a mail reaches, or one that reads as another in a list
  "root@localhost",
  "a@b..co",
  ".a@b.co",
  "a.@b.co",
  "a..b@b.co",
  "a@-b.co",
  "a@b-.co",
  "a@b.co.",
  "a@b.c\u202eoc",
  "a\u200b@b.co",
  `a@${"b".repeat(64)}.com`
]

describe("isEmailAddress", () => {
  it("takes one plain address, international ones too, and nothing else", () => {
    for (const to of ["ann@example.com", "Ann.O'Neil+tag@sub.example.co.uk", "zoë@exämple.com", "x-y@a-b.example", `${"a".repeat(64)}@${"b".repeat(63)}.com`]) expect(isEmailAddress(to), to).toBe(true)
    for (const to of unmailable) expect(isEmailAddress(to), JSON.stringify(to)).toBe(false)
  })
})

layer(MailerTest)("MailerTest", (it) => {
  it.effect("captures each mail, and fails every send while set unavailable", () =>
    Effect.gen(function*() {
      const mailer = yield* Mailer
      const sent = yield* SentMails
      yield* mailer.send({ to: "Ann@Example.com", subject: "one", text: "first" })
      yield* mailer.send({ to: "bob@example.com", subject: "two", text: "second", html: "<p>second</p>" })
      expect((yield* sent.all).map((m) => m.subject)).toEqual(["one", "two"])
      expect(yield* sent.to("ann@example.com")).toEqual([{ to: "Ann@Example.com", subject: "one", text: "first" }])

      yield* sent.setUnavailable(true)
      const failed = yield* mailer.send({ to: "ann@example.com", subject: "three", text: "third" }).pipe(Effect.flip)
      expect(failed).toBeInstanceOf(MailUnavailable)
      expect(yield* sent.all).toHaveLength(2)
      yield* sent.setUnavailable(false)
      yield* mailer.send({ to: "ann@example.com", subject: "four", text: "fourth" })
      expect((yield* sent.to("ANN@example.com")).map((m) => m.subject)).toEqual(["one", "four"])
    }))

  it.effect("refuses, as the live mailer does, a recipient that is not one plain address", () =>
    Effect.gen(function*() {
      const mailer = yield* Mailer
      const before = (yield* (yield* SentMails).all).length
      for (const to of unmailable) {
        const failed = yield* mailer.send({ to, subject: "s", text: "t" }).pipe(Effect.flip)
        expect(failed.message, JSON.stringify(to)).toBe("the recipient is not one plain e-mail address")
      }
      expect(yield* (yield* SentMails).all).toHaveLength(before)
    }))
})

/** Every log line written while the layer runs, as JSON. */
const logLines: Array<string> = []
const CapturedLogs = Logger.layer([Logger.map(Logger.formatJson, (line) => void logLines.push(line))])

describe.each(testDatabases)("MailerLive without SMTP_URL ($name)", (db) => {
  const OutboxMailer = Layer.unwrap(Effect.promise(() => db.config()).pipe(Effect.map((config) => {
    expect(config.smtpUrl).toBeUndefined()
    return MailerLive.pipe(
      Layer.provideMerge(MailOutboxRepoLive),
      Layer.provideMerge(MigrationsLive.pipe(Layer.provideMerge(databaseLayer(config))))
    )
  })))

  // The database's pool and timers run on the real clock.
  layer(OutboxMailer, { timeout: "60 seconds", excludeTestServices: true })((it) => {
    it.effect("stores the mail in the outbox, logs one line without the body, and lists newest first", () =>
      Effect.gen(function*() {
        const mailer = yield* Mailer
        const outbox = yield* MailOutboxRepo
        const to = `reader-${Date.now()}@example.com`
        const token = "tok_" + "s3cr3t".repeat(6)
        for (const n of [1, 2, 3]) {
          yield* mailer.send({ to, subject: `mail ${n}`, text: `Open https://trawl.example/reset?token=${token}&n=${n}`, html: `<b>${n}</b>` })
        }
        yield* mailer.send({ to: "someone-else@example.com", subject: "other", text: "not for the reader" })

        // The address matches in any letter case; newest first.
        const page = yield* outbox.listByRecipient(to.toUpperCase(), 0, 10)
        expect(page.total).toBe(3)
        expect(page.items.map((m) => m.subject)).toEqual(["mail 3", "mail 2", "mail 1"])
        // The text is the body; the HTML alternative is not kept.
        expect(page.items[2]).toMatchObject({ to, body: `Open https://trawl.example/reset?token=${token}&n=1` })
        expect(page.items[2]!.id).toMatch(/^mail_[0-9a-z]{26}$/)
        expect(Date.parse(page.items[2]!.createdAt)).toBeGreaterThan(Date.now() - 60_000)
        // offset and limit
        const second = yield* outbox.listByRecipient(to, 1, 1)
        expect(second).toEqual({ total: 3, items: [page.items[1]] })
        expect((yield* outbox.listByRecipient(to, 3, 10)).items).toEqual([])

        // A recipient nodemailer would split or extend is refused, and nothing is stored.
        const listed = yield* mailer.send({ to: `${to}, evil@example.org`, subject: "list", text: "x" }).pipe(Effect.flip)
        expect(listed).toBeInstanceOf(MailUnavailable)
        expect((yield* outbox.listByRecipient("evil@example.org", 0, 10)).total).toBe(0)
        expect((yield* outbox.listByRecipient(to, 0, 10)).total).toBe(3)

        const lines = logLines.filter((l) => l.includes(to) && l.includes("mail stored"))
        expect(lines).toHaveLength(3)
        expect(lines[0]).toContain("mail stored in the outbox")
        expect(lines.join("\n")).not.toContain(token)
      }).pipe(Effect.provide(CapturedLogs)))
  })
})
