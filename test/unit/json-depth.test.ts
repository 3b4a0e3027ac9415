import { describe, expect, it } from "vitest"
import { nestsDeeperThan } from "../../src/http/envelope-middleware.ts"
import { MAX_JSON_DEPTH } from "../../src/schema/envelope.ts"

const bytes = (text: string) => new TextEncoder().encode(text)
const nested = (n: number) => "[".repeat(n) + "]".repeat(n)

describe("nestsDeeperThan", () => {
  it("counts arrays and objects opened inside each other", () => {
    expect(nestsDeeperThan(bytes(nested(3)), 3)).toBe(false)
    expect(nestsDeeperThan(bytes(nested(4)), 3)).toBe(true)
    expect(nestsDeeperThan(bytes(`{"a":{"b":[{"c":1}]}}`), 4)).toBe(false)
    expect(nestsDeeperThan(bytes(`{"a":{"b":[{"c":{}}]}}`), 4)).toBe(true)
  })

  it("counts depth, not the number of brackets side by side", () => {
    expect(nestsDeeperThan(bytes(`[${Array.from({ length: 10_000 }, () => "[]").join(",")}]`), 2)).toBe(false)
  })

  it("ignores brackets inside strings, escaped quotes included", () => {
    expect(nestsDeeperThan(bytes(`{"a":"[[[[{{{{"}`), 1)).toBe(false)
    expect(nestsDeeperThan(bytes(`{"a":"\\"[[[[\\\\"}`), 1)).toBe(false)
    // after the escaped backslash the string ends, so the brackets that follow count
    expect(nestsDeeperThan(bytes(`{"a":"\\\\",  "b":[[[]]]}`), 3)).toBe(true)
  })

  it("reads multi-byte UTF-8 text without mistaking its bytes for brackets", () => {
    expect(nestsDeeperThan(bytes(`{"a":"€ ✓ 𝄞 [ü]"}`), 1)).toBe(false)
  })

  it("the API's bound is 64 levels", () => {
    expect(MAX_JSON_DEPTH).toBe(64)
    expect(nestsDeeperThan(bytes(nested(64)), MAX_JSON_DEPTH)).toBe(false)
    expect(nestsDeeperThan(bytes(nested(65)), MAX_JSON_DEPTH)).toBe(true)
  })
})
