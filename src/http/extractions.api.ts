import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { Page, PageQuery, Success } from "../schema/envelope.ts"
import { Conflict, errors, InvalidRequest, NotFound, PayloadTooLarge, PaymentRequired, TooManyRequests, Unavailable, Unprocessable } from "../schema/errors.ts"
import {
  CancelledExtraction,
  CreatedExtraction,
  CreateExtractionBody,
  Extraction,
  ExtractionPage,
  SearchExtractionsBody
} from "../schema/extraction.ts"
import { WebhookDelivery } from "../schema/webhook.ts"
import { ApiKeyAuth, requires } from "./security.ts"
import { ExtractionId } from "../schema/ids.ts"

const id = { id: ExtractionId }

export class ExtractionsGroup extends HttpApiGroup.make("extractions")
  .add(
    HttpApiEndpoint.post("create", "/extractions", {
      headers: { "idempotency-key": Schema.optional(Schema.String) },
      payload: CreateExtractionBody,
      success: Success(CreatedExtraction, 201),
      error: errors(InvalidRequest, PaymentRequired, NotFound, Conflict, PayloadTooLarge, Unprocessable, TooManyRequests, Unavailable)
    }).pipe(requires("extractor:extractions:write")),
    HttpApiEndpoint.get("list", "/extractions", {
      query: {
        ...PageQuery,
        sort: Schema.optional(Schema.String),
        status: Schema.optional(Schema.String),
        type: Schema.optional(Schema.String),
        domainId: Schema.optional(Schema.String)
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
    }).pipe(requires("extractor:extractions:write")),
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
{}
