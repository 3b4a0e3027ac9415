import { Context, Effect, Layer } from "effect"
import { withoutFragment } from "../crawl/domain.ts"
import { entityCall } from "./entity-call.ts"
import { TenantEntity } from "./tenant-entity.ts"
import { fail, type TooManyRequests, type Unavailable } from "../schema/errors.ts"

/**
 * A webhook URL as it is stored and called: the WHATWG form of what the client sent, so spellings
 * of one URL (`HTTP://Host:80/`, surrounding spaces) are one, without a fragment (never sent over
 * HTTP). The body schema has already checked that it parses.
 */
export const canonicalWebhookUrl = (raw: string): string => withoutFragment(raw)

/**
 * The endpoint a webhook URL (`canonicalWebhookUrl`, so without a fragment) is counted as: the URL
 * without its query, so a receiver that takes a correlation id in the query (`/hook?job=…`) is one
 * endpoint, not one per request.
 */
export const webhookEndpointOf = (url: string): string => {
  const endpoint = new URL(url)
  endpoint.search = ""
  return endpoint.href
}

/**
 * `webhooks.endpoints.total`: the distinct endpoints (`webhookEndpointOf`) a tenant's jobs and
 * extractions have used in the last 30 days (`ENDPOINT_IDLE_DAYS`). Callers
 * register a URL once its request has passed every other check; the tenant's entity registers them
 * one at a time, so no two requests can both take the last place.
 */
export class WebhookEndpoints extends Context.Service<WebhookEndpoints, {
  readonly register: (tenantId: string, url: string) => Effect.Effect<void, TooManyRequests | Unavailable>
}>()("trawl/WebhookEndpoints") {}

export const WebhookEndpointsLive = Layer.effect(
  WebhookEndpoints,
  Effect.gen(function*() {
    const tenants = yield* TenantEntity.client
    return WebhookEndpoints.of({
      register: (tenantId, url) =>
        entityCall(tenants(tenantId).RegisterWebhookEndpoint({ url: webhookEndpointOf(url) })).pipe(
          Effect.catchTag("EndpointLimit", (e) =>
            fail(429, "quota_exceeded", `the tenant already uses ${e.limit} webhook URLs (webhooks.endpoints.total)`, {
              details: [{ path: "webhookUrl", code: "quota_exceeded", message: "a new webhook URL exceeds webhooks.endpoints.total" }]
            }))
        )
    })
  })
)
