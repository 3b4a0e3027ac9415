/**
 * What a product page shows, read in one pass over the (sanitized) tree: the visible text as a
 * stream of segments, price elements, buy buttons and their state, availability texts, identifiers
 * next to labels ("SKU:", "Art.-Nr.", "Código", "Артикул" …) or in elements marked as identifiers.
 *
 * Everything inside "related items" areas (carousels, recommendations, recently viewed …) and in
 * page chrome (`nav`, `footer`) is kept apart: a shop page shows many prices and buttons, only the
 * main product's count.
 */
import { Element, normalizeSpace, rawText, walk } from "../html/dom.ts"
import { detectCurrency, parsePrice, PERCENT, withoutPercentages, type ParsedPrice } from "./price.ts"
import { BLOCK_TAGS, NO_TEXT_TAGS } from "../html/text.ts"

// ---------- vocabularies ----------

/** Class/id words of areas that hold other products than the page's own. */
export const RELATED = /(^|[^a-z])(related|recommend\w*|similar|upsells?|up-sell|cross-?sells?|also-?(bought|viewed|like)|recently|recent-?view\w*|carousel|swiper|slick|owl\d*|glide|splide|suggest\w*|bundles?|complete-?the-?look|shop-?the-?look|you-?may|others|more-?from|reco|recs|teaser|minicart|mini-?cart|cart-?drawer|cart-?preview)([^a-z]|$)/
/** Tags whose subtree is site chrome. */
const SKIP_TAGS = new Set(["script", "style", "noscript", "template", "svg", "math", "select", "option", "textarea", "head", "title", "iframe", "object"])
const HIDDEN_CLASS = /(^|\s)(hidden|d-none|hide|is-hidden|u-hidden|visually-hidden|sr-only|screen-reader-text|invisible)(\s|$)/

/** Words around a price element that make it not the current price of the item. */
export const NEG_PRICE = /old|non-?sale|was|strike|regular|list|compare|save|saving|discount|before|original|rrp|uvp|crossed|msrp|instead|prev|reference|unit|per|shipping|delivery|installment|monthly|credit|(?:^|[\s_-])conv(?!ertible|enien)|approx|tax|vat|min|max|range|filter|slider|starting|start-?bid|opening|bid-?increment|estimate/
const CUR_PRICE = /(^|[\s_-])(price|current|sale|final|actual|now|selling|our|special|offer)/
const BID_CLASS = /current-?bid|currentbid|high-?bid|highest-?bid|winning-?bid|leading-?bid/
const BID_TEXT = /(?:(?:current|highest|winning|leading)\s+bid|aktuelles gebot|höchstgebot|enchère actuelle|offerta attuale|puja actual|oferta actual|huidig bod|aktualna oferta|текущая ставка)\s*[:：]?\s*\n?\s*([^\n]{1,30}\d[^\n]{0,10})/i
/** A class token of an old price: `price-old`, `was-price`, `regular-price`, `listPrice`, `price--strike` … */
const OLD_WORDS = /old|was|strike|regular|compare|before|origin|rrp|uvp|crossed|msrp|instead|prev|list[-_]?price|non-?sale/
const isOldPriceWord = (w: string) => w.length < 80 && w.includes("price") && OLD_WORDS.test(w)
const AVAIL_ATTR = /avail|stock|inventory|lager|dispon|verfug|verfüg|deliverability|delivery-?status|product-?status/

/** Explicitly out-of-stock wording (many languages). */
export const OUT_TEXT = /\b(out of stock|sold out|currently unavailable|temporarily unavailable|unavailable|not available|no longer available|discontinued|not in stock)\b|nicht (mehr )?(verfügbar|lieferbar|auf lager|vorrätig)|ausverkauft|vergriffen|derzeit nicht|épuisé|rupture de stock|indisponible|plus disponible|agotado|sin stock|no disponible|sin existencias|esaurit[oa]|non disponibile|non più disponibile|esgotado|indisponível|sem estoque|uitverkocht|niet (op voorraad|leverbaar|beschikbaar)|nie ma w magazynie|niedostępny|brak w magazynie|brak towaru|нет в наличии|немає в наявності|нет на складе|распродано|slutsåld|slut i lager|udsolgt|ikke på lager|utsolgt|loppuunmyyty|ei varastossa|vypredané|vyprodáno|není skladem|nie je skladom|nedostupn|nie je možné (produkt )?kúpiť|není možné koupit|nincs készleten|elfogyott|stokta yok|tükendi|在庫切れ|在庫なし|売り切れ|품절|일시품절|缺货|缺貨|售完|已售完|無庫存|ไม่มีสินค้า|אזל מהמלאי|לא במלאי|אינו במלאי|غير متوفر|نفدت الكمية|hết hàng/i
export const PRE_TEXT = /\b(pre-?order|coming soon)\b|vorbestell|demnächst verfügbar|précommande|bientôt disponible|preventa|próximamente|pre-?venda|em breve|prenota|prossimamente|предзаказ|予約/i
/** In-stock wording (texts of availability elements). */
export const IN_TEXT = /\b(in stock|available|ships (today|in|within)|ready to ship|only \d+ left|\d+ left( in stock)?|low stock|few left)\b|auf lager|lieferbar|\d+ verfügbar|vorrätig|en stock|disponible|en existencia|disponibile|em estoque|disponível|op voorraad|w magazynie|dostępny|в наличии|є в наявності|i lager|på lager|varastossa|skladem|na sklade|skladom|készleten|stokta|在庫あり|有货|有貨|現貨|במלאי|còn hàng/i
/** Buy-button wording. */
export const CART_TEXT = /\b(add to (your )?(cart|basket|bag|trolley)|add to shopping (cart|bag)|buy (it )?now|order now|place bid|bid now|add$)\b|in den (warenkorb|einkaufswagen)|jetzt kaufen|ajouter au panier|añadir a la (cesta|bolsa)|añadir al carrito|agregar al carrito|aggiungi al carrello|adicionar ao carrinho|comprar|in winkel(mand|wagen)|toevoegen aan|dodaj do koszyka|do koszyka|do košíka|do košíku|vložit do košíku|kosárba|sepete ekle|lägg i (varukorg|kundvagn)|læg i kurv|legg i (handlekurv|handlevogn)|lisää ostoskoriin|adaugă în coș|dodaj u košaricu|в корзину|купить|додати в кошик|カートに入れる|カートへ|장바구니|바로구매|加入购物车|加入購物車|立即购买|立即購買|הוסף לסל|أضف إلى السلة|thêm vào giỏ/i
/** Buttons shown instead of a buy button when the item cannot be bought. */
export const OOS_BUTTON = /\b(sold out|out of stock|notify me|email me when|alert me when|let me know when|unavailable|coming soon)\b|benachrichtig|ausverkauft|nicht verfügbar|épuisé|m'avertir|prévenez-moi|m'alerter|agotado|avísame|esaurito|avvisami|esgotado|avise-me|uitverkocht|powiadom|уведомить|сообщить о поступлении|нет в наличии|bevaka|品切れ|입고알림|到货通知|到貨通知/i

