import { createCipheriv, randomBytes } from "node:crypto"
import { describe, expect, it } from "vitest"
import {
  decryptSecret,
  encryptSecret,
  generateSecretKey,
  isSecretBox,
  SecretBoxError
} from "../../src/webhooks/secret-box.ts"
import { loadConfig } from "../../src/config.ts"

const key = generateSecretKey()

const code = (fn: () => unknown) => {
  try {
    fn()
  } catch (err) {
    expect(err).toBeInstanceOf(SecretBoxError)
    return (err as SecretBoxError).code
  }
  throw new Error("expected a SecretBoxError")
}

/** Flips one bit of part `index` (1 = iv, 2 = tag, 3 = ciphertext). */
const flip = (boxed: string, index: number) => {
  const parts = boxed.split(".")
  const bytes = Buffer.from(parts[index]!, "base64url")
  bytes[0] ^= 1
  parts[index] = bytes.toString("base64url")
  return parts.join(".")
}

describe("secret box", () => {
  it("round-trips, with a fresh IV each time", () => {
    for (const plaintext of ["", "JBSWY3DPEHPK3PXP", "wébhook-sécret 🚀".repeat(50)]) {
      const boxed = encryptSecret(key, plaintext)
      expect(boxed).toMatch(/^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]*$/)
      expect(isSecretBox(boxed)).toBe(true)
      expect(decryptSecret(key, boxed)).toBe(plaintext)
    }
    expect(encryptSecret(key, "same")).not.toBe(encryptSecret(key, "same"))
    expect(isSecretBox("plain-secret")).toBe(false)
  })

  it("fails clearly for a wrong key or any tampering", () => {
    const boxed = encryptSecret(key, "top secret")
    expect(code(() => decryptSecret(randomBytes(32), boxed))).toBe("authentication_failed")
    for (const part of [1, 2, 3]) expect(code(() => decryptSecret(key, flip(boxed, part)))).toBe("authentication_failed")
    expect(code(() => decryptSecret(key, boxed.replace(/^v1/, "v2")))).toBe("unsupported_version")
    expect(code(() => decryptSecret(key, "v1.abc"))).toBe("malformed")
    expect(code(() => decryptSecret(key, boxed.replace(/\.[^.]+\./, ".AAAA.")))).toBe("malformed")
    expect(code(() => decryptSecret(key, `${boxed}!`))).toBe("malformed")
  })

  it("binds a box to its associated data", () => {
    const boxed = encryptSecret(key, "totp-seed", "totp:identity_1")
    expect(decryptSecret(key, boxed, "totp:identity_1")).toBe("totp-seed")
    expect(code(() => decryptSecret(key, boxed, "totp:identity_2"))).toBe("authentication_failed")
    expect(code(() => decryptSecret(key, boxed))).toBe("authentication_failed")
  })

  it("insists on a key of 32 bytes or more, and reduces a longer one (HKDF) so that any such SECRET_KEY works", () => {
    expect(code(() => encryptSecret(randomBytes(16), "x"))).toBe("invalid_key")
    expect(code(() => decryptSecret(Buffer.alloc(31), "v1.a.b.c"))).toBe("invalid_key")
    for (const length of [48, 64]) {
      const key = randomBytes(length)
      expect(decryptSecret(key, encryptSecret(key, "ok", "webhook"), "webhook")).toBe("ok")
      // The same long key from the same SECRET_KEY, in another object (another process), opens it too.
      expect(decryptSecret(Buffer.from(key), encryptSecret(key, "again"))).toBe("again")
    }
    // A 32-byte key is used as it is (rows written before longer keys were reduced still open): a
    // box made with the raw key by AES-256-GCM itself opens.
    const key = randomBytes(32)
    const iv = randomBytes(12)
    const cipher = createCipheriv("aes-256-gcm", key, iv, { authTagLength: 16 })
    const ciphertext = Buffer.concat([cipher.update("as is", "utf8"), cipher.final()])
    const box = ["v1", ...[iv, cipher.getAuthTag(), ciphertext].map((part) => part.toString("base64url"))].join(".")
    expect(decryptSecret(Buffer.from(key), box)).toBe("as is")
  })

  it("works with a SECRET_KEY longer than 32 bytes as the node reads it", () => {
    const config = loadConfig({ SECRET_KEY: randomBytes(48).toString("hex"), DATA_DIR: "/nonexistent-trawl-test" })
    expect(config.secretKey).toHaveLength(48)
    expect(decryptSecret(config.secretKey, encryptSecret(config.secretKey, "webhook secret", "webhook"), "webhook")).toBe("webhook secret")
  })
})
