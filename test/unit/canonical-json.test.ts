import { describe, expect, it } from "vitest"
import { canonicalJson, requestHash } from "../../src/http/idempotency.ts"

describe("canonicalJson (the Idempotency-Key request hash)", () => {
  it("writes what JSON.stringify writes, with every object's keys sorted", () => {
    const values: Array<unknown> = [
      null, true, 0, -1.5, 1e21, "", "a\"b\\c\u0000\n", [], {}, [1, [2, [3]], { b: 1, a: [null, "x"] }],
      { z: { y: 1, x: [{ d: 4, c: 3 }] }, a: "é", "": 0 }, { at: new Date(0) }, { gone: undefined, kept: 1 }, [undefined]
    ]
    const sorted = (v: unknown): unknown =>
      Array.isArray(v) ? v.map(sorted)
      : v !== null && typeof v === "object" && !(v instanceof Date)
      ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sorted((v as Record<string, unknown>)[k])]))
      : v
    for (const v of values) expect(canonicalJson(v)).toBe(JSON.stringify(sorted(v)))
  })

  it("reads two bodies that differ only in key order as the same request, and any other difference as another", () => {
    expect(requestHash({ op: "bulk", items: [{ url: "http://a/", priority: 2 }] }))
      .toBe(requestHash({ items: [{ priority: 2, url: "http://a/" }], op: "bulk" }))
    expect(requestHash({ op: "bulk", items: [{ url: "http://a/", priority: 2 }] }))
      .not.toBe(requestHash({ op: "bulk", items: [{ url: "http://a/", priority: 3 }] }))
  })

  it("writes arrays nested far deeper than a recursive writer could follow", () => {
    const depth = 200_000
    let deep: unknown = []
    for (let i = 1; i < depth; i++) deep = [deep]
    expect(() => JSON.stringify(deep)).toThrow(RangeError)
    const text = canonicalJson({ jobs: [deep] })
    expect(text).toBe(`{"jobs":[${"[".repeat(depth)}${"]".repeat(depth)}]}`)
  })
})