// ---------- identifier labels ----------

/** Labels that name the shop's article number. */
const SKU_LABELS = [
  "sku", "item\\s*(?:no\\.?|nr\\.?|number|#|code|id)", "article\\s*(?:no\\.?|nr\\.?|number|code|#)", "art(?:ikel)?\\.?\\s*-?\\s*n(?:r|o)\\.?",
  "artikelnummer", "bestellnummer", "bestell-?nr\\.?", "produktnummer", "produkt-?nr\\.?", "warennummer",
  "product\\s*(?:code|no\\.?|nr\\.?|number|id|#)", "code\\s*(?:article|produit)", "código\\s*(?:de|del)\\s*(?:producto|artículo|articulo|produto)",
  "cod(?:ice)?\\.?\\s*(?:articolo|prodotto|art\\.?)", "šifra(?:\\s*(?:artikla|proizvoda))?", "kód\\s*(?:produktu|tovaru|zboží)", "kod\\s*(?:produktu|towaru)",
  "nr\\.?\\s*katalogowy", "numer\\s*katalogowy", "katalógové\\s*číslo", "katalogové\\s*číslo", "код\\s*(?:товара|продукта)", "артикул", "арт\\.",
  "varenummer", "varenr\\.?", "varunummer", "artikelnr\\.?", "tuotenumero", "tuotekoodi", "cikkszám", "termékkód", "stock\\s*code",
  "style\\s*(?:no\\.?|number|#|code)", "web\\s*id", "catalog(?:ue)?\\s*(?:no\\.?|number|#)", "商品番号", "品番", "货号", "貨號", "商品編號", "商品编号", "商品コード", "商品代码", "asin",
  "n[°º]\\s*d['’]article", "numéro\\s*d['’]article", "artikelcode", "ürün\\s*kodu", "stok\\s*kodu", "mã\\s*(?:sản\\s*phẩm|hàng|sp)",
  "kode\\s*(?:produk|barang)", "상품\\s*번호", "품번", "รหัสสินค้า", "מק[\"״]ט",
]
/** Generic code/reference labels: only when punctuation or a line break follows ("Ref. 12", "Код: 12", "Référence⏎12"). */
const CODE_LABELS = [
  "ref(?:erence)?(?:\\s*(?:no|number|code))?", "réf(?:érence)?", "référence", "prod(?:uct)?\\.?\\s*ref(?:erence)?", "code", "código", "cód", "codice", "cod",
  "kód", "kod", "код", "šifra", "sifra", "шифр", "item", "c[óo]digo\\s*de\\s*referencia", "referencia", "riferimento", "κωδικός",
]
/** Manufacturer identifiers: used only when nothing better is shown. */
const WEAK_LABELS = [
  "model\\s*(?:no\\.?|nr\\.?|number|#|code)?", "modell(?:nummer)?", "modèle", "modelo", "modello", "mpn", "part\\s*(?:no\\.?|nr\\.?|number|#)",
  "manufacturer\\s*part\\s*(?:no\\.?|number)", "herstellernummer", "hersteller-?nr\\.?", "型番", "型号", "ean(?:-?13)?", "gtin(?:-?1[234])?", "upc", "isbn(?:-?1[03])?",
]
const VALUE = "([A-Za-z0-9][A-Za-z0-9._/\\-]{0,38}[A-Za-z0-9])"
const labelRegex = (labels: string[], sep: string, lead = "(?<![\\p{L}\\p{N}])") =>
  new RegExp(`${lead}(?:${labels.join("|")})(?![\\p{L}])${sep}${VALUE}(?![A-Za-z0-9])`, "giu")
/**
 * A manufacturer label names the product's number when punctuation follows it ("Model: WX-2000",
 * "MPN # 12") or when it opens its line or follows a separator ("| Model WX-2000", "(EAN 400…"):
 * "support for Shader Model 5.0" in a sentence names none.
 */
const WEAK_LEAD = "(?:(?<=(?:^|[\\n|•·,;:(\\[\\-–—*/►✓\"'.])\\s*)|(?<![\\p{L}\\p{N}])(?=(?:" + WEAK_LABELS.join("|") + ")(?![\\p{L}])\\s*[:：#№]))"
const ANY_SEP = "\\s*[:：#№.\\-–—]*\\s*"
const STRICT_SEP = "\\s*(?:[.:：#№]|\\n)[\\s.:：#№]*"
const SKU_RE = labelRegex(SKU_LABELS, ANY_SEP)
const CODE_RE = labelRegex(CODE_LABELS, STRICT_SEP)
const WEAK_RE = labelRegex(WEAK_LABELS, ANY_SEP, WEAK_LEAD)
/** Class/id/data attribute words of an element that holds the product's identifier. */
const ID_ATTR = /(^|[^a-z])(sku|product-?ref(erence)?|product-?code|product-?number|product-?no|article-?(number|no|nr|code)|item-?(number|no|code)|art-?nr|artnr|style-?(number|code)|model-?(number|no)|reference|ref-?code)([^a-z]|$)/
const BRAND_RE = /(?:^|\n)(?:brand(?: name)?|marke|marque|marca|merk|marka|značka|márka|бренд|производитель|manufacturer|hersteller|fabricant|fabricante|produttore|proizvajalec|výrobce|výrobca|producent|valmistaja|tillverkare|ブランド|品牌|브랜드)(?![\p{L}])\s*(?:[:：\-–]\s*\n?|\n)\s*[:：]?\s*([^\n]{1,48})(?:\n|$)/iu

export interface PriceCandidate extends ParsedPrice {
  score: number
  /** A current bid of an auction. */
  bid: boolean
}
const candidate = (p: ParsedPrice, score: number, bid: boolean): PriceCandidate => ({ ...p, score, bid })

