import { Schema } from "effect"
import { AbsoluteUrl, CheckedByHandler, NonNegativeInt, CreatedRange, DateTime, isAtMostCharacters, isStorableText, NullableDateTime, NullableWebhookSecret, Text, UrlPrefixFilter, WrittenWithin } from "./common.ts"
import { Page, SearchPagination, SortTerms } from "./envelope.ts"
import type { ErrorDetail } from "./errors.ts"
import { webhookOptionFaults } from "./webhook.ts"

export const ExtractionStatus = Schema.Literals(["queued", "claimed", "done", "failed", "dead", "cancelled"])
export type ExtractionStatus = typeof ExtractionStatus.Type
/** The statuses an extraction ends in (`failed` is retried). */
export const terminalExtractionStatuses: ReadonlyArray<ExtractionStatus> = ["done", "dead", "cancelled"]
export const ExtractionType = Schema.Literals(["article", "product"])
export const InputFormat = Schema.Literals(["html", "markdown", "text", "json"])
export const LlmMode = Schema.Literals(["fill-missing", "correct"])
export const errorClasses = [
  "parse_error", "sanitize_fail", "llm_request", "llm_validation", "llm_timeout", "llm_unavailable",
  "invalid_input", "input_stash_lost", "cancelled_by_admin", "unknown"
] as const
export type ExtractionErrorClass = (typeof errorClasses)[number]
/** A stored error class as the resource states it (a value outside the spec's list reads `unknown`). */
export const extractionErrorClass = (stored: string | null): ExtractionErrorClass | null =>
  stored === null ? null : (errorClasses as ReadonlyArray<string>).includes(stored) ? stored as ExtractionErrorClass : "unknown"

/** Inline input is capped at 5 MiB, 5 242 880 bytes of UTF-8 (the contract's "5 MB"; bigger → 413). */
export const MAX_INPUT_BYTES = 5 * 1024 * 1024

export const CreateExtractionBody = Schema.Struct({
  type: ExtractionType,
  url: Schema.optional(AbsoluteUrl),
  input: Schema.optional(CheckedByHandler({
    // not empty, not only white space, no NUL (the creation checks these itself, with a detail at input)
    minLength: 1,
    pattern: "^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$"
  }).annotate({
    description: `The page or text to extract from, at most ${MAX_INPUT_BYTES} bytes of UTF-8 (5 MiB); more is 413 payload_too_large with the detail at input. Not empty nor only white space, no NUL (400 validation_error).`
  })),
  inputFormat: Schema.optional(InputFormat),
  jobId: Schema.optional(Text(1, 100)),
  configId: Schema.optional(Text(1, 100)),
  llm: Schema.optional(Schema.Struct({ enabled: Schema.optional(Schema.Boolean), mode: Schema.optional(LlmMode) })),
  webhookUrl: Schema.optional(AbsoluteUrl),
  // optionalKey of a union with a message of its own: null counts as absent, and no message quotes the secret.
  webhookSecret: Schema.optionalKey(NullableWebhookSecret),
  webhookEventTypes: Schema.optional(
    Schema.Array(Schema.Literals(["done", "failed", "dead"])).check(Schema.isBetweenLength(1, 3), Schema.isUnique())
  )
})
export type CreateExtractionBody = typeof CreateExtractionBody.Type

const LlmMetadata = Schema.Struct({
  model: Schema.String,
  status: Schema.Literals(["ok", "failed_validation", "failed_request", "failed_timeout"]),
  refinedFields: Schema.Array(Schema.String),
  correctedFields: Schema.Array(Schema.String),
  rejectedRefines: Schema.Array(Schema.String),
  promptTokens: Schema.optional(NonNegativeInt),
  completionTokens: Schema.optional(NonNegativeInt),
  durationMs: NonNegativeInt
})

export const ExtractionMetadata = Schema.StructWithRest(
  Schema.Struct({
    inputFormat: InputFormat,
    strategiesUsed: Schema.Array(Schema.String),
    configsApplied: Schema.Array(Schema.String),
    durationMs: Schema.optional(NonNegativeInt),
    truncated: Schema.optional(Schema.Boolean),
    detectedLanguage: Schema.optional(Schema.String),
    rootSelector: Schema.optional(Schema.String),
    llm: Schema.optional(LlmMetadata),
    /** The config the request named (`configId`) that was deleted or disabled before the extraction ran. */
    configNotApplied: Schema.optional(Schema.Struct({ id: Schema.String, reason: Schema.Literals(["deleted", "disabled"]) }))
  }),
  [Schema.Record(Schema.String, Schema.Unknown)]
)

/** JSON Schema of an image the extractors answer. */
const imageJsonSchema = {
  type: "object",
  required: ["url"],
  properties: { url: { type: "string" }, alt: { type: "string" }, width: { type: "integer", minimum: 1 }, height: { type: "integer", minimum: 1 } }
}
const strings = { type: "array", items: { type: "string" } }
/**
 * What an extraction's `data` holds, for the document (src/extract/types.ts has the types; the
 * extractor writes it, so it is described here rather than checked again): an article or a
 * product, with the fields a config's selectors or LLM refinement added; until it is done, the
 * type's empty result (docs/api.md, "Extractions").
 */
