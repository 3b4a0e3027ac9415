/**
 * Bytes fetched without a `Content-Type`: HTML when they look like text (crawls nearly always are),
 * otherwise opaque bytes, never served or diffed as a page.
 */

/** How much of a body is looked at, as the WHATWG MIME Sniffing standard's "resource header". */
const SNIFF_BYTES = 1445

/** Whether the start of `body` holds a byte that text never does (the standard's "binary data bytes"). */
export const looksBinary = (body: Uint8Array): boolean => {
  const n = Math.min(body.length, SNIFF_BYTES)
  for (let i = 0; i < n; i++) {
    const b = body[i]!
    if (b <= 0x08 || b === 0x0b || (b >= 0x0e && b <= 0x1a) || (b >= 0x1c && b <= 0x1f)) return true
  }
  return false
}

/** The type stored bytes are served with: their own, else HTML for text and `application/octet-stream` for the rest. */
export const servedContentType = (contentType: string | null, body: Uint8Array): string =>
  contentType ?? (looksBinary(body) ? "application/octet-stream" : "text/html; charset=utf-8")
