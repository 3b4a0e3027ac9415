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

/** The same bounds as a test of a creation time in milliseconds (for the in-memory test layers). */
export const createdWithin = (range: { readonly gte?: string | undefined; readonly lt?: string | undefined } | undefined) => {
  const gte = range?.gte === undefined ? undefined : parseIsoDateTime(range.gte)
  const lt = range?.lt === undefined ? undefined : parseIsoDateTime(range.lt)
  return (ms: number) => (gte === undefined || ms >= gte) && (lt === undefined || ms < lt)
}
