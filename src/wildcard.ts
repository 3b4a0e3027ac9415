/**
 * Whether `text` starts with `pattern` (is all of it, with `whole`), read with `*` as any run of
 * characters and every other character literal: an extractor config's `urlPattern`
 * (src/extract/config-match.ts) and a robots.txt rule (src/crawl/robots.ts). Each literal piece
 * between stars is found at its first place after the last one; that leaves the most room for the
 * rest, so the answer is exact, and the text is never read back: time in proportion to the text
 * and the pattern, where a regular expression of `.*` steps backtracks without end on a pattern of
 * many stars (both patterns come from outside and are matched on the event loop).
 */
export const wildcardMatches = (pattern: string, text: string, whole: boolean): boolean => {
  const pieces = pattern.split("*")
  const first = pieces[0]!
  if (!text.startsWith(first)) return false
  if (pieces.length === 1) return !whole || text.length === first.length
  let at = first.length
  for (let i = 1; i < pieces.length - 1; i++) {
    const found = text.indexOf(pieces[i]!, at)
    if (found < 0) return false
    at = found + pieces[i]!.length
  }
  const last = pieces[pieces.length - 1]!
  return whole ? text.length - last.length >= at && text.endsWith(last) : text.indexOf(last, at) >= 0
}
