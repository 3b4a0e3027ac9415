import { describe, expect, it } from "vitest"
import { idPattern, newId } from "../../src/ids.ts"
import { apiKeyPattern, constantTimeEqual, generateApiKey, hashApiKey, hashPassword, verifyPassword } from "../../src/iam/secrets.ts"

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

  it("hash passwords with scrypt and verify them", async () => {
    const stored = await hashPassword("correct horse")
    expect(stored.startsWith("scrypt$")).toBe(true)
    expect(await verifyPassword("correct horse", stored)).toBe(true)
    expect(await verifyPassword("wrong horse", stored)).toBe(false)
  })
})
