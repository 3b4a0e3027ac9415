/**
 * Product fields from an HTML page. Precedence per field: JSON-LD > microdata > RDFa >
 * OpenGraph/product meta > page heuristics (price elements, availability texts and buttons,
 * identifier labels).
 */
import type { Product } from "../types.ts"
import { normalizeSpace, rawText, walk, type Element } from "../html/dom.ts"
import { decodeEntities } from "../html/entities.ts"
import { objectOf, str, strs, typesOf, type JsonObject, type JsonValue } from "../structured.ts"
import { nodesOfType, type Page } from "../page.ts"
import { ImageSet } from "../images.ts"
import { detectCurrency, normalizeCurrency, parseNumber, parsePrice, sharesSign, type ParsedPrice } from "./price.ts"
import { cleanTitle, headlineH1 } from "../article/article.ts"
import { selectedVariation } from "./variation.ts"
import { availabilityFromText, NEAR_AFTER, NEAR_BEFORE, readSignals, type Signals } from "./signals.ts"
import { getDomain, getDomainWithoutSuffix, getPublicSuffix } from "tldts"

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

export { availabilityFromText }

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
  url?: string
  /** The offer says its price is before tax (`valueAddedTaxIncluded: false`). */
  beforeTax?: boolean
  /** The price is an aggregate's `lowPrice`; its `highPrice` ends the range. */
  upTo?: number
  /** A used, refurbished or damaged item's offer (`itemCondition`): not the product's own price beside a new one. */
  secondHand?: boolean
}

/**
 * Whether an offer's address is the page's own, query included: a shop page reached through one
 * variant's link (`/products/print?variant=2`) sells that variant, whatever offer comes first.
 */
function isSelectedOffer(offerUrl: string | undefined, pageUrl: string | null): boolean {
  if (offerUrl === undefined || pageUrl === null) return false
  try {
    const page = new URL(pageUrl), offer = new URL(offerUrl, page)
    if (page.search === "" || offer.hostname !== page.hostname || offer.pathname !== page.pathname) return false
    const wanted = [...page.searchParams].filter(([k]) => !/^utm_|^(gclid|fbclid|ref)$/i.test(k))
    return wanted.length > 0 && wanted.every(([k, v]) => offer.searchParams.get(k) === v)
  } catch {
    return false
  }
}

/**
 * The page's address as the variant its buy form holds would have it: a Shopify product form
 * (`action` ending in `/cart/add`) names the selected variant in its field `id`, so
 * `/products/socks` with `<input name="id" value="42">` reads as `/products/socks?variant=42`.
 * An address that already has a query keeps it.
 */
