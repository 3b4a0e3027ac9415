import type { HttpServerRequest } from "effect/http"
import { HttpServerResponse } from "effect/http"
import { TAKE_DEPRECATION } from "../schema/envelope.ts"

// The legacy list parameter `take`, replaced by `limit` (spec "Versioning", docs/api.md
// "Envelopes"): still read, and every success that used it says so in its envelope's
// `deprecation` and in the `Deprecation` (RFC 9745) and `Sunset` (RFC 8594) headers.

/** When `take` became legacy: the day `limit` was introduced. */
const DEPRECATED_SINCE = Date.parse("2026-01-01T00:00:00.000Z")

const usesTake = (url: string) => {
  const at = url.indexOf("?")
  return at >= 0 && new URLSearchParams(url.slice(at + 1)).has("take")
}

/** A success answer of a request that used `take`, with the deprecation marked; any other answer as it is. */
export const markDeprecatedTake = (request: HttpServerRequest.HttpServerRequest, response: HttpServerResponse.HttpServerResponse): HttpServerResponse.HttpServerResponse => {
  if (response.status < 200 || response.status > 299 || !request.url.includes("take") || !usesTake(request.url)) return response
  const body = response.body
  if (body._tag !== "Uint8Array" || !body.contentType.startsWith("application/json")) return response
  let envelope: unknown
  try {
    envelope = JSON.parse(new TextDecoder().decode(body.body))
  } catch {
    return response
  }
  if (typeof envelope !== "object" || envelope === null || (envelope as { status?: unknown }).status !== "success") return response
  return HttpServerResponse.setHeaders(
    HttpServerResponse.setBody(response, HttpServerResponse.jsonUnsafe({ ...envelope, deprecation: TAKE_DEPRECATION }).body),
    { deprecation: `@${DEPRECATED_SINCE / 1000}`, sunset: new Date(TAKE_DEPRECATION.sunset).toUTCString() }
  )
}