export interface Signals {
  /** Visible text segments of the page (main area; chrome and related areas excluded), joined by `\n`. */
  text: string
  /** Whether the page shows `value` as a whole token anywhere in its visible text (chrome and related areas included). */
  shows(value: string): boolean
  price?: PriceCandidate
  /** Amounts the main area shows struck through (`<del>`, `<s>`, a line-through style): old prices. */
  oldPrices: number[]
  /**
   * Amounts the main area's price elements mark as old or regular by their class words ("list" words
   * left out: VTEX marks its selling price `sellingPrice--hasListPrice`), struck or not.
   */
  markedOldPrices: number[]
  /** Discount rates the main area shows on short lines ("-13,5%", "Save 20%"), the first ten, as positive percentages. */
  discounts: number[]
  /** Amounts of the main area's price elements that are not old prices (the first 50). */
  shownPrices: number[]
  bid?: PriceCandidate
  /** First availability element's reading. */
  availabilityText?: string
  /** The first buy button of the main area: `enabled`, `disabled`, or `oos` (a "sold out"/"notify me" button). */
  buyButton?: "enabled" | "disabled" | "oos" | "preorder"
  /** Whether an enabled buy button exists anywhere in the main area. */
  anyEnabledBuy: boolean
  /** Offsets in `text` of the first h1, the availability text and the first buy button (for nearness to the title). */
  h1At?: number
  availabilityAt?: number
  buyButtonAt?: number
  itempropSku?: string
  itempropBrand?: string
  itempropAvailability?: string
  /** Identifier after a label of the shop's number ("SKU:", "Art.-Nr.", "Код товара" …), else after a generic one ("Ref.", "Code:"). Computed on first use. */
  labelSku(): string | undefined
  /** Identifier after a manufacturer label ("Model", "MPN", "EAN" …). Computed on first use. */
  weakLabelSku(): string | undefined
  /** Identifier in an element marked as one (class/id/data attributes). */
  attrSku?: string
  /**
   * A price written as plain text right after the title (no price markup): a short line with an
   * amount and a currency (`$12.90`, `2320 元`, or the amount and the currency on adjacent lines).
   * Computed on first use.
   */
  textPrice(): PriceCandidate | undefined
  /** Value after a "Brand:" label. Computed on first use. */
  brand(): string | undefined
}

/**
 * Tags whose `aria-hidden` hides nothing from the eye: icons and inline duplicates of text said again for
 * screen readers (WooCommerce's `ins`/`del` sale and old prices).
 */
const ARIA_HIDDEN_SHOWN = new Set(["span", "i", "ins", "del"])

function isHidden(el: Element): boolean {
  const a = el.attrs
  if (a === null) return false
  if (a.hidden !== undefined) return true
  if (a["aria-hidden"] === "true" && !ARIA_HIDDEN_SHOWN.has(el.tag)) return true
  const st = a.style
  if (st !== undefined && /display\s*:\s*none|visibility\s*:\s*hidden/i.test(st)) return true
  const c = a.class
  return c !== undefined && (c.includes("hid") || c.includes("none") || c.includes("only") || c.includes("invisible") || c.includes("screen-reader")) && HIDDEN_CLASS.test(c)
}

/**
 * Reading of an availability text: the earlier of out-of-stock and in-stock wordings ("In stock. Not
 * available for pick-up" is InStock), except that a pre-order or backorder wording qualifies an in-stock
 * one ("Available on backorder", "Available for pre-order").
 */
export function availabilityFromText(t: string): string | undefined {
  const out = OUT_TEXT.exec(t), inStock = IN_TEXT.exec(t)
  if (out !== null && (inStock === null || out.index <= inStock.index)) return "OutOfStock"
  if (inStock === null) return PRE_TEXT.test(t) ? "PreOrder" : BACKORDER.test(t) ? "BackOrder" : undefined
  // a generic "available" qualified right beside it: "Available for pre-order", "Available on
  // backorder", "Bientôt disponible" (not "5 in stock (can be backordered)", nor "Disponibile - Prenota e ritira")
  if (!GENERIC_IN.test(inStock[0])) return "InStock"
  const near = (re: RegExp) => {
    const q = re.exec(t)
    if (q === null) return false
    const gap = q.index >= inStock.index ? t.slice(inStock.index + inStock[0].length, q.index) : t.slice(q.index + q[0].length, inStock.index)
    return gap.length <= 12 && !/[^\p{L}\s]/u.test(gap)
  }
  if (near(PRE_TEXT)) return "PreOrder"
  if (near(BACKORDER)) return "BackOrder"
  return "InStock"
}
const BACKORDER = /back-?order/i
/** In-stock wordings that say only "available", which a pre-order or backorder wording beside them qualifies. */
const GENERIC_IN = /^(?:available|disponible|disponibile|disponível|dostępny)$/i

const DATA_SKU = /^data-(product-|item-|variant-)?sku$/
const ID_TOKEN = /^[A-Za-z0-9][A-Za-z0-9._/-]{1,38}[A-Za-z0-9]$/

/** An identifier-shaped token: letters, digits and separators with a digit; not an amount ("12.50") nor a date ("2008-11-27"). */
function idValue(v: string): string | undefined {
  return ID_TOKEN.test(v) && /\d/.test(v) && !/^\d{1,6}[.,]\d{1,2}$/.test(v) && !DATE_TOKEN.test(v) ? v : undefined
}
const DATE_TOKEN = /^(?:\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{4})$/

/**
 * The identifier an element marked as one shows (`class="sku"`, `data-testid="sku"`). Its label may
 * stand in an element of its own, glued to the value in the markup (`<span>Art.</span><span>1049084</span>`
 * reads "Art.1049084"): of two pieces of text, a short one without digits and a value, the value is the identifier.
 */
function markedId(el: Element): string | undefined {
  const whole = blockText(el, 60)
  if (whole.length > 60) return undefined
  const pieces: string[] = []
  const rec = (e: Element) => {
    for (const c of e.children) {
      if (typeof c === "string") { const t = c.trim(); if (t !== "") pieces.push(t) }
      else if (!NO_TEXT_TAGS.has(c.tag) && !isHidden(c)) rec(c)
    }
  }
  rec(el)
  if (pieces.length === 2 && pieces[0]!.length <= 20 && !/\d/.test(pieces[0]!)) return idValue(pieces[1]!)
  return idValue(whole)
}

const RELATED_TAGS = new Set(["div", "section", "ul", "ol", "aside", "article", "li", "table", "tbody", "dl"])
/** Quick filter: attribute words that any of the checks below could match. */
const INTERESTING = /avail|stock|invent|lager|dispon|verf|deliver|status|sku|ref|code|numb|no|nr|model|style/
/**
 * F_OLD: inside an old price, by tag or class; F_STRUCK: inside a struck-through element (a class may lie:
 * `price-old-live` on the only price); F_REGULAR: inside a price marked "regular" only, which is the old
 * price beside a sale and the price itself when there is none (`price-regular` holding a shop's whole price box).
 */
const F_RELATED = 1, F_CHROME = 2, F_OLD = 4, F_STRUCK = 8, F_REGULAR = 16
/** "Near the title": characters of main text before and after the first `h1`. */
export const NEAR_BEFORE = 1500, NEAR_AFTER = 2000

