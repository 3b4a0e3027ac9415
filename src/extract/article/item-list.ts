/**
 * The structured-listing reading: collection pages rendered by script often describe their items in
 * structured data (a schema.org `ItemList` of `ListItem`s, or one `Product` node per card) while the
 * markup holds only an empty grid. Each item becomes one paragraph: its brand, name and price, as a
 * card shows them (descriptions stay out: cards rarely show them). See docs/extraction.md ("Readings").
 */
import { normalizeSpace } from "../html/dom.ts"
import { decodeEntities } from "../html/entities.ts"
import { objectOf, str, typesOf, type JsonObject } from "../structured.ts"

/** Fewer items than this are a page's own product or a breadcrumb, not a listing. */
const MIN_ITEMS = 4
const MAX_ITEMS = 500
/** Types that are lists of other things than the page's content. */
const NOT_CONTENT = /^(BreadcrumbList|SiteNavigationElement|WPHeader|WPFooter|WPSideBar)$/i
/** Item types a collection page lists. */
const CARD_TYPES = /^(Product|ProductGroup|IndividualProduct|Book|Movie|TVSeries|Event|Recipe|Course|Article|NewsArticle|BlogPosting|Place|LocalBusiness|Hotel|Restaurant|SoftwareApplication|VideoGame|CreativeWork|MusicAlbum|JobPosting|Vehicle|Car)$/i

/** Paragraphs of the items the page lists in structured data, or [] when it lists none. */
export function structuredListing(nodes: readonly JsonObject[]): string[] {
  // an ItemList with enough named items, the longest one
  let best: string[] = []
  for (const n of nodes) {
    const types = typesOf(n)
    if (!types.some((t) => /^ItemList$/i.test(t)) || types.some((t) => NOT_CONTENT.test(t))) continue
    const els = n.itemListElement
    const list = Array.isArray(els) ? els : els !== undefined ? [els] : []
    const cards: string[] = []
    for (const e of list.slice(0, MAX_ITEMS)) {
      const li = objectOf(e)
      if (li === undefined) continue
      const item = objectOf(li.item) ?? li
      const c = card(item)
      if (c !== undefined) cards.push(c)
    }
    if (cards.length >= MIN_ITEMS && cards.length > best.length) best = cards
  }
  if (best.length > 0) return dedupe(best)
  // else: many nodes of one card type (one Product per grid card)
  const byType = new Map<string, JsonObject[]>()
  for (const n of nodes) {
    const t = typesOf(n).find((x) => CARD_TYPES.test(x))
    if (t === undefined) continue
    const k = t.toLowerCase()
    const l = byType.get(k) ?? []
    l.push(n)
    byType.set(k, l)
  }
  for (const list of byType.values()) {
    const cards = dedupe(list.slice(0, MAX_ITEMS).map(card).filter((c): c is string => c !== undefined))
    if (cards.length >= MIN_ITEMS && cards.length > best.length) best = cards
  }
  return best
}

function card(item: JsonObject): string | undefined {
  const name = clean(str(item.name) ?? str(item.headline))
  if (name === undefined) return undefined
  const parts = [name]
  const brand = clean(str(item.brand))
  if (brand !== undefined && !name.toLowerCase().includes(brand.toLowerCase())) parts.unshift(brand)
  const offer = objectOf(Array.isArray(item.offers) ? item.offers[0] : item.offers)
  const price = offer !== undefined ? str(offer.price) ?? str(offer.lowPrice) : undefined
  if (price !== undefined && /\d/.test(price)) parts.push(`${currencySign(str(offer!.priceCurrency))}${price}`)
  return parts.join(" ")
}

const SIGNS: Record<string, string> = { USD: "$", EUR: "€", GBP: "£", JPY: "¥" }
const currencySign = (c: string | undefined) => (c !== undefined ? SIGNS[c.toUpperCase()] ?? `${c} ` : "")

function clean(s: string | undefined): string | undefined {
  if (s === undefined) return undefined
  const t = normalizeSpace(decodeEntities(s.replace(/<[^>]*>/g, " ")))
  return t === "" || /^https?:\/\//i.test(t) ? undefined : t
}

function dedupe(cards: string[]): string[] {
  return [...new Set(cards)]
}
