import { createHmac, createSecretKey, type KeyObject, randomBytes, timingSafeEqual } from "node:crypto"

/** API keys look like `trawl_<43 base64url chars>` (256 random bits). */
export const apiKeyPattern = /^([a-z][a-z0-9]{1,15})_([A-Za-z0-9_-]{43})$/
export const API_KEY_PREFIX = "trawl"

export const generateApiKey = () => {
  const raw = `${API_KEY_PREFIX}_${randomBytes(32).toString("base64url")}`
  return { raw, prefix: raw.slice(0, API_KEY_PREFIX.length + 1 + 6) }
}

const keyObjects = new WeakMap<Buffer, KeyObject>()

/** A keyed hash: a leaked table cannot be checked against guesses without SECRET_KEY. */
export const hashApiKey = (secretKey: Buffer, raw: string) => {
  // The key object is prepared once per secret key; preparing it per request is measurable.
  let key = keyObjects.get(secretKey)
  if (!key) keyObjects.set(secretKey, key = createSecretKey(secretKey))
  return createHmac("sha256", key).update("api-key:").update(raw).digest("base64url")
}

/** Whether `given` is one of `tokens`, non-empty; every token is compared, so timing tells nothing about which matched. */
export const isOneOfTokens = (given: string | undefined, tokens: ReadonlyArray<string>): boolean => {
  let ok = false
  for (const token of tokens) ok = constantTimeEqual(given ?? "", token) || ok
  return ok && given !== undefined && given !== ""
}

export const constantTimeEqual = (a: string, b: string): boolean => {
  const ab = Buffer.from(a)
  const bb = Buffer.from(b)
  // Compare against itself when lengths differ so the timing does not reveal which.
  if (ab.length !== bb.length) {
    timingSafeEqual(ab, ab)
    return false
  }
  return timingSafeEqual(ab, bb)
}

/**
 * A 256-bit random secret handed to a client once (session token, mailed token): only its keyed
 * hash is stored, so a leaked table opens no session and redeems no link.
 */
export const generateToken = () => randomBytes(32).toString("base64url")

/** Keyed hash of a token; `purpose` keeps a token of one kind from being taken for another. */
export const hashToken = (secretKey: Buffer, purpose: string, raw: string) => {
  let key = keyObjects.get(secretKey)
  if (!key) keyObjects.set(secretKey, key = createSecretKey(secretKey))
  return createHmac("sha256", key).update(`${purpose}:`).update(raw).digest("base64url")
}
