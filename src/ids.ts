import { createHash, randomFillSync } from "node:crypto"

const alphabet = "0123456789abcdefghjkmnpqrstvwxyz" // Crockford base32, lower case

/** Random bytes are drawn a pool at a time: one system call serves about a hundred ids. */
const pool = new Uint8Array(1024)
let poolOffset = pool.length

let lastMs = 0
/** The 80 random bits of the last id, as two 40-bit halves (exact in a double). */
let high = 0
let low = 0
const TWO_40 = 2 ** 40

const fortyBits = (): number => {
  if (poolOffset + 5 > pool.length) {
    randomFillSync(pool)
    poolOffset = 0
  }
  let n = 0
  for (let i = 0; i < 5; i++) n = n * 256 + pool[poolOffset++]!
  return n
}

/** `count` base32 characters of `n`, most significant first. */
const base32 = (n: number, count: number): string => {
  let out = ""
  for (let i = 0; i < count; i++) {
    out = alphabet[n % 32]! + out
    n = Math.floor(n / 32)
  }
  return out
}

/**
 * `<prefix>_<26 chars>`: 48 bits of milliseconds then 80 random bits, so ids sort
 * by creation time; within one millisecond the random part is incremented, so ids
 * made by one process stay strictly increasing.
 */
export const newId = (prefix: string): string => {
  const now = Date.now()
  if (now <= lastMs) {
    low += 1
    if (low === TWO_40) {
      low = 0
      high = (high + 1) % TWO_40
    }
  } else {
    lastMs = now
    high = fortyBits()
    low = fortyBits()
  }
  return `${prefix}_${base32(lastMs, 10)}${base32(high, 8)}${base32(low, 8)}`
}

export const idPattern = (prefix: string) => new RegExp(`^${prefix}_[0-9a-hjkmnp-tv-z]{26}$`)

/**
 * The id of item `index` of a request run under an Idempotency-Key: every try of the request
 * (see `KeyedAttempt` in src/http/idempotency.ts) derives the same ids from the key's seed, so
 * one that takes over from a try whose node died meets the rows that try wrote. Same shape as
 * `newId`: the seed's milliseconds, 70 bits of a hash of the seed and the prefix, then the index
 * (below 1024), so a request's ids sort in its items' order.
 */
export const seededId = (prefix: string, seed: string, index: number): string => {
  const time = /^[a-z]+_([0-9a-hjkmnp-tv-z]{10})/.exec(seed)
  if (!time || !Number.isInteger(index) || index < 0 || index >= 1024) throw new Error(`not an id seed and index: ${seed} ${index}`)
  const digest = createHash("sha256").update(`${prefix} ${seed}`).digest()
  // 35 bits from each of two 5-byte words: exact in a double.
  const word = (at: number) => Math.floor(digest.readUIntBE(at, 5) / 32)
  return `${prefix}_${time[1]}${base32(word(0), 7)}${base32(word(5), 7)}${base32(index, 2)}`
}

/** A request item's id: derived from its Idempotency-Key's seed when it has one, else fresh. */
export const itemId = (prefix: string, keyed: { readonly seed: string; readonly index: number } | undefined): string =>
  keyed ? seededId(prefix, keyed.seed, keyed.index) : newId(prefix)
