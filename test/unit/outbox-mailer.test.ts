/**
 * The mailer without SMTP_URL (src/mail/mailer.ts) on the in-memory outbox: what it stores, and
 * what it refuses. SMTP itself: test/integration/mailer.test.ts and test/mail.e2e.test.ts.
 */
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Config, configForTests } from "../../src/config.ts"
import { Mailer, MailerLive } from "../../src/mail/mailer.ts"
import { MailOutboxRepo, MailOutboxRepoTest } from "../../src/sql/mail-outbox-repo.ts"

const config = configForTests()
const Outbox = MailerLive.pipe(Layer.provideMerge(Layer.mergeAll(MailOutboxRepoTest, Layer.succeed(Config, config))))

layer(Outbox)("the outbox mailer (no SMTP_URL)", (it) => {
  it.effect("stores the plain-text body of each mail, listed newest first by recipient in any letter case", () =>
    Effect.gen(function*() {
      expect(config.smtpUrl).toBeUndefined()
      const mailer = yield* Mailer
      yield* mailer.send({ to: "Ann@Example.com", subject: "first", text: "one", html: "<p>one</p>" })
      yield* mailer.send({ to: "bob@example.com", subject: "other", text: "two" })
      yield* mailer.send({ to: "ann@example.com", subject: "second", text: "three" })
      const ann = yield* (yield* MailOutboxRepo).listByRecipient("ANN@example.com", 0, 10)
      expect(ann.total).toBe(2)
      expect(ann.items.map((m) => [m.subject, m.body])).toEqual([["second", "three"], ["first", "one"]])
    }))

  it.effect("refuses a recipient that is not one plain address, and stores nothing for it", () =>
    Effect.gen(function*() {
      const mailer = yield* Mailer
      for (const to of ["a@x.io, b@y.io", "a@x.io\r\nBcc: c@z.io", "Name <a@x.io>", "no-at-sign"]) {
        const refused = yield* Effect.flip(mailer.send({ to, subject: "s", text: "t" }))
        expect(refused._tag).toBe("MailUnavailable")
      }
      expect((yield* (yield* MailOutboxRepo).listByRecipient("a@x.io", 0, 10)).total).toBe(0)
    }))
})