const NEEDS_NORMALIZING = /\s\s|[\n\t\r\f\u00a0\u200b\u200c\u200d\u200e\u200f\ufeff]/

/** One pass over `root`. */
export function readSignals(root: Element): Signals {
  let allText: string | undefined
  let labelText: string | undefined
  const memo = new Map<string, string | undefined>()
  const lazy = (key: string, f: () => string | undefined) => () => {
    if (!memo.has(key)) memo.set(key, f())
    return memo.get(key)
  }
  const labels = () => (labelText ??= short.join("\n"))
  const out: Signals = {
    text: "",
    anyEnabledBuy: false,
    oldPrices: [],
    markedOldPrices: [],
    discounts: [],
    shownPrices: [],
    shows: (v) => shows((allText ??= all.join("\n")), v),
    labelSku: lazy("sku", () => firstId(SKU_RE, labels(), true) ?? firstId(CODE_RE, labels())),
    weakLabelSku: lazy("weak", () => firstId(WEAK_RE, labels())),
    brand: lazy("brand", () => BRAND_RE.exec(out.text)?.[1]!.trim()),
    textPrice: () => (h1Line === undefined ? undefined : priceAfter(main, h1Line, oldLines)) ?? labelledPrice(main, oldLines),
  }
  let h1Line: number | undefined
  const main: string[] = []
  /** Lines of `main` struck through (`<del>`, `<s>`, `<strike>`): an old price, not the one the page sells at. */
  const oldLines = new Set<number>()
  const all: string[] = []
  // short lines only, for the label scan (labels and values are short; a long line is a break "¶")
  const short: string[] = []
  let best: PriceCandidate | undefined
  /** The best price inside a "regular" price: the price when the page marks no other. */
  let bestRegular: PriceCandidate | undefined
  let bestBid: PriceCandidate | undefined
  let order = 0
  let mainChars = 0

  /** Visits an element; returns the flags for its children, or -1 to skip its subtree. */
  const visit = (el: Element, fl: number): number => {
    const tag = el.tag
    if (SKIP_TAGS.has(tag) || tag === "br") return -1
    order++
    const a = el.attrs
    // one pass over the attributes
    let words = ""
    let itemprop: string | undefined, role: string | undefined, type: string | undefined, content: string | undefined
    let value: string | undefined, ariaLabel: string | undefined, href: string | undefined
    let disabled = false
    let ariaHidden = false
    /** Struck through by its inline style (`text-decoration: line-through`): an old price, as `<del>` is. */
    let struck = false
    /** The value of a `data-sku` / `data-product-sku` attribute: the identifier itself, whatever the element shows. */
    let dataSku: string | undefined
    if (a !== null) {
      for (const k in a) {
        const v = a[k]!
        switch (k) {
          case "class": case "id": words += " " + v; break
          case "hidden": return -1
          case "style":
            if ((v.includes("none") || v.includes("hidden")) && /display\s*:\s*none|visibility\s*:\s*hidden/i.test(v)) return -1
            if (v.includes("line-through")) struck = true
            break
          // (a page may hide its whole product from screen readers while a dialog is open: not from the eye)
          case "aria-hidden": if (v === "true" && !ARIA_HIDDEN_SHOWN.has(tag) && !titlePath.has(el)) ariaHidden = true; break
          case "itemprop": itemprop = v; words += " " + v; break
          case "role": role = v; break
          case "type": type = v; break
          case "content": content = v; break
          case "value": value = v; break
          case "aria-label": ariaLabel = v; break
          case "href": href = v; break
          case "disabled": disabled = true; break
          case "aria-disabled": if (v === "true") disabled = true; break
          default:
            if (k.length > 5 && k.charCodeAt(4) === 45 && k.startsWith("data-") && v.length < 40 && k !== "data-src" && k !== "data-srcset") {
              words += " " + k.slice(5) + " " + v
              if (DATA_SKU.test(k)) dataSku ??= v.trim()
            }
        }
      }
      if (words !== "") words = words.toLowerCase()
      // Hidden from screen readers only, except a price box: shops draw the price for the eye
      // (`<div class="salePrice" aria-hidden="true">$229<span>99</span></div>`) beside a copy for
      // screen readers, which is hidden from the eye and left out.
      if (ariaHidden && !`${a.class ?? ""} ${a.id ?? ""}`.toLowerCase().includes("price")) return -1
      if (words !== "") {
        if ((words.includes("hid") || words.includes("none") || words.includes("only") || words.includes("invisible") || words.includes("screen-reader")) && HIDDEN_CLASS.test(a.class ?? "")) return -1
      }
    }
    if (tag === "nav" || tag === "footer") fl |= F_CHROME
    // a sidebar before the product's title (bestsellers, a category tree): a buy box set in an
    // <aside> comes after the title, or holds it
    if (tag === "aside" && (fl & F_RELATED) === 0 && titlePath.size > 0 && out.h1At === undefined && !titlePath.has(el)) fl |= F_RELATED
    if ((fl & F_RELATED) === 0 && words !== "" && RELATED_TAGS.has(tag) && !titlePath.has(el) && RELATED.test(words)) fl |= F_RELATED
    if ((fl & F_RELATED) === 0 && afterRelatedHeading.has(el) && !titlePath.has(el)) fl |= F_RELATED
    if ((fl & F_RELATED) === 0 && (tag === "ul" || tag === "ol") && !titlePath.has(el) && isProductList(el)) fl |= F_RELATED
    // (after the title: a "Recently viewed" strip above it lists other items, the product follows)
    if ((fl & F_RELATED) === 0 && HEADINGS.has(tag) && out.h1At !== undefined) {
      const t = blockText(el, 60)
      if (t.length <= 60 && RELATED_HEADING.test(t)) markAfter(el)
    }
    const hasPrice = words.includes("price")
    const wasStruck = (fl & F_STRUCK) !== 0
    const wasOld = (fl & (F_OLD | F_REGULAR)) !== 0
    if (tag === "del" || tag === "s" || tag === "strike" || struck) fl |= F_OLD | F_STRUCK
    else if (hasPrice && (fl & F_OLD) === 0) {
      const old = words.split(" ").filter(isOldPriceWord)
      if (old.length > 0) fl |= old.some((w) => OLD_WORDS.test(w.replaceAll("regular", ""))) ? F_OLD : F_REGULAR
    }
    // (the amount of a struck-through price, read where the striking starts, outside related items and
    // chrome; class words may lie: VTEX marks its selling price `sellingPrice--hasListPrice`)
    /** The element's amount, when it shows a short one. */
    const shortAmount = (): number | undefined => {
      const t = content ?? blockText(el, 60, false, true)
      const p = t.length < 60 && /\d/.test(t) ? parsePrice(t) : undefined
      return p !== undefined && p.price > 0 ? p.price : undefined
    }
    if (!wasStruck && (fl & F_STRUCK) !== 0 && (fl & (F_RELATED | F_CHROME)) === 0 && out.oldPrices.length < 20) {
      const p = shortAmount()
      if (p !== undefined) out.oldPrices.push(p)
    }
    if (!wasOld && hasPrice && (fl & (F_OLD | F_REGULAR)) !== 0 && (fl & (F_RELATED | F_CHROME)) === 0 && !words.includes("list") && out.markedOldPrices.length < 20) {
      const p = shortAmount()
      if (p !== undefined) out.markedOldPrices.push(p)
    }

    if (itemprop !== undefined) {
      if (out.itempropSku === undefined && /^(sku|productid|mpn)$/i.test(itemprop)) {
        const v = (content ?? blockText(el, 80)).trim()
        if (v !== "" && v.length < 60) out.itempropSku = v
      }
      if (out.itempropBrand === undefined && itemprop === "brand") {
        const v = content ?? blockText(el, 80)
        if (v !== "" && v.length < 60) out.itempropBrand = v
      }
      if (out.itempropAvailability === undefined && itemprop === "availability") {
        const v = href ?? content ?? blockText(el, 200)
        if (v !== "") out.itempropAvailability = v
      }
    }
    if ((fl & (F_RELATED | F_CHROME)) !== 0) return fl
    if (tag === "h1" && out.h1At === undefined) { out.h1At = mainChars; h1Line = main.length }
    // a price named for screen readers ("cena 1 299,00 zł" on an element whose classes say nothing)
    if ((fl & (F_OLD | F_REGULAR)) === 0 && !hasPrice && ariaLabel !== undefined && ariaLabel.length < 60 && tag !== "button" && tag !== "a") {
      const labelled = SELLING_LABEL.exec(ariaLabel)
      const p = labelled !== null && labelled[0].trim() !== "" ? parsePrice(ariaLabel.slice(labelled[0].length)) : undefined
      if (p !== undefined && p.price > 0 && p.currency !== undefined) {
        const sc = 10 - Math.min(order / 400, 6) + 3
        if (best === undefined || sc > best.score) best = candidate(p, sc, false)
      }
    }
    if (words === "" && tag !== "button" && tag !== "input" && role === undefined) return fl

    // price elements
    if ((fl & F_OLD) === 0 && (hasPrice || words.includes("bid"))) {
      const bid = BID_CLASS.test(words)
      // (BigCommerce marks every shown price by its tax display, `price--withoutTax`: not another price)
      const others = words.replace(/price|with(?:out)?[-_]?tax/g, " ")
      // (inside a "regular" price the word itself does not make the element another price)
      if (bid || (hasPrice && !NEG_PRICE.test((fl & F_REGULAR) !== 0 ? others.replaceAll("regular", " ") : others))) {
        const t = content ?? sellingPart(blockText(el, 60, false, true))
        if (t.length > 0 && t.length < 40 && /\d/.test(t) && !perPeriodAfter(el)) {
          const p = parsePrice(t)
          if (p !== undefined && p.price > 0) {
            let sc = 10 - Math.min(order / 400, 6)
            if (p.currency !== undefined || detectCurrency(t) !== undefined) sc += 3
            if (CUR_PRICE.test(words)) sc += 1
            if (itemprop === "price") sc += 4
            const cand = candidate(p, sc, bid)
            if ((fl & F_REGULAR) !== 0) {
              if (!bid && (bestRegular === undefined || sc > bestRegular.score)) bestRegular = cand
            } else {
              if (out.shownPrices.length < 50) out.shownPrices.push(p.price)
              if (bid) bestBid ??= cand
              else if (best === undefined || sc > best.score) best = cand
            }
          }
        }
      }
    }

    // buy buttons
    if (tag === "button" || (tag === "input" && /submit|button/i.test(type ?? "")) || role === "button" || (tag === "a" && /cart|basket|buy|bag/.test(words))) {
      const t = normalizeSpace((value ?? "") + " " + blockText(el, 100, true) + " " + (tag === "input" ? "" : (ariaLabel ?? "")))
      if (t.length < 80) {
        if (/(^|[\s_-])(disabled|is-disabled|inactive)([\s_-]|$)/.test(words)) disabled = true
        let state: Signals["buyButton"]
        if (OOS_BUTTON.test(t)) state = "oos"
        else if (CART_TEXT.test(t) || /add-?to-?(cart|basket|bag)|addtocart|addtobasket|buy-?now/.test(words)) state = disabled ? "disabled" : PRE_TEXT.test(t) ? "preorder" : "enabled"
        else if (PRE_TEXT.test(t) && !disabled) state = "preorder"
        if (state !== undefined) {
          if (out.buyButton === undefined) { out.buyButton = state; out.buyButtonAt = mainChars }
          if (state === "enabled" || state === "preorder") out.anyEnabledBuy = true
        }
      }
    }
    if (words === "" || !INTERESTING.test(words)) return fl
    // availability texts
    if (out.availabilityText === undefined && AVAIL_ATTR.test(words)) {
      const t = blockText(el, 300)
      if (t !== "" && t.length < 300) {
        const v = availabilityFromText(t.slice(0, 160))
        if (v !== undefined) { out.availabilityText = v; out.availabilityAt = mainChars }
      }
    }
    // identifiers in marked elements
    if (out.attrSku === undefined && !hasPrice && ID_ATTR.test(words)) out.attrSku = markedId(el) ?? (dataSku !== undefined ? idValue(dataSku) : undefined)
    return fl
  }

  /** What follows a heading such as "Related products" or "Customers also bought": other items, however unmarked. */
  const afterRelatedHeading = new Set<Element>()
  const markAfter = (heading: Element) => {
    // the heading may stand alone in a wrapper: its siblings are the wrapper's
    let e = heading
    for (let up = 0; up < 3 && e.parent !== null && e.parent !== root && nextElements(e).length === 0; up++) e = e.parent
    for (const s of nextElements(e)) afterRelatedHeading.add(s)
  }

  // the title's ancestors are never "related items" (a page wrapper may be called `has-recommendations`)
  const titlePath = new Set<Element>()
  for (let e = firstH1(root); e !== null && e !== root; e = e.parent) titlePath.add(e)

  // iterative walk in document order: parallel stacks of nodes and their context flags
  const nodes: Array<Element | string> = []
  const flags: number[] = []
  const pushChildren = (el: Element, fl: number) => {
    const ch = el.children
    for (let i = ch.length - 1; i >= 0; i--) { nodes.push(ch[i]!); flags.push(fl) }
  }
  pushChildren(root, 0)
  while (nodes.length > 0) {
    const n = nodes.pop()!
    const fl = flags.pop()!
    if (typeof n === "string") {
      let t = n.trim()
      if (t === "") continue
      if (NEEDS_NORMALIZING.test(t)) {
        t = normalizeSpace(t)
        if (t === "") continue
      }
      all.push(t)
      if ((fl & (F_RELATED | F_CHROME)) === 0) {
        if ((fl & F_STRUCK) !== 0) oldLines.add(main.length)
        main.push(t)
        mainChars += t.length + 1
        short.push(t.length <= 150 ? t : "¶")
      }
      continue
    }
    const f = visit(n, fl)
    if (f >= 0) pushChildren(n, f)
  }
  out.text = main.join("\n")
  for (const line of main) {
    if (out.discounts.length >= 10) break
    const rate = discountRate(line)
    if (rate !== undefined) out.discounts.push(rate)
  }
  if (out.availabilityText === undefined) labelledAvailability(main, out)
  if ((best ?? bestRegular) !== undefined) out.price = best ?? bestRegular
  // "Current bid: $200"
  if (bestBid === undefined) {
    const m = BID_TEXT.exec(out.text)
    if (m !== null) {
      const p = parsePrice(m[1]!)
      if (p !== undefined && p.price > 0) bestBid = candidate(p, 0, true)
    }
  }
  if (bestBid !== undefined) out.bid = bestBid
  return out
}

