import { randomBytes } from "node:crypto"

const alphabet = "0123456789abcdefghjkmnpqrstvwxyz" // Crockford base32, lower case

let lastMs = 0
let lastRandom = new Uint8Array(10)

/**
 * `<prefix>_<26 chars>`: 48 bits of milliseconds then 80 random bits, so ids sort
 * by creation time; within one millisecond the random part is incremented, so ids
 * made by one process stay strictly increasing.
 */
export const newId = (prefix: string): string => {
  const now = Date.now()
  if (now <= lastMs) {
    for (let i = 9; i >= 0; i--) {
      lastRandom[i] = (lastRandom[i]! + 1) & 0xff
      if (lastRandom[i] !== 0) break
    }
  } else {
    lastMs = now
    lastRandom = new Uint8Array(randomBytes(10))
  }
  let out = ""
  let time = lastMs
  const timeChars: Array<string> = []
  for (let i = 0; i < 10; i++) {
    timeChars.push(alphabet[time % 32]!)
    time = Math.floor(time / 32)
  }
  out += timeChars.reverse().join("")
  // 80 bits → 16 base32 characters
  let acc = 0n
  for (const b of lastRandom) acc = (acc << 8n) | BigInt(b)
  const randomChars: Array<string> = []
  for (let i = 0; i < 16; i++) {
    randomChars.push(alphabet[Number(acc & 31n)]!)
    acc >>= 5n
  }
  out += randomChars.reverse().join("")
  return `${prefix}_${out}`
}

export const idPattern = (prefix: string) => new RegExp(`^${prefix}_[0-9a-hjkmnp-tv-z]{26}$`)
