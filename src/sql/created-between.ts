import type { SqlClient, Statement } from "effect/sql"
import { parseIsoDateTime } from "../schema/common.ts"

/**
 * The conditions of a search's `createdAt` bounds (checked by its schema, `CreatedRange`) on a
 * `created_at` column, each bound rewritten as a UTC ISO string first, so the database never
 * reads a spelling of its own.
 */
export const createdBetween = (
  sql: SqlClient.SqlClient,
  range: { readonly gte?: string | undefined; readonly lt?: string | undefined } | undefined
): Array<Statement.Fragment> => {
  const utc = (bound: string | undefined) => {
    const ms = bound === undefined ? undefined : parseIsoDateTime(bound)
    return ms === undefined ? undefined : new Date(ms).toISOString()
  }
  const gte = utc(range?.gte)
  const lt = utc(range?.lt)
  return [
    ...(gte !== undefined ? [sql`created_at >= ${gte}::timestamptz`] : []),
    ...(lt !== undefined ? [sql`created_at < ${lt}::timestamptz`] : [])
  ]
}
