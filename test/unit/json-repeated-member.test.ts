import { describe, expect, it } from "vitest"
import { repeatedMemberPath } from "../../src/http/envelope-middleware.ts"

describe("repeatedMemberPath", () => {
  it("finds a member an object names twice, at any depth, by its path", () => {
    expect(repeatedMemberPath(`{"email":"a@b.co","email":"c@d.co"}`)).toBe("email")
    expect(repeatedMemberPath(`{"payload":{"llm":{"model":"a","model":"b"}}}`)).toBe("payload.llm.model")
    expect(repeatedMemberPath(`{"jobs":[{"url":"a"},{"url":"b","priority":1,"url":"c"}]}`)).toBe("jobs.1.url")
    expect(repeatedMemberPath(`[[1,2],[{"a":1,"a":2}]]`)).toBe("1.0.a")
  })

  it("compares names as decoded, escapes included", () => {
    expect(repeatedMemberPath(`{"a":1,"\\u0061":2}`)).toBe("a")
    expect(repeatedMemberPath(`{"a\\"b":1,"a\\u0022b":2}`)).toBe(`a"b`)
  })

  it("takes the same name in different objects, and names that only look alike", () => {
    expect(repeatedMemberPath(`{"a":{"x":1},"b":{"x":1},"c":[{"x":1},{"x":2}]}`)).toBeUndefined()
    expect(repeatedMemberPath(`{"a":1,"A":2,"a ":3}`)).toBeUndefined()
    // quotes, braces and commas inside strings are text
    expect(repeatedMemberPath(`{"a":"\\",\\"a\\":{","b":"}{,\\\\","c":1}`)).toBeUndefined()
    expect(repeatedMemberPath(`{"html":"<p class=\\"a\\">x, y</p>","url":"u"}`)).toBeUndefined()
  })

  it("leaves text that is not JSON to the decoder", () => {
    for (const text of ["", "{", `{"a":1,`, `{"a":"unterminated`, "]]]", "not json"]) expect(repeatedMemberPath(text), text).toBeUndefined()
  })
})
