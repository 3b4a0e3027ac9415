/**
 * Bytes fetched without a `Content-Type`: HTML when they look like text (crawls nearly always are),
 * otherwise opaque bytes, never served or diffed as a page.
 */

/** How much of a body is looked at, as the WHATWG MIME Sniffing standard's "resource header". */
const SNIFF_BYTES = 1445

/** The text encoding a byte order mark at the start of `body` names, if there is one. */
export const bomEncoding = (body: Uint8Array): "utf-8" | "utf-16be" | "utf-16le" | undefined =>
  body[0] === 0xfe && body[1] === 0xff ? "utf-16be"
  : body[0] === 0xff && body[1] === 0xfe ? "utf-16le"
  : body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf ? "utf-8"
  : undefined

/**
 * Whether `body` is not text: it has no byte order mark, and its start holds a byte that text never
 * does (the standard's "binary data bytes").
 */
export const looksBinary = (body: Uint8Array): boolean => {
  if (bomEncoding(body)) return false
  const n = Math.min(body.length, SNIFF_BYTES)
  for (let i = 0; i < n; i++) {
    const b = body[i]!
    if (b <= 0x08 || b === 0x0b || (b >= 0x0e && b <= 0x1a) || (b >= 0x1c && b <= 0x1f)) return true
  }
  return false
}

/**
 * A target's `Content-Type` as a type to keep and serve again: trimmed, and none at all when it is
 * empty or holds a character a header value cannot carry (a control character other than tab, or
 * one beyond Latin-1).
 */
export const usableContentType = (raw: string | null | undefined): string | null => {
  const type = raw?.trim()
  return type && !/[^\t\u0020-\u007e\u0080-\u00ff]/.test(type) ? type : null
}

/** The type stored bytes are served with: their own, else HTML for text and `application/octet-stream` for the rest. */
export const servedContentType = (contentType: string | null, body: Uint8Array): string =>
  usableContentType(contentType) ?? (looksBinary(body) ? "application/octet-stream" : `text/html; charset=${bomEncoding(body) ?? "utf-8"}`)
