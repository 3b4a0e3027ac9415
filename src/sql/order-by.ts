/**
 * An ORDER BY list from validated sort entries (API field → column). `id DESC` is
 * appended unless `id` is sorted already, so the order is total and pages never
 * overlap or skip rows. Columns come from a fixed map, never from the request.
 */
export const orderByTerms = (
  sort: ReadonlyArray<{ field: string; dir: "asc" | "desc" }>,
  columns: Readonly<Record<string, string>>
): string => {
  const terms = sort.map((s) => `${columns[s.field]} ${s.dir === "asc" ? "ASC" : "DESC"}`)
  if (!sort.some((s) => s.field === "id")) terms.push("id DESC")
  return terms.join(", ")
}
