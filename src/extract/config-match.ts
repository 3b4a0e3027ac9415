import type { ConfigRow } from "../sql/extraction-repo.ts"
import { wildcardMatches } from "../wildcard.ts"

/** `urlPattern` is a glob over the whole URL (case-insensitive): `*` matches any run of characters (see `wildcardMatches`). */
export const globMatches = (pattern: string, url: string): boolean => wildcardMatches(pattern.toLowerCase(), url.toLowerCase(), true)

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
