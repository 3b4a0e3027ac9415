import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { newId } from "../ids.ts"
import { iso } from "../schema/common.ts"
import { pageOfRows } from "./memory-search.ts"

/** A mail kept in the outbox instead of sent (no SMTP_URL): what `GET /internal/v1/outbox` lists. */
export interface OutboxEntry {
  readonly id: string
  readonly to: string
  readonly subject: string
  /** The plain-text body; an HTML alternative is not kept. */
  readonly body: string
  readonly createdAt: string
}

interface OutboxRow {
  readonly id: string
  readonly to_email: string
  readonly subject: string
  readonly body: string
  readonly created_at: Date | string
}

const toEntry = (r: OutboxRow): OutboxEntry => ({ id: r.id, to: r.to_email, subject: r.subject, body: r.body, createdAt: iso(r.created_at)! })

export interface MailOutboxRepoShape {
  /** Stores one mail; fails with the database's error so the mailer can answer "mail unavailable". */
  readonly insert: (mail: { readonly to: string; readonly subject: string; readonly body: string }) => Effect.Effect<OutboxEntry, SqlError.SqlError>
  /** The mails to `to` (any letter case), newest first, and how many there are in all. */
  readonly listByRecipient: (to: string, offset: number, limit: number) => Effect.Effect<{ readonly items: ReadonlyArray<OutboxEntry>; readonly total: number }>
}

export class MailOutboxRepo extends Context.Service<MailOutboxRepo, MailOutboxRepoShape>()("trawl/MailOutboxRepo") {}

export const MailOutboxRepoLive = Layer.effect(
  MailOutboxRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return MailOutboxRepo.of({
      insert: (mail) =>
        sql<OutboxRow>`INSERT INTO mail_outbox (id, to_email, subject, body)
          VALUES (${newId("mail")}, ${mail.to}, ${mail.subject}, ${mail.body}) RETURNING *`.pipe(Effect.map(([row]) => toEntry(row!))),
      // Ids grow with time (src/ids.ts), so id order is newest first and the index (lower(to_email), id) serves it.
      listByRecipient: (to, offset, limit) =>
        Effect.all([
          sql<OutboxRow>`SELECT * FROM mail_outbox WHERE lower(to_email) = lower(${to}) ORDER BY id DESC OFFSET ${offset} LIMIT ${limit}`,
          sql<{ n: string }>`SELECT count(*) AS n FROM mail_outbox WHERE lower(to_email) = lower(${to})`
        ]).pipe(Effect.orDie, Effect.map(([rows, [count]]) => ({ items: rows.map(toEntry), total: Number(count!.n) })))
    })
  })
)

/** The outbox in memory, for unit tests of the outbox mailer; stamped with Effect's Clock. */
export const MailOutboxRepoTest: Layer.Layer<MailOutboxRepo> = Layer.sync(MailOutboxRepo, () => {
  const entries: Array<OutboxEntry> = []
  return MailOutboxRepo.of({
    insert: (mail) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const entry = { id: newId("mail"), to: mail.to, subject: mail.subject, body: mail.body, createdAt: new Date(now).toISOString() }
        entries.push(entry)
        return entry
      }),
    listByRecipient: (to, offset, limit) =>
      Effect.sync(() => {
        const mine = entries.filter((e) => e.to.toLowerCase() === to.toLowerCase()).reverse()
        return pageOfRows(mine, offset, limit, (m) => m)
      })
  })
})
