import { describe, expect, it } from "vitest"
import { globMatches } from "../../src/extract/config-match.ts"

/** What the pattern means, as a regex (fine for short random cases). */
const byRegex = (pattern: string, url: string) =>
  new RegExp("^" + pattern.split("*").map((p) => p.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*") + "$", "is").test(url)

describe("globMatches (a config's urlPattern)", () => {
  it("matches the whole URL, * for any run of characters, ignoring case", () => {
    expect(globMatches("https://shop.example/*", "https://SHOP.example/p/1")).toBe(true)
    expect(globMatches("*example*", "https://shop.example/p")).toBe(true)
    expect(globMatches("https://shop.example/", "https://shop.example/p")).toBe(false)
    expect(globMatches("*/p/*/reviews", "https://a/p/1/reviews")).toBe(true)
    expect(globMatches("*/p/*/reviews", "https://a/p/1/reviews/2")).toBe(false)
    expect(globMatches("a*a", "a")).toBe(false)
    expect(globMatches("*", "")).toBe(true)
  })

  it("agrees with the regex reading on random patterns", () => {
    const alphabet = ["a", "b", "/", "*"]
    let seed = 7
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
    for (let i = 0; i < 5000; i++) {
      const pattern = Array.from({ length: Math.floor(next() * 7) }, () => alphabet[Math.floor(next() * 4)]).join("")
      const url = Array.from({ length: Math.floor(next() * 9) }, () => alphabet[Math.floor(next() * 3)]).join("")
      expect(globMatches(pattern, url), `${pattern} ~ ${url}`).toBe(byRegex(pattern, url))
    }
  })

  it("answers a pattern of many stars that makes a regex backtrack (a backtracking matcher would hang this test)", () => {
    expect(globMatches("*a".repeat(200) + "*b", "https://x/" + "a".repeat(2000))).toBe(false)
  }, 5000)
})
