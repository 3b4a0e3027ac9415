import fc from "fast-check"

/**
 * A fast-check arbitrary of the values a JSON Schema (of an OpenAPI 3.1 document) accepts: the
 * keywords Trawl's document uses (type, enum, const, lengths, pattern, format, ranges, items,
 * properties, required, anyOf/oneOf, $ref). `uri` strings are loopback URLs only: a generated
 * request must never make the server fetch anything off this machine.
 */
export const arbitraryOf = (schema: any, doc: any, loopbackUrl: string, depth = 0): fc.Arbitrary<unknown> => {
  if (schema === true || schema === undefined || (typeof schema === "object" && Object.keys(schema).length === 0)) {
    return fc.oneof(fc.string({ maxLength: 20 }), fc.integer(), fc.boolean(), fc.constant(null))
  }
  if (schema.$ref) {
    const name = String(schema.$ref).replace("#/components/schemas/", "")
    return arbitraryOf(doc.components.schemas[name], doc, loopbackUrl, depth + 1)
  }
  if (schema.const !== undefined) return fc.constant(schema.const)
  if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum)
  const alternatives = schema.anyOf ?? schema.oneOf
  if (Array.isArray(alternatives)) return fc.oneof(...alternatives.map((s: any) => arbitraryOf(s, doc, loopbackUrl, depth + 1)))
  if (Array.isArray(schema.allOf)) {
    const { allOf, ...rest } = schema
    return arbitraryOf(Object.assign({}, rest, ...allOf), doc, loopbackUrl, depth + 1)
  }
  if (Array.isArray(schema.type)) {
    return fc.oneof(...schema.type.map((type: string) => arbitraryOf({ ...schema, type }, doc, loopbackUrl, depth + 1)))
  }
  switch (schema.type) {
    case "null":
      return fc.constant(null)
    case "boolean":
      return fc.boolean()
    case "integer": {
      const min = Math.max(schema.minimum ?? -1_000_000, Number.MIN_SAFE_INTEGER)
      const max = Math.min(schema.maximum ?? 1_000_000, Number.MAX_SAFE_INTEGER)
      return fc.oneof(fc.integer({ min, max }), fc.constantFrom(min, max))
    }
    case "number":
      return fc.double({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6, noNaN: true, noDefaultInfinity: true })
    case "string":
      return stringOf(schema, loopbackUrl)
    case "array": {
      const item = arbitraryOf(schema.items ?? {}, doc, loopbackUrl, depth + 1)
      const minLength = schema.minItems ?? 0
      // Small arrays: a run of a hundred requests should not post megabytes.
      const maxLength = Math.min(schema.maxItems ?? 5, Math.max(minLength, 5))
      return fc.array(item, { minLength, maxLength })
    }
    case "object": {
      const properties: Record<string, any> = schema.properties ?? {}
      const required: Array<string> = schema.required ?? []
      // Deep optional structure is left out past a few levels, so values stay small.
      const keys = Object.keys(properties).filter((k) => required.includes(k) || depth < 6)
      const model = Object.fromEntries(keys.map((k) => [k, arbitraryOf(properties[k], doc, loopbackUrl, depth + 1)]))
      return fc.record(model, { requiredKeys: keys.filter((k) => required.includes(k)) })
    }
    default:
      return fc.constant(null)
  }
}

const stringOf = (schema: any, loopbackUrl: string): fc.Arbitrary<string> => {
  const minLength: number = schema.minLength ?? 0
  const maxLength: number = Math.min(schema.maxLength ?? 40, Math.max(minLength, 40))
  const fits = (s: string) => {
    const n = [...s].length
    return n >= minLength && n <= (schema.maxLength ?? Infinity)
  }
  switch (schema.format) {
    case "uri":
      return fc.webSegment().map((segment) => `${loopbackUrl}/${segment}`)
    case "date-time":
      return fc.date({ min: new Date("2000-01-01T00:00:00Z"), max: new Date("2099-12-31T23:59:59Z"), noInvalidDate: true }).map((d) => d.toISOString())
    case "uuid":
      return fc.uuid()
    case "ipv4":
      return fc.ipV4()
    case "ipv6":
      return fc.ipV6()
  }
  if (typeof schema.pattern === "string") {
    const pattern = new RegExp(schema.pattern, "u")
    return fc.stringMatching(pattern).filter(fits)
  }
  return fc.string({ minLength, maxLength })
}
