import { createHmac, createSecretKey, type KeyObject, randomBytes, scrypt, timingSafeEqual } from "node:crypto"
import { promisify } from "node:util"

const scryptAsync = promisify(scrypt) as (pw: string, salt: Buffer, len: number, opts: object) => Promise<Buffer>

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

const SCRYPT = { N: 16384, r: 8, p: 1, maxmem: 64 * 1024 * 1024 }

export const hashPassword = async (password: string): Promise<string> => {
  const salt = randomBytes(16)
  const hash = await scryptAsync(password, salt, 32, SCRYPT)
  return `scrypt$${SCRYPT.N}$${SCRYPT.r}$${SCRYPT.p}$${salt.toString("base64url")}$${hash.toString("base64url")}`
}

export const verifyPassword = async (password: string, stored: string): Promise<boolean> => {
  const [kind, n, r, p, salt, hash] = stored.split("$")
  if (kind !== "scrypt" || !salt || !hash) return false
  const expected = Buffer.from(hash, "base64url")
  const got = await scryptAsync(password, Buffer.from(salt, "base64url"), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
    maxmem: SCRYPT.maxmem
  })
  return timingSafeEqual(got, expected)
}
