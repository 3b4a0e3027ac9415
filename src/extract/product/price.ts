/**
 * Prices and currencies as written in shops of many locales:
 * `1.234,56 €`, `$1,234.56`, `1 234,56 EUR`, `£12`, `12,-`, `CHF 1'234.50`, `R$ 49,90`, `1,299円`.
 */

/** Currency symbols and words → ISO 4217 (longest first when scanning). */
const SYMBOLS: ReadonlyArray<[string, string]> = [
  ["US$", "USD"], ["USD$", "USD"], ["US $", "USD"], ["C $", "CAD"], ["AU $", "AUD"], ["CA$", "CAD"], ["C$", "CAD"], ["AU$", "AUD"], ["A$", "AUD"], ["NZ$", "NZD"],
  ["HK$", "HKD"], ["S$", "SGD"], ["R$", "BRL"], ["MX$", "MXN"], ["NT$", "TWD"], ["CN¥", "CNY"], ["JP¥", "JPY"],
  ["€", "EUR"], ["£", "GBP"], ["¥", "JPY"], ["円", "JPY"], ["元", "CNY"], ["₹", "INR"], ["₽", "RUB"], ["руб", "RUB"],
  ["₩", "KRW"], ["원", "KRW"], ["₺", "TRY"], ["₴", "UAH"], ["₪", "ILS"], ["฿", "THB"], ["₫", "VND"], ["₱", "PHP"],
  ["₸", "KZT"], ["zł", "PLN"], ["Kč", "CZK"], ["Ft", "HUF"], ["lei", "RON"], ["kn", "HRK"], ["Rs.", "INR"], ["Rs", "INR"],
  ["RM", "MYR"], ["Fr.", "CHF"], ["kr.", "DKK"], ["kr", "SEK"], ["$", "USD"], ["ر.س", "SAR"], ["د.إ", "AED"],
  ["₦", "NGN"], ["৳", "BDT"], ["Rp", "IDR"], ["₲", "PYG"], ["₡", "CRC"], ["₾", "GEL"], ["₼", "AZN"], ["лв", "BGN"], ["S/", "PEN"],
  ["￥", "JPY"], ["TL", "TRY"], ["грн", "UAH"],
]

/**
 * Signs several currencies write alike, read as the first: `$` is USD, `kr` SEK, `kr.` DKK, `¥` JPY.
 * A shop's country settles them (see `sharesSign`).
 */
const SHARED_SIGNS: ReadonlyMap<string, ReadonlySet<string>> = new Map([
  ["$", new Set(["USD", "CAD", "AUD", "NZD", "MXN", "ARS", "CLP", "COP", "SGD", "HKD", "TWD", "UYU"])],
  ["kr", new Set(["SEK", "NOK", "DKK", "ISK"])],
  ["kr.", new Set(["DKK", "ISK", "NOK", "SEK"])],
  ["¥", new Set(["JPY", "CNY"])],
  ["￥", new Set(["JPY", "CNY"])],
])

/** ISO 4217 codes recognized in text. */
const ISO = new Set((
  "EUR USD GBP JPY CNY CHF CAD AUD NZD SEK NOK DKK PLN CZK HUF RON BGN HRK RUB UAH TRY INR BRL MXN ARS CLP COP PEN " +
  "ZAR KRW TWD HKD SGD MYR THB IDR PHP VND ILS AED SAR QAR KWD EGP NGN KES MAD ISK RSD KZT BYN GEL UYU PKR LKR BDT " +
  "PYG CRC AZN BOB DOP GTQ"
).split(" "))

/** Currencies whose shops mostly write `1.234,56`. */
const COMMA_DECIMAL = new Set(["EUR", "BRL", "PLN", "CZK", "HUF", "RON", "SEK", "NOK", "DKK", "RUB", "UAH", "TRY", "HRK", "BGN", "ARS", "CLP", "COP", "IDR", "VND", "CHF_NO"])

export type NumberLocale = "auto" | "de" | "en"

/** A Latin or Cyrillic letter (symbols written in them are words inside other words too). */
const ALPHABETIC = /^[A-Za-z\u00c0-\u024f\u0400-\u04ff]/

/** Finds a currency (ISO code) in a text, or undefined. */
export function detectCurrency(text: string): string | undefined {
  return findCurrency(text)?.code
}

/** The currency of a text and the sign it was read from (none for an ISO code). */
function findCurrency(text: string): { code: string; sign?: string } | undefined {
  const codes = text.match(/\b[A-Z]{3}\b/g)
  if (codes !== null) for (const c of codes) if (ISO.has(c)) return { code: c }
  for (const [sym, code] of SYMBOLS) {
    const i = text.indexOf(sym)
    if (i < 0) continue
    // symbols of Latin or Cyrillic letters must stand alone ("kr", "Ft", "lei", "RM", "Rs", "лв", not "рубашка")
    if (ALPHABETIC.test(sym)) {
      const before = text[i - 1] ?? " "
      const after = text[i + sym.length] ?? " "
      if (ALPHABETIC.test(before) || ALPHABETIC.test(after) || after === "-") continue
    }
    return { code, sign: sym }
  }
  return undefined
}

