import { Effect } from "effect"
import { MAX_SORT_TERMS } from "../schema/envelope.ts"
import { fail } from "../schema/errors.ts"

export type SortEntry = { field: string; dir: "asc" | "desc" }

/** The default order of every list and search. */
export const NEWEST_FIRST: ReadonlyArray<SortEntry> = [{ field: "createdAt", dir: "desc" }]

/** A search body's sort, or `fallback` when it gives none or an empty one. */
export const sortOrDefault = <S extends SortEntry>(sort: ReadonlyArray<S> | undefined, fallback: ReadonlyArray<SortEntry>): ReadonlyArray<S | SortEntry> =>
  sort && sort.length > 0 ? sort : fallback

/**
 * Parses `sort=field:dir,field:dir` against the sortable fields. An unknown field
 * is `400 invalid_sort_field`, a malformed pair `400 validation_error`.
 */
export const parseSort = (raw: string | undefined, fields: ReadonlyArray<string>, fallback: string) =>
  Effect.gen(function*() {
    const pairs = (raw === undefined || raw.trim() === "" ? fallback : raw).split(",")
    if (pairs.length > MAX_SORT_TERMS) {
      return yield* fail(400, "validation_error", `sort takes at most ${MAX_SORT_TERMS} field:dir pairs`, {
        details: [{ path: "sort", code: "invalid_value", message: `${pairs.length} pairs, at most ${MAX_SORT_TERMS}` }]
      })
    }
    const sort: Array<SortEntry> = []
    for (const [i, pair] of pairs.entries()) {
      const [field, dir = "asc", ...rest] = pair.trim().split(":")
      if (!field || rest.length > 0 || (dir !== "asc" && dir !== "desc")) {
        return yield* fail(400, "validation_error", "sort must be comma-separated field:dir pairs (dir asc or desc)", {
          details: [{ path: `sort.${i}`, code: "invalid_value", message: `"${pair}" is not field:asc or field:desc` }]
        })
      }
      if (!fields.includes(field)) {
        return yield* fail(400, "invalid_sort_field", `sort fields must be among ${fields.join(", ")}`, {
          details: [{ path: `sort.${i}`, code: "invalid_value", message: `"${field}" is not sortable` }]
        })
      }
      sort.push({ field, dir })
    }
    return sort
  })
