import { describe, expect, it } from "vitest"
import { idPattern, newId, seededId } from "../../src/ids.ts"
import { seededWebhookSecret } from "../../src/webhooks/signing.ts"
import { Effect } from "effect"
import { hashPassword, passwordProblem, verifyPassword } from "../../src/iam/passwords.ts"
import { apiKeyPattern, constantTimeEqual, generateApiKey, generateToken, hashApiKey, hashToken } from "../../src/iam/secrets.ts"

describe("ids", () => {
  it("are prefixed, opaque and strictly increasing within a process", () => {
    const ids = Array.from({ length: 5000 }, () => newId("job"))
    for (const id of ids) expect(id).toMatch(idPattern("job"))
    const sorted = [...ids].sort()
    expect(sorted).toEqual(ids)
    expect(new Set(ids).size).toBe(ids.length)
  })

  it("sort by creation time across milliseconds", async () => {
    const a = newId("x")
    await new Promise((r) => setTimeout(r, 3))
    const b = newId("x")
    expect(a < b).toBe(true)
  })

  it("draw fresh random bits in each millisecond", async () => {
    const ids: Array<string> = []
    for (let i = 0; i < 150; i++) {
      ids.push(newId("x"))
      await new Promise((r) => setTimeout(r, 1))
    }
    // 150 draws of 80 bits (more than one 1024-byte pool): no random part repeats, and every
    // character position of it takes many values.
    const randomParts = ids.map((id) => id.slice(-16))
    expect(new Set(randomParts).size).toBe(ids.length)
    for (let i = 0; i < 16; i++) expect(new Set(randomParts.map((r) => r[i])).size).toBeGreaterThan(8)
  })
})

describe("ids derived from an Idempotency-Key's seed", () => {
  it("are the same for every try of a request, distinct per item, prefix and seed, and shaped like any id", () => {
    const seed = newId("seed")
    const ids = Array.from({ length: 100 }, (_, i) => seededId("job", seed, i))
    expect(Array.from({ length: 100 }, (_, i) => seededId("job", seed, i))).toEqual(ids)
    expect(new Set(ids).size).toBe(100)
    for (const id of ids) expect(id).toMatch(idPattern("job"))
    // the seed's time leads, so they sort with the ids made when the key was first claimed
    for (const id of ids) expect(id.slice(4, 14)).toBe(seed.slice(5, 15))
    // a bulk request's items keep their order
    expect([...ids].sort()).toEqual(ids)
    expect(seededId("job", newId("seed"), 0)).not.toBe(ids[0])
    expect(seededId("ext", seed, 0).slice(4)).not.toBe(ids[0]!.slice(4))
    expect(() => seededId("job", "no seed", 0)).toThrow()
    expect(() => seededId("job", seed, 1024)).toThrow()
    expect(seededId("job", seed, 1023)).toMatch(idPattern("job"))
  })

  it("give generated webhook secrets that hold across tries and depend on SECRET_KEY", () => {
    const seed = newId("seed")
    const key = Buffer.alloc(32, 7)
    const secret = seededWebhookSecret(key, seed, 3)
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(seededWebhookSecret(key, seed, 3)).toBe(secret)
    expect(seededWebhookSecret(key, seed, 4)).not.toBe(secret)
    expect(seededWebhookSecret(Buffer.alloc(32, 8), seed, 3)).not.toBe(secret)
  })
})

describe("API key secrets", () => {
  it("have the documented format and a prefix that is part of the key", () => {
    const { raw, prefix } = generateApiKey()
    expect(raw).toMatch(apiKeyPattern)
    expect(raw.startsWith(prefix)).toBe(true)
    expect(raw.length).toBe("trawl_".length + 43)
  })

  it("are stored as a keyed hash that depends on SECRET_KEY", () => {
    const { raw } = generateApiKey()
    const k1 = Buffer.alloc(32, 1)
    const k2 = Buffer.alloc(32, 2)
    expect(hashApiKey(k1, raw)).toBe(hashApiKey(k1, raw))
    expect(hashApiKey(k1, raw)).not.toBe(hashApiKey(k2, raw))
    expect(hashApiKey(k1, raw)).not.toContain(raw.slice(6))
  })

  it("compare in constant time and refuse different lengths", () => {
    expect(constantTimeEqual("abc", "abc")).toBe(true)
    expect(constantTimeEqual("abc", "abd")).toBe(false)
    expect(constantTimeEqual("abc", "abcd")).toBe(false)
  })

  it("hash passwords with Argon2id and verify them, and still read scrypt hashes written before", async () => {
    const stored = await Effect.runPromise(hashPassword("correct horse battery"))
    expect(stored.startsWith("$argon2id$v=19$m=19456,t=2,p=1$")).toBe(true)
    expect(await Effect.runPromise(verifyPassword("correct horse battery", stored))).toBe(true)
    expect(await Effect.runPromise(verifyPassword("wrong horse battery", stored))).toBe(false)
    expect(await Effect.runPromise(verifyPassword("anything at all", null))).toBe(false)
    // scrypt$N$r$p$salt$hash of "correct horse", as the previous hashing wrote it.
    const legacy = "scrypt$16384$8$1$AAAAAAAAAAAAAAAAAAAAAA$" +
      (await import("node:crypto")).scryptSync("correct horse", Buffer.alloc(16), 32, { N: 16384, r: 8, p: 1 }).toString("base64url")
    expect(await Effect.runPromise(verifyPassword("correct horse", legacy))).toBe(true)
    expect(await Effect.runPromise(verifyPassword("correct horsf", legacy))).toBe(false)
  })

  it("refuse passwords that are short, too long or the e-mail itself, counting characters", () => {
    expect(passwordProblem("elevenchars", undefined)).toMatch(/at least 12/)
    expect(passwordProblem("twelve chars", undefined)).toBeUndefined()
    expect(passwordProblem("😀".repeat(12), undefined)).toBeUndefined()
    expect(passwordProblem("x".repeat(1025), undefined)).toMatch(/at most 1024/)
    expect(passwordProblem("Owner@Acme.example", "owner@acme.example")).toMatch(/e-mail/)
  })

  it("make 256-bit tokens whose keyed hash depends on the purpose", () => {
    const key = Buffer.alloc(32, 7)
    const raw = generateToken()
    expect(Buffer.from(raw, "base64url").length).toBe(32)
    expect(hashToken(key, "session", raw)).toBe(hashToken(key, "session", raw))
    expect(hashToken(key, "session", raw)).not.toBe(hashToken(key, "magic_link", raw))
    expect(hashToken(key, "session", raw)).not.toBe(hashToken(Buffer.alloc(32, 8), "session", raw))
  })
})
