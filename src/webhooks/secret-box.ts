/**
 * Secrets at rest (webhook secrets, TOTP secrets, ...): AES-256-GCM with a random 96-bit IV.
 *
 * Boxed form: `v1.<iv>.<tag>.<ciphertext>`, each part base64url without padding. The version names the
 * algorithm, so a later format can be introduced while old rows still open. An optional associated
 * data string (for example `"totp:<identityId>"`) binds a box to its owner: a box copied onto another
 * row fails to open there.
 */
import { createCipheriv, createDecipheriv, createSecretKey, hkdfSync, type KeyObject, randomBytes } from "node:crypto"

const VERSION = "v1"
const KEY_BYTES = 32
const IV_BYTES = 12
const TAG_BYTES = 16
const BASE64URL = /^[A-Za-z0-9_-]*$/

export type SecretBoxErrorCode = "invalid_key" | "malformed" | "unsupported_version" | "authentication_failed"

export class SecretBoxError extends Error {
  override readonly name = "SecretBoxError"
  readonly code: SecretBoxErrorCode
  constructor(code: SecretBoxErrorCode, message: string) {
    super(message)
    this.code = code
  }
}

// Node checks a raw key's type on every cipher it creates (about 12 µs); a key object skips that.
const keyObjects = new WeakMap<Uint8Array, KeyObject>()

/**
 * The cipher key for `key` (the node's `SECRET_KEY`, 32 bytes or more): exactly 32 bytes are used as
 * they are, a longer key is reduced to 32 with HKDF-SHA256 (info `trawl secret-box v1`).
 */
const cipherKey = (key: Uint8Array): KeyObject => {
  if (!(key instanceof Uint8Array) || key.length < KEY_BYTES) {
    throw new SecretBoxError("invalid_key", `secret-box key must be at least ${KEY_BYTES} bytes`)
  }
  let object = keyObjects.get(key)
  if (!object) {
    const raw = key.length === KEY_BYTES ? key : Buffer.from(hkdfSync("sha256", key, Buffer.alloc(0), "trawl secret-box v1", KEY_BYTES))
    keyObjects.set(key, (object = createSecretKey(raw)))
  }
  return object
}

/** Encrypts `plaintext` (UTF-8) under a key of 32 bytes or more. Every call uses a fresh IV. */
export const encryptSecret = (key: Uint8Array, plaintext: string, associatedData?: string): string => {
  const keyObject = cipherKey(key)
  const iv = randomBytes(IV_BYTES)
  const cipher = createCipheriv("aes-256-gcm", keyObject, iv, { authTagLength: TAG_BYTES })
  if (associatedData !== undefined) cipher.setAAD(Buffer.from(associatedData, "utf8"))
  const ciphertext = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
  const tag = cipher.getAuthTag()
  return [VERSION, ...[iv, tag, ciphertext].map((part) => part.toString("base64url"))].join(".")
}

/**
 * Opens a box made by {@link encryptSecret}. Throws {@link SecretBoxError}: `malformed` or
 * `unsupported_version` for a string that is not a box, `authentication_failed` for a wrong key,
 * other associated data, or any tampering.
 */
export const decryptSecret = (key: Uint8Array, boxed: string, associatedData?: string): string => {
  const keyObject = cipherKey(key)
  const parts = typeof boxed === "string" ? boxed.split(".") : []
  if (parts.length !== 4) throw new SecretBoxError("malformed", "not a secret box")
  const [version, ivText, tagText, ciphertextText] = parts as [string, string, string, string]
  if (version !== VERSION) throw new SecretBoxError("unsupported_version", `unsupported secret-box version "${version}"`)
  if (![ivText, tagText, ciphertextText].every((part) => BASE64URL.test(part))) {
    throw new SecretBoxError("malformed", "secret box is not base64url")
  }
  const iv = Buffer.from(ivText, "base64url")
  const tag = Buffer.from(tagText, "base64url")
  if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) throw new SecretBoxError("malformed", "secret box has a bad IV or tag length")

  const decipher = createDecipheriv("aes-256-gcm", keyObject, iv, { authTagLength: TAG_BYTES })
  decipher.setAuthTag(tag)
  if (associatedData !== undefined) decipher.setAAD(Buffer.from(associatedData, "utf8"))
  try {
    return Buffer.concat([decipher.update(Buffer.from(ciphertextText, "base64url")), decipher.final()]).toString("utf8")
  } catch {
    throw new SecretBoxError("authentication_failed", "secret box failed authentication (wrong key or tampered)")
  }
}

/** Whether a stored value looks like a box (to migrate plaintext rows, for example). */
export const isSecretBox = (value: string): boolean => value.startsWith(`${VERSION}.`) && value.split(".").length === 4

/** A new random 32-byte key, for example for `SECRET_KEY` (print it with `.toString("base64")`). */
export const generateSecretKey = (): Buffer => randomBytes(KEY_BYTES)

