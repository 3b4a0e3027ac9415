import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Page, PageQuery, SortQuery, Success } from "../schema/envelope.ts"
import { errors, Forbidden, InvalidRequest, NotFound, TooManyRequests, Unprocessable } from "../schema/errors.ts"
import { configSortFields, CreateConfigBody, DeletedConfig, ExtractorConfig, UpdateConfigBody } from "../schema/extraction.ts"
import { ApiKeyAuth, requires } from "./security.ts"
import { Operations } from "./openapi.ts"

const id = { id: Schema.String }

export class ExtractorConfigsGroup extends HttpApiGroup.make("extractor-configs")
  .add(
    HttpApiEndpoint.post("create", "/configs", {
      payload: CreateConfigBody,
      success: Success(ExtractorConfig, 201),
      error: errors(InvalidRequest, Forbidden, Unprocessable, TooManyRequests)
    }).pipe(requires("extractor:configs:write")),
    HttpApiEndpoint.get("list", "/configs", {
      query: { ...PageQuery, sort: SortQuery(configSortFields) },
      success: Success(Page(ExtractorConfig)),
      error: errors(InvalidRequest)
    }).pipe(requires("extractor:configs:read")),
    HttpApiEndpoint.get("get", "/configs/:id", {
      params: id,
      success: Success(ExtractorConfig),
      error: errors(NotFound)
    }).pipe(requires("extractor:configs:read")),
    HttpApiEndpoint.patch("update", "/configs/:id", {
      params: id,
      payload: UpdateConfigBody,
      success: Success(ExtractorConfig),
      error: errors(InvalidRequest, Forbidden, NotFound)
    }).pipe(requires("extractor:configs:write")),
    HttpApiEndpoint.delete("remove", "/configs/:id", {
      params: id,
      success: Success(DeletedConfig),
      error: errors(Forbidden, NotFound)
    }).pipe(requires("extractor:configs:write"))
  )
  .middleware(ApiKeyAuth)
  .prefix("/v1/extractor")
  .annotate(OpenApi.Description, "Stored extraction settings for a domain or URL pattern.")
  .annotate(Operations, {
    create: ["Create an extractor config", "Stores extraction settings for a domain or URL pattern."],
    list: ["List extractor configs", "The tenant's configs, newest first by default."],
    get: ["Get an extractor config", "One stored config."],
    update: ["Update an extractor config", "Changes fields of a config; null clears an optional one."],
    remove: ["Delete an extractor config", "Deletes a config."]
  })
{}
