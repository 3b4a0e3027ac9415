import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { CallDebitor, creditShortfall } from "../actors/tenant-entity.ts"
import { IP_LOOKUP_SERVICE_KEY, ipLookupUnits } from "../billing/pricing.ts"
import { CurrentPrincipal } from "../iam/principal.ts"
import { newId } from "../ids.ts"
import { GeoIp } from "../network/geoip.ts"
import { fail } from "../schema/errors.ts"
import { normalizeIp } from "../schema/network.ts"
import { Api } from "./api.ts"
import { clientContext } from "./client-context.ts"

export const NetworkHandlers = HttpApiBuilder.group(
  Api,
  "network",
  Effect.fn(function*(handlers) {
    const geoip = yield* GeoIp
    const debitor = yield* CallDebitor
    /**
     * Looks `ip` up and debits the tenant for it: the lookup first (it answers 503 while the
     * database is missing, and then nothing is debited), then one ledger entry in the tenant's
     * entity, which refuses it when the free credit cannot cover it (402, nothing debited).
     */
    const lookup = (ip: string) =>
      Effect.gen(function*() {
        const me = yield* CurrentPrincipal
        const answer = yield* geoip.lookup(ip).pipe(
          Effect.catchTag("GeoIpUnavailable", (e) => fail(503, "dependency_unavailable", e.reason, { retryAfter: e.retryAfter }))
        )
        yield* debitor.debit(me.tenantId, {
          entryId: newId("txn"),
          units: ipLookupUnits,
          serviceKey: IP_LOOKUP_SERVICE_KEY,
          resourceType: "ip_lookup",
          resourceId: ip,
          note: null
        }).pipe(
          Effect.catchTag("InsufficientCredit", (e) =>
            fail(402, "insufficient_credit", `the balance of ${e.balance} EUR does not leave the ${e.required} EUR free that this lookup and the tenant's uncharged work need (see GET /v1/billing/pricing)`, { extra: creditShortfall(e) }))
        )
        return answer
      })
    return handlers
      // The query schema has checked the address already.
      .handle("lookup", ({ query }) => lookup(normalizeIp(query.ip)!))
      .handle("me", () =>
        Effect.gen(function*() {
          const { ip } = yield* clientContext
          // A TCP peer always has an address; only a server on a unix socket would have none.
          if (ip === null) return yield* Effect.die(new Error("the request has no client address"))
          return yield* lookup(normalizeIp(ip) ?? ip)
        }))
  })
)
