/**
 * Product fields from an HTML page. Precedence per field: JSON-LD > microdata > RDFa >
 * OpenGraph/product meta > page heuristics (price elements, availability texts and buttons,
 * identifier labels).
 */
import type { Product } from "../types.js"
import { Element, normalizeSpace, rawText, walk } from "../html/dom.js"
import { str, strs, typesOf, type JsonObject, type JsonValue } from "../structured.js"
import { nodesOfType, firstText, type Page } from "../page.js"
import { ImageSet } from "../images.js"
import { detectCurrency, normalizeCurrency, parseNumber, parsePrice } from "./price.js"
import { cleanTitle } from "../article/article.js"
import { getDomain } from "tldts"

const PRODUCT_TYPES = new Set(["Product", "ProductGroup", "IndividualProduct", "ProductModel", "SomeProducts", "Book", "Vehicle", "Car", "Offer", "AggregateOffer", "MenuItem", "Event"])

const AVAILABILITY = ["InStock", "OutOfStock", "PreOrder", "PreSale", "BackOrder", "Discontinued", "InStoreOnly", "OnlineOnly", "LimitedAvailability", "SoldOut", "MadeToOrder", "Reserved"]

/** schema.org URL or free text → short schema.org availability value. */
export function normalizeAvailability(v: string | undefined): string | undefined {
  if (v === undefined) return undefined
  const t = v.trim()
  if (t === "") return undefined
  const tail = t.replace(/^https?:\/\/schema\.org\//i, "").replace(/^schema:/i, "").replace(/[\s_-]/g, "").toLowerCase()
  for (const a of AVAILABILITY) if (tail === a.toLowerCase()) return a === "SoldOut" ? "OutOfStock" : a
  return availabilityFromText(t)
}

const OUT_TEXT = /\b(out of stock|sold out|currently unavailable|unavailable|not available|no longer available|discontinued)\b|nicht (mehr )?(verfügbar|lieferbar|auf lager)|ausverkauft|vergriffen|épuisé|rupture de stock|indisponible|agotado|sin stock|no disponible|esaurito|non disponibile|esgotado|indisponível|uitverkocht|niet (op voorraad|leverbaar|beschikbaar)|nie ma w magazynie|niedostępny|brak w magazynie|нет в наличии|немає в наявності|slutsåld|udsolgt|utsolgt|loppuunmyyty|vypredané|vyprodáno|nedostupn|在庫切れ|품절|缺货|ไม่มีสินค้า/i
const PRE_TEXT = /\b(pre-?order|coming soon)\b|vorbestell|précommande|preventa|pre-?venda|prenota/i
const IN_TEXT = /\b(in stock|available|add to (cart|basket|bag|trolley)|buy now|ships (today|in|within))\b|auf lager|lieferbar|sofort verfügbar|in den warenkorb|en stock|disponible|ajouter au panier|en existencia|añadir al carrito|disponibile|aggiungi al carrello|em estoque|disponível|adicionar ao carrinho|op voorraad|in winkelwagen|w magazynie|dostępny|do koszyka|в наличии|купить|i lager|på lager|varastossa|skladem|na sklade|在庫あり|카트|장바구니|有货|加入购物车/i

export function availabilityFromText(t: string): string | undefined {
  if (OUT_TEXT.test(t)) return "OutOfStock"
  if (PRE_TEXT.test(t)) return "PreOrder"
  if (/backorder/i.test(t)) return "BackOrder"
  if (IN_TEXT.test(t)) return "InStock"
  return undefined
}

export interface ProductResult {
  data: Product
  sources: Record<string, string>
  extra: string[]
}

interface Offerish {
  price?: number
  currency?: string
  availability?: string
  sku?: string
}

function numberOf(v: JsonValue | undefined, currency?: string): number | undefined {
  if (v === undefined || v === null) return undefined
  if (typeof v === "number") return Number.isFinite(v) ? v : undefined
  if (Array.isArray(v)) return numberOf(v[0], currency)
  if (typeof v === "string") {
    if (/^\s*-?\d+(\.\d+)?\s*$/.test(v)) return Number(v)
    return parseNumber(v, "auto", currency)
  }
  return undefined
}

function readOffer(o: JsonValue | undefined, depth = 0): Offerish | undefined {
  if (o === undefined || o === null || depth > 4) return undefined
  if (Array.isArray(o)) {
    const list = o.map((x) => readOffer(x, depth + 1)).filter((x): x is Offerish => x !== undefined)
    const pick = list.find((x) => x.price !== undefined && x.availability !== "OutOfStock") ?? list.find((x) => x.price !== undefined) ?? list[0]
    if (pick !== undefined && pick.availability === "OutOfStock" && list.some((x) => x.availability !== undefined && x.availability !== "OutOfStock")) {
      return { ...pick, availability: list.find((x) => x.availability !== undefined && x.availability !== "OutOfStock")!.availability! }
    }
    return pick
  }
  if (typeof o !== "object") return undefined
  const n = o as JsonObject
  const spec = Array.isArray(n.priceSpecification) ? (n.priceSpecification[0] as JsonObject | undefined) : (n.priceSpecification as JsonObject | undefined)
  const currency = normalizeCurrency(str(n.priceCurrency) ?? (spec && typeof spec === "object" ? str(spec.priceCurrency) : undefined))
  let price = numberOf(n.price, currency) ?? numberOf(n.lowPrice, currency) ?? (spec && typeof spec === "object" ? numberOf(spec.price, currency) : undefined)
  const nested = n.offers !== undefined ? readOffer(n.offers, depth + 1) : undefined
  if (price === undefined && nested !== undefined) price = nested.price
  const out: Offerish = {}
  if (price !== undefined && price > 0) out.price = price
  const cur = currency ?? nested?.currency
  if (cur !== undefined) out.currency = cur
  const av = normalizeAvailability(str(n.availability)) ?? nested?.availability
  if (av !== undefined) out.availability = av
  const sku = str(n.sku) ?? nested?.sku
  if (sku !== undefined) out.sku = sku
  return out
}

const NEG_PRICE = /old|was|strike|regular|list|compare|save|saving|discount|before|original|rrp|uvp|crossed|msrp|instead|prev|reference|unit|per|shipping|delivery|installment|monthly|credit|tax|vat|min|max|range|filter|slider/i

export function productFromPage(page: Page): ProductResult {
  const sources: Record<string, string> = {}
  const extra: string[] = []
  const data: Product = { name: "" }
  const meta = page.meta
  const all = nodesOfType(page, PRODUCT_TYPES)
  const products = all.filter(({ node }) => typesOf(node).some((t) => t !== "Offer" && t !== "AggregateOffer"))
  const offersOnly = all.filter(({ node }) => typesOf(node).some((t) => t === "Offer" || t === "AggregateOffer"))
  // the main product: the first one with an offer, else the first
  products.sort((a, b) => score(b.node) - score(a.node))
  const set = <K extends keyof Product>(k: K, v: Product[K] | undefined, source: string) => {
    if (v === undefined || (typeof v === "string" && v.trim() === "") || data[k] !== undefined && k !== "name") return
    if (k === "name" && data.name !== "") return
    data[k] = v
    sources[k] = source
  }

  for (const { node, source } of products) {
    set("name", str(node.name) !== undefined ? normalizeSpace(str(node.name)!) : undefined, source)
    const d = str(node.description)
    set("description", d !== undefined ? normalizeSpace(d) : undefined, source)
    const offer = readOffer(node.offers) ?? {}
    set("price", offer.price, source)
    set("currency", offer.currency, source)
    set("availability", offer.availability, source)
    const sku = str(node.sku) ?? offer.sku ?? str(node.productID) ?? str(node.mpn)
    set("sku", cleanSku(sku), source)
    const brand = str(node.brand) ?? str(node.manufacturer)
    set("brand", brand !== undefined ? normalizeSpace(brand) : undefined, source)
    if (data.name !== "" && data.price !== undefined) break
  }
  for (const { node, source } of offersOnly) {
    const offer = readOffer(node) ?? {}
    set("price", offer.price, source)
    set("currency", offer.currency, source)
    set("availability", offer.availability, source)
    set("sku", offer.sku, source)
  }

  // OpenGraph / product meta
  const m = (k: string) => meta.get(k)
  const metaCurrency = normalizeCurrency(m("product:price:currency") ?? m("og:price:currency") ?? m("product:sale_price:currency"))
  const metaPrice = m("product:price:amount") ?? m("og:price:amount") ?? m("product:sale_price:amount") ?? m("price")
  if (metaPrice !== undefined) set("price", numberOf(metaPrice, metaCurrency), "opengraph")
  set("currency", metaCurrency, "opengraph")
  set("availability", normalizeAvailability(m("product:availability") ?? m("og:availability")), "opengraph")
  set("brand", m("product:brand") ?? m("og:brand"), "opengraph")
  set("sku", m("product:retailer_item_id") ?? m("product:sku"), "opengraph")
  set("name", m("og:title") !== undefined ? normalizeSpace(m("og:title")!) : undefined, "opengraph")
  set("description", m("og:description") ?? m("description"), m("og:description") !== undefined ? "opengraph" : "meta")

  // heuristics on the page
  if (data.price === undefined || data.availability === undefined || data.sku === undefined || data.brand === undefined) {
    const h = heuristics(page.scope)
    if (data.price === undefined && h.price !== undefined) {
      set("price", h.price.price, "product-heuristics")
      if (data.currency === undefined) set("currency", h.price.currency, "product-heuristics")
    }
    set("availability", h.availability, "product-heuristics")
    set("sku", cleanSku(h.sku), "product-heuristics")
    set("brand", h.brand, "product-heuristics")
    if (data.sku === undefined) set("sku", idFromUrl(page), "product-heuristics")
    set("sku", h.labelSku, "product-heuristics")
  }
  if (data.price !== undefined && data.currency === undefined) {
    const c = currencyFromDomain(page.url)
    if (c !== undefined) set("currency", c, "product-heuristics")
  }

  const h1 = firstText(page.scope, "h1")
  if (data.name === "") {
    if (h1 !== undefined) set("name", h1, "product-heuristics")
    else if (meta.title) set("name", cleanTitle(meta.title, undefined), "meta")
    else { data.name = "Untitled product"; sources.name = "fallback" }
  }

  const images = new ImageSet(page.base)
  let imageSource: string | undefined
  for (const { node, source } of products) if (images.addJsonLd(node.image) > 0) imageSource ??= source
  for (const u of meta.all("og:image").concat(meta.all("og:image:secure_url"))) if (images.add(u, undefined, m("og:image:width"), m("og:image:height"))) imageSource ??= "opengraph"
  if (images.images.length > 0) {
    data.images = images.images.slice(0, 20)
    sources.images = imageSource ?? "images"
    extra.push("images")
  }
  const attrs: Record<string, string | number | boolean | null> = {}
  for (const { node } of products.slice(0, 1)) {
    for (const k of ["color", "size", "material", "gtin", "gtin8", "gtin12", "gtin13", "gtin14", "mpn", "model", "category", "weight", "itemCondition"] as const) {
      const v = str(node[k])
      if (v !== undefined) attrs[k] = k === "itemCondition" ? v.replace(/^https?:\/\/schema\.org\//i, "") : v
    }
    const props = node.additionalProperty
    for (const p of Array.isArray(props) ? props : props !== undefined ? [props] : []) {
      if (p !== null && typeof p === "object" && !Array.isArray(p)) {
        const name = str(p.name), value = str(p.value)
        if (name !== undefined) attrs[name] = value ?? null
      }
    }
    const rating = node.aggregateRating
    if (rating !== null && typeof rating === "object" && !Array.isArray(rating)) {
      const rv = numberOf(rating.ratingValue), rc = numberOf(rating.reviewCount ?? rating.ratingCount)
      if (rv !== undefined) attrs.ratingValue = rv
      if (rc !== undefined) attrs.reviewCount = rc
    }
  }
  if (Object.keys(attrs).length > 0) { data.attributes = attrs; sources.attributes = products[0]?.source ?? "json-ld" }
  return { data, sources, extra }
}

/** An identifier is one token: `SKU: AB-12 Blue shirt` → `AB-12`. */
function cleanSku(v: string | undefined): string | undefined {
  if (v === undefined) return undefined
  const t = normalizeSpace(v.replace(/^(sku|isbn|ean|gtin\d*)\s*:/i, ""))
  const first = t.split(" ")[0]!
  return first !== t && /\d/.test(first) && /\p{L}{3,}/u.test(t.slice(first.length)) ? first : t || undefined
}

function score(n: JsonObject): number {
  let s = 0
  if (n.offers !== undefined) s += 2
  if (n.name !== undefined) s += 1
  if (n.sku !== undefined) s += 1
  return s
}

/**
 * A product identifier taken from the URL: a path or query token with digits (`/itm/123808916008`,
 * `/dp/B01GOH7PKA`, `?pid=260591`) that the page itself repeats. The token the page repeats most wins.
 */
function idFromUrl(page: Page): string | undefined {
  if (page.url === null) return undefined
  let u: URL
  try { u = new URL(page.url) } catch { return undefined }
  const tokens = new Set<string>()
  for (const part of (u.pathname + "/" + [...u.searchParams.values()].join("/")).split(/[/_.=&?,;+-]+/)) {
    if (/^[A-Za-z0-9]{5,24}$/.test(part) && /\d/.test(part) && !/^(19|20)\d\d$/.test(part) && !/^\d{1,4}$/.test(part)) tokens.add(part)
  }
  if (tokens.size === 0) return undefined
  const counts = new Map<string, number>()
  walk(page.doc.root, (el) => {
    for (const c of el.children) {
      if (typeof c !== "string") continue
      for (const t of tokens) if (c.includes(t)) counts.set(t, (counts.get(t) ?? 0) + 1)
    }
    const a = el.attrs
    if (a !== null) for (const k in a) {
      if (k === "href" || k === "src") continue
      for (const t of tokens) if (a[k]!.includes(t)) counts.set(t, (counts.get(t) ?? 0) + 1)
    }
  })
  let best: string | undefined
  let bestN = 0
  for (const [t, n] of counts) if (n > bestN || (n === bestN && best !== undefined && t.length > best.length)) { best = t; bestN = n }
  return best
}

const CCTLD_CURRENCY: Record<string, string> = {
  de: "EUR", fr: "EUR", it: "EUR", es: "EUR", ie: "EUR", at: "EUR", nl: "EUR", be: "EUR", fi: "EUR", sk: "EUR", si: "EUR",
  ee: "EUR", lv: "EUR", lt: "EUR", pt: "EUR", gr: "EUR", lu: "EUR", uk: "GBP", ca: "CAD", au: "AUD", nz: "NZD", ch: "CHF",
  pl: "PLN", cz: "CZK", hu: "HUF", ro: "RON", se: "SEK", dk: "DKK", no: "NOK", ru: "RUB", ua: "UAH", tr: "TRY", in: "INR",
  jp: "JPY", cn: "CNY", kr: "KRW", tw: "TWD", hk: "HKD", sg: "SGD", br: "BRL", mx: "MXN", ar: "ARS", cl: "CLP", co: "COP",
  za: "ZAR", kz: "KZT", by: "BYN", pk: "PKR", il: "ILS", th: "THB", my: "MYR", ph: "PHP", vn: "VND", id: "IDR", sa: "SAR", ae: "AED",
}

function currencyFromDomain(url: string | null): string | undefined {
  if (url === null) return undefined
  const d = getDomain(url)
  if (d === null) return undefined
  const tld = d.split(".").pop()!
  return CCTLD_CURRENCY[tld]
}

interface Heuristics {
  price?: { price: number; currency?: string }
  availability?: string
  sku?: string
  /** An identifier found next to a label ("SKU:", "Art.-Nr.") — weaker than markup or the URL. */
  labelSku?: string
  brand?: string
}

const SKU_LABEL = /^\s*(sku|item\s*(no\.?|number|#|code)|article\s*(no\.?|number)|art\.?\s*-?\s*nr\.?|artikelnummer|artikel-?nr\.?|bestellnummer|product\s*(code|id|no\.?)|model\s*(no\.?|number)?|part\s*(no\.?|number)|mpn|ref(erence)?\.?|réf(érence)?\.?|código|codice( articolo)?|numer katalogowy|kod produktu|asin|isbn(-1[03])?|ean|item specifics|cod\.?|код товара|артикул)\s*[:#.]?\s*$/i
const SKU_INLINE = /\b(sku|item\s*(?:no\.?|number|#)|art\.?\s*-?nr\.?|artikelnummer|product\s*code|model\s*(?:no\.?|number)|part\s*number|réf(?:érence)?|ref\.|asin|código|codice|артикул|код товара)\s*[:#]?\s*([A-Z0-9][A-Z0-9._/-]{2,30})/i

function heuristics(root: Element): Heuristics {
  const out: Heuristics = {}
  let best: { score: number; price: number; currency?: string } | undefined
  let order = 0
  let cartButton = false
  let outText: string | undefined
  let labelNext: "sku" | "brand" | null = null
  walk(root, (el) => {
    order++
    const a = el.attrs
    const tag = el.tag
    if (tag === "del" || tag === "s" || tag === "strike" || tag === "nav" || tag === "footer" || tag === "header" || tag === "noscript" || tag === "script") return false
    const cls = a === null ? "" : ((a.class ?? "") + " " + (a.id ?? "") + " " + (a.itemprop ?? "") + " " + (a["data-testid"] ?? "")).toLowerCase()
    if (a !== null) {
      // identifiers in attributes
      if (out.sku === undefined) {
        const ip = a.itemprop
        if (ip !== undefined && /^(sku|productid|mpn)$/i.test(ip)) {
          const v = (a.content ?? normalizeSpace(rawText(el))).trim()
          if (v !== "" && v.length < 60) out.sku = v
        }
      }
      if (out.brand === undefined && a.itemprop === "brand") {
        const v = a.content ?? normalizeSpace(rawText(el))
        if (v !== "" && v.length < 60) out.brand = v
      }
      if (out.availability === undefined && (a.itemprop === "availability")) {
        const v = normalizeAvailability(a.href ?? a.content ?? normalizeSpace(rawText(el)))
        if (v !== undefined) out.availability = v
      }
    }
    if (/price/.test(cls) && !NEG_PRICE.test(cls.replace(/price/g, " "))) {
      const t = a?.content ?? normalizeSpace(rawText(el))
      if (t.length > 0 && t.length < 40 && /\d/.test(t)) {
        const p = parsePrice(t)
        if (p !== undefined && p.price > 0) {
          let s = 10 - Math.min(order / 400, 6)
          if (p.currency !== undefined || detectCurrency(t) !== undefined) s += 3
          if (/(^|[\s_-])(price|current|sale|final|actual|now|selling|our)/.test(cls)) s += 1
          if (a?.itemprop === "price") s += 4
          if (best === undefined || s > best.score) best = { score: s, ...p }
        }
      }
    }
    if (tag === "button" || (tag === "input" && /submit|button/i.test(a?.type ?? "")) || (tag === "a" && /cart|basket|buy/i.test(cls))) {
      const t = (a?.value ?? "") + " " + normalizeSpace(rawText(el))
      if (IN_TEXT.test(t) && !(a?.disabled !== undefined)) cartButton = true
    }
    if (outText === undefined && /avail|stock|inventory|lager|dispon|verfug/.test(cls)) {
      const t = normalizeSpace(rawText(el))
      if (t.length < 60) {
        const v = availabilityFromText(t)
        if (v !== undefined) outText = v
      }
    }
    // "SKU: 12345" as label / value pairs
    if (out.sku === undefined || out.brand === undefined) {
      const own = el.children.filter((c): c is string => typeof c === "string").join(" ").trim()
      if (labelNext !== null && own !== "") {
        const v = own.replace(/^[:#\s]+/, "").trim()
        if (labelNext === "sku" && out.labelSku === undefined && /^[A-Za-z0-9][A-Za-z0-9._/-]{1,40}$/.test(v) && /\d/.test(v)) out.labelSku = v
        if (labelNext === "brand" && out.brand === undefined && v.length < 50) out.brand = v
        labelNext = null
      }
      if (own !== "" && own.length < 40) {
        if (SKU_LABEL.test(own)) labelNext = "sku"
        else if (/^\s*(brand|marke|marque|marca|merk|marka|бренд|производитель)\s*:?\s*$/i.test(own)) labelNext = "brand"
        else if (out.sku === undefined) {
          const mm = SKU_INLINE.exec(own)
          if (mm !== null && /\d/.test(mm[2]!)) out.labelSku ??= mm[2]
        }
      }
    }
    return
  })
  if (best !== undefined) out.price = best.currency !== undefined ? { price: best.price, currency: best.currency } : { price: best.price }
  out.availability ??= cartButton ? "InStock" : outText
  return out
}

/** Strings of a JSON-LD value, re-exported for config selectors. */
export { strs }
