import { createHmac } from "node:crypto"
import { describe, expect, it } from "vitest"
import {
  generateWebhookSecret,
  signPayload,
  standardWebhookSignature,
  standardWebhooksSecret,
  verifyWebhookSignature
} from "../../src/webhooks/signing.ts"

const secret = "test-secret-0123456789"
const body = '{"jobId":"job_1","status":"done"}'
const ts = 1_700_000_000

/** Independent reference of the interface's scheme. */
const reference = (key: string, timestamp: number | string, raw: string | Buffer) =>
  "sha256=" + createHmac("sha256", key).update(`${timestamp}.`).update(raw).digest("hex")

/** Independent reference of Standard Webhooks 1.0, keyed the way its libraries are (`whsec_<base64>`). */
const standardReference = (whsec: string, id: string, timestamp: number, raw: string) =>
  "v1," +
  createHmac("sha256", Buffer.from(whsec.replace(/^whsec_/, ""), "base64"))
    .update(`${id}.${timestamp}.${raw}`)
    .digest("base64")

const headersFor = (signature: string, timestamp: number | string = ts) => ({
  "x-service-timestamp": String(timestamp),
  "x-service-signature": signature,
  "x-service-delivery-id": "dlv_1"
})

describe("signPayload", () => {
  it("matches a known answer (openssl dgst -sha256 -hmac)", () => {
    expect(signPayload(secret, ts, body)).toBe("sha256=76f044ebaa63b4245330370cb787be944791cfb6bd18386ec1a687b8488c826c")
  })

  it("matches node:crypto over `<timestamp>.<raw body>` for strings, bytes and non-ASCII", () => {
    const unicode = '{"title":"Café – 東京 🚀"}'
    expect(signPayload(secret, ts, body)).toBe(reference(secret, ts, body))
    expect(signPayload(secret, ts, Buffer.from(unicode))).toBe(reference(secret, ts, Buffer.from(unicode)))
    expect(signPayload(secret, ts, unicode)).toBe(signPayload(secret, ts, Buffer.from(unicode, "utf8")))
    expect(signPayload("ключ-секрет-0123456789", ts, body)).toBe(reference("ключ-секрет-0123456789", ts, body))
  })

  it("refuses an empty secret and a non-integer timestamp", () => {
    expect(() => signPayload("", ts, body)).toThrow(TypeError)
    expect(() => signPayload(secret, 1.5, body)).toThrow(TypeError)
  })
})

