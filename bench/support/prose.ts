/** Deterministic filler prose for the fixture sites: a xorshift PRNG over a small vocabulary. */
export const makeProse = (initialSeed: number, vocabulary: string) => {
  let seed = initialSeed
  const rand = () => {
    seed ^= seed << 13
    seed ^= seed >>> 17
    seed ^= seed << 5
    return (seed >>> 0) / 0x1_0000_0000
  }
  const words = vocabulary.split(" ")
  /** 8 to 21 words, capitalized, with a full stop. */
  const sentence = () => {
    const w = Array.from({ length: 8 + Math.floor(rand() * 14) }, () => words[Math.floor(rand() * words.length)]!)
    w[0] = w[0]!.charAt(0).toUpperCase() + w[0]!.slice(1)
    return w.join(" ") + "."
  }
  return { rand, sentence }
}
