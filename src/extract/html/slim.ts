/**
 * Fitting an oversized HTML page into the processing limit without losing its text first: modern
 * pages carry megabytes of scripts, style sheets and inline drawings ahead of their content, and a
 * blind cut at the limit kept those and dropped the article. See docs/extraction.md ("Limit").
 */

/**
 * One left-to-right scan over scripts (raw text: a `<svg` or `<!--` inside a script's string is not
 * markup), comments, style sheets and inline SVG drawings.
 */
const BULK = /<script\b([^>]*)>([\s\S]*?)<\/script\s*>|<!--[\s\S]*?-->|<style\b[^>]*>[\s\S]*?<\/style\s*>|<svg\b[^>]*>[\s\S]*?<\/svg\s*>/gi
/** JSON-LD data blocks are kept (they are read as data). */
const JSON_LD = /ld\+json/i

/**
 * `html` cut to at most `max` characters. Over the limit, comments, style sheets and inline drawings
 * (no text a reader sees) go first, then the bodies of the largest inline scripts (a page's data is
 * read from them only when its markup shows little), and only then is the rest cut at the limit.
 * Returns `html` itself when it fits.
 */
export function fitToLimit(html: string, max: number): string {
  if (html.length <= max) return html
  const scripts: number[] = []
  let out = html.replace(BULK, (whole: string, attrs: string | undefined, body: string | undefined) => {
    if (attrs === undefined || body === undefined) return ""
    if (!JSON_LD.test(attrs)) scripts.push(body.length)
    return whole
  })
  if (out.length > max && scripts.length > 0) {
    // the smallest body that has to go, taking the largest first, for the page to fit
    scripts.sort((a, b) => b - a)
    let excess = out.length - max
    let threshold = 0
    for (const size of scripts) {
      threshold = size
      excess -= size
      if (excess <= 0) break
    }
    out = out.replace(BULK, (whole: string, attrs: string | undefined, body: string | undefined) =>
      attrs !== undefined && body !== undefined && threshold > 0 && body.length >= threshold && !JSON_LD.test(attrs) ? `<script${attrs}></script>` : whole)
  }
  return out.length > max ? out.slice(0, max) : out
}
