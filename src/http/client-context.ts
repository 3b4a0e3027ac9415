import { isIPv4, isIPv6 } from "node:net"
import { Effect, Option } from "effect"
import { HttpServerRequest } from "effect/http"
import { Config, type TrustedProxies } from "../config.ts"
import type { ClientContext } from "../iam/session-service.ts"

/** An address as the socket gives it, with an IPv4-mapped IPv6 peer (`::ffff:1.2.3.4`) written as IPv4. */
const plainAddress = (address: string) => address.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, "")

/** One entry of X-Forwarded-For as an address, or undefined when it is not one (a port or brackets are allowed). */
const forwardedAddress = (entry: string): string | undefined => {
  let s = entry.trim()
  const bracketed = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(s)
  if (bracketed) s = bracketed[1]!
  else if (/^\d+\.\d+\.\d+\.\d+:\d{1,5}$/.test(s)) s = s.slice(0, s.lastIndexOf(":"))
  if (isIPv4(s)) return s
  return isIPv6(s) && !s.includes("%") ? plainAddress(s.toLowerCase()) : undefined
}

/**
 * The client's address, as Express ("trust proxy" with a list) and Fastify (`trustProxy`) read it:
 * starting from the TCP peer, while the address at hand is a trusted proxy, step to the entry of
 * `X-Forwarded-For` left of it (the right-most one first); the first address not trusted is the
 * client. When every address is trusted, the left-most one is. An entry that is not an address
 * stops the walk: the proxy that sent it is taken as the client, since nothing left of it can be
 * believed. Without trusted proxies the header is never read: anyone can send it.
 */
export const clientAddress = (peer: string | null, forwardedFor: string | undefined, proxies: TrustedProxies): string | null => {
  if (peer === null) return null
  let address = plainAddress(peer)
  if (forwardedFor === undefined || proxies.entries.length === 0 || !proxies.trusts(address)) return address
  const hops = forwardedFor.split(",")
  for (let i = hops.length - 1; i >= 0; i--) {
    const next = forwardedAddress(hops[i]!)
    if (next === undefined) return address
    address = next
    if (!proxies.trusts(address)) return address
  }
  return address
}

/**
 * The caller's address and user agent, for sessions, the audit log and `GET /v1/network/ip/me`:
 * the one place the client address is read (docs/api.md "Client address").
 */
export const clientContext: Effect.Effect<ClientContext, never, HttpServerRequest.HttpServerRequest | Config> = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const config = yield* Config
  return {
    ip: clientAddress(Option.getOrNull(request.remoteAddress), request.headers["x-forwarded-for"], config.trustProxy),
    userAgent: request.headers["user-agent"]?.slice(0, 512) ?? null
  }
})
