import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Success } from "../schema/envelope.ts"
import { errors, InvalidRequest, PaymentRequired, Unavailable } from "../schema/errors.ts"
import { IpAddress, IpLookupResult } from "../schema/network.ts"
import { ApiKeyAuth, requires } from "./security.ts"
import { Operations } from "./openapi.ts"

/**
 * IP geolocation at country level. Both lookups are billable (402 without the credit) and read
 * `network:ip` (docs/api.md "Network"); 503 while the country database cannot be read.
 */
export class NetworkGroup extends HttpApiGroup.make("network")
  .add(
    HttpApiEndpoint.get("lookup", "/ip/lookup", {
      query: { ip: IpAddress },
      success: Success(IpLookupResult),
      error: errors(InvalidRequest, PaymentRequired, Unavailable)
    }).pipe(requires("network:ip:read")),
    HttpApiEndpoint.get("me", "/ip/me", {
      success: Success(IpLookupResult),
      error: errors(PaymentRequired, Unavailable)
    }).pipe(requires("network:ip:read"))
  )
  .middleware(ApiKeyAuth)
  .prefix("/v1/network")
  .annotate(OpenApi.Description, "IP geolocation at country level (billable).")
  .annotate(Operations, {
    lookup: ["Look up an IP address", "The country and network of an IPv4 or IPv6 address."],
    me: ["Look up my address", "The country and network of the address the request came from."]
  })
{}
