/** URL helpers: absolute http(s) URLs only, so `javascript:`, `data:` and the like never reach outputs. */

/** Resolves `href` against `base`; returns undefined for anything but an http(s) URL. */
export function absoluteUrl(href: string | undefined | null, base: string | null | undefined): string | undefined {
  if (href === undefined || href === null) return undefined
  const h = href.trim().replace(/[\u0000-\u001f\u007f]/g, "")
  if (h === "" || /^(javascript|data|vbscript|file|about|blob):/i.test(h.replace(/\s+/g, ""))) return undefined
  try {
    const u = base ? new URL(h, base) : new URL(h.startsWith("//") ? "https:" + h : h)
    if (u.protocol !== "http:" && u.protocol !== "https:") return undefined
    return u.href
  } catch {
    return undefined
  }
}

/** True for a string that is a safe absolute http(s) URL. */
export function isHttpUrl(s: string): boolean {
  return absoluteUrl(s, null) !== undefined
}
