import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { Email, UrlPrefixFilter } from "../../src/schema/common.ts"
import { PathGlobs } from "../../src/schema/crawl.ts"
import { CreateDelegationBody } from "../../src/schema/delegation.ts"
import { CreateConfigBody, CreateExtractionBody } from "../../src/schema/extraction.ts"

/** Text bounds count characters (code points) as JSON Schema's maxLength does: an emoji is one, not two UTF-16 units. */
describe("text bounds", () => {
  const emoji = (n: number) => "😀".repeat(n)
  const ok = (schema: Schema.Top, value: unknown) => Schema.decodeUnknownExit(schema as any)(value)._tag === "Success"

  it("accepts the bound in characters and refuses one more", () => {
    const delegation = (delegateId: string) => ({ delegateId, reason: "cover", expiresAt: "2099-01-01T00:00:00Z" })
    expect(ok(CreateDelegationBody, delegation(emoji(255)))).toBe(true)
    expect(ok(CreateDelegationBody, delegation(emoji(256)))).toBe(false)
    expect(ok(CreateConfigBody, { scope: "tenant", domainId: emoji(253) })).toBe(true)
    expect(ok(CreateConfigBody, { scope: "tenant", domainId: emoji(254) })).toBe(false)
    expect(ok(CreateConfigBody, { scope: "tenant", payload: { llm: { model: emoji(200) } } })).toBe(true)
    expect(ok(CreateExtractionBody, { type: "article", jobId: emoji(100) })).toBe(true)
    expect(ok(CreateExtractionBody, { type: "article", jobId: emoji(101) })).toBe(false)
    expect(ok(UrlPrefixFilter, { prefix: emoji(2048) })).toBe(true)
    expect(ok(PathGlobs, ["/" + emoji(199)])).toBe(true)
    expect(ok(PathGlobs, ["/" + emoji(200)])).toBe(false)
    // an address: 255 characters in all (letters beyond ASCII count one each)
    const domain = `${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(58)}.org`
    expect(ok(Email, `${"é".repeat(64)}@${domain}`)).toBe(true)
    expect(ok(Email, `${"é".repeat(64)}@d${domain}`)).toBe(false)
  })

  it("refuses the NUL character, which no text column can hold", () => {
    expect(ok(CreateConfigBody, { scope: "tenant", domainId: "a\u0000b" })).toBe(false)
    expect(ok(PathGlobs, ["/a\u0000"])).toBe(false)
  })

  it("states the bounds in the document's terms", () => {
    const doc = Schema.toJsonSchemaDocument(PathGlobs as any) as any
    expect(JSON.stringify(doc)).toContain('"maxLength":200')
    expect(JSON.stringify(doc)).toContain('"pattern":"^/"')
  })
})