const ExtractionData = WrittenWithin(Schema.Record(Schema.String, Schema.Unknown), {
  description: "The extracted article (type article) or product (type product). Until the extraction is done (and for good when it is cancelled or dead) it is the type's empty result: {title: \"Untitled\", content: \"\"} or {name: \"Untitled product\"}; status tells whether it is a result. Fields added by a config's selectors or LLM refinement come beside these.",
  anyOf: [
    {
      title: "ArticleData",
      type: "object",
      required: ["title", "content"],
      properties: {
        title: { type: "string", minLength: 1 },
        content: { type: "string" },
        description: { type: "string" },
        summary: { type: "string" },
        author: { type: "string" },
        authors: strings,
        publishedAt: { type: "string", format: "date-time" },
        modifiedAt: { type: "string", format: "date-time" },
        lang: { type: "string" },
        images: { type: "array", items: imageJsonSchema },
        tags: strings
      }
    },
    {
      title: "ProductData",
      type: "object",
      required: ["name"],
      properties: {
        name: { type: "string" },
        description: { type: "string" },
        price: { type: "number" },
        currency: { type: "string", description: "ISO 4217" },
        availability: { type: "string" },
        sku: { type: "string" },
        brand: { type: "string" },
        images: { type: "array", items: imageJsonSchema },
        attributes: { type: "object", additionalProperties: { type: ["string", "number", "boolean", "null"] } }
      }
    }
  ]
})

export const Extraction = Schema.Struct({
  id: Schema.String,
  type: ExtractionType,
  status: ExtractionStatus,
  url: Schema.NullOr(Schema.String),
  domainId: Schema.NullOr(Schema.String),
  tenantId: Schema.String,
  inputFormat: InputFormat,
  data: ExtractionData,
  metadata: ExtractionMetadata,
  errorMessage: Schema.NullOr(Schema.String),
  errorClass: Schema.NullOr(Schema.Literals(errorClasses)),
  attempts: NonNegativeInt,
  cacheHits: NonNegativeInt,
  recycleCount: NonNegativeInt,
  jobId: Schema.NullOr(Schema.String),
  replayOf: Schema.NullOr(Schema.String),
  createdAt: DateTime,
  finishedAt: NullableDateTime,
  cancelledAt: NullableDateTime
}).annotate({ identifier: "Extraction" })
export type Extraction = typeof Extraction.Type

export const CreatedExtraction = Schema.Struct({
  ...Extraction.fields,
  webhookSecret: Schema.optional(Schema.String)
}).annotate({ identifier: "CreatedExtraction" })

export const ExtractionPage = Page(Extraction)

/** The extractor config list's sort fields (extraction-repo.ts maps each to its column). */
export const configSortFields = ["createdAt", "updatedAt", "priority", "id"] as const
export const extractionSortFields = ["createdAt", "id", "status", "type", "attempts"] as const

export const SearchExtractionsBody = Schema.Struct({
  where: Schema.optional(Schema.Struct({
    status: Schema.optional(Schema.Array(ExtractionStatus).check(Schema.isBetweenLength(1, 6))),
    type: Schema.optional(ExtractionType),
    url: Schema.optional(UrlPrefixFilter),
    domainId: Schema.optional(Text(1, 253)),
    createdAt: Schema.optional(CreatedRange)
  })),
  sort: Schema.optional(SortTerms(extractionSortFields)),
  pagination: Schema.optional(SearchPagination)
})
export type SearchExtractionsBody = typeof SearchExtractionsBody.Type

export const CancelledExtraction = Schema.Struct({
  id: Schema.String,
  status: ExtractionStatus,
  cancelled: Schema.Boolean,
  cancelledAt: DateTime,
  reason: Schema.optional(Schema.String)
})

// --- extractor configs -------------------------------------------------------------------------

// A payload's bounds, checked when a config is written (src/extract/config-check.ts) rather than by
// the schema, which also reads configs stored before a bound existed; the document states them.
/** The most fields one config's selectors or post-processing name (as many as `fields` may list). */
export const MAX_CONFIG_FIELDS = 50
/** The most post-processing operations for one field. */
export const MAX_FIELD_OPERATIONS = 20
/** The largest payload as JSON: selectors, prompts and options are small, and every matching extraction reads it. */
export const MAX_PAYLOAD_JSON = 64 * 1024
/** The longest field name a config's selectors or post-processing may use. */
export const MAX_FIELD_NAME = 100
/** Names every object has: a field so named would be lost, or worse. */
export const RESERVED_NAMES: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"])

