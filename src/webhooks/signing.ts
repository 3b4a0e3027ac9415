/**
 * Webhook signatures.
 *
 * Two signatures travel on every delivery, computed over the very bytes that are sent:
 *
 * - `X-Service-Signature: sha256=<hex>`: HMAC-SHA256 of `<timestamp>.<raw body>` (the interface
 *   description's scheme), timestamp in `X-Service-Timestamp`.
 * - `webhook-signature: v1,<base64>`: Standard Webhooks 1.0, HMAC-SHA256 of `<id>.<timestamp>.<body>`
 *   with `webhook-id` / `webhook-timestamp`.
 *
 * Both are keyed by the UTF-8 bytes of the webhook secret exactly as the client sees it (a secret the
 * client supplied is used as is). Standard Webhooks libraries instead expect `whsec_<base64 of the key
 * bytes>`; {@link standardWebhooksSecret} turns our secret into that form.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"

/** Raw body bytes as sent or received: a string is taken as its UTF-8 bytes. */
export type RawBody = string | Uint8Array

/** Default and interface-mandated tolerance between the signed timestamp and the receiver's clock. */
export const DEFAULT_TOLERANCE_SECONDS = 300

const TIMESTAMP_HEADER = "x-service-timestamp"
const SIGNATURE_HEADER = "x-service-signature"
const DELIVERY_ID_HEADER = "x-service-delivery-id"
const SIGNATURE_PATTERN = /^sha256=([0-9a-f]{64})$/i
const TIMESTAMP_PATTERN = /^\d{1,15}$/

const assertSecret = (secret: string): void => {
  if (typeof secret !== "string" || secret.length === 0) {
    throw new TypeError("webhook secret must be a non-empty string")
  }
}

const assertTimestamp = (timestampSeconds: number): void => {
  if (!Number.isSafeInteger(timestampSeconds) || timestampSeconds < 0) {
    throw new TypeError("webhook timestamp must be a non-negative integer number of seconds")
  }
}

// The secret as a string is keyed by its UTF-8 bytes; Node checks a string key far faster than a Buffer.
const hmac = (secret: string, prefix: string, body: RawBody) =>
  createHmac("sha256", secret).update(prefix, "utf8").update(body).digest()

/** `sha256=<hex>`: HMAC-SHA256 over `<timestampSeconds>.<raw body>`, keyed by the secret's UTF-8 bytes. */
export const signPayload = (secret: string, timestampSeconds: number, rawBody: RawBody): string => {
  assertSecret(secret)
  assertTimestamp(timestampSeconds)
  return `sha256=${hmac(secret, `${timestampSeconds}.`, rawBody).toString("hex")}`
}

/**
 * `v1,<base64>`: the Standard Webhooks 1.0 signature, HMAC-SHA256 over `<id>.<timestamp>.<body>`.
 * The key is the secret's UTF-8 bytes (not a `whsec_` base64 key, see {@link standardWebhooksSecret}).
 */
export const standardWebhookSignature = (
  secret: string,
  id: string,
  timestampSeconds: number,
  body: RawBody
): string => {
  assertSecret(secret)
  assertTimestamp(timestampSeconds)
  return `v1,${hmac(secret, `${id}.${timestampSeconds}.`, body).toString("base64")}`
}

/**
 * The same key in the form Standard Webhooks libraries take: `whsec_` + base64 of the secret's UTF-8
 * bytes. `new Webhook(standardWebhooksSecret(secret))` verifies our `webhook-signature` header.
 */
export const standardWebhooksSecret = (secret: string): string => {
  assertSecret(secret)
  return `whsec_${Buffer.from(secret, "utf8").toString("base64")}`
}

/**
 * A fresh secret: 32 random bytes, base64url without padding (43 characters, no prefix). There is
 * deliberately no `whsec_` prefix: a Standard Webhooks library would strip it and base64-decode the
 * rest, giving a different key than the one we sign with; a secret without the prefix cannot be
 * mistaken for one in that format.
 */
export const generateWebhookSecret = (): string => randomBytes(32).toString("base64url")

/**
 * The secret generated for item `index` of a request run under an Idempotency-Key: the same for
 * every try of the request (derived from the key's seed under the service's secret key), so a
 * retry that meets a job an earlier try wrote answers the secret that job signs with.
 */
export const seededWebhookSecret = (secretKey: Uint8Array, seed: string, index: number): string =>
  createHmac("sha256", secretKey).update(`webhook secret ${seed} ${index}`).digest("base64url")

