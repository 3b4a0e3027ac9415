import { Context, Duration, Effect, Layer, Schema } from "effect"
import nodemailer from "nodemailer"
import SMTPTransport from "nodemailer/lib/smtp-transport/index.js"
import { Config } from "../config.ts"
import { isEmailAddress } from "../schema/common.ts"
import { MailOutboxRepo } from "../sql/mail-outbox-repo.ts"

/** One mail to one recipient. `text` is always sent; `html`, when given, is its alternative. */
export interface Mail {
  readonly to: string
  readonly subject: string
  readonly text: string
  readonly html?: string
}

/*
 * nodemailer parses whatever it is given as a recipient, the envelope's too: "a@x.io, b@y.io" would
 * mail two people and "a@x.io\r\nBcc: c@z.io" a third, so only one plain address (isEmailAddress,
 * the check requests' addresses pass) is ever sent to.
 */

/** The mail was neither handed to the SMTP server nor stored in the outbox (or its recipient is not mailable). */
export class MailUnavailable extends Schema.TaggedError<MailUnavailable>()("MailUnavailable", {
  message: Schema.String
}) {}

export interface MailerShape {
  readonly send: (mail: Mail) => Effect.Effect<void, MailUnavailable>
}

/** Sends mail (docs/api.md, "Mail"): to SMTP_URL when it is set, else into the outbox table. */
export class Mailer extends Context.Service<Mailer, MailerShape>()("trawl/Mailer") {}

/**
 * How long one SMTP exchange may take: a server that does not answer, does not greet or stalls
 * mid-message fails the send within these, instead of holding a request open.
 */
export const SMTP_TIMEOUTS = {
  connectionTimeout: 5_000,
  greetingTimeout: 5_000,
  socketTimeout: 10_000,
  dnsTimeout: 5_000
} as const

/** The whole send, whatever the phase: a backstop over the timeouts above. */
export const SMTP_SEND_TIMEOUT = Duration.seconds(20)

/** `host:port` of an SMTP URL: what a log may say about the server (the URL can hold a password). */
const serverOf = (smtpUrl: string) => {
  const url = new URL(smtpUrl)
  return `${url.hostname}:${url.port || (url.protocol === "smtps:" ? "465" : "587")}`
}

/** A nodemailer error's message with the URL's password cut out, should a server echo it. */
const describeFailure = (error: unknown, smtpUrl: string) => {
  const e = error as { readonly code?: unknown; readonly responseCode?: unknown; readonly message?: unknown }
  const url = new URL(smtpUrl)
  let message = typeof e?.message === "string" ? e.message : String(error)
  const decoded = (part: string) => {
    try {
      return decodeURIComponent(part)
    } catch {
      return part
    }
  }
  for (const secret of [url.password, decoded(url.password)]) {
    if (secret !== "") message = message.split(secret).join("***")
  }
  return { code: typeof e?.code === "string" ? e.code : "unknown", responseCode: typeof e?.responseCode === "number" ? e.responseCode : undefined, message }
}

const unmailable = (to: string) =>
  Effect.logWarning("mail not sent: the recipient is not one plain e-mail address").pipe(
    Effect.annotateLogs({ to: JSON.stringify(to.slice(0, 300)) }),
    Effect.andThen(Effect.fail(new MailUnavailable({ message: "the recipient is not one plain e-mail address" })))
  )

/** `send`, refusing first a recipient that is not one plain address. */
const guarded = (send: MailerShape["send"]): MailerShape["send"] => (mail) => isEmailAddress(mail.to) ? send(mail) : unmailable(mail.to)

