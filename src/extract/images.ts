/** Image collection: structured data, OpenGraph/Twitter cards and `<img>` elements of the content. */
import { Element, walk } from "./html/dom.ts"
import type { Image } from "./types.ts"
import type { JsonValue, JsonObject } from "./structured.ts"
import { absoluteUrl } from "./url.ts"

function dim(v: unknown): number | undefined {
  if (v === undefined || v === null) return undefined
  const n = typeof v === "number" ? v : parseInt(String(v), 10)
  return Number.isFinite(n) && n >= 1 && n < 100000 ? Math.round(n) : undefined
}

export class ImageSet {
  private readonly list: Image[] = []
  private readonly index = new Map<string, Image>()
  private readonly base: string | null
  constructor(base: string | null) {
    this.base = base
  }

  add(src: string | undefined, alt?: string, width?: unknown, height?: unknown): boolean {
    const url = absoluteUrl(src, this.base)
    if (url === undefined) return false
    const w = dim(width), h = dim(height)
    const prev = this.index.get(url)
    if (prev !== undefined) {
      if (prev.width === undefined && w !== undefined) prev.width = w
      if (prev.height === undefined && h !== undefined) prev.height = h
      if (prev.alt === undefined && alt) prev.alt = alt
      return false
    }
    const img: Image = { url }
    if (alt !== undefined && alt.trim() !== "") img.alt = alt.trim()
    if (w !== undefined) img.width = w
    if (h !== undefined) img.height = h
    this.list.push(img)
    this.index.set(url, img)
    return true
  }

  /** JSON-LD `image` values: URL strings, ImageObjects, arrays. */
  addJsonLd(v: JsonValue | undefined): number {
    if (v === undefined || v === null) return 0
    if (typeof v === "string") return this.add(v) ? 1 : 0
    if (Array.isArray(v)) return v.reduce<number>((n, x) => n + this.addJsonLd(x), 0)
    if (typeof v === "object") {
      const o = v as JsonObject
      const u = o.url ?? o.contentUrl ?? o["@id"]
      const alt = typeof o.caption === "string" ? o.caption : typeof o.name === "string" ? o.name : undefined
      return typeof u === "string" && this.add(u, alt, o.width, o.height) ? 1 : 0
    }
    return 0
  }

  /** `<img>` (and `<source>`-less lazy variants) below an element; tiny and tracking images are skipped. */
  addFromElements(root: Element, limit = 30): number {
    let n = 0
    walk(root, (el) => {
      if (n >= limit) return false
      if (el.tag !== "img") return
      const a = el.attrs ?? {}
      const w = dim(a.width), h = dim(a.height)
      if ((w !== undefined && w < 50) || (h !== undefined && h < 50)) return
      let src = a["data-src"] ?? a["data-lazy-src"] ?? a["data-original"] ?? a.src
      if ((src === undefined || src.startsWith("data:")) && a.srcset) src = a.srcset.trim().split(/\s+/)[0]
      if (src === undefined || /\b(pixel|spacer|blank|tracking|1x1)\b/i.test(src)) return
      if (this.add(src, a.alt, w, h)) n++
    })
    return n
  }

  get images(): Image[] {
    return this.list
  }
}
