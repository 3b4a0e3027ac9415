import { Effect } from "effect"
import type { SqlClient, Statement } from "effect/sql"

/**
 * A page of rows and the number of all rows that match, read by one statement: both come from one
 * snapshot, so `total` and `hasMore` agree with the page while rows are being written (two
 * statements could each see a different moment). `page` selects the page's rows in order (with an
 * `id` column), `count` the count of all; the page keeps its order (the one-row count is the outer
 * side of the join).
 */
export const pageWithTotal = <Row extends { readonly id: string }>(
  sql: SqlClient.SqlClient,
  page: Statement.Fragment,
  count: Statement.Fragment
): Effect.Effect<{ readonly items: ReadonlyArray<Row>; readonly total: number }> =>
  sql<Row & { readonly page_total: string }>`
    SELECT c.page_total, p.* FROM (${count}) AS c(page_total) LEFT JOIN LATERAL (${page}) AS p ON true`.pipe(
    Effect.orDie,
    Effect.map((rows) => ({
      total: Number(rows[0]?.page_total ?? 0),
      items: rows.filter((r) => r.id !== null).map(({ page_total: _, ...row }) => row as unknown as Row)
    }))
  )
