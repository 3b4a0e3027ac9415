import { Schema, SchemaAST, SchemaTransformation } from "effect"
import { HttpApiSchema } from "effect/http-api"
import { CheckedByHandler, NonNegativeInt } from "./common.ts"

const labels: Record<number, string> = {
  200: "ok",
  201: "created",
  202: "accepted",
  207: "partial_success"
}


/**
 * The optional members of every success envelope (spec "Response envelopes"). Trawl sends
 * `deprecation` when a request used a legacy element (docs/api.md "Versioning"); the document
 * states all three so that a client validating answers against it accepts them.
 */
export const EnvelopeCache = Schema.Struct({
  hit: Schema.Boolean,
  key: Schema.optionalKey(Schema.String),
  ageSeconds: Schema.optionalKey(NonNegativeInt),
  expiresAt: Schema.optionalKey(Schema.String.annotate({ format: "date-time" }))
})
export const EnvelopeTiming = Schema.Struct({
  totalMs: NonNegativeInt,
  dbMs: Schema.optionalKey(NonNegativeInt),
  externalMs: Schema.optionalKey(NonNegativeInt)
})
export const EnvelopeDeprecation = Schema.Struct({
  sunset: Schema.String.annotate({ format: "date-time" }),
  successor: Schema.optionalKey(Schema.String),
  note: Schema.optionalKey(Schema.String)
})

/** The envelope's `deprecation` for a request that used the legacy list parameter `take` (src/http/deprecation.ts). */
export const TAKE_DEPRECATION = {
  sunset: "2027-06-30T00:00:00.000Z",
  successor: "limit",
  note: "the list parameter take is replaced by limit and will be removed at the sunset"
} as const

/**
 * The success envelope `{status: "success", code: "<http>-<label>", data}` as a
 * wire schema whose decoded type is the bare data: handlers return the data,
 * the response and the OpenAPI document carry the envelope.
 */
export const Success = <S extends Schema.Top>(data: S, status = 200, label = labels[status] ?? "ok") => {
  const code = `${status}-${label}`
  // One schema per data and code: routes that answer the same envelope share one named component
  // (two equal schemas of one name are told apart by the generator as `RoleEnvelope_1`).
  const made = envelopes.get(data)?.get(code)
  if (made !== undefined) return made as ReturnType<typeof makeSuccess<S>>
  const envelope = makeSuccess(data, status, code)
  envelopes.set(data, (envelopes.get(data) ?? new Map()).set(code, envelope))
  return envelope
}

const envelopes = new WeakMap<Schema.Top, Map<string, unknown>>()

const makeSuccess = <S extends Schema.Top>(data: S, status: number, code: string) => {
  // Named after its data and code (`RoleEnvelope`, `RoleEnvelope201Created`), so that clients generated
  // from the document get stable type names rather than the generator's `RoleEncoded_2`.
  const named = SchemaAST.resolveIdentifier(data.ast)
  const envelope = Schema.Struct({
    status: Schema.Literal("success"),
    code: Schema.Literal(code),
    data,
    cache: Schema.optionalKey(EnvelopeCache),
    timing: Schema.optionalKey(EnvelopeTiming),
    deprecation: Schema.optionalKey(EnvelopeDeprecation)
  })
  const suffix = code === "200-ok" ? "" : code.replace(/(^|-)([a-z0-9])/g, (_, __, c: string) => c.toUpperCase())
  return (named === undefined ? envelope : envelope.annotate({ identifier: `${named}Envelope${suffix}` })).pipe(
    Schema.decodeTo(
      Schema.toType(data),
      SchemaTransformation.transform({
        decode: (envelope) => (envelope as { readonly data: S["Type"] }).data,
        // `as never`: the optional members are never set here (see EnvelopeDeprecation)
        encode: (value) => ({ status: "success" as const, code, data: value }) as never
      })
    ),
    HttpApiSchema.status(status)
  )
}

/** Largest accepted request body; extraction input is capped at 5 MiB inside it. */
export const MAX_BODY_BYTES = 6 * 1024 * 1024

/**
 * How deep arrays and objects may nest in a body (docs/api.md, "Statuses and codes"). No body of
 * the API needs more than a few levels; millions of brackets would hold the event loop in
 * JSON.parse and the schema walk for tens of seconds, so such a body is refused before it is parsed.
 */
export const MAX_JSON_DEPTH = 64

/**
 * An annotation of a request body schema: a body that fails it anywhere is answered with this
 * status and code instead of `400 validation_error` (a body that is not JSON at all stays a 400).
 */