/** A sentence ("Made from recycled cotton."), not a label: three words or more and a full stop. */
const isSentence = (t: string) => /[.!]$/.test(t.trim()) && t.trim().split(/\s+/).length >= 3


/** A line that labels the product's availability ("Availability: Out Of Stock", "Verfügbarkeit:⏎Auf Lager"). */
const AVAIL_LABEL = /^(?:availability|stock status|stock|verfügbarkeit|lieferstatus|lagerstatus|disponibilité|disponibilidad|disponibilità|disponibilidade|beschikbaarheid|voorraad|dostępność|dostupnost|dostupnosť|наличие|在庫状況|在庫|库存|庫存|재고)\s*[:：]\s*(.{0,80})$/i

/** An availability a line states under its label, for pages that mark no element as one. */
function labelledAvailability(lines: string[], out: Signals): void {
  let at = 0
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!
    const m = line.length <= 100 ? AVAIL_LABEL.exec(line) : null
    if (m !== null) {
      const v = availabilityFromText(m[1] !== "" ? m[1]! : (lines[i + 1] ?? "").slice(0, 80))
      if (v !== undefined) { out.availabilityText = v; out.availabilityAt = at; return }
    }
    at += line.length + 1
  }
}

/** The element siblings after `el`. */
function nextElements(el: Element): Element[] {
  const sib = el.parent?.children ?? []
  const out: Element[] = []
  for (let i = sib.indexOf(el) + 1; i < sib.length; i++) {
    const c = sib[i]!
    if (typeof c !== "string") out.push(c)
  }
  return out
}

