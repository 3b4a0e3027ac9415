import { Schema, SchemaTransformation } from "effect"

/** An ISO 8601 date-time on the wire. */
export const DateTime = Schema.String.annotate({ format: "date-time", description: "ISO 8601 date-time" })
export const NullableDateTime = Schema.NullOr(DateTime)

const isoDateTime = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:\d{2})?)?$/

/**
 * Milliseconds since the epoch of an ISO 8601 date (`2026-01-31`, UTC midnight) or date-time
 * (`2026-01-31T12:00:00Z`, seconds, fraction and offset optional; no offset means UTC), or
 * undefined. Stricter than `Date.parse`, which takes February 30 and other spellings: every field
 * is range-checked (years 0001-9999, also after the offset is applied; offsets up to 14:00), so
 * what passes is a real instant that PostgreSQL reads the same way.
 */
export const parseIsoDateTime = (s: string): number | undefined => {
  const m = isoDateTime.exec(s)
  if (!m) return undefined
  const [year, month, day, hour = 0, minute = 0, second = 0] = [m[1], m[2], m[3], m[4], m[5], m[6]].map((v) => (v === undefined ? undefined : Number(v)))
  if (year! < 1 || month! < 1 || month! > 12 || day! < 1) return undefined
  const daysInMonth = [31, isLeap(year!) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month! - 1]!
  if (day! > daysInMonth || hour > 23 || minute > 59 || second > 59) return undefined
  let offsetMinutes = 0
  const zone = m[8]
  if (zone && zone !== "Z") {
    const oh = Number(zone.slice(1, 3))
    const om = Number(zone.slice(4, 6))
    if (oh > 14 || om > 59 || (oh === 14 && om > 0)) return undefined
    offsetMinutes = (zone[0] === "-" ? -1 : 1) * (oh * 60 + om)
  }
  const ms = m[7] ? Number(m[7].slice(0, 3).padEnd(3, "0")) : 0
  const utc = new Date(0)
  utc.setUTCFullYear(year!, month! - 1, day!)
  utc.setUTCHours(hour, minute, second, ms)
  const instant = utc.getTime() - offsetMinutes * 60_000
  return instant >= FIRST_INSTANT && instant <= LAST_INSTANT ? instant : undefined
}

/** 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z: an offset must not carry a bound out of range. */
const FIRST_INSTANT = -62135596800000
const LAST_INSTANT = 253402300799999

const isLeap = (y: number) => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0

/** A search's date-time bound: a real instant (see `parseIsoDateTime`), a date alone meaning its UTC midnight. */
export const DateTimeBound = Schema.String.check(
  Schema.makeFilter((s) => parseIsoDateTime(s) !== undefined, {
    expected: "an ISO 8601 date or date-time such as 2026-01-31T12:00:00Z",
    // The document says date-time, the form clients should send; a date alone is also taken.
    toJsonSchema: () => ({ format: "date-time" })
  })
)

/** A search's `createdAt` filter: from `gte` (inclusive) to `lt` (exclusive), either optional. */
export const CreatedRange = Schema.Struct({ gte: Schema.optional(DateTimeBound), lt: Schema.optional(DateTimeBound) })

/** An input date-time: must be a real instant (see `parseIsoDateTime`), with a time part. */
export const DateTimeInput = Schema.String.check(
  Schema.makeFilter((s) => s.includes("T") && parseIsoDateTime(s) !== undefined, {
    expected: "an ISO 8601 date-time such as 2026-01-31T12:00:00Z",
    toJsonSchema: () => ({ format: "date-time" })
  })
)

const trimBlanks = (s: string) => s.replace(/^[\t\n\f\r ]+|[\t\n\f\r ]+$/g, "")

/**
 * For http(s) the URL parser also mends a missing or doubled `//` and reads `\` as `/` before the
 * query, so `http:///h/x`, `http:h/x` and `http:\\h\x` would all fetch host `h`. A URL written so is
 * refused rather than fetched as something else; other schemes are left to the SSRF guard.
 */