describe("standardWebhookSignature", () => {
  it("reference implementation reproduces the Standard Webhooks published vector", () => {
    expect(
      standardReference("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, '{"test": 2432232314}')
    ).toBe("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
  })

  it("is keyed by the secret's UTF-8 bytes and verifies with the whsec_ form of the secret", () => {
    const id = "msg_1"
    expect(standardWebhookSignature(secret, id, ts, body)).toBe("v1,XN2MeCH15G4FrY36n65Hz6CpzPBIawyVWXVDWuUGwPw=")
    for (const key of [secret, generateWebhookSecret(), "ünïcødé-secret-long-enough"]) {
      expect(standardWebhookSignature(key, id, ts, body)).toBe(standardReference(standardWebhooksSecret(key), id, ts, body))
    }
  })
})

describe("generateWebhookSecret", () => {
  it("is 32 random bytes in base64url without prefix", () => {
    const a = generateWebhookSecret()
    expect(a).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(Buffer.from(a, "base64url")).toHaveLength(32)
    expect(generateWebhookSecret()).not.toBe(a)
  })
})

describe("verifyWebhookSignature", () => {
  const now = ts * 1000
  const good = signPayload(secret, ts, body)

  it("accepts a valid delivery (string, Buffer, Fetch Headers, mixed-case keys)", () => {
    expect(verifyWebhookSignature({ rawBody: body, headers: headersFor(good), secret, now })).toEqual({
      ok: true,
      deliveryId: "dlv_1",
      timestamp: ts
    })
    expect(verifyWebhookSignature({ rawBody: Buffer.from(body), headers: headersFor(good), secret, now }).ok).toBe(true)
    const fetchHeaders = new Headers({ "X-Service-Timestamp": String(ts), "X-Service-Signature": good })
    expect(verifyWebhookSignature({ rawBody: body, headers: fetchHeaders, secret, now })).toEqual({
      ok: true,
      deliveryId: null,
      timestamp: ts
    })
    const mixed = { "X-Service-Timestamp": String(ts), "X-SERVICE-SIGNATURE": good.toUpperCase().replace("SHA256=", "sha256=") }
    expect(verifyWebhookSignature({ rawBody: body, headers: mixed, secret, now: new Date(now) }).ok).toBe(true)
  })

  it("accepts when any of several signatures matches (rotation, repeated header)", () => {
    const other = signPayload("another-secret-xxxxxxxx", ts, body)
    expect(verifyWebhookSignature({ rawBody: body, headers: headersFor(`${other}, ${good}`), secret, now }).ok).toBe(true)
    expect(verifyWebhookSignature({ rawBody: body, headers: { ...headersFor(""), "x-service-signature": [other, good] }, secret, now }).ok).toBe(true)
  })

  it("rejects a tampered body, including a re-serialized one", () => {
    const tampered = body.replace("done", "failed")
    expect(verifyWebhookSignature({ rawBody: tampered, headers: headersFor(good), secret, now })).toEqual({ ok: false, reason: "signature_mismatch" })
    const reserialized = JSON.stringify(JSON.parse(body), null, 1)
    expect(verifyWebhookSignature({ rawBody: reserialized, headers: headersFor(good), secret, now }).ok).toBe(false)
    expect(verifyWebhookSignature({ rawBody: JSON.parse(body), headers: headersFor(good), secret, now })).toEqual({ ok: false, reason: "raw_body_required" })
  })

  it("rejects a wrong secret and a timestamp swapped after signing", () => {
    expect(verifyWebhookSignature({ rawBody: body, headers: headersFor(good), secret: "wrong-secret-0123456789", now })).toEqual({ ok: false, reason: "signature_mismatch" })
    expect(verifyWebhookSignature({ rawBody: body, headers: headersFor(good, ts + 1), secret, now })).toEqual({ ok: false, reason: "signature_mismatch" })
  })

  it("rejects stale and future timestamps beyond the tolerance, accepts at the edge", () => {
    const check = (offsetSeconds: number, toleranceSeconds?: number) =>
      verifyWebhookSignature({ rawBody: body, headers: headersFor(good), secret, now: now + offsetSeconds * 1000, toleranceSeconds })
    expect(check(300).ok).toBe(true)
    expect(check(-300).ok).toBe(true)
    expect(check(301)).toEqual({ ok: false, reason: "timestamp_too_old" })
    expect(check(-301)).toEqual({ ok: false, reason: "timestamp_in_future" })
    expect(check(61, 60)).toEqual({ ok: false, reason: "timestamp_too_old" })
    expect(() => verifyWebhookSignature({ rawBody: body, headers: headersFor(good), secret, now: new Date("nope") })).toThrow(TypeError)
    // A tolerance that is no number of seconds is a programming error, never "any age".
    for (const bad of [Number.NaN, -1]) expect(() => check(10_000, bad)).toThrow(TypeError)
    expect(check(0, 0).ok).toBe(true)
  })

  it("rejects missing or malformed headers", () => {
    const verify = (headers: Record<string, string>) => verifyWebhookSignature({ rawBody: body, headers, secret, now })
    expect(verify({ "x-service-signature": good })).toEqual({ ok: false, reason: "missing_timestamp" })
    expect(verify({ ...headersFor(good), "x-service-timestamp": "17e8" })).toEqual({ ok: false, reason: "invalid_timestamp" })
    expect(verify({ "x-service-timestamp": String(ts) })).toEqual({ ok: false, reason: "missing_signature" })
    expect(verify(headersFor(good.slice(0, -2)))).toEqual({ ok: false, reason: "malformed_signature" })
    expect(verify(headersFor(good.replace("sha256=", "v1=")))).toEqual({ ok: false, reason: "malformed_signature" })
  })
})
