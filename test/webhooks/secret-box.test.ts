import { randomBytes } from "node:crypto"
import { describe, expect, it } from "vitest"
import {
  decryptSecret,
  encryptSecret,
  generateSecretKey,
  isSecretBox,
  SecretBoxError,
  secretKeyFromString
} from "../../src/webhooks/secret-box.js"

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

  it("insists on a 32-byte key", () => {
    expect(code(() => encryptSecret(randomBytes(16), "x"))).toBe("invalid_key")
    expect(code(() => decryptSecret(Buffer.alloc(33), "v1.a.b.c"))).toBe("invalid_key")
  })

  it("reads SECRET_KEY as hex or base64, 32 bytes or more", () => {
    const raw = randomBytes(32)
    expect(secretKeyFromString(raw.toString("hex")).equals(raw)).toBe(true)
    expect(secretKeyFromString(raw.toString("base64")).equals(raw)).toBe(true)
    expect(secretKeyFromString(` ${raw.toString("base64url")}\n`).equals(raw)).toBe(true)
    const long = secretKeyFromString(randomBytes(48).toString("base64"))
    expect(long).toHaveLength(32)
    const derived = secretKeyFromString(randomBytes(64).toString("hex"))
    expect(decryptSecret(derived, encryptSecret(derived, "ok"))).toBe("ok")
    expect(code(() => secretKeyFromString(randomBytes(31).toString("hex")))).toBe("invalid_key")
    expect(code(() => secretKeyFromString("not a key!"))).toBe("invalid_key")
  })
})