const writtenAsParsed = (url: string): boolean =>
  !/^https?:/i.test(url) || (/^https?:\/\/[^/\\?#]+(?:[/?#]|$)/i.test(url) && !/^[^?#]*\\/.test(url))

/**
 * An absolute URL of at most 2048 characters. Port 0 is refused: nothing listens there, and clients
 * would read `:0` while the fetch used the default port. Any scheme parses here: one other than
 * http(s) is an unsafe URL (422 `unsafe_url`), refused by the SSRF guard, not a malformed one.
 * The bound also holds for the URL as it is stored and answered, percent-encoded (`é` is six
 * characters there), so the URL a job reports can always be given back, to the page history say.
 */
export const AbsoluteUrl = Schema.String.check(
  // Each check stops at its failure: a URL is named once, by the first rule it breaks.
  // Blanks around a URL are only trimmed, as the URL parser does: the bound is on what they enclose.
  Schema.makeFilter((s: string) => {
    const n = trimBlanks(s).length
    return n >= 1 && n <= 2048
  }, { expected: "a URL of 1 to 2048 characters", toJsonSchema: () => ({ minLength: 1, maxLength: 2048, format: "uri" }) }).abort(),
  // The URL parser would drop tabs and newlines and encode spaces inside a URL without a word: a
  // URL written with them is refused as malformed instead of fetched as something else.
  Schema.makeFilter((s: string) => !/[\u0000-\u0020\u007f]/.test(trimBlanks(s)), {
    expected: "a URL without spaces or control characters inside it"
  }).abort(),
  Schema.makeFilter((s: string) => writtenAsParsed(trimBlanks(s)), {
    expected: "an http(s) URL written scheme://host/path, with / and not \\"
  }).abort(),
  Schema.makeFilter((s: string) => {
    try {
      return new URL(s).port !== "0"
    } catch {
      return false
    }
  }, { expected: "an absolute URL (port 1-65535)" }).abort(),
  Schema.makeFilter((s) => {
    try {
      return new URL(s).href.length <= 2048
    } catch {
      return true
    }
  }, { expected: "a URL of at most 2048 characters once percent-encoded" })
)

/**
 * Text that can be stored: PostgreSQL's text holds no NUL character, and one that reached an
 * entity's write would fail it on every retry of the message.
 */
export const isStorableText = Schema.makeFilter((s: string) => !s.includes("\u0000"), {
  expected: "text without the NUL character (U+0000)",
  toJsonSchema: () => ({ pattern: "^[^\\u0000]*$" })
})

/** A count or a duration: a whole number, zero or more. */
export const NonNegativeInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/** A webhook's signing secret: 16 to 256 characters (code points, not UTF-16 units), not only white space. */
export const WebhookSecret = Schema.String.annotate({ message: "Expected a secret (a string)" }).check(
  // The failure is a message of its own: an `expected` one would be followed by the input, and an
  // error must not send a secret back.
  Schema.makeFilter((s) => {
    const n = [...s].length
    if (n < 16 || n > 256) return "Expected a secret of 16 to 256 characters"
    // a NUL cannot be stored, and a trailing one would sign as the secret without it (HMAC pads keys with zeros)
    if (s.includes("\u0000")) return "Expected a secret without the NUL character (U+0000)"
    // sixteen spaces sign nothing anyone could not guess
    return /\S/.test(s) || "Expected a secret that is not only white space"
  }, { toJsonSchema: () => ({ minLength: 16, maxLength: 256, pattern: "^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$" }) })
)

/**
 * A webhook secret that may be given as null, which counts as absent like any optional field's null.
 * The union's message is its own: the default one ("Expected string | null, got ...") quotes the
 * input, and an error must not send a secret back.
 */
export const NullableWebhookSecret = Schema.NullOr(WebhookSecret).annotate({ message: "Expected a secret (a string) or null" })

/** At most `max` characters, counted as a person counts them (code points: an emoji is one), not UTF-16 units. */
export const isAtMostCharacters = (max: number) =>
  // JSON Schema counts code points too.
  Schema.makeFilter((s: string) => s.length <= max || [...s].length <= max, { expected: `at most ${max} characters`, toJsonSchema: () => ({ maxLength: max }) })

/** Free text of `min` to `max` characters (code points) that can be stored. */
export const Text = (min: number, max: number) =>
  Schema.String.check(
    Schema.makeFilter((s: string) => [...s].length >= min, { expected: min === 1 ? "at least 1 character" : `at least ${min} characters`, toJsonSchema: () => ({ minLength: min }) }),
    isAtMostCharacters(max),
    isStorableText
  )

/** A search's `url.prefix`: what the resource's URL, as answered, starts with (taken literally). */
export const UrlPrefixFilter = Schema.Struct({ prefix: Text(1, 2048) })

/**
 * What a name may not hold: C0 and C1 controls and the line and paragraph separators (a line break
 * in a member list), the bidirectional controls, which make a name read as another (U+202E shows
 * "abc" as "cba"), and the invisible zero-width space, word joiner and byte-order mark ("owner" and
 * "owner" with one of them after it look the same). The zero-width (non-)joiners stay: emoji and
 * several scripts need them.
 */
const NAME_FORBIDDEN = "\\u0000-\\u001F\\u007F-\\u009F\\u061C\\u200B\\u200E\\u200F\\u2028\\u2029\\u202A-\\u202E\\u2060\\u2066-\\u2069\\uFEFF"
/** No space at either end, none of NAME_FORBIDDEN; the document states this very pattern (no lookahead). */
const NAME_PATTERN = `^[^\\s${NAME_FORBIDDEN}]([^${NAME_FORBIDDEN}]*[^\\s${NAME_FORBIDDEN}])?$`
const NAME_REGEXP = new RegExp(NAME_PATTERN)
/**
 * A name people read in lists and mails (a role, a key, a tenant, a person's first or last name):
 * `min` to `max` characters, no space at either end (refused, not trimmed: the name kept is the
 * name sent), and nothing that makes it read as another (docs/api.md, "Envelopes").
 */
export const Name = (min: number, max: number) =>
  Text(min, max).check(Schema.makeFilter((s: string) => NAME_REGEXP.test(s), {
    expected: "a name with no space at either end and no control or bidirectional-control characters",
    toJsonSchema: () => ({ pattern: NAME_PATTERN })
  }))

/**
 * Letters beyond ASCII an address may hold: the Basic Multilingual Plane without its control,
 * format (bidirectional marks, zero-width characters, the soft hyphen), separator, surrogate and
 * private-use characters. An address is read by people in member lists and the audit log, and must
 * not pass for another. Characters beyond the BMP (emoji) are not taken: the same rule must be
 * stated as a JSON Schema pattern, which reads such a character as two halves in some engines.
 */
const EMAIL_NON_ASCII = "\\u00A1-\\u00AC\\u00AE-\\u05FF\\u0606-\\u061B\\u061D-\\u06DC\\u06DE-\\u070E\\u0710-\\u088F\\u0892-\\u08E1" +
  "\\u08E3-\\u167F\\u1681-\\u180D\\u180F-\\u1FFF\\u2010-\\u2027\\u2030-\\u205E\\u2070-\\u2FFF\\u3001-\\uD7FF\\uF900-\\uFEFE\\uFF00-\\uFFF8"
const LOCAL_CHAR = `[A-Za-z0-9!#$%&'*+/=?^_\`{|}~\\-${EMAIL_NON_ASCII}]`
const LABEL_CHAR = `[A-Za-z0-9${EMAIL_NON_ASCII}]`
const LABEL = `${LABEL_CHAR}([A-Za-z0-9\\-${EMAIL_NON_ASCII}]{0,61}${LABEL_CHAR})?`
/**
 * One plain address a mail can be sent to (docs/identity.md, "E-mail addresses"): a dot-atom local
 * part (RFC 5322 atext, or the letters above), no leading, trailing or doubled dot; a domain of two
 * or more labels of letters, digits and inner hyphens (1 to 63 each). The document states this very
 * pattern (no lookahead: generators of test data read few of them); the total of 255 characters is
 * its maxLength. (RFC 5321's 64 octets before the @ are left to the receiving mail server.)
 */
const EMAIL_PATTERN = `^${LOCAL_CHAR}+(\\.${LOCAL_CHAR}+)*@${LABEL}(\\.${LABEL})+$`
const EMAIL_REGEXP = new RegExp(EMAIL_PATTERN)
export const isEmailAddress = (s: string): boolean => s.length <= 255 && EMAIL_REGEXP.test(s)
/**
 * An e-mail address, stored and compared in Unicode NFC: the same address typed with composed or
 * decomposed accents names one identity (lookups also ignore letter case, docs/identity.md).
 */
export const Email = Schema.String.check(
  isAtMostCharacters(255),
  Schema.makeFilter((s: string) => isEmailAddress(s), {
    expected: "an e-mail address",
    toJsonSchema: () => ({ format: "email", pattern: EMAIL_PATTERN })
  })
).pipe(Schema.decodeTo(Schema.String, SchemaTransformation.transform({ decode: (s) => s.normalize("NFC"), encode: (s) => s })))

/** A decimal amount in euros, as a string: up to 4 decimals. */
export const Amount = Schema.String.check(
  Schema.isPattern(/^-?\d{1,12}(\.\d{1,4})?$/, { expected: "a decimal amount such as \"10.00\"", toJsonSchema: () => ({ pattern: "^-?[0-9]{1,12}(\\.[0-9]{1,4})?$" }) })
)

/** A decimal amount in euros that is zero or more, as a string: up to 4 decimals. */
export const NonNegativeAmount = Schema.String.check(
  Schema.isPattern(/^\d{1,12}(\.\d{1,4})?$/, { expected: "a decimal amount of zero or more such as \"10.00\"", toJsonSchema: () => ({ pattern: "^[0-9]{1,12}(\\.[0-9]{1,4})?$" }) })
)

export const iso = (d: Date | string | null | undefined): string | null =>
  d === null || d === undefined ? null : new Date(d).toISOString()

/** Formats a numeric column as a euro string with at least two decimals. */
export const money = (v: string | number): string => {
  const fixed = Number(v).toFixed(4)
  return fixed.replace(/(\.\d\d\d*?)0+$/, "$1")
}

/** An Idempotency-Key: 1 to 255 printable ASCII characters. */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x20-\x7e]{1,255}$/

/**
 * States `jsonSchema` in the document without checking it. For a value the service checked when it
 * was written, answered as stored: an answer is not checked against its bounds again (a row written
 * under older bounds is still served). CheckedByHandler below is the same for requests.
 */
export const WrittenWithin = <S extends Schema.Top>(schema: S, jsonSchema: Record<string, unknown>) =>
  schema.check(Schema.makeFilter(() => true, { toJsonSchema: () => jsonSchema }))

/**
 * A string a handler checks itself, so that its faults are answered together with the request's
 * others (a list's sort and every other filter in one `invalid_filter`; a bad Idempotency-Key with
 * the body's faults): the schema passes every string on, and says in the document what the
 * handler takes, from the constants the handler checks with.
 */
export const CheckedByHandler = (jsonSchema: Record<string, unknown>) => WrittenWithin(Schema.String, jsonSchema)

/** A `Last-Event-ID` the job event stream resumes after: a decimal event id. */
export const LAST_EVENT_ID_PATTERN = /^[0-9]{1,64}$/

/** A comma-separated list of `values`, as a list's `status` filter takes it. */
export const commaListPattern = (values: ReadonlyArray<string>) => {
  const one = `(${values.join("|")})`
  return `^${one}(,${one})*$`
}

/** How long an Idempotency-Key and the response stored under it are kept (the spec's "Idempotency key validity"). */
export const IDEMPOTENCY_TTL_HOURS = 24

/** The Idempotency-Key header, checked by the idempotency step (`http/idempotency.ts`, `400 invalid_idempotency_key`). */
export const IdempotencyKeyHeader = CheckedByHandler({ minLength: 1, maxLength: 255, pattern: IDEMPOTENCY_KEY_PATTERN.source }).annotate({
  description: `Makes a retry safe for ${IDEMPOTENCY_TTL_HOURS} hours: the same key with the same body answers the first response again (same status and body), with another body 409 idempotency_mismatch. Keys are per tenant.`
})
