import { Effect } from "effect"
import { DEFAULT_PAGE_LIMIT, MAX_SORT_TERMS } from "../schema/envelope.ts"
import { type ErrorDetail, fail, validationError } from "../schema/errors.ts"

export type SortEntry = { field: string; dir: "asc" | "desc" }

/** The default order of every list and search. */
export const NEWEST_FIRST: ReadonlyArray<SortEntry> = [{ field: "createdAt", dir: "desc" }]

/** A search body's sort, or `fallback` when it gives none or an empty one. */
export const sortOrDefault = <S extends SortEntry>(sort: ReadonlyArray<S> | undefined, fallback: ReadonlyArray<SortEntry>): ReadonlyArray<S | SortEntry> =>
  sort && sort.length > 0 ? sort : fallback

/** What is wrong with one of a list's query parameters, and the error code it alone would give. */
export interface ListFault {
  readonly code: "invalid_sort_field" | "invalid_filter" | "validation_error"
  readonly detail: ErrorDetail
}

export const filterFault = (path: string, message: string): ListFault => ({ code: "invalid_filter", detail: { path, code: "invalid_value", message } })

/**
 * Reads `sort=field:dir,field:dir` against the sortable fields: the sort, and every fault in it.
 * An unknown field is an `invalid_sort_field` fault, a malformed pair or too many pairs a
 * `validation_error` one.
 */
export const readSort = (raw: string | undefined, fields: ReadonlyArray<string>, fallback: string) => {
  const pairs = (raw === undefined || raw.trim() === "" ? fallback : raw).split(",")
  const faults: Array<ListFault> = []
  const sort: Array<SortEntry> = []
  if (pairs.length > MAX_SORT_TERMS) {
    faults.push({ code: "validation_error", detail: { path: "sort", code: "invalid_value", message: `${pairs.length} pairs, at most ${MAX_SORT_TERMS}` } })
    return { sort, faults }
  }
  for (const [i, pair] of pairs.entries()) {
    const [field, dir = "asc", ...rest] = pair.trim().split(":")
    if (!field || rest.length > 0 || (dir !== "asc" && dir !== "desc")) {
      faults.push({ code: "validation_error", detail: { path: `sort.${i}`, code: "invalid_value", message: `"${pair}" is not field:asc or field:desc` } })
    } else if (!fields.includes(field)) {
      faults.push({ code: "invalid_sort_field", detail: { path: `sort.${i}`, code: "invalid_value", message: `"${field}" is not sortable; sort fields are ${fields.join(", ")}` } })
    } else if (sort.some((s) => s.field === field)) {
      // A second term for a field could never order anything: the first one decided already.
      faults.push({ code: "validation_error", detail: { path: `sort.${i}`, code: "invalid_value", message: `"${field}" is named twice` } })
    } else {
      sort.push({ field, dir })
    }
  }
  return { sort, faults }
}

const FAULT_MESSAGES: Record<ListFault["code"], string> = {
  invalid_sort_field: "a sort field is not one that can be sorted by",
  invalid_filter: "a filter parameter is not valid",
  validation_error: "the request query is not valid"
}

/**
 * One error naming every fault of a list's query: the code they share, or `validation_error` when
 * they are of several kinds (as a search body's faults are).
 */
export const failListQuery = (faults: ReadonlyArray<ListFault>) => {
  const code = faults.every((f) => f.code === faults[0]!.code) ? faults[0]!.code : "validation_error"
  return fail(400, code, FAULT_MESSAGES[code], { details: faults.map((f) => f.detail) })
}

/**
 * A list's page size: `limit`, or the legacy `take` it replaced, or DEFAULT_PAGE_LIMIT. A `take` and a `limit` that
 * differ are a 400: which one the client meant cannot be told.
 */
export const queryLimit = (query: { readonly limit?: number | undefined; readonly take?: number | undefined }) =>
  query.take !== undefined && query.limit !== undefined && query.take !== query.limit
    ? validationError([{ path: "take", code: "invalid_value", message: "take is the legacy name of limit; give one of them, or the same value" }])
    : Effect.succeed(query.limit ?? query.take ?? DEFAULT_PAGE_LIMIT)

/** A list's `status` filter: undefined when absent, else one of `statuses` or a 400 invalid_filter. */
export const statusFilter = <S extends string>(raw: string | undefined, statuses: ReadonlyArray<S>) =>
  raw === undefined
    ? Effect.succeed(undefined)
    : (statuses as ReadonlyArray<string>).includes(raw)
    ? Effect.succeed(raw as S)
    : failListQuery([filterFault("status", `"${raw.slice(0, 100)}" is not a status; statuses are ${statuses.join(", ")}`)])
