export type SortTerm = { readonly field: string; readonly dir: "asc" | "desc" }

/**
 * The sort as applied: `id` is appended unless it is sorted already, so the order is total and
 * pages never overlap or skip rows. Ids sort by creation time, so the tie-break runs the way a
 * `createdAt` entry of the sort runs (oldest first under `createdAt asc`), and newest first otherwise.
 */
export const withTieBreak = <S extends SortTerm>(sort: ReadonlyArray<S>): ReadonlyArray<S | SortTerm> =>
  sort.some((s) => s.field === "id")
    ? sort
    : [...sort, { field: "id", dir: sort.find((s) => s.field === "createdAt")?.dir ?? "desc" }]

/**
 * An ORDER BY list from validated sort entries (API field → column), with the tie-break of
 * `withTieBreak`. Columns come from a fixed map, never from the request; it maps `id` too.
 */
export const orderByTerms = (sort: ReadonlyArray<SortTerm>, columns: Readonly<Record<string, string>>): string =>
  withTieBreak(sort).map((s) => `${columns[s.field]} ${s.dir === "asc" ? "ASC" : "DESC"}`).join(", ")

/**
 * Rows sorted in memory as `orderByTerms` sorts them in SQL (for the test layers): `key` reads a
 * sort field's value. Text compares by code unit (the C collation); NULL sorts last ascending and
 * first descending, as in PostgreSQL.
 */
export const sortLikeSql = <R>(
  rows: ReadonlyArray<R>,
  sort: ReadonlyArray<SortTerm>,
  key: (row: R, field: string) => number | string | null
): Array<R> => {
  const terms = withTieBreak(sort)
  return [...rows].sort((a, b) => {
    for (const { field, dir } of terms) {
      const x = key(a, field)
      const y = key(b, field)
      if (x === y) continue
      const order = x === null ? 1 : y === null ? -1 : x < y ? -1 : 1
      return dir === "asc" ? order : -order
    }
    return 0
  })
}