const Selector = Schema.Struct({
  css: Schema.optional(Text(1, 500)),
  attr: Schema.optional(Text(1, 100)),
  json: Schema.optional(Text(1, 500)),
  textOnly: Schema.optional(Schema.Boolean),
  trim: Schema.optional(Schema.Boolean)
})

export const ConfigPayload = Schema.Struct({
  selectors: Schema.optional(Schema.Record(Schema.String, Schema.Array(Selector).check(Schema.isBetweenLength(1, 20)))),
  llm: Schema.optional(Schema.Struct({
    enabled: Schema.optional(Schema.Boolean),
    model: Schema.optional(Text(1, 200)),
    temperature: Schema.optional(Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 2 }))),
    promptOverride: Schema.optional(Schema.String.check(isAtMostCharacters(8000))),
    mode: Schema.optional(LlmMode)
  })),
  fields: Schema.optional(Schema.Array(Schema.String).check(Schema.isMaxLength(50))),
  postProcess: Schema.optional(Schema.Record(Schema.String, Schema.Record(Schema.String, Schema.Unknown))),
  rootSelector: Schema.optional(Text(1, 500))
})
export type ConfigPayload = typeof ConfigPayload.Type

/** A config's domainId: matched exactly against an extraction's, so it must be a form one can have (docs/api.md, "Extractor configs"). */
const ConfigDomainId = Text(1, 253).annotate({
  description: "The registrable domain of the extractions the config applies to (example.com, example.co.uk, an IP address), kept lower case with an internationalized name in ASCII. A value no extraction's domainId can equal is 400 validation_error: a name that is no host (a path, a port) or a host below its registrable domain (shop.example.com; use urlPattern for one host)."
})
const Priority = Schema.Int.check(Schema.isBetween({ minimum: -1000, maximum: 1000 }))
const Notes = Schema.String.check(isAtMostCharacters(1000), isStorableText)

export const CreateConfigBody = Schema.Struct({
  scope: Schema.Literals(["tenant", "global"]),
  type: Schema.optional(Schema.NullOr(ExtractionType)),
  domainId: Schema.optional(Schema.NullOr(ConfigDomainId)),
  urlPattern: Schema.optional(Schema.NullOr(Text(1, 500))),
  tenantId: Schema.optional(Schema.NullOr(Schema.String)),
  priority: Schema.optional(Priority),
  enabled: Schema.optional(Schema.Boolean),
  payload: Schema.optional(ConfigPayload),
  notes: Schema.optional(Schema.NullOr(Notes))
})
export type CreateConfigBody = typeof CreateConfigBody.Type

export const UpdateConfigBody = Schema.Struct({
  type: Schema.optional(Schema.NullOr(ExtractionType)),
  domainId: Schema.optional(Schema.NullOr(ConfigDomainId)),
  urlPattern: Schema.optional(Schema.NullOr(Text(1, 500))),
  priority: Schema.optional(Priority),
  enabled: Schema.optional(Schema.Boolean),
  payload: Schema.optional(ConfigPayload),
  notes: Schema.optional(Schema.NullOr(Notes))
})
export type UpdateConfigBody = typeof UpdateConfigBody.Type

export const ExtractorConfig = Schema.Struct({
  id: Schema.String,
  tenantId: Schema.NullOr(Schema.String),
  scope: Schema.Literals(["tenant", "global"]),
  type: Schema.NullOr(ExtractionType),
  domainId: Schema.NullOr(Schema.String),
  urlPattern: Schema.NullOr(Schema.String),
  priority: Schema.Int,
  enabled: Schema.Boolean,
  payload: ConfigPayload,
  notes: Schema.NullOr(Schema.String),
  createdAt: DateTime,
  updatedAt: DateTime
}).annotate({ identifier: "ExtractorConfig" })
export type ExtractorConfig = typeof ExtractorConfig.Type

export const DeletedConfig = Schema.Struct({ deleted: Schema.Boolean, deletedAt: DateTime, id: Schema.String })

/**
 * The rules across an extraction body's fields: exactly one source (unless a replay reuses the
 * stored input), `inputFormat` only with `input`, webhook options only with `webhookUrl`. Read from
 * which fields were sent, so they hold for a raw JSON body as for a decoded one.
 */
export const extractionBodyFaults = (body: Readonly<Record<string, unknown>>, reusesInput = false): Array<ErrorDetail> => {
  const details: Array<ErrorDetail> = []
  const sources = (["url", "input", "jobId"] as const).filter((k) => body[k] !== undefined)
  if (sources.length !== 1 && !reusesInput) {
    details.push({ path: sources.length === 0 ? "url" : sources[1]!, code: "exactly_one_source", message: "exactly one of url, input, jobId" })
  }
  if (body.inputFormat !== undefined && body.input === undefined && !reusesInput) {
    details.push({ path: "inputFormat", code: "invalid_value", message: "only with input" })
  }
  return [...details, ...webhookOptionFaults(body, ["webhookSecret", "webhookEventTypes"])]
}