function selectedVariantUrl(page: Page): string | null {
  let address: URL
  try {
    address = new URL(page.url ?? "")
  } catch {
    return page.url
  }
  if (address.search !== "") return page.url
  let id: string | undefined
  walk(page.scope, (el) => {
    if (id !== undefined) return false
    if (el.tag !== "form" || !/\/cart\/add(?:\.js)?\/?$/.test(el.attrs?.action ?? "")) return
    walk(el, (f) => {
      if (id !== undefined) return false
      // (a radio button counts only when checked)
      if (f.tag === "input" && f.attrs?.name === "id" && /^\d+$/.test(f.attrs.value ?? "") && (f.attrs.type !== "radio" || f.attrs.checked !== undefined)) id = f.attrs.value
      // a variant picker: its selected option, else its first enabled one, as the browser would send
      if (f.tag === "select" && f.attrs?.name === "id") {
        const options: Element[] = []
        walk(f, (o) => { if (o.tag === "option") options.push(o) })
        const enabled = options.filter((o) => o.attrs?.disabled === undefined)
        const value = (options.find((o) => o.attrs?.selected !== undefined) ?? enabled[0])?.attrs?.value ?? ""
        if (/^\d+$/.test(value)) id = value
        return false
      }
    })
    return false
  })
  if (id === undefined) return page.url
  address.searchParams.set("variant", id)
  return address.href
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

/**
 * The selling price among an offer's price specifications: shops list the strikethrough price beside
 * the sale price (`priceType: ListPrice`, `StrikethroughPrice`, `SRP`, `MSRP`), and instalment or
 * minimum prices are not the price either.
 */
function sellingSpec(v: JsonValue | undefined): JsonObject | undefined {
  const list = (Array.isArray(v) ? v : [v]).filter((x): x is JsonObject => x !== null && typeof x === "object" && !Array.isArray(x))
  const other = (x: JsonObject) => /listprice|strikethrough|srp|msrp|invoice|minimum|maximum|instal/i.test(`${str(x.priceType) ?? ""} ${str(x.priceComponentType) ?? ""}`)
  return list.find((x) => !other(x) && x.price !== undefined) ?? list[0]
}

/** `itemCondition` values of second-hand goods (schema.org UsedCondition, RefurbishedCondition, DamagedCondition). */
const SECOND_HAND = /used|refurbished|damaged/i

function readOffer(o: JsonValue | undefined, pageUrl: string | null = null, depth = 0): Offerish | undefined {
  if (o === undefined || o === null || depth > 4) return undefined
  if (Array.isArray(o)) return pickOffer(readOffers(o, pageUrl, depth), pageUrl)
  if (typeof o !== "object") return undefined
  const n = o as JsonObject
  const spec = sellingSpec(n.priceSpecification)
  const priceText = typeof n.price === "string" ? n.price : undefined
  // a price written with its currency (`"price": "$19.99"`) names the currency when priceCurrency is missing
  const currency = normalizeCurrency(str(n.priceCurrency) ?? (spec && typeof spec === "object" ? str(spec.priceCurrency) : undefined))
    ?? (priceText !== undefined && /\D/.test(priceText.replace(/[\s.,]/g, "")) ? detectCurrency(priceText) : undefined)
  // (an array of offers is read once: its pick is the nested offer, its members price an aggregate)
  const listed = Array.isArray(n.offers) ? readOffers(n.offers, pageUrl, depth + 1) : []
  const nested = Array.isArray(n.offers) ? pickOffer(listed, pageUrl) : n.offers !== undefined ? readOffer(n.offers, pageUrl, depth + 1) : undefined
  // an aggregate's lowest price may be a second-hand one (an open-box return): then the lowest of its
  // new offers (in stock when one is) is the price
  const newOffers = listed.filter((x): x is Offerish & { price: number } => x.price !== undefined && x.secondHand !== true)
  const inStock = newOffers.filter((x) => x.availability !== "OutOfStock")
  const newPrice = listed.some((x) => x.secondHand === true) && newOffers.length > 0
    ? Math.min(...(inStock.length > 0 ? inStock : newOffers).map((x) => x.price))
    : undefined
  let price = numberOf(n.price, currency) ?? newPrice ?? numberOf(n.lowPrice, currency) ?? (spec && typeof spec === "object" ? numberOf(spec.price, currency) : undefined)
  const fromLow = numberOf(n.price, currency) === undefined && newPrice === undefined && price !== undefined && price === numberOf(n.lowPrice, currency)
  if (price === undefined && nested !== undefined) price = nested.price
  const out: Offerish = {}
  if (price !== undefined && price > 0) out.price = price
  const high = fromLow ? numberOf(n.highPrice, currency) : undefined
  if (high !== undefined && out.price !== undefined && high > out.price) out.upTo = high
  const cur = currency ?? nested?.currency
  if (cur !== undefined) out.currency = cur
  const av = normalizeAvailability(str(n.availability)) ?? nested?.availability
  if (av !== undefined) out.availability = av
  const sku = str(n.sku) ?? nested?.sku
  if (sku !== undefined) out.sku = sku
  const url = str(n.url)
  if (url !== undefined) out.url = url
  if (SECOND_HAND.test(str(n.itemCondition) ?? "")) out.secondHand = true
  const vat = n.valueAddedTaxIncluded ?? (spec && typeof spec === "object" ? spec.valueAddedTaxIncluded : undefined)
  if ((vat === false || vat === "false" || nested?.beforeTax === true) && out.price !== undefined) out.beforeTax = true
  return out
}

/** The offers of an array, each read (those that are no offer left out). */
function readOffers(list: readonly JsonValue[], pageUrl: string | null, depth: number): Offerish[] {
  return list.map((x) => readOffer(x, pageUrl, depth + 1)).filter((x): x is Offerish => x !== undefined)
}

/** The offer that sells among several: the one the page's address selects, else the first new one in stock. */
function pickOffer(list: readonly Offerish[], pageUrl: string | null): Offerish | undefined {
  const selected = list.filter((x) => x.price !== undefined && isSelectedOffer(x.url, pageUrl))
  if (selected.length === 1) return selected[0]
  const pick = list.find((x) => x.price !== undefined && x.availability !== "OutOfStock" && x.secondHand !== true) ?? list.find((x) => x.price !== undefined && x.secondHand !== true)
    ?? list.find((x) => x.price !== undefined && x.availability !== "OutOfStock") ?? list.find((x) => x.price !== undefined) ?? list[0]
  // (a second-hand offer in stock lends a new one nothing)
  const lends = (x: Offerish) => x.availability !== undefined && x.availability !== "OutOfStock" && (x.secondHand !== true || pick?.secondHand === true)
  if (pick !== undefined && pick.availability === "OutOfStock" && list.some(lends)) {
    return { ...pick, availability: list.find(lends)!.availability! }
  }
  return pick
}

export function productFromPage(page: Page): ProductResult {
  const sources: Record<string, string> = {}
  const extra: string[] = []
  const data: Product = { name: "" }
  const meta = page.meta
  const all = nodesOfType(page, PRODUCT_TYPES)
  const isOffer = (t: string) => /^(aggregate)?offer$/i.test(t)
  const products = all.filter(({ node }) => typesOf(node).some((t) => !isOffer(t)))
  const offersOnly = all.filter(({ node }) => typesOf(node).some(isOffer))
  // the main product: the one the page is titled by, then the first one with an offer, else the first
  // (shops also describe related and bundled products in structured data)
  const h1 = productHeading(page)
  const headline = nameKey(h1 ?? meta.get("og:title") ?? "")
  const isMain = (n: JsonObject) => sameName(nameKey(textValue(str(n.name)) ?? ""), headline)
  // a product group the page is titled by is the product; its variants (named "… - 42") come after it
  // and lend it the offer it lacks
  const rankOf = (n: JsonObject) => score(n) + (isMain(n) ? (isGroup(n) ? 8 : 4) : 0)
  // of equal ones, the variant the page's buy form has selected comes first
  const selection = selectedVariantUrl(page)
  const selected = (n: JsonObject) => isSelectedOffer(str(objectOf(n.offers)?.url), selection) ? 1 : 0
  products.sort((a, b) => rankOf(b.node) - rankOf(a.node) || selected(b.node) - selected(a.node))
  const skuCandidates: SkuCandidate[] = []
  const addSku = (v: string | undefined, source: string, mpn = false) => { if (v !== undefined && v.trim() !== "") skuCandidates.push({ value: v.trim(), source, ...(mpn ? { mpn } : {}) }) }
  /** The structured sku so far is a manufacturer's part number (the node names no sku or product id). */
  let skuIsMpn = false
  const set = <K extends keyof Product>(k: K, v: Product[K] | undefined, source: string) => {
    if (v === undefined || (typeof v === "string" && v.trim() === "") || data[k] !== undefined && k !== "name") return
    if (k === "name" && data.name !== "") return
    data[k] = v
    sources[k] = source
  }

  // what the page shows (a product group's id counts only when the page shows it)
  const sig = readSignals(page.scope)
  let priceBeforeTax = false
  let priceUpTo: number | undefined
  for (const { node, source } of products) {
    set("name", textValue(str(node.name)), source)
    const d = str(node.description)
    set("description", d !== undefined ? normalizeSpace(d) : undefined, source)
    const offer = readOffer(node.offers, selection) ?? {}
    if (data.price === undefined && offer.beforeTax === true) priceBeforeTax = true
    if (data.price === undefined && offer.upTo !== undefined) priceUpTo = offer.upTo
    set("price", offer.price, source)
    set("currency", offer.currency, source)
    set("availability", offer.availability, source)
    // a product group whose variant the address does not choose is sold as the group: its id, when the
    // page shows it, is the product's ("Numer artykułu NV122U0AB-N11"), not the first size's (a platform's
    // internal group number, which the page does not show, is no SKU)
    const groupId = isGroup(node) && page.url !== null && !asList(node.hasVariant).some((v) => isSelectedOffer(str(objectOf(objectOf(v)?.offers)?.url), selection))
      ? str(node.productGroupID) : undefined
    const id = str(node.sku) ?? offer.sku ?? str(node.productID) ?? (groupId !== undefined && sig.shows(groupId) ? groupId : undefined)
    if (data.sku === undefined && id === undefined && cleanSku(str(node.mpn)) !== undefined) skuIsMpn = true
    set("sku", cleanSku(id ?? str(node.mpn)), source)
    // an address is no brand (an unresolved \`{"@id": "…#brand"}\`)
    const named = (v: string | undefined) => (v !== undefined && /^(https?:\/\/|#)/i.test(v) ? undefined : v)
    const brand = named(str(node.brand)) ?? named(str(node.manufacturer))
    set("brand", textValue(brand), source)
    if (data.name !== "" && data.price !== undefined) break
  }
  // every identifier of the main product (also as another source describes it) is a SKU candidate
  for (const { node, source } of products) {
    if (node !== products[0]!.node && nameKey(textValue(str(node.name)) ?? "") !== nameKey(data.name)) continue
    for (const v of [str(node.sku), readOffer(node.offers, selection)?.sku, str(node.productID)]) addSku(cleanSku(v), source)
    addSku(cleanSku(str(node.mpn)), source, true)
  }
  for (const { node, source } of offersOnly) {
    const offer = readOffer(node, selection) ?? {}
    set("price", offer.price, source)
    set("currency", offer.currency, source)
    set("availability", offer.availability, source)
    set("sku", offer.sku, source)
    addSku(offer.sku, source)
  }

  // OpenGraph / product meta
  const m = (k: string) => meta.get(k)
  const metaCurrency = normalizeCurrency(m("product:price:currency") ?? m("og:price:currency") ?? m("product:sale_price:currency"))
  const metaPrice = m("product:price:amount") ?? m("og:price:amount") ?? m("product:sale_price:amount") ?? m("price")
  if (metaPrice !== undefined) set("price", numberOf(metaPrice, metaCurrency), "opengraph")
  set("currency", metaCurrency, "opengraph")
  const card = twitterCardPrice(m)
  if (card !== undefined) {
    set("price", card.price, "opengraph")
    set("currency", currencyOf(card, { url: page.url, lang: meta.htmlLang }), "opengraph")
  }
  set("availability", normalizeAvailability(m("product:availability") ?? m("og:availability")), "opengraph")
  set("brand", m("product:brand") ?? m("og:brand"), "opengraph")
  set("sku", m("product:retailer_item_id") ?? m("product:sku"), "opengraph")
  addSku(m("product:retailer_item_id"), "opengraph")
  addSku(m("product:sku"), "opengraph")
  set("name", m("og:title") !== undefined ? withoutSiteName(normalizeSpace(m("og:title")!), h1, m("og:site_name"), page.url) : undefined, "opengraph")
  set("description", m("og:description") ?? m("description"), m("og:description") !== undefined ? "opengraph" : "meta")

  decidePrice(data, sources, sig, set, products.some(({ node }) => node.offers !== undefined) || offersOnly.length > 0, { url: page.url, lang: meta.htmlLang }, priceBeforeTax, priceUpTo)
  decideAvailability(data, sources, sig, products, set)
  decideSku(data, sources, sig, page, skuCandidates, skuIsMpn)
  // the variation a WooCommerce buy form has chosen is what the page sells: its structured data
  // describes the parent (a price range, the parent's SKU)
  const variation = selectedVariation(page.scope, page.url)
  if (variation?.price !== undefined) { data.price = variation.price; sources.price = "product-heuristics" }
  if (variation?.sku !== undefined) { data.sku = variation.sku; sources.sku = "product-heuristics" }
  if (variation?.inStock !== undefined) { data.availability = variation.inStock ? "InStock" : "OutOfStock"; sources.availability = "product-heuristics" }
  set("brand", sig.itempropBrand, "product-heuristics")
  if (data.brand === undefined) set("brand", sig.brand(), "product-heuristics")
  if (data.price !== undefined && data.currency === undefined) {
    const c = currencyFromDomain(page.url)
    if (c !== undefined) set("currency", c, "product-heuristics")
  }

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
    for (const p of asList(props)) {
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

/**
 * A title that is the page's headline plus the shop's name ("Canvas Tote Bag - Example Shop", "… | eBay")
 * names the product by the headline. The other parts must name the site (its og:site_name, or words
 * holding its domain's name): other dashes may be the product's own ("Sony WH-1000XM4 - Black").
 */
function withoutSiteName(title: string, h1: string | undefined, siteName: string | undefined, url: string | null): string {
  if (h1 === undefined) return title
  const head = normalizeSpace(h1)
  // the h1 as a whole run of the title's parts (it may hold a separator itself: "Lamp – Hand-Glazed Stoneware")
  const at = title.toLowerCase().indexOf(head.toLowerCase())
  if (head === "" || at < 0 || head.length === title.length) return title
  const SEP = /\s+[|\-–—:·»/]\s+/
  const before = title.slice(0, at), after = title.slice(at + head.length)
  if ((before !== "" && !/\s+[|\-–—:·»/]\s+$/.test(before)) || (after !== "" && !/^\s+[|\-–—:·»/]\s+/.test(after))) return title
  const others = [...before.split(SEP), ...after.split(SEP)].filter((p) => p.trim() !== "")
  const label = url !== null ? letters(getDomainWithoutSuffix(url) ?? "") : ""
  const site = siteName !== undefined ? letters(siteName) : ""
  // the site's name, not a name holding it ("Sony WH-1000XM4 Headphones" on sony.com names a product)
  const names = (p: string) => { const l = letters(p); return l !== "" && (l === site || (label.length >= 3 && l.includes(label) && l.length <= label.length + 8)) }
  return others.length > 0 && !names(head) && others.every(names) ? head : title
}

/**
 * The heading that names the product: the first h1, unless it is the site's logo ("<h1 class="logo">
 * Coupang</h1>", the name `<title>` ends with); then the first h2 or h3 that starts the page's title.
 */
function productHeading(page: Page): string | undefined {
  const { headline, banner } = headlineH1(page.scope, page.meta.title, page.meta.get("og:site_name"), page.url)
  if (banner === undefined || headline !== undefined) return headline
  const title = letters(page.meta.title ?? "")
  let found: string | undefined
  walk(page.scope, (el) => {
    if (found !== undefined) return false
    if (el.tag !== "h2" && el.tag !== "h3") return
    const t = normalizeSpace(rawText(el, 300))
    if (letters(t).length >= 4 && title.startsWith(letters(t))) found = t
    return false
  })
  return found ?? banner
}
const letters = (t: string) => t.toLowerCase().replace(/[^\p{L}\p{N}]/gu, "")

/** The price a Twitter card states as one of its label/data pairs (`twitter:label1` "Price", `twitter:data1` "€70.50"). */
const PRICE_LABEL = /^\s*(?:price|preis|prix|precio|prezzo|preço|prijs|pris|hinta|hind|kaina|cijena|cena|preț|fiyat|ár|τιμή|цена|ціна|価格|价格|價格|가격)\s*:?\s*$/i
function twitterCardPrice(m: (k: string) => string | undefined): { price: number; currency?: string } | undefined {
  for (let i = 1; i <= 4; i++) {
    const label = m(`twitter:label${i}`), value = m(`twitter:data${i}`)
    if (label === undefined || value === undefined || !PRICE_LABEL.test(label)) continue
    const p = parsePrice(value)
    return p !== undefined && p.price > 0 ? p : undefined
  }
  return undefined
}

/** A structured text value: HTML entities some shops leave in JSON-LD (`Black &amp; Silver`) decoded, spaces collapsed. */
function textValue(v: string | undefined): string | undefined {
  if (v === undefined) return undefined
  const t = normalizeSpace(/&(#\d+|#x[0-9a-f]+|[a-z]+);/i.test(v) ? decodeEntities(v) : v)
  return t === "" ? undefined : t
}

type Setter = <K extends keyof Product>(k: K, v: Product[K] | undefined, source: string) => void

/**
 * Price: structured data and product meta tags first; the page's price elements when they have none.
 * An auction's current bid (a "current bid" element or label) replaces a structured price, which on
 * auction pages is the starting price.
 */
function decidePrice(data: Product, sources: Record<string, string>, sig: Signals, set: Setter, hasOffer: boolean, place: ShopPlace, priceBeforeTax: boolean, priceUpTo: number | undefined): void {
  if (sig.bid !== undefined && (data.price === undefined || data.price !== sig.bid.price)) {
    data.price = sig.bid.price
    sources.price = "product-heuristics"
    if (data.currency === undefined) set("currency", currencyOf(sig.bid, place), "product-heuristics")
    return
  }
  // a structured price the page shows only struck through, as the old price beside a lower one in its
  // price box, is stale: the sale the page shows is the price (structured data written before a
  // markdown); so is one it marks old by class (`regular-price` beside a `current-price`) when a
  // discount badge fits the two (a subscription's or a member's lower price is no markdown)
  const same = (a: number, b: number) => Math.abs(a - b) < 0.005
  if (data.price !== undefined && sig.price !== undefined && sig.price.price < data.price && (sig.price.currency === undefined || sig.price.currency === data.currency)
    && (sig.oldPrices.some((p) => same(p, data.price!)) || (sig.markedOldPrices.some((p) => same(p, data.price!)) && sig.discounts.some((r) => Math.abs(sig.price!.price - data.price! * (1 - r / 100)) <= 0.02 * data.price!)))
    && !sig.shownPrices.some((p) => same(p, data.price!))) {
    data.price = sig.price.price
    sources.price = "product-heuristics"
    return
  }
  // a structured price before tax gives way to the page's price with the tax, which buyers pay (a
  // trade shop's `valueAddedTaxIncluded: false` offer at £74.99 beside its shown £89.99 inc. VAT):
  // the shown price is the structured one plus a VAT rate of 5 to 27 %
  if (priceBeforeTax && data.price !== undefined && sig.price !== undefined && (sig.price.currency === undefined || sig.price.currency === data.currency)) {
    const ratio = sig.price.price / data.price
    if (ratio >= 1.05 && ratio <= 1.28) { data.price = sig.price.price; sources.price = "product-heuristics"; return }
  }
  // an aggregate's lowest price (another seller's, a quantity tier's) gives way to the amount the
  // page's price box shows within the aggregate's range: the offer the page sells (Allegro's main
  // offer beside "other offers from 1 249 zł", Shopware's one-unit tier above "from 2")
  // (on a price comparison the page lists many offers in that range: none of them is the price)
  const inRange = (p: number) => p > data.price! && p <= priceUpTo!
  if (priceUpTo !== undefined && data.price !== undefined && sig.price !== undefined && (sig.price.currency === undefined || sig.price.currency === data.currency)
    && inRange(sig.price.price) && sig.shownPrices.every((p) => !inRange(p) || same(p, sig.price!.price))) {
    data.price = sig.price.price
    sources.price = "product-heuristics"
    return
  }
  // a plain-text price only on pages without structured offers (an offer without a usable price,
  // e.g. `"price": "0"`, says the shop shows none)
  const p = data.price === undefined ? (sig.price ?? (hasOffer ? undefined : sig.textPrice())) : undefined
  if (p !== undefined) {
    set("price", p.price, "product-heuristics")
    if (data.currency === undefined) set("currency", currencyOf(p, place), "product-heuristics")
  }
}

const IN_STOCKISH = new Set(["InStock", "LimitedAvailability", "OnlineOnly", "InStoreOnly", "PreOrder", "PreSale", "BackOrder", "MadeToOrder"])

/**
 * Availability. What the page shows about the main product (its availability text, its buy button)
 * settles a disagreement with structured data: a structured InStock with a visible "sold out" and no
 * usable buy button is OutOfStock; a structured OutOfStock with a working buy button and no visible
 * "sold out" is InStock (structured data often describes the first variant, not the product). A product
 * whose variants (structured nodes of the same name) are partly in stock is InStock.
 */
function decideAvailability(data: Product, sources: Record<string, string>, sig: Signals, products: Array<{ node: JsonObject; source: string }>, set: Setter): void {
  if (data.availability === "OutOfStock" && products.length > 1 && data.name !== "") {
    const name = data.name.toLowerCase()
    const main = products[0]!.node
    const variants = new Set(isGroup(main) ? asList(main.hasVariant) : [])
    for (const { node } of products) {
      const n = str(node.name)
      if (!variants.has(node) && (n === undefined || normalizeSpace(n).toLowerCase() !== name)) continue
      const av = readOffer(node.offers)?.availability
      if (av !== undefined && IN_STOCKISH.has(av)) { data.availability = av; break }
    }
  }
  // signals near the product title (the first h1) belong to the main product
  const near = (at: number | undefined) => at !== undefined && (sig.h1At === undefined ? at < 3000 : at >= sig.h1At - NEAR_BEFORE && at <= sig.h1At + NEAR_AFTER)
  const text = near(sig.availabilityAt) ? sig.availabilityText : undefined
  const button = near(sig.buyButtonAt) ? sig.buyButton : undefined
  if (data.availability !== undefined) {
    if (IN_STOCKISH.has(data.availability) && data.availability !== "PreOrder" && data.availability !== "PreSale") {
      if ((text === "OutOfStock" || button === "oos") && button !== "enabled") {
        data.availability = "OutOfStock"
        sources.availability = "product-heuristics"
      }
    } else if (data.availability === "OutOfStock" || data.availability === "Discontinued") {
      if (button === "enabled" && text !== "OutOfStock" && sig.availabilityText !== "OutOfStock") {
        data.availability = "InStock"
        sources.availability = "product-heuristics"
      }
    }
    return
  }
  set("availability", normalizeAvailability(sig.itempropAvailability), "product-heuristics")
  // the first of availability text and buy button decides ("disabled" alone says nothing: shops
  // disable the button until a size is chosen)
  const textFirst = sig.availabilityText !== undefined && (sig.buyButtonAt === undefined || sig.buyButton === "disabled" || sig.availabilityAt! <= sig.buyButtonAt)
  if (textFirst) set("availability", sig.availabilityText, "product-heuristics")
  else if (sig.buyButton === "enabled") set("availability", "InStock", "product-heuristics")
  else if (sig.buyButton === "oos") set("availability", "OutOfStock", "product-heuristics")
  // a buy button that pre-orders ("Pre-Order", "Vorbestellen")
  else if (sig.buyButton === "preorder") set("availability", "PreOrder", "product-heuristics")
  set("availability", sig.availabilityText, "product-heuristics")
  if (sig.anyEnabledBuy) set("availability", "InStock", "product-heuristics")
}

/**
 * SKU. Shops show their article number next to a label ("SKU:", "Art.-Nr.", "Product code", "Код")
 * while structured data often carries an internal or variant id. Order: a structured sku the page
 * shows > a labelled identifier > an identifier in an element marked as one > a structured MPN the page
 * shows > a structured sku the page does not show > a structured MPN > an identifier of the URL that
 * the page repeats > a model/MPN/EAN label.
 */
interface SkuCandidate {
  value: string
  source: string
  /** A manufacturer's part number: the maker's, not the shop's identifier. */
  mpn?: boolean
}

function decideSku(data: Product, sources: Record<string, string>, sig: Signals, page: Page, candidates: ReadonlyArray<SkuCandidate>, skuIsMpn: boolean): void {
  // of the structured identifiers, the first the page shows, else one two sources agree on, else the first
  // (a short number shown somewhere proves little unless it is the main product's own sku)
  const ids = candidates.filter((c) => c.mpn !== true)
  const shown = ids.find((c, i) => (i === 0 || c.value.length >= 4) && sig.shows(c.value))
  const shownMpn = candidates.find((c) => c.mpn === true && c.value.length >= 4 && sig.shows(c.value))
  const agreed = ids.find((c, i) => ids.some((o, j) => j !== i && o.source !== c.source && o.value === c.value))
  const chosen = shown ?? agreed
  // (where the main product's structured sku is only its mpn, another source's sku comes first)
  const structured = chosen?.value ?? (skuIsMpn ? ids[0]?.value : data.sku)
  const structuredSource = chosen?.source ?? (skuIsMpn ? ids[0]?.source : sources.sku)
  const pick = (v: string | undefined, source: string): boolean => {
    if (v === undefined || v.trim() === "") return false
    data.sku = v
    sources.sku = source
    return true
  }
  if (shown !== undefined) { pick(shown.value, shown.source); return }
  if (pick(sig.labelSku(), "product-heuristics")) return
  if (pick(sig.attrSku, "product-heuristics")) return
  // a manufacturer's part number comes after the shop's own labelled identifier (a marketplace's item
  // number is its SKU: eBay shows the maker's MPN among the item's specifics); one the page shows
  // still beats a structured id it never shows
  if (shownMpn !== undefined) { pick(shownMpn.value, shownMpn.source); return }
  if (structured !== undefined) { pick(structured, structuredSource ?? "json-ld"); return }
  if (skuIsMpn) return
  if (pick(cleanSku(sig.itempropSku), "product-heuristics")) return
  if (pick(idFromUrl(page, data.name), "product-heuristics")) return
  pick(sig.weakLabelSku(), "product-heuristics")
}

/** An identifier is one token: `SKU: AB-12 Blue shirt` → `AB-12`. */
function cleanSku(v: string | undefined): string | undefined {
  if (v === undefined) return undefined
  const t = normalizeSpace(v.replace(/^(sku|isbn|ean|gtin\d*)\s*:/i, ""))
  const first = t.split(" ")[0]!
  return first !== t && /\d/.test(first) && /\p{L}{3,}/u.test(t.slice(first.length)) ? first : t || undefined
}

const nameKey = (s: string) => s.normalize("NFKC").toLowerCase().replace(/[^\p{L}\p{N}]+/gu, "")
/** Names of one product: equal, or one contains the other (titles add the brand or the colour). */
const sameName = (a: string, b: string) => a.length >= 6 && b.length >= 6 && (a === b || a.includes(b) || b.includes(a))

/** A product with variants: a schema.org ProductGroup, or any product listing `hasVariant`. */
const isGroup = (n: JsonObject) => n.hasVariant !== undefined || typesOf(n).some((t) => /^ProductGroup$/i.test(t))
const asList = (v: JsonValue | undefined): JsonValue[] => (Array.isArray(v) ? v : v === undefined ? [] : [v])

function score(n: JsonObject): number {
  let s = 0
  if (n.offers !== undefined) s += 2
  if (n.name !== undefined) s += 1
  if (n.sku !== undefined) s += 1
  return s
}

/** A quantity with its unit (`10000mAh`, `128GB`, `500ml`, `65W`): a product's size, not its id. */
const MEASURE = /^\d+(?:mah|wh|kwh|mm|cm|m|km|in|ft|gb|tb|mb|kg|g|mg|lb|lbs|oz|ml|l|cl|w|kw|v|hz|mhz|ghz|pcs|pack|pk|ct)$/i

/**
 * A product identifier taken from the URL: a path or query token with digits (`/itm/123808916008`,
 * `/dp/B01GOH7PKA`, `?pid=260591`) that the page itself repeats. The token the page repeats most wins.
 */
function idFromUrl(page: Page, name: string): string | undefined {
  if (page.url === null) return undefined
  let u: URL
  try { u = new URL(page.url) } catch { return undefined }
  const tokens = new Set<string>()
  const nameWords = new Set(name.toLowerCase().split(/[^\p{L}\p{N}]+/u))
  /** Digit runs of letter-prefixed tokens (`p400105394` → `400105394`): counted only as whole tokens. */
  const inner = new Set<string>()
  for (const part of (u.pathname + "/" + [...u.searchParams.values()].join("/")).split(/[/_.=&?,;+-]+/)) {
    // (a measure, or a word of the product's name, is the slug's text: "Power-Bank-10000mAh-22.5W")
    if (/^[A-Za-z0-9]{5,24}$/.test(part) && /\d/.test(part) && !/^(19|20)\d\d$/.test(part) && !/^\d{1,4}$/.test(part) && !MEASURE.test(part) && !nameWords.has(part.toLowerCase())) {
      tokens.add(part)
      if (/[A-Za-z]/.test(part)) for (const m of part.matchAll(/\d{5,}/g)) if (m[0] !== part) inner.add(m[0])
    }
  }
  for (const t of tokens) inner.delete(t)
  if (tokens.size === 0) return undefined
  const counts = new Map<string, number>()
  const whole = (s: string, t: string) => {
    for (let i = s.indexOf(t); i >= 0; i = s.indexOf(t, i + 1)) {
      if (!/[A-Za-z0-9]/.test(s[i - 1] ?? " ") && !/[A-Za-z0-9]/.test(s[i + t.length] ?? " ")) return true
    }
    return false
  }
  const count = (s: string) => {
    for (const t of tokens) if (s.includes(t)) counts.set(t, (counts.get(t) ?? 0) + 1)
    for (const t of inner) if (s.includes(t) && whole(s, t)) counts.set(t, (counts.get(t) ?? 0) + 1)
  }
  walk(page.doc.root, (el) => {
    for (const c of el.children) if (typeof c === "string") count(c)
    const a = el.attrs
    if (a !== null) for (const k in a) if (k !== "href" && k !== "src") count(a[k]!)
  })
  let best: string | undefined
  let bestN = 0
  for (const [t, n] of counts) if (n > bestN || (n === bestN && best !== undefined && t.length > best.length)) { best = t; bestN = n }
  return best
}

const CCTLD_CURRENCY: Record<string, string> = {
  de: "EUR", fr: "EUR", it: "EUR", es: "EUR", ie: "EUR", at: "EUR", nl: "EUR", be: "EUR", fi: "EUR", sk: "EUR", si: "EUR",
  ee: "EUR", lv: "EUR", lt: "EUR", pt: "EUR", gr: "EUR", lu: "EUR", uk: "GBP", ca: "CAD", au: "AUD", nz: "NZD", ch: "CHF", is: "ISK",
  pl: "PLN", cz: "CZK", hu: "HUF", ro: "RON", se: "SEK", dk: "DKK", no: "NOK", ru: "RUB", ua: "UAH", tr: "TRY", in: "INR",
  jp: "JPY", cn: "CNY", kr: "KRW", tw: "TWD", hk: "HKD", sg: "SGD", br: "BRL", mx: "MXN", ar: "ARS", cl: "CLP", co: "COP",
  za: "ZAR", kz: "KZT", by: "BYN", pk: "PKR", il: "ILS", th: "THB", my: "MYR", ph: "PHP", vn: "VND", id: "IDR", sa: "SAR", ae: "AED",
}

/**
 * The currency of a price the page shows: a sign several currencies share (`$`, `kr`, `¥`) is the
 * shop's country's when that country writes it too (`$` on a .ca shop is CAD). A bare `.co` is taken
 * by companies everywhere (Colombia's shops are `.com.co`).
 */
function currencyOf(p: ParsedPrice, place: ShopPlace): string | undefined {
  const local = (place.url !== null && getPublicSuffix(place.url) !== "co" ? currencyFromDomain(place.url) : undefined) ?? currencyFromLang(place.lang)
  return local !== undefined && sharesSign(p, local) ? local : p.currency
}

/** Where a shop sells: its address and the language its page declares (`<html lang="zh-CN">`). */
interface ShopPlace { url: string | null; lang: string | undefined }

/** The currency of the region a page's language names (`zh-CN`, `es-MX`, `en-CA`), or of a language spoken in one country (`zh`, `ja`). */
function currencyFromLang(lang: string | undefined): string | undefined {
  if (lang === undefined) return undefined
  const m = /^([a-z]{2,3})(?:[-_]([a-z]{4}))?(?:[-_]([a-z]{2}))?$/i.exec(lang.trim())
  if (m === null) return undefined
  if (m[3] !== undefined) return CCTLD_CURRENCY[m[3].toLowerCase() === "gb" ? "uk" : m[3].toLowerCase()]
  // a language alone names a country only when it is that country's (Traditional Chinese, `zh-Hant`, is not China's)
  if (m[2] !== undefined) return undefined
  return m[1]!.toLowerCase() === "zh" ? "CNY" : m[1]!.toLowerCase() === "ja" ? "JPY" : undefined
}

function currencyFromDomain(url: string | null): string | undefined {
  if (url === null) return undefined
  const d = getDomain(url)
  if (d === null) return undefined
  const tld = d.split(".").pop()!
  return CCTLD_CURRENCY[tld]
}

/** Strings of a JSON-LD value, re-exported for config selectors. */
export { strs }
