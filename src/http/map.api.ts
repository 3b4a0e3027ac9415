import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { Success } from "../schema/envelope.ts"
import { errors } from "../schema/errors.ts"
import { MapBody, SiteMap } from "../schema/map.ts"
import { ApiKeyAuth, Requires } from "./security.ts"

/**
 * A site's URLs from its sitemaps and links, without storing pages (docs/api.md "Site map").
 * It fetches, so it needs what creating a job needs (`scraper:jobs:write`), and it is priced per
 * call (402 without the credit).
 */
export class MapGroup extends HttpApiGroup.make("map")
  .add(
    HttpApiEndpoint.post("map", "/map", {
      payload: MapBody,
      success: Success(SiteMap),
      error: errors(400, 402, 422, 429, 503)
    }).annotate(Requires, "scraper:jobs:write")
  )
  .middleware(ApiKeyAuth)
  .prefix("/v1/scraper")
{}
