import { describe, expect, it } from "vitest"
import { storableJson, storableText } from "../../src/sql/storable-json.ts"

describe("storable text (what PostgreSQL can hold)", () => {
  it("replaces a NUL and half a surrogate pair, and keeps whole pairs and everything else", () => {
    expect(storableText("a\u0000b")).toBe("a\uFFFDb")
    expect(storableText("x\uD800y\uDC00z")).toBe("x\uFFFDy\uFFFDz")
    expect(storableText("emoji 😀 and é")).toBe("emoji 😀 and é")
    expect(storableText("\uDBFF\uDFFF")).toBe("\uDBFF\uDFFF")
  })

  it("copies a JSON value with every string and key made storable, however deep", () => {
    const value = { "he\u0000ad": ["ok", { deep: "h\u0000x", n: 1, no: null, yes: true }], list: [["\uD800"]] }
    expect(storableJson(value)).toEqual({ "he\uFFFDad": ["ok", { deep: "h\uFFFDx", n: 1, no: null, yes: true }], list: [["\uFFFD"]] })
    expect(value.list[0]![0]).toBe("\uD800")
    // A key named __proto__ (JSON.parse makes it an own key) stays a key.
    const proto = storableJson(JSON.parse('{"__proto__": {"x": 1}}')) as Record<string, unknown>
    expect(Object.keys(proto)).toEqual(["__proto__"])
    expect(Object.getPrototypeOf(proto)).toBe(Object.prototype)
    let deep: unknown = "\u0000"
    for (let i = 0; i < 100_000; i++) deep = [deep]
    let out = storableJson(deep)
    for (let i = 0; i < 100_000; i++) out = (out as Array<unknown>)[0]
    expect(out).toBe("\uFFFD")
  })
})
