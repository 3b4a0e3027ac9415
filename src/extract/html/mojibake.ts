/**
 * Text encoded as UTF-8 twice: its UTF-8 bytes were read as Latin-1 and encoded again, so "—"
 * (E2 80 94) shows as "â" followed by two C1 control characters. C1 controls (U+0080–U+009F) do not
 * stand in real text, so a document holding at least `MIN_EVIDENCE` such sequences that decode as
 * UTF-8 is repaired: every sequence of a UTF-8 lead character (U+00C2–U+00F4) and its continuation
 * characters (U+0080–U+00BF) that decodes to one character is replaced by that character, "Ã©"
 * ("é") included. A document without C1 controls is returned as it is. See docs/extraction.md.
 */
export function repairMojibake(text: string): string {
  if (!C1.test(text)) return text
  let evidence = 0
  for (const m of text.matchAll(SEQUENCE)) {
    if (C1.test(m[0]) && decodeSequence(m[0]) !== undefined && ++evidence >= MIN_EVIDENCE) break
  }
  if (evidence < MIN_EVIDENCE) return text
  return text.replace(SEQUENCE, (seq) => decodeSequence(seq) ?? seq)
}

/** Sequences needed before a document is taken for doubly encoded (one could be a stray byte). */
const MIN_EVIDENCE = 2
const C1 = /[\u0080-\u009f]/
const SEQUENCE = /[\u00c2-\u00f4][\u0080-\u00bf]{1,3}/g
const strictUtf8 = new TextDecoder("utf-8", { fatal: true })

/** The one character that `seq` (Latin-1 characters standing for bytes) encodes in UTF-8, if it is exactly one. */
function decodeSequence(seq: string): string | undefined {
  const lead = seq.charCodeAt(0)
  const length = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2
  if (seq.length !== length) return undefined
  const bytes = new Uint8Array(length)
  for (let i = 0; i < length; i++) bytes[i] = seq.charCodeAt(i)
  try {
    return strictUtf8.decode(bytes)
  } catch {
    return undefined
  }
}
