import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Page, PageQuery, SortQuery, Success } from "../schema/envelope.ts"
import { Conflict, errors, InvalidRequest, NotFound, PayloadTooLarge, PaymentRequired, TooManyRequests, Unavailable, Unprocessable } from "../schema/errors.ts"
import {
  CancelledExtraction,
  CreatedExtraction,
  CreateExtractionBody,
  Extraction,
  extractionBodyFaults,
  ExtractionPage,
  ExtractionStatus,
  extractionSortFields,
  SearchExtractionsBody
} from "../schema/extraction.ts"
import { WebhookDelivery } from "../schema/webhook.ts"
import { ApiKeyAuth, CrossFieldRules, requires, requiresToStop } from "./security.ts"
import { Operations } from "./openapi.ts"
import { CheckedByHandler, commaListPattern, IdempotencyKeyHeader } from "../schema/common.ts"

const id = { id: Schema.String }

export class ExtractionsGroup extends HttpApiGroup.make("extractions")
  .add(
    HttpApiEndpoint.post("create", "/extractions", {
      headers: { "idempotency-key": Schema.optional(IdempotencyKeyHeader) },
      payload: CreateExtractionBody,
      success: Success(CreatedExtraction, 201),
      error: errors(InvalidRequest, PaymentRequired, NotFound, Conflict, PayloadTooLarge, Unprocessable, TooManyRequests, Unavailable)
    }).annotate(CrossFieldRules, extractionBodyFaults).pipe(requires("extractor:extractions:write")),
    HttpApiEndpoint.get("list", "/extractions", {
      query: {
        ...PageQuery,
        sort: SortQuery(extractionSortFields),
        status: Schema.optional(CheckedByHandler({ pattern: commaListPattern(ExtractionStatus.literals) })),
        type: Schema.optional(CheckedByHandler({ enum: ["article", "product"] })),
        domainId: Schema.optional(CheckedByHandler({ minLength: 1, maxLength: 253 }))
      },
      success: Success(ExtractionPage),
      error: errors(InvalidRequest)
    }).pipe(requires("extractor:extractions:read")),
    HttpApiEndpoint.post("search", "/extractions/search", {
      payload: SearchExtractionsBody,
      success: Success(ExtractionPage),
      error: errors(InvalidRequest)
    }).pipe(requires("extractor:extractions:read")),
    HttpApiEndpoint.get("get", "/extractions/:id", {
      params: id,
      success: Success(Extraction),
      error: errors(NotFound)
    }).pipe(requires("extractor:extractions:read")),
    HttpApiEndpoint.delete("cancel", "/extractions/:id", {
      params: id,
      success: Success(CancelledExtraction),
      error: errors(NotFound)
    }).pipe(requiresToStop("extractor:extractions:write")),
    HttpApiEndpoint.post("replay", "/extractions/:id/replay", {
      params: id,
      success: Success(CreatedExtraction, 201),
      error: errors(InvalidRequest, PaymentRequired, NotFound, Conflict, PayloadTooLarge, Unprocessable, TooManyRequests, Unavailable)
    }).pipe(requires("extractor:extractions:write")),
    HttpApiEndpoint.get("webhookDeliveries", "/extractions/:id/webhook-deliveries", {
      params: id,
      query: PageQuery,
      success: Success(Page(WebhookDelivery)),
      error: errors(InvalidRequest, NotFound)
    }).pipe(requires("scraper:webhooks:read"))
  )
  .middleware(ApiKeyAuth)
  .prefix("/v1/extractor")
  .annotate(OpenApi.Description, "Structured extraction (articles, products) from a URL or given HTML.")
  .annotate(Operations, {
    create: ["Create an extraction", "Extracts structured data from a URL or HTML, by type or with a stored config. Exactly one of url, input and jobId is given (otherwise 400 validation_error, detail code exactly_one_source); webhookSecret and webhookEventTypes go with webhookUrl. An Idempotency-Key makes a retry answer the first response."],
    list: ["List extractions", "The tenant's extractions, newest first; filter by status, type or domain."],
    search: ["Search extractions", "Extractions matching a filter body, sorted and paged."],
    get: ["Get an extraction", "One extraction with its result once it has one."],
    cancel: ["Cancel an extraction", "Cancels an extraction that has not finished."],
    replay: ["Replay an extraction", "Creates a new extraction with the original's input and options."],
    webhookDeliveries: ["List an extraction's webhook deliveries", "The webhook delivery attempts of one extraction, newest first."]
  })
{}
