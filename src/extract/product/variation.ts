/**
 * The variation a WooCommerce product page sells: a variable product's buy form
 * (`form.variations_form`) carries every variation in its `data-product_variations` JSON, and the
 * page's address (`?attribute_pa_weight=100g`, how shops link one variation) or the picker's selected
 * options choose one. Its price, SKU and stock are the product's; the structured data of such a page
 * describes the parent (an `AggregateOffer` range, the parent's SKU). See docs/extraction.md.
 */
import { walk, type Element } from "../html/dom.ts"
import { objectOf, type JsonValue } from "../structured.ts"
import { RELATED } from "./signals.ts"

export interface SelectedVariation {
  price?: number
  sku?: string
  inStock?: boolean
}

/** At most this many characters of variation JSON are parsed (a product may have hundreds). */
const MAX_JSON = 500_000

/** A variation's attribute value as the address has it decoded (WooCommerce stores non-Latin slugs percent-encoded). */
function decoded(v: string): string {
  try { return decodeURIComponent(v) } catch { return v }
}

export function selectedVariation(scope: Element, pageUrl: string | null): SelectedVariation | undefined {
  // the main product's form: not one inside a related, upsell or cross-sell list
  let form: Element | undefined
  walk(scope, (el) => {
    if (form !== undefined) return false
    const words = `${el.attrs?.class ?? ""} ${el.attrs?.id ?? ""}`.toLowerCase()
    if (words.length > 1 && RELATED.test(words)) return false
    if (el.tag === "form" && el.attrs?.["data-product_variations"] !== undefined) { form = el; return false }
  })
  const json = form?.attrs?.["data-product_variations"]
  if (form === undefined || json === undefined || json.length > MAX_JSON) return undefined
  // the choice: the address's attribute_* parameters, else the picker's selected options
  const chosen = new Map<string, string>()
  try {
    for (const [k, v] of new URL(pageUrl ?? "").searchParams) if (k.startsWith("attribute_") && v !== "") chosen.set(k, v)
  } catch { /* no address: the picker decides */ }
  const pickers: Element[] = []
  walk(form, (el) => { if (el.tag === "select" && el.attrs?.name?.startsWith("attribute_") === true) pickers.push(el) })
  if (chosen.size === 0) {
    for (const sel of pickers) {
      let value: string | undefined
      walk(sel, (o) => { if (value === undefined && o.tag === "option" && o.attrs?.selected !== undefined) value = o.attrs.value })
      if (value !== undefined && value !== "") chosen.set(sel.attrs!.name!, value)
    }
  }
  if (chosen.size === 0) return undefined
  let list: JsonValue
  try { list = JSON.parse(json) as JsonValue } catch { return undefined }
  if (!Array.isArray(list)) return undefined
  // every picker the variations differ by has to be set, or no single variation is chosen (the page
  // shows the range); a picker of an option that changes no variation (a grind, an engraving) does not count
  const varying = new Set<string>()
  // (an attribute every variation leaves empty, "any grind", varies nothing)
  for (const v of list) for (const [k, x] of Object.entries(objectOf(objectOf(v)?.attributes) ?? {})) if (x !== "" && x !== null) varying.add(k)
  if (pickers.some((p) => varying.has(p.attrs!.name!) && !chosen.has(p.attrs!.name!))) return undefined
  // (a choice of an option that varies nothing, a grind picked in advance, says nothing of the variation)
  const choice = [...chosen].filter(([k]) => varying.has(k))
  if (choice.length === 0) return undefined
  for (const v of list) {
    const o = objectOf(v)
    const attrs = objectOf(o?.attributes)
    if (o === undefined || attrs === undefined) continue
    // (a variation the shop switched off is not sold)
    if (o.variation_is_active === false || o.variation_is_visible === false) continue
    // (an attribute the variation leaves empty matches any choice)
    const fits = choice.every(([k, want]) => {
      const have = attrs[k]
      return have === "" || (typeof have === "string" && decoded(have).toLowerCase() === want.toLowerCase())
    })
    if (!fits) continue
    const price = typeof o.display_price === "number" && o.display_price > 0 ? o.display_price : undefined
    const sku = typeof o.sku === "string" && o.sku.trim() !== "" ? o.sku.trim() : undefined
    const inStock = typeof o.is_in_stock === "boolean" ? o.is_in_stock : undefined
    return { ...(price !== undefined ? { price } : {}), ...(sku !== undefined ? { sku } : {}), ...(inStock !== undefined ? { inStock } : {}) }
  }
  return undefined
}