export const WHOLE_BODY_ERROR = "trawl/wholeBodyError"
export interface WholeBodyError {
  readonly status: number
  readonly code: string
  readonly message: string
}

/** An applied sort term, as a list or search echoes it. */
export const SortEntry = Schema.Struct({ field: Schema.String, dir: Schema.Literals(["asc", "desc"]) })

/** The most sort terms a list or search takes. */
export const MAX_SORT_TERMS = 5

/**
 * A search body's `sort` over `fields`. A field not among them is reported at `sort.<i>.field`,
 * which the error envelope answers as `400 invalid_sort_field`.
 */
export const SortTerms = <const Fields extends ReadonlyArray<string>>(fields: Fields) =>
  Schema.Array(Schema.Struct({ field: Schema.Literals(fields), dir: Schema.Literals(["asc", "desc"]) })).check(
    Schema.isMaxLength(MAX_SORT_TERMS),
    // A second term for a field could never order anything: the first one decided already.
    Schema.makeFilter((terms: ReadonlyArray<{ readonly field: string }>) => new Set(terms.map((t) => t.field)).size === terms.length, {
      expected: "each field at most once"
    })
  )

/**
 * A list's `sort` query: up to MAX_SORT_TERMS comma-separated `field` or `field:asc|desc` terms
 * over `fields`, blanks around each term allowed; blank means the list's default order. Read by
 * the handler (`readSort`, which tells a malformed term from an unknown field); the document
 * states the pattern it accepts.
 */
export const sortQueryPattern = (fields: ReadonlyArray<string>) => {
  const term = `\\s*(${fields.join("|")})(:(asc|desc))?\\s*`
  return `^(${term}(,${term}){0,${MAX_SORT_TERMS - 1}}|\\s*)$`
}
export const SortQuery = (fields: ReadonlyArray<string>) =>
  Schema.optional(CheckedByHandler({
    pattern: sortQueryPattern(fields),
    description: "comma-separated field or field:asc|desc terms, each field at most once, e.g. createdAt:desc,id:desc"
  }))

/** The largest `offset` a query string takes: 15 decimal digits. */
export const MAX_QUERY_OFFSET = 999_999_999_999_999

/** The largest page a list or search answers. */
export const MAX_PAGE_LIMIT = 200

/** A whole number in a query string, in decimal digits only (not `0x10`, `1e3`, ` 10` or empty). */
const QueryInt = Schema.String.check(Schema.isPattern(/^\d{1,15}$/, { expected: "a whole number in decimal digits, at most 15 of them" })).pipe(
  Schema.decodeTo(Schema.Number, SchemaTransformation.numberFromString)
)

/** The page size of a list or search that names none. */
export const DEFAULT_PAGE_LIMIT = 50

/** `offset` and `limit` in a search body. */
export const SearchPagination = Schema.Struct({
  offset: Schema.optional(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)).annotate({ default: 0 })),
  limit: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: MAX_PAGE_LIMIT })).annotate({ default: DEFAULT_PAGE_LIMIT }))
})

const QueryLimit = Schema.optional(QueryInt.check(Schema.isBetween({ minimum: 1, maximum: MAX_PAGE_LIMIT })))

/**
 * `offset` and `limit` in the query string of every list, and `take`: the legacy name of `limit`
 * (the description: "the list parameter `take` is replaced by `limit`"), still honoured.
 */
export const PageQuery = {
  offset: Schema.optional(QueryInt),
  limit: QueryLimit,
  take: QueryLimit
}

export const Pagination = Schema.Struct({
  offset: NonNegativeInt,
  limit: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)),
  total: NonNegativeInt,
  hasMore: Schema.Boolean
})

/** The page envelope used inside `data` by every list and search. */
export const Page = <S extends Schema.Top>(item: S) =>
  Schema.Struct({
    items: Schema.Array(item),
    pagination: Pagination,
    sort: Schema.optional(Schema.Array(SortEntry))
  })

export const pageOf = <A>(items: ReadonlyArray<A>, offset: number, limit: number, total: number) => ({
  items,
  pagination: { offset, limit, total, hasMore: offset + items.length < total }
})

/**
 * Headers for fetched bytes served back from the API's origin: the browser neither sniffs another
 * type nor runs the page's scripts or loads its resources when someone opens the URL.
 */
export const storedContentHeaders = {
  "x-content-type-options": "nosniff",
  "content-security-policy": "sandbox; default-src 'none'; img-src data:; style-src 'unsafe-inline'"
} as const
