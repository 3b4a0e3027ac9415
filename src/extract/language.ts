/**
 * Language of a text: ISO 639-1 from declarations (`<html lang>`, `content-language`, `og:locale`)
 * or else from the frequency of very common function words (en, de, fr, es, it, pt, nl), with a
 * script check for languages that are told by their alphabet.
 */

const STOPWORDS: Record<string, string> = {
  en: "the and of to in is that it for was on are with as his they be at this have from or had by but not what all were when we there can an which their said if has been would will more about who its also",
  de: "der die und das ist nicht mit den von sich des auf für ein eine dem zu im auch es sind wird wie bei oder aus nach noch einer werden hat wurde war sie ich um durch über vor",
  fr: "le la les des et est une un du que dans pour qui pas sur au avec il ce sont ne se plus par elle mais ou aux été cette nous comme leur être ont fait sa",
  es: "el la los las de que y en un una es por con para del se no al lo como más pero sus su le ha este sí porque esta entre cuando muy sin sobre también fue hay",
  it: "il di che la è e un una per non sono del della le gli con da si nel al ma come anche più lo dei alla questo ha ci nella essere delle sul stato",
  pt: "o a de que e do da em um para é com não uma os no se na por mais as dos como mas foi ao ele das tem à seu sua ou ser quando muito há nos já está",
  nl: "de het een en van in is dat op te zijn met voor niet aan er maar ook als bij dit die om wordt door naar heeft hij ze nog was uit worden werd zijn kan",
}

const TABLE: Map<string, string[]> = (() => {
  const m = new Map<string, string[]>()
  for (const [lang, words] of Object.entries(STOPWORDS)) {
    for (const w of words.split(" ")) {
      const l = m.get(w)
      if (l === undefined) m.set(w, [lang])
      else if (!l.includes(lang)) l.push(lang)
    }
  }
  return m
})()

/** `en-US`, `de_DE`, `fr` → ISO 639-1, or undefined for anything else. */
export function normalizeLang(v: string | undefined | null): string | undefined {
  if (v === undefined || v === null) return undefined
  const m = /^\s*([A-Za-z]{2,3})(?:[-_][A-Za-z0-9]+)*\s*$/.exec(v)
  if (m === null) return undefined
  const code = m[1]!.toLowerCase()
  return code.length === 2 ? code : undefined
}

/** Guesses the language of plain text; undefined when there is too little evidence. */
export function detectLanguage(text: string): string | undefined {
  const sample = text.length > 20000 ? text.slice(0, 20000) : text
  // scripts first
  let cjk = 0, kana = 0, hangul = 0, cyr = 0, arab = 0, greek = 0, hebrew = 0, thai = 0, deva = 0, letters = 0
  for (let i = 0; i < sample.length; i++) {
    const c = sample.charCodeAt(i)
    if (c < 0x41) continue
    if ((c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || (c >= 0xc0 && c <= 0x24f)) letters++
    else if (c >= 0x3040 && c <= 0x30ff) kana++
    else if (c >= 0x4e00 && c <= 0x9fff) cjk++
    else if (c >= 0xac00 && c <= 0xd7af) hangul++
    else if (c >= 0x400 && c <= 0x4ff) cyr++
    else if (c >= 0x600 && c <= 0x6ff) arab++
    else if (c >= 0x370 && c <= 0x3ff) greek++
    else if (c >= 0x590 && c <= 0x5ff) hebrew++
    else if (c >= 0xe00 && c <= 0xe7f) thai++
    else if (c >= 0x900 && c <= 0x97f) deva++
  }
  const other = Math.max(kana + cjk, hangul, cyr, arab, greek, hebrew, thai, deva)
  if (other > letters) {
    if (kana > 0 && kana + cjk === other && kana * 10 > cjk) return "ja"
    if (cjk === other || kana + cjk === other) return "zh"
    if (hangul === other) return "ko"
    if (cyr === other) return /[іїєґ]/.test(sample) ? "uk" : "ru"
    if (arab === other) return "ar"
    if (greek === other) return "el"
    if (hebrew === other) return "he"
    if (thai === other) return "th"
    if (deva === other) return "hi"
  }
  const counts: Record<string, number> = {}
  let total = 0
  const words = sample.toLowerCase().match(/\p{L}+/gu) ?? []
  for (const w of words) {
    const langs = TABLE.get(w)
    if (langs === undefined) continue
    total++
    for (const l of langs) counts[l] = (counts[l] ?? 0) + 1 / langs.length
  }
  const ranked = Object.entries(counts).sort((a, b) => b[1] - a[1])
  const first = ranked[0]
  if (first === undefined || first[1] < 3) return undefined
  const second = ranked[1]?.[1] ?? 0
  if (first[1] < second * 1.2 || total < 3) return undefined
  return first[0]
}