const smtpMailer = (smtpUrl: string, from: string) =>
  Effect.acquireRelease(
    // Built as a transport, not from `{ url, ... }`: createTransport keeps only the URL's settings
    // of such an object and drops the rest (the timeouts among them).
    Effect.sync(() => nodemailer.createTransport(new SMTPTransport({ url: smtpUrl, ...SMTP_TIMEOUTS }))),
    (transport) => Effect.sync(() => transport.close())
  ).pipe(Effect.map((transport) => {
    const server = serverOf(smtpUrl)
    return Mailer.of({
      send: guarded((mail) =>
        Effect.tryPromise({
          try: () =>
            transport.sendMail({
              from,
              // The envelope names the one recipient as given: the To header is never parsed into more.
              envelope: { from, to: [mail.to] },
              to: { name: "", address: mail.to },
              subject: mail.subject,
              text: mail.text,
              ...(mail.html !== undefined ? { html: mail.html } : {})
            }),
          catch: (error) => describeFailure(error, smtpUrl)
        }).pipe(
          Effect.timeoutOrElse({
            duration: SMTP_SEND_TIMEOUT,
            orElse: () => Effect.fail({ code: "ETIMEDOUT", responseCode: undefined, message: `no answer in ${Duration.format(SMTP_SEND_TIMEOUT)}` })
          }),
          Effect.tapError((failure) =>
            Effect.logWarning("mail not sent: the SMTP server refused it or could not be reached").pipe(
              Effect.annotateLogs({ server, code: failure.code, responseCode: failure.responseCode, reason: failure.message })
            )
          ),
          Effect.mapError((failure) => new MailUnavailable({ message: `mail could not be sent (${failure.code})` })),
          Effect.asVoid
        ))
    })
  }))

const outboxMailer = Effect.gen(function*() {
  const outbox = yield* MailOutboxRepo
  return Mailer.of({
    send: guarded((mail) =>
      outbox.insert({ to: mail.to, subject: mail.subject, body: mail.text }).pipe(
        // The body is left out of the log: it may hold a token (a reset link, a magic link).
        Effect.tap((stored) => Effect.logInfo("mail stored in the outbox (SMTP_URL is unset)").pipe(
          Effect.annotateLogs({ mailId: stored.id, to: mail.to, subject: mail.subject })
        )),
        Effect.tapError((error) => Effect.logWarning("mail not stored in the outbox", error)),
        Effect.mapError(() => new MailUnavailable({ message: "mail could not be stored in the outbox" })),
        Effect.asVoid
      ))
  })
})

/** SMTP when `Config.smtpUrl` is set, else the outbox table. */
export const MailerLive = Layer.effect(
  Mailer,
  Effect.gen(function*() {
    const config = yield* Config
    return yield* (config.smtpUrl ? smtpMailer(config.smtpUrl, config.mailFrom) : outboxMailer)
  })
)

export interface SentMailsShape {
  /** Every mail sent so far, oldest first. */
  readonly all: Effect.Effect<ReadonlyArray<Mail>>
  /** The mails sent to `to` (any letter case), oldest first. */
  readonly to: (to: string) => Effect.Effect<ReadonlyArray<Mail>>
  /** While down, every send fails with `MailUnavailable` and nothing is captured. */
  readonly setUnavailable: (down: boolean) => Effect.Effect<void>
}

/** The mails a `MailerTest` captured. */
export class SentMails extends Context.Service<SentMails, SentMailsShape>()("trawl/SentMails") {}

/**
 * A mailer for tests: captures mails in memory (read them through `SentMails`); each build starts
 * empty. Like the live one, it refuses a recipient that is not one plain address.
 */
export const MailerTest: Layer.Layer<Mailer | SentMails> = Layer.unwrap(Effect.sync(() => {
  const sent: Array<Mail> = []
  let down = false
  return Layer.mergeAll(
    // Refuses what the live mailer refuses, so a test of a flow meets the same failures.
    Layer.succeed(Mailer, Mailer.of({
      send: guarded((mail) =>
        Effect.suspend(() => {
          if (down) return Effect.fail(new MailUnavailable({ message: "mail could not be sent (test mailer set unavailable)" }))
          sent.push({ ...mail })
          return Effect.void
        }))
    })),
    Layer.succeed(SentMails, SentMails.of({
      all: Effect.sync(() => sent.slice()),
      to: (to) => Effect.sync(() => sent.filter((m) => m.to.toLowerCase() === to.toLowerCase())),
      setUnavailable: (d) => Effect.sync(() => void (down = d))
    }))
  )
}))
