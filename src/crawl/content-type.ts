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

/** A charset label as the WHATWG Encoding standard knows it, by its canonical name (`latin1` → `windows-1252`); undefined if unknown. */
const knownEncoding = (label: string): string | undefined => {
  try {
    return new TextDecoder(label).encoding
  } catch {
    return undefined
  }
}

/**
 * The encoding a `<meta charset>` (or `http-equiv` content type) in an HTML document's first 1024
 * bytes names, as the HTML standard takes it: a UTF-16 label there means UTF-8 (the bytes that
 * spell the tag are ASCII, so they are not UTF-16), and `x-user-defined` means windows-1252.
 */
const metaCharset = (body: Uint8Array): string | undefined => {
  const head = new TextDecoder("latin1").decode(body.subarray(0, 1024))
  for (const tag of head.match(/<meta\b[^>]*>/gi) ?? []) {
    const label = /\bcharset\s*=\s*["']?([^"'\s;/>]+)/i.exec(tag)?.[1]
    const encoding = label ? knownEncoding(label) : undefined
    if (encoding) return encoding.startsWith("utf-16") ? "utf-8" : encoding === "x-user-defined" ? "windows-1252" : encoding
  }
  return undefined
}

/**
 * The encoding stored bytes are read in, as a browser reads them: the one a byte order mark names,
 * else the charset of their content type, else (for HTML, or no type) the one a `<meta>` names;
 * UTF-8 when none names one it knows.
 */
export const bodyEncoding = (body: Uint8Array, contentType: string | null): string => {
  const declared = /charset\s*=\s*"?([^";\s]+)/i.exec(contentType ?? "")?.[1]
  const html = contentType === null || /html/i.test(contentType)
  return bomEncoding(body) ?? (declared ? knownEncoding(declared) : undefined) ?? (html ? metaCharset(body) : undefined) ?? "utf-8"
}

/**
 * The type stored bytes are served with: their own, else HTML in the encoding a browser would read
 * them in (so a client is told the charset the page itself names), and `application/octet-stream`
 * for bytes that are not text.
 */
export const servedContentType = (contentType: string | null, body: Uint8Array): string =>
  usableContentType(contentType) ?? (looksBinary(body) ? "application/octet-stream" : `text/html; charset=${bodyEncoding(body, null)}`)
