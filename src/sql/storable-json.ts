/** A NUL, or half of a surrogate pair: text PostgreSQL's text and jsonb cannot hold. */
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g

/** `text` with what PostgreSQL cannot store replaced by U+FFFD, the replacement character. */
export const storableText = (text: string): string => text.replace(UNSTORABLE, "\uFFFD")

/**
 * A copy of a JSON value whose strings (keys too) can all be stored; built without recursion,
 * since a value from a page may nest deeply.
 */
export const storableJson = (value: unknown): unknown => {
  const root: { value: unknown } = { value: undefined }
  const stack: Array<{ readonly from: unknown; readonly put: (v: unknown) => void }> = [{ from: value, put: (v) => (root.value = v) }]
  while (stack.length > 0) {
    const { from, put } = stack.pop()!
    if (typeof from === "string") put(storableText(from))
    else if (Array.isArray(from)) {
      const copy: Array<unknown> = new Array(from.length)
      put(copy)
      from.forEach((item, i) => stack.push({ from: item, put: (v) => (copy[i] = v) }))
    } else if (from !== null && typeof from === "object" && !(from instanceof Date)) {
      const copy: Record<string, unknown> = {}
      put(copy)
      // defineProperty: a key named __proto__ is kept as a key, not taken for the prototype.
      for (const [key, item] of Object.entries(from)) {
        stack.push({ from: item, put: (v) => Object.defineProperty(copy, storableText(key), { value: v, enumerable: true, writable: true, configurable: true }) })
      }
    } else put(from)
  }
  return root.value
}