/** A request item's generated webhook secret: derived from its Idempotency-Key's seed when it has one, else fresh. */
export const itemWebhookSecret = (secretKey: Uint8Array, keyed: { readonly seed: string; readonly index: number } | undefined): string =>
  keyed ? seededWebhookSecret(secretKey, keyed.seed, keyed.index) : generateWebhookSecret()

/** Node's `IncomingHttpHeaders`, any plain header record, or a Fetch `Headers`. */
export type HeadersLike =
  | { get(name: string): string | null }
  | Readonly<Record<string, string | readonly string[] | undefined>>

/** Reads a header case-insensitively; several values are joined with `, ` as Node does. */
const readHeader = (headers: HeadersLike, name: string): string | null => {
  if (typeof (headers as { get?: unknown }).get === "function") {
    return (headers as { get(name: string): string | null }).get(name)
  }
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== name || value === undefined) continue
    return typeof value === "string" ? value : value.join(", ")
  }
  return null
}

export type VerifyFailureReason =
  | "raw_body_required"
  | "missing_timestamp"
  | "invalid_timestamp"
  | "timestamp_too_old"
  | "timestamp_in_future"
  | "missing_signature"
  | "malformed_signature"
  | "signature_mismatch"

export type VerifyResult =
  | { readonly ok: true; readonly deliveryId: string | null; readonly timestamp: number }
  | { readonly ok: false; readonly reason: VerifyFailureReason }

export interface VerifyOptions {
  /** The body exactly as received (string or bytes); never a parsed and re-serialized object. */
  readonly rawBody: RawBody
  readonly headers: HeadersLike
  readonly secret: string
  /** Maximum distance between `X-Service-Timestamp` and now, either way. Default 300. */
  readonly toleranceSeconds?: number
  /** The receiver's clock: a `Date` or milliseconds since the epoch. Default `Date.now()`. */
  readonly now?: Date | number
}

/**
 * Verifies `X-Service-Signature` against `X-Service-Timestamp` and the raw body, in constant time.
 * On success returns the `X-Service-Delivery-Id` (for deduplication; null when absent) and the
 * signed timestamp.
 */
export const verifyWebhookSignature = (options: VerifyOptions): VerifyResult => {
  const { rawBody, headers, secret } = options
  assertSecret(secret)
  if (typeof rawBody !== "string" && !(rawBody instanceof Uint8Array)) {
    return { ok: false, reason: "raw_body_required" }
  }

  const timestampHeader = readHeader(headers, TIMESTAMP_HEADER)?.trim()
  if (!timestampHeader) return { ok: false, reason: "missing_timestamp" }
  if (!TIMESTAMP_PATTERN.test(timestampHeader)) return { ok: false, reason: "invalid_timestamp" }
  const timestamp = Number(timestampHeader)

  const toleranceSeconds = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS
  // NaN would compare false both ways and accept any age.
  if (typeof toleranceSeconds !== "number" || !(toleranceSeconds >= 0)) throw new TypeError("toleranceSeconds must be a number >= 0")
  const nowMs = options.now === undefined ? Date.now() : Number(options.now)
  if (!Number.isFinite(nowMs)) throw new TypeError("now must be a valid Date or a number of milliseconds")
  const skewSeconds = nowMs / 1000 - timestamp
  if (skewSeconds > toleranceSeconds) return { ok: false, reason: "timestamp_too_old" }
  if (-skewSeconds > toleranceSeconds) return { ok: false, reason: "timestamp_in_future" }

  const signatureHeader = readHeader(headers, SIGNATURE_HEADER)?.trim()
  if (!signatureHeader) return { ok: false, reason: "missing_signature" }
  // Several signatures (a repeated header, joined by a comma) are accepted when any one matches.
  const candidates = signatureHeader.split(/[\s,]+/).filter((part) => part.length > 0)
  const digests = candidates.map((part) => SIGNATURE_PATTERN.exec(part)?.[1])
  if (digests.length === 0 || digests.some((digest) => digest === undefined)) {
    return { ok: false, reason: "malformed_signature" }
  }

  // Signed over the timestamp exactly as received, like the body.
  const expected = hmac(secret, `${timestampHeader}.`, rawBody)
  let matched = false
  for (const digest of digests) {
    // Both sides are 32 bytes (the pattern fixes the length), as timingSafeEqual requires.
    matched = timingSafeEqual(expected, Buffer.from(digest as string, "hex")) || matched
  }
  if (!matched) return { ok: false, reason: "signature_mismatch" }

  return { ok: true, deliveryId: readHeader(headers, DELIVERY_ID_HEADER)?.trim() || null, timestamp }
}
