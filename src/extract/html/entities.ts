/**
 * HTML character references: numeric references and the named references that occur
 * in real pages (all of Latin-1, typography, Greek, arrows, a few math signs).
 * Unknown names are left as written, which is what a browser shows for them too.
 */

const LATIN1 =
  "nbsp iexcl cent pound curren yen brvbar sect uml copy ordf laquo not shy reg macr deg plusmn sup2 sup3 acute micro para middot cedil sup1 ordm raquo frac14 frac12 frac34 iquest " +
  "Agrave Aacute Acirc Atilde Auml Aring AElig Ccedil Egrave Eacute Ecirc Euml Igrave Iacute Icirc Iuml ETH Ntilde Ograve Oacute Ocirc Otilde Ouml times Oslash Ugrave Uacute Ucirc Uuml Yacute THORN szlig " +
  "agrave aacute acirc atilde auml aring aelig ccedil egrave eacute ecirc euml igrave iacute icirc iuml eth ntilde ograve oacute ocirc otilde ouml divide oslash ugrave uacute ucirc uuml yacute thorn yuml"

const NAMED: Record<string, string> = {
  amp: "&", lt: "<", gt: ">", quot: "\"", apos: "'",
  OElig: "\u0152", oelig: "\u0153", Scaron: "\u0160", scaron: "\u0161", Yuml: "\u0178", fnof: "\u0192",
  circ: "\u02C6", tilde: "\u02DC", ensp: "\u2002", emsp: "\u2003", thinsp: "\u2009", zwnj: "\u200C",
  zwj: "\u200D", lrm: "\u200E", rlm: "\u200F", ndash: "\u2013", mdash: "\u2014", lsquo: "\u2018",
  rsquo: "\u2019", sbquo: "\u201A", ldquo: "\u201C", rdquo: "\u201D", bdquo: "\u201E", dagger: "\u2020",
  Dagger: "\u2021", bull: "\u2022", hellip: "\u2026", permil: "\u2030", prime: "\u2032", Prime: "\u2033",
  lsaquo: "\u2039", rsaquo: "\u203A", oline: "\u203E", frasl: "\u2044", euro: "\u20AC", trade: "\u2122",
  larr: "\u2190", uarr: "\u2191", rarr: "\u2192", darr: "\u2193", harr: "\u2194", rArr: "\u21D2",
  lArr: "\u21D0", hArr: "\u21D4", minus: "\u2212", lowast: "\u2217", radic: "\u221A", infin: "\u221E",
  ne: "\u2260", le: "\u2264", ge: "\u2265", asymp: "\u2248", equiv: "\u2261", sum: "\u2211",
  prod: "\u220F", part: "\u2202", nabla: "\u2207", isin: "\u2208", forall: "\u2200", exist: "\u2203",
  empty: "\u2205", cap: "\u2229", cup: "\u222A", int: "\u222B", there4: "\u2234", sim: "\u223C",
  loz: "\u25CA", spades: "\u2660", clubs: "\u2663", hearts: "\u2665", diams: "\u2666", star: "\u2606",
  check: "\u2713", cross: "\u2717", hyphen: "\u2010", dash: "\u2010", horbar: "\u2015", nbhy: "\u2011",
  NewLine: "\n", Tab: "\t", colon: ":", comma: ",", period: ".", excl: "!", quest: "?", num: "#",
  dollar: "$", percnt: "%", lpar: "(", rpar: ")", ast: "*", plus: "+", sol: "/", semi: ";",
  equals: "=", commat: "@", lsqb: "[", rsqb: "]", bsol: "\\", lowbar: "_", grave: "`", lcub: "{",
  rcub: "}", verbar: "|", vert: "|", hat: "^", laquo: "\u00AB", raquo: "\u00BB", nbsp: "\u00A0",
  ZeroWidthSpace: "\u200B", NonBreakingSpace: "\u00A0", middot: "\u00B7", centerdot: "\u00B7",
}

;(() => {
  const names = LATIN1.split(" ")
  for (let i = 0; i < names.length; i++) NAMED[names[i]!] ??= String.fromCharCode(0xa0 + i)
  const greek = "Alpha Beta Gamma Delta Epsilon Zeta Eta Theta Iota Kappa Lambda Mu Nu Xi Omicron Pi Rho _ Sigma Tau Upsilon Phi Chi Psi Omega".split(" ")
  for (let i = 0; i < greek.length; i++) {
    const n = greek[i]!
    if (n === "_") continue
    NAMED[n] = String.fromCharCode(0x391 + i)
    NAMED[n.toLowerCase()] = String.fromCharCode(0x3b1 + i)
  }
  NAMED.sigmaf = "\u03C2"
})()

/** Names that browsers also accept without the trailing semicolon. */
const LEGACY = new Set(["amp", "lt", "gt", "quot", "AMP", "LT", "GT", "QUOT", ...LATIN1.split(" ")])
NAMED.AMP = "&"; NAMED.LT = "<"; NAMED.GT = ">"; NAMED.QUOT = "\""

/** Windows-1252 code points that numeric references in 0x80..0x9F stand for. */
const CP1252: Record<number, number> = {
  0x80: 0x20ac, 0x82: 0x201a, 0x83: 0x192, 0x84: 0x201e, 0x85: 0x2026, 0x86: 0x2020, 0x87: 0x2021,
  0x88: 0x2c6, 0x89: 0x2030, 0x8a: 0x160, 0x8b: 0x2039, 0x8c: 0x152, 0x8e: 0x17d, 0x91: 0x2018,
  0x92: 0x2019, 0x93: 0x201c, 0x94: 0x201d, 0x95: 0x2022, 0x96: 0x2013, 0x97: 0x2014, 0x98: 0x2dc,
  0x99: 0x2122, 0x9a: 0x161, 0x9b: 0x203a, 0x9c: 0x153, 0x9e: 0x17e, 0x9f: 0x178,
}

const REF = /&(?:#(\d{1,8});?|#[xX]([0-9a-fA-F]{1,7});?|([A-Za-z][A-Za-z0-9]{0,31})(;?))/g

function fromCode(code: number): string {
  if (code === 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return "\uFFFD"
  const mapped = CP1252[code]
  return String.fromCodePoint(mapped ?? code)
}

/** Decodes character references in text (`inAttribute` applies the attribute rules for legacy names). */
export function decodeEntities(s: string, inAttribute = false): string {
  if (s.indexOf("&") < 0) return s
  return s.replace(REF, (whole, dec: string | undefined, hex: string | undefined, name: string | undefined, semi: string, offset: number, all: string) => {
    if (dec !== undefined) return fromCode(parseInt(dec, 10))
    if (hex !== undefined) return fromCode(parseInt(hex, 16))
    const n = name!
    if (semi) {
      const v = NAMED[n]
      if (v !== undefined) return v
    }
    // without semicolon: longest legacy prefix
    for (let len = Math.min(n.length, 6); len >= 2; len--) {
      const p = n.slice(0, len)
      if (!LEGACY.has(p)) continue
      if (len === n.length && semi) break
      const next = len < n.length ? n[len]! : all[offset + whole.length] ?? ""
      if (inAttribute && /[A-Za-z0-9=]/.test(next)) return whole
      return NAMED[p]! + whole.slice(1 + len)
    }
    return whole
  })
}
