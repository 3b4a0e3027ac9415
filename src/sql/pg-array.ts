import { PgTypes } from "@effect/sql-pg"
import { Result } from "effect"

export const { OID } = PgTypes

/**
 * A typed one-dimensional array parameter, for `unnest` and `= ANY(...)`. Its element type holds
 * even when every element is null, and a batch statement built from such arrays has one shape
 * whatever the batch size, so it is prepared once.
 */
export const pgArray = (values: ReadonlyArray<unknown>, elementOid: number) => Result.getOrThrow(PgTypes.array(values, elementOid))