const HEADINGS = new Set(["h2", "h3", "h4", "h5", "h6"])
/** Headings over other items than the page's product. */
const RELATED_HEADING = /^\s*(?:related (?:products?|items)|you (?:may|might) also (?:like|love)|(?:customers|people|others) (?:who (?:bought|viewed) this (?:item|product) )?also (?:bought|viewed|liked)|similar (?:products?|items?)|recommended (?:for you|products|items)|recently viewed|more from (?:this|the) (?:seller|shop|store|brand|collection)|frequently bought together|complete the look|kunden kauften auch|ähnliche (?:produkte|artikel)|das könnte (?:dir|ihnen) auch gefallen|produits (?:similaires|associés)|vous aimerez aussi|productos (?:relacionados|similares)|también te puede gustar|prodotti (?:correlati|simili)|potrebbe interessarti|produtos relacionados|gerelateerde producten|podobne produkty|produkty powiązane|polecane produkty|klienci kupili również|související produkty|podobné produkty|relaterade produkter|liknande produkter|relaterte produkter|relaterede produkter|lignende produkter|vergelijkbare producten|anderen bekeken ook|passende produkte|andere kunden kauften auch|prodotti consigliati|productos recomendados|você também pode gostar|produtos similares|vous pourriez aussi aimer|benzer ürünler|похожие товары|с этим товаром покупают|関連商品|おすすめ商品|相关商品|猜你喜欢|相關商品|관련 상품)(?![\p{L}\p{N}])/iu

/**
 * A list of other products: three or more items, each with a link and its own price element (a
 * sidebar's best sellers, a "recently viewed" strip). A product's variants are links without prices,
 * or a list that holds the title.
 */
function isProductList(list: Element): boolean {
  let priced = 0, items = 0
  for (const li of list.children) {
    if (typeof li === "string" || li.tag !== "li") continue
    if (++items > 20) break
    let link = false, price = false
    walk(li, (d) => {
      if (d.tag === "a") link = true
      const cls = d.attrs?.class
      if (cls !== undefined && cls.toLowerCase().includes("price")) price = true
      return !(link && price)
    })
    if (link && price && ++priced >= 3) return true
  }
  return false
}

/** The first `h1` below `root` (tags only, no text read). */
function firstH1(root: Element): Element | null {
  const stack: Element[] = [root]
  while (stack.length > 0) {
    const el = stack.pop()!
    if (el.tag === "h1") return el
    const ch = el.children
    for (let i = ch.length - 1; i >= 0; i--) {
      const c = ch[i]!
      if (typeof c !== "string" && !SKIP_TAGS.has(c.tag)) stack.push(c)
    }
  }
  return null
}

