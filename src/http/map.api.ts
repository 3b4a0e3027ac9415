import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Success } from "../schema/envelope.ts"
import { errors, InvalidRequest, PaymentRequired, TooManyRequests, Unavailable, Unprocessable } from "../schema/errors.ts"
import { MapBody, SiteMap } from "../schema/map.ts"
import { Operations } from "./openapi.ts"
import { ApiKeyAuth, requires } from "./security.ts"

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
      error: errors(InvalidRequest, PaymentRequired, Unprocessable, TooManyRequests, Unavailable)
    }).pipe(requires("scraper:jobs:write"))
  )
  .middleware(ApiKeyAuth)
  .prefix("/v1/scraper")
  .annotate(OpenApi.Description, "Site maps: the URLs of a site from its sitemaps and links, without storing pages (billable).")
  .annotate(Operations, {
    map: [
      "Map a site's URLs",
      "Lists the URLs of the seed's site found in its robots.txt sitemaps, /sitemap.xml and the links of the pages fetched to find them, within `limit` and `budgetMs`; robots.txt and the SSRF guard are honoured for every URL, and no page is stored. Priced per call."
    ]
  })
{}
