/**
 * Dates to ISO 8601 date-time: UTC (`Z`) unless the source states an offset, which is kept
 * (`2025-12-19T09:04:00.000+13:00`): converting it to UTC would move late-evening and early-morning
 * publications to another calendar day than the one the publisher printed.
 */

const MONTHS: Record<string, number> = {
  jan: 1, feb: 2, mar: 3, apr: 4, may: 5, jun: 6, jul: 7, aug: 8, sep: 9, sept: 9, oct: 10, nov: 11, dec: 12,
  januar: 1, februar: 2, märz: 3, maerz: 3, mai: 5, juni: 6, juli: 7, oktober: 10, dezember: 12,
  janvier: 1, février: 2, fevrier: 2, mars: 3, avril: 4, juin: 6, juillet: 7, août: 8, aout: 8, septembre: 9, octobre: 10, novembre: 11, décembre: 12, decembre: 12,
  enero: 1, febrero: 2, marzo: 3, abril: 4, mayo: 5, junio: 6, julio: 7, agosto: 8, septiembre: 9, octubre: 10, noviembre: 11, diciembre: 12,
  gennaio: 1, febbraio: 2, aprile: 4, maggio: 5, giugno: 6, luglio: 7, settembre: 9, ottobre: 10, dicembre: 12,
  janeiro: 1, fevereiro: 2, março: 3, marco: 3, maio: 5, junho: 6, julho: 7, setembro: 9, outubro: 10, dezembro: 12,
  januari: 1, februari: 2, maart: 3, mei: 5, augustus: 8,
  stycznia: 1, lutego: 2, marca: 3, kwietnia: 4, maja: 5, czerwca: 6, lipca: 7, sierpnia: 8, września: 9, października: 10, listopada: 11, grudnia: 12,
  января: 1, февраля: 2, марта: 3, апреля: 4, мая: 5, июня: 6, июля: 7, августа: 8, сентября: 9, октября: 10, ноября: 11, декабря: 12,
}

/** Parses common date notations; undefined when nothing plausible is found. */
export function toIsoDateTime(v: unknown): string | undefined {
  if (typeof v !== "string" && typeof v !== "number") return undefined
  const s = String(v).trim()
  if (s === "") return undefined
  if (typeof v === "number" || /^\d{10}(\d{3})?$/.test(s)) {
    const n = Number(s)
    const d = new Date(s.length === 13 ? n : n * 1000)
    return valid(d)
  }
  // ISO-like: 2019-11-19, 2019-11-19T10:00, 2019-11-19 10:00:00 +0100
  const iso = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?\s*(Z|[+-]\d{2}:?\d{2})?)?/.exec(s)
  if (iso !== null) {
    const [, y, mo, d, h = "00", mi = "00", se = "00", , tz] = iso
    let zone = tz ?? "Z"
    if (/^[+-]\d{4}$/.test(zone)) zone = zone.slice(0, 3) + ":" + zone.slice(3)
    // A calendar day that does not exist (2025-02-30) is not a date, not the 2nd of March.
    const local = new Date(`${y}-${mo}-${d}T${h}:${mi}:${se}Z`)
    if (local.getUTCDate() !== Number(d) && Number(h) < 24) return undefined
    const utc = valid(new Date(`${y}-${mo}-${d}T${h}:${mi}:${se}${zone}`))
    if (utc === undefined || zone === "Z" || zone === "+00:00" || zone === "-00:00") return utc
    // Offsets beyond ±14:00 do not exist, and 24:00 has no local spelling: keep the UTC reading then.
    if (Number(zone.slice(1, 3)) > 14 || Number(zone.slice(4, 6)) > 59 || Number(h) >= 24) return utc
    // Same instant, written in the publisher's offset.
    return `${local.toISOString().slice(0, 23)}${zone}`
  }
  const dmy = /^(\d{1,2})[./](\d{1,2})[./](\d{4})/.exec(s)
  if (dmy !== null) return valid(new Date(Date.UTC(+dmy[3]!, +dmy[2]! - 1, +dmy[1]!)))
  // 2025年3月3日, 2025년 3월 3일
  const cjk = /(\d{4})\s*[年년]\s*(\d{1,2})\s*[月월]\s*(\d{1,2})\s*[日일]/.exec(s)
  if (cjk !== null) return valid(new Date(Date.UTC(+cjk[1]!, +cjk[2]! - 1, +cjk[3]!)))
  // "3 de marzo de 2025", "3 de março de 2025": the particles go
  const words = s.toLowerCase().replace(/,/g, " ").replace(/\s(?:de|del)\s/g, " ")
  const m1 = /(\d{1,2})\.?\s+(\p{L}+)\.?\s+(\d{4})/u.exec(words)
  const m2 = /(\p{L}+)\.?\s+(\d{1,2})(?:st|nd|rd|th)?\s+(\d{4})/u.exec(words)
  const cands: Array<[string | undefined, string | undefined, string | undefined]> = []
  if (m1) cands.push([m1[1], m1[2], m1[3]])
  if (m2) cands.push([m2[2], m2[1], m2[3]])
  for (const [day, mon, year] of cands) {
    if (day === undefined || mon === undefined || year === undefined) continue
    const mo = MONTHS[mon] ?? MONTHS[mon.slice(0, 3)]
    if (mo !== undefined) return valid(new Date(Date.UTC(+year, mo - 1, +day)))
  }
  const d = new Date(s)
  return valid(d)
}

function valid(d: Date): string | undefined {
  const t = d.getTime()
  if (!Number.isFinite(t)) return undefined
  const y = d.getUTCFullYear()
  if (y < 1900 || y > 2200) return undefined
  return d.toISOString()
}