const PRICE_LINE = /^[^\d\n]{0,4}\d[\d.,'’\s]*(?:[.,][-–])?[^\d\n]{0,4}$/
const AMOUNT_LINE = /^\d[\d.,'’\s]*$/
const NOT_A_PRICE = /%|\b(off|save|was|from|shipping|delivery|per|x)\b|uvp|statt|ab\b/i
/** Labels of prices that are not the selling price: list/suggested prices, shipping, instalments, prices before tax. */
const OTHER_PRICE_LABEL = /suggested|rrp|msrp|list price|regular|compare|uvp|statt|vorher|versand|liefer|prix conseillé|avant|livraison|precio (anterior|de lista)|envío|prezzo (consigliato|di listino)|spedizione|frete|verzend|dostawa|доставка|建議售價|建议售价|原價|原价|定價|定价|市價|市价|運費|运费|参考価格|希望小売価格|送料|정가|정상가|배송비|משלוח|每期|installment|monthly|\/\s*mo|\b(?:excl\.?\s*(?:vat|tax|gst|mwst|btw|moms)|exkl\.?\s*(?:mwst|moms)|excluding (?:vat|tax)|ex\.? (?:vat|gst)|without (?:vat|tax)|before tax|zzgl\.?|ohne mwst|hors tax\w*|sin iva|senza iva|iva esclusa|bez dph|brez ddv|bez vat)\b|без ндс|税抜|税別/i

/** An amount after a label of another price: "Was $149.99", "UVP 29,90 €", "Shipping: $5". */
const OTHER_LABELLED_AMOUNT = new RegExp(`(?:${OTHER_PRICE_LABEL.source}|\\b(?:was|before|originally|antes|prima|shipping|delivery|postage)\\b)[^\\d\\n]{0,12}\\d[\\d.,'’]*(?:\\s?[^\\d\\s]{1,4}(?!\\s?\\d))?`, "gi")

/**
 * The part of a price element's text that sells: an element holding "Was $149.99 Now $99.99" shows two
 * amounts, and the one after another price's label is not the selling price. An element that shows only
 * such an amount is left as it is (its label may name the selling price in words we do not know).
 */
function sellingPart(t: string): string {
  const rest = t.replace(OTHER_LABELLED_AMOUNT, " ").trim()
  return rest !== t && /\d/.test(rest) ? rest : t
}

/** A label naming the selling price at the start of a line (not "list price", "was", "shipping": those are other prices). */
const SELLING_LABEL = /^\s*(?:(?:our|your|sale|special|offer|current|now)\s+price|price|now|only|preis|unser preis|prix|precio|prezzo|preço|prijs|cena|цена|ціна)\s*:?\s*/i

/** The first amount with a currency within 60 lines after the title line, struck-through (old) prices left out. */
function priceAfter(lines: string[], from: number, oldLines: ReadonlySet<number>): PriceCandidate | undefined {
  const end = Math.min(lines.length, from + 60)
  for (let i = from; i < end; i++) {
    if (oldLines.has(i)) continue
    const at = amountAt(lines, i)
    if (at === undefined) continue
    // the label of another price stands on the line before (a short one), or before a currency sign's
    // line; a discount badge there is no label ("16% off", "15% alennusta", "Extra ₹1000 off"): the selling price follows it
    const prev = lines[i - 1] ?? ""
    const before = prev.length <= 4 ? (lines[i - 2] ?? "") + " " + prev : prev
    if (!at.labelled && before.length <= 40 && (OTHER_PRICE_LABEL.test(before) || /\bwas\b/i.test(before) || (NOT_A_PRICE.test(before) && !PERCENT.test(before) && !DISCOUNT_BADGE.test(before) && !isSentence(before)))) continue
    const p = parsePrice(at.text)
    if (p !== undefined && p.price > 0) return candidate(discountedAfter(lines, i, p) ?? p, 0, false)
  }
  return undefined
}
/**
 * The first amount a selling-price label names anywhere in the main area: "Price: 43.97 €" on one line,
 * or "Price:" alone with the amount on the next line (a shop's details table, where a banner's h1
 * stands far above), struck-through old prices between them skipped; a label followed by other words
 * ("Price" heading a delivery table's column) names no amount.
 */
function labelledPrice(lines: string[], oldLines: ReadonlySet<number>): PriceCandidate | undefined {
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!
    if (line.length > 40) continue
    const label = SELLING_LABEL.exec(line)
    if (label === null || label[0].trim() === "") continue
    let at: ReturnType<typeof amountAt>
    if (label[0].length < line.length) at = amountAt(lines, i)
    else {
      // the next line that is not a struck old price holds the amount, or the label names none
      let j = i + 1
      while (j < lines.length && j <= i + 3 && oldLines.has(j)) j++
      if (j < lines.length && !oldLines.has(j)) at = amountAt(lines, j)
    }
    const p = at !== undefined ? parsePrice(at.text) : undefined
    if (p !== undefined && p.price > 0) return candidate(p, 0, false)
  }
  return undefined
}
/** A period after an amount, led by "/" or a preposition: "/mese", "/mo", "per month", "par mois", "al mes", "/Monat", "/月" ("Monthly payments available" after a price is another line). */
const PER_PERIOD = /^\s*(?:\/\s*|per\s+|a\s+|al\s+|au\s+|par\s+|pro\s+|im\s+)(?:mo\b|month|mese|mes\b|mês|monat|mois|maand|miesi|månad|måned|kk\b|měs|ay\b|月)/i

/** A price box holds fewer children than this; beyond it no period is looked for (see `perPeriodAfter`). */
const PERIOD_SIBLINGS = 64

/**
 * Whether the text right after a price element gives a period: "€ 79,95 /mese", "$41.58/mo." is an
 * instalment, not the price. The next text is looked for after the element, and after its parent
 * when it is the last thing there (two levels at most).
 */
function perPeriodAfter(el: Element): boolean {
  let e: Element | null = el
  for (let up = 0; up < 3 && e !== null && e.parent !== null; up++, e = e.parent) {
    const sib = e.parent.children
    // (a parent of thousands of price elements is a list, not a price box: finding the place would cost a pass each)
    if (sib.length > PERIOD_SIBLINGS) return false
    for (let k = sib.indexOf(e) + 1, seen = 0; k < sib.length && seen < 6; k++, seen++) {
      const c = sib[k]!
      const t = typeof c === "string" ? c : c.tag === "br" ? "" : rawText(c, 30)
      if (t.trim() === "") continue
      return PER_PERIOD.test(t)
    }
  }
  return false
}

/** The discount a short line (a badge: "-13,5%", "Save 20%") shows, as a positive percentage below 100. */
function discountRate(line: string): number | undefined {
  const m = line.length <= 24 ? PERCENT.exec(line) : null
  const rate = m !== null ? Math.abs(Number.parseFloat(m[0].replace(",", ".").replace(/[^\d.]/g, ""))) : NaN
  return rate > 0 && rate < 100 ? rate : undefined
}

/** A badge that names a discount by its amount: "Extra ₹1000 off", "Save $20". */
const DISCOUNT_BADGE = /\d.*\b(?:off|save)\b|\b(?:off|save)\b.*\d/i

/** The amount line `i` shows ("$24.99", "Price: 12,90 €", or the amount and its currency on adjacent lines). */
function amountAt(lines: string[], i: number): { text: string; labelled: boolean } | undefined {
  // a selling-price label on the line ("Price: $24.99", "Now $19", "Preis: 12,90 €") says which amount sells
  const labelled = SELLING_LABEL.exec(lines[i]!)
  const t = labelled !== null ? lines[i]!.slice(labelled[0].length) : lines[i]!
  if (t.length > 24 || !/\d/.test(t) || NOT_A_PRICE.test(t)) return undefined
  if (PRICE_LINE.test(t) && detectCurrency(t) !== undefined) return { text: t, labelled: labelled !== null }
  if (!AMOUNT_LINE.test(t)) return undefined
  const next = lines[i + 1] ?? "", prev = lines[i - 1] ?? ""
  if (next.length <= 4 && detectCurrency(next) !== undefined) return { text: t + " " + next, labelled: labelled !== null }
  if (prev.length <= 4 && detectCurrency(prev) !== undefined) return { text: prev + " " + t, labelled: labelled !== null }
  return undefined
}

/**
 * "$49.90 ⏎ $35.90 ⏎ 28% off": an old price shown first and marked only by a style sheet. The next amount
 * sells when it is lower and the discount badge beside the two says so (49.90 less 28 % is 35.93).
 */
function discountedAfter(lines: string[], i: number, p: ParsedPrice): ParsedPrice | undefined {
  for (let j = i + 1; j <= i + 3 && j < lines.length; j++) {
    const at = amountAt(lines, j)
    if (at === undefined) continue
    const q = parsePrice(at.text)
    if (q === undefined || !(q.price < p.price)) return undefined
    for (let k = Math.max(0, i - 2); k <= j + 2 && k < lines.length; k++) {
      const rate = discountRate(lines[k]!)
      if (rate !== undefined && Math.abs(q.price - p.price * (1 - rate / 100)) <= 0.02 * p.price) return q
    }
    return undefined
  }
  return undefined
}

/** Where words meet without white space in the markup but apart on the page: blocks, table cells, buttons. */
const SPACED = (tag: string) => BLOCK_TAGS.has(tag) || tag === "td" || tag === "th" || tag === "button"

/** A `del`/`s`/`strike` element, one struck through by its style, or one whose class names an old price (`price-old`, `was-price` …). */
function isOldPrice(el: Element): boolean {
  if (el.tag === "del" || el.tag === "s" || el.tag === "strike") return true
  if (el.attrs?.style?.includes("line-through")) return true
  const c = el.attrs?.class
  return c !== undefined && c.includes("rice") && c.toLowerCase().split(/\s+/).some(isOldPriceWord)
}

/**
 * A discount badge inside a price element ("-32%", "Save 20%", "(2%)"): a percentage and no other
 * number. Its digits would run into the amount ("₹2,433" + "2%" reads as 2.4332).
 */
function isPercentBadge(el: Element): boolean {
  const t = blockText(el, 30)
  return t.includes("%") && !/\d/.test(withoutPercentages(t))
}

/** Cents shown apart from their amount: superscript (`$19<sup>99</sup>`) or marked (Mercado Livre's `andes-money-amount__cents`). */
const isCentsPart = (el: Element) => el.tag === "sup" || /(?:^|[\s_-])(?:cents?|decimals)(?:$|\s)/i.test(el.attrs?.class ?? "")

/**
 * What joins two digits of cents to the amount text before them, or undefined when they are no cents:
 * "." after a bare integer ("19" → "19.99"), nothing after "24€" (24€99 reads as 24.99), and after
 * grouped thousands the other separator ("9.499" → "9.499,99", "1,299" → "1,299.99"). After an amount
 * that has its decimals ("$24.99") two more digits are a footnote.
 */
function joinCents(before: string, cents: string): string | undefined {
  if (!/^\d{2}$/.test(cents)) return undefined
  if (/(?:^|[^\d.,'’\s])\d+€$/.test(before)) return cents
  const grouped = /(?:^|[^\d.,'’])\d{1,3}(?:([.,'’\u00a0\u202f ])\d{3})+$/.exec(before)
  if (grouped !== null) return (grouped[1] === "." ? "," : ".") + cents
  return /(?:^|[^\d.,'’])\d+$/.test(before) ? "." + cents : undefined
}

/**
 * Visible text of an element on one line, with a space where block elements meet (`$200` +
 * `<div>2 bids</div>` → `$200 2 bids`). Reading stops a little after `max` characters (callers
 * reject longer texts), so large containers cost little. Read as a price (`asPrice`), old prices are
 * left out and cents shown apart join their amount (`$19<sup>99</sup>` → `$19.99`, `9.499<sup>99</sup>` → 9499.99).
 */
function blockText(el: Element, max: number, inButton = false, asPrice = false): string {
  let out = ""
  const limit = max * 2 + 50
  const rec = (e: Element) => {
    for (const c of e.children) {
      if (out.length > limit) return
      if (typeof c === "string") out += c
      else if (!NO_TEXT_TAGS.has(c.tag) && !(c.tag === "button" && !inButton) && !isHidden(c) && !(asPrice && (isOldPrice(c) || isPercentBadge(c)))) {
        // (an element of exactly two digits right after the amount's digits is cents too, whatever it is
        // called: `$229<span class="rightEndPrice">99</span>` run together would read as 22999)
        const marked = asPrice && isCentsPart(c)
        const part = marked || (asPrice && /\d$/.test(out)) ? blockText(c, 10) : undefined
        if (part !== undefined && (marked || /^\d{2}$/.test(part))) {
          const cents = joinCents(out, part)
          if (cents !== undefined) { out += cents; continue }
          // anything else there (a footnote mark) is its own number
          out += " "; rec(c); out += " "; continue
        }
        if (SPACED(c.tag)) { out += " "; rec(c); out += " " }
        else rec(c)
      }
    }
  }
  rec(el)
  return normalizeSpace(out)
}

/**
 * The first value after a label that reads as an identifier: one with a digit; after a shop-number
 * label (`lettered`) also a hyphenated one of letters (WooCommerce's "SKU: woo-hoodie", "MCS-M-NVY").
 */
function firstId(re: RegExp, text: string, lettered = false): string | undefined {
  re.lastIndex = 0
  let m: RegExpExecArray | null
  while ((m = re.exec(text)) !== null) {
    const v = m[1]!
    if ((/\d/.test(v) || (lettered && /^[A-Za-z]+(?:[-_][A-Za-z]+)+$/.test(v) && v.length >= 5)) && v.length >= 3) return v
    re.lastIndex = m.index + 1
  }
  return undefined
}

/** Whether `value` is shown in `text` as a whole token. */
export function shows(text: string, value: string): boolean {
  if (value.length < 3) return false
  let i = text.indexOf(value)
  while (i >= 0) {
    const before = text[i - 1] ?? " "
    const after = text[i + value.length] ?? " "
    if (!/[\p{L}\p{N}]/u.test(before) && !/[\p{L}\p{N}]/u.test(after)) return true
    i = text.indexOf(value, i + 1)
  }
  return false
}
