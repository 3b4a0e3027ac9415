import type { ConfigRow } from "../sql/extraction-repo.ts"

/**
 * `urlPattern` is a glob over the whole URL (case-insensitive): `*` matches any run of characters.
 * Matched greedily from left to right, each literal piece at its first place after the last one:
 * linear in the URL's length, where a regex of `.*` steps could backtrack for hours on a pattern of
 * many stars (a tenant writes the pattern; it is matched on the event loop for every extraction).
 */
export const globMatches = (pattern: string, url: string): boolean => {
  const pieces = pattern.toLowerCase().split("*")
  const text = url.toLowerCase()
  const first = pieces[0]!
  const last = pieces[pieces.length - 1]!
  if (pieces.length === 1) return text === first
  if (!text.startsWith(first) || !text.endsWith(last) || first.length + last.length > text.length) return false
  let at = first.length
  const end = text.length - last.length
  for (const piece of pieces.slice(1, -1)) {
    const found = text.indexOf(piece, at)
    if (found < 0 || found + piece.length > end) return false
    at = found + piece.length
  }
  return true
}

/**
 * The configs that apply to one extraction, in the order they are applied: an
 * explicitly requested config first, then the matching ones by priority, a
 * tenant's own before a global one of the same priority (the repository's order).
 */
export const matchConfigs = (
  candidates: ReadonlyArray<ConfigRow>,
  target: { domainId: string | null; url: string | null },
  requested: ConfigRow | undefined
): Array<ConfigRow> => {
  const matching = candidates.filter((c) =>
    (c.domain_id === null || c.domain_id === target.domainId) &&
    (c.url_pattern === null || (target.url !== null && globMatches(c.url_pattern, target.url)))
  )
  if (!requested) return matching
  return [requested, ...matching.filter((c) => c.id !== requested.id)]
}