/** Whether a price read from a shared sign (`$`, `kr`, `¥`) may be in `local`, the currency of the shop's country. */
export function sharesSign(price: ParsedPrice, local: string): boolean {
  return price.sign !== undefined && (SHARED_SIGNS.get(price.sign)?.has(local) ?? false)
}

/** Normalizes a currency given as code or symbol to ISO 4217. */
export function normalizeCurrency(v: string | undefined): string | undefined {
  if (v === undefined) return undefined
  const t = v.trim()
  if (/^[A-Za-z]{3}$/.test(t)) {
    const code = t.toUpperCase()
    // pre-1998 ruble code, still common in Russian shops' markup
    return code === "RUR" ? "RUB" : code
  }
  return detectCurrency(t)
}

/**
 * Parses the first number of a price text. Thousands separators (`.`, `,`, spaces, `'`) and the
 * decimal separator are told apart by position and digit counts; `locale` settles the ambiguous
 * `1.234` / `1,234` (auto: the currency's habit, else a group of exactly three digits is thousands).
 */
export function parseNumber(text: string, locale: NumberLocale = "auto", currency?: string): number | undefined {
  const m = /[-−]?\d(?:[\d.,'’\u00a0\u202f\u2009 ]*\d)?(?:[.,][-–])?/.exec(text)
  if (m === null) return undefined
  let s = m[0].replace(/[−]/g, "-")
  s = s.replace(/[.,][-–]$/, "")
  s = s.replace(/['’\u00a0\u202f\u2009 ]/g, (ch, off: number) => {
    // a space only groups thousands when three digits follow
    return /^\d{3}(\D|$)/.test(s.slice(off + 1)) ? "" : "|"
  })
  s = s.split("|")[0]!
  const lastDot = s.lastIndexOf(".")
  const lastComma = s.lastIndexOf(",")
  let decimalSep: "." | "," | null = null
  if (lastDot >= 0 && lastComma >= 0) decimalSep = lastDot > lastComma ? "." : ","
  else if (lastDot >= 0 || lastComma >= 0) {
    const sep = lastDot >= 0 ? "." : ","
    const count = s.split(sep).length - 1
    const after = s.length - s.lastIndexOf(sep) - 1
    if (count > 1) decimalSep = null // 1.234.567 or 1,234,567
    else if (after !== 3) decimalSep = sep // 12,5 / 12.50 / 1234,5678
    else if (locale === "de") decimalSep = sep === "," ? "," : null
    else if (locale === "en") decimalSep = sep === "." ? "." : null
    else if (/^-?0[.,]/.test(s)) decimalSep = sep
    else if (currency !== undefined && COMMA_DECIMAL.has(currency)) decimalSep = sep === "," ? "," : null
    else decimalSep = null // a group of three digits: thousands
  }
  let norm: string
  if (decimalSep === null) norm = s.replace(/[.,]/g, "")
  else {
    const other = decimalSep === "." ? /,/g : /\./g
    norm = s.replace(other, "").replace(decimalSep, ".")
  }
  const v = Number(norm)
  return Number.isFinite(v) ? v : undefined
}

export interface ParsedPrice {
  price: number
  currency?: string
  /** The sign the currency was read from, when it was not an ISO code. */
  sign?: string
}

/** A percentage ("19%", "-20 %", "1,5%"): a rate or a discount, never an amount. */
export const PERCENT = /[-−]?\d+(?:[.,]\d+)?\s?%/
const PERCENTS = new RegExp(PERCENT.source, "g")
/** A text with its percentages blanked out. */
export const withoutPercentages = (t: string) => t.replace(PERCENTS, " ")

/**
 * Parses a price text into amount and currency (if shown). A percentage is never the amount ("inkl.
 * 19% MwSt. 49,90 €" is 49.90), and the euro sign may stand for the decimal comma ("24€99", French
 * shops' way).
 */
export function parsePrice(text: string, locale: NumberLocale = "auto"): ParsedPrice | undefined {
  let t = text.replace(/\s+/g, " ").trim()
  if (t === "" || !/\d/.test(t)) return undefined
  const found = findCurrency(t)
  const withoutPercent = withoutPercentages(t)
  if (/\d/.test(withoutPercent)) t = withoutPercent
  t = t.replace(/(?<![\d.,])(\d{1,6})€(\d{2})(?![\d.,%])/, "$1.$2 €")
  const price = parseNumber(t, locale, found?.code)
  if (price === undefined) return undefined
  if (found === undefined) return { price }
  return found.sign === undefined ? { price, currency: found.code } : { price, currency: found.code, sign: found.sign }
}
