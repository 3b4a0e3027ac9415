import { describe, expect, it } from "vitest"
import { product } from "./helpers.ts"
import { detectCurrency, parsePrice, parseNumber } from "../../src/extract/product/price.ts"

describe("product extraction", () => {
  it("reads JSON-LD Product with an Offer", () => {
    const html = `<html><head><script type="application/ld+json">[{"@context":"https://schema.org","@type":"BreadcrumbList"},
      {"@context":"https://schema.org","@type":"Product","name":"Trail Shoe X","sku":"TS-42","brand":{"@type":"Brand","name":"Acme"},
       "image":["https://cdn.example.com/shoe.jpg"],"description":"A light trail shoe.",
       "offers":{"@type":"Offer","price":"129.90","priceCurrency":"EUR","availability":"https://schema.org/InStock"}}]</script></head>
      <body><h1>Trail Shoe X</h1><span class="price">99,00 €</span></body></html>`
    const out = product(html)
    expect(out.data).toMatchObject({ name: "Trail Shoe X", sku: "TS-42", brand: "Acme", price: 129.9, currency: "EUR", availability: "InStock", description: "A light trail shoe." })
    expect(out.data.images?.[0]?.url).toBe("https://cdn.example.com/shoe.jpg")
    expect(out.metadata.strategiesUsed[0]).toBe("json-ld")
  })

  it("reads AggregateOffer inside @graph", () => {
    const html = `<script type="application/ld+json">{"@graph":[{"@type":"Product","name":"Lamp","offers":{"@type":"AggregateOffer","lowPrice":19.5,"highPrice":25,"priceCurrency":"GBP","availability":"http://schema.org/OutOfStock"}}]}</script>`
    const d = product(html).data
    expect(d).toMatchObject({ name: "Lamp", price: 19.5, currency: "GBP", availability: "OutOfStock" })
  })

  it("prices a product by its new offer, not an open-box or refurbished one that is cheaper", () => {
    const offer = (price: string, condition: string) => `{"@type":"Offer","price":"${price}","priceCurrency":"USD","itemCondition":"https://schema.org/${condition}","availability":"https://schema.org/InStock"}`
    const aggregate = `<script type="application/ld+json">{"@type":"Product","name":"Headphones","offers":{"@type":"AggregateOffer","lowPrice":"239.99","highPrice":"299.99","priceCurrency":"USD",
      "offers":[${offer("254.99", "UsedCondition")},${offer("299.99", "NewCondition")},${offer("239.99", "RefurbishedCondition")}]}}</script>`
    expect(product(aggregate).data.price).toBe(299.99)
    const list = `<script type="application/ld+json">{"@type":"Product","name":"Headphones","offers":[${offer("239.99", "RefurbishedCondition")},${offer("299.99", "NewCondition")}]}</script>`
    expect(product(list).data.price).toBe(299.99)
    // an aggregate of new offers keeps its lowest price
    const sellers = `<script type="application/ld+json">{"@type":"Product","name":"Headphones","offers":{"@type":"AggregateOffer","lowPrice":"239.99","highPrice":"299.99","priceCurrency":"USD",
      "offers":[${offer("299.99", "NewCondition")},${offer("239.99", "NewCondition")}]}}</script>`
    expect(product(sellers).data.price).toBe(239.99)
    // beside a second-hand offer, the lowest new offer in stock sells, wherever it is listed
    const several = `<script type="application/ld+json">{"@type":"Product","name":"Headphones","offers":{"@type":"AggregateOffer","lowPrice":"219.99","highPrice":"299.99","priceCurrency":"USD",
      "offers":[${offer("219.99", "UsedCondition")},${offer("299.99", "NewCondition")},${offer("279.99", "NewCondition")}]}}</script>`
    expect(product(several).data.price).toBe(279.99)
    // a cheaper new offer that is out of stock does not sell
    const soldOut = (price: string) => offer(price, "NewCondition").replace("InStock", "OutOfStock")
    const inStock = `<script type="application/ld+json">{"@type":"Product","name":"Headphones","offers":{"@type":"AggregateOffer","lowPrice":"219.99","highPrice":"299.99","priceCurrency":"USD",
      "offers":[${offer("219.99", "UsedCondition")},${soldOut("259.99")},${offer("279.99", "NewCondition")}]}}</script>`
    expect(product(inStock).data.price).toBe(279.99)
  })

  it("follows @id references to the brand and offers a graph defines once, in another script too", () => {
    const html = `<script type="application/ld+json">{"@graph":[{"@type":"Product","@id":"#p","name":"Lamp","brand":{"@id":"#brand"},"offers":[{"@id":"#offer"}]},
      {"@type":"Offer","@id":"#offer","price":"19.50","priceCurrency":"GBP","availability":"https://schema.org/OutOfStock"}]}</script>
      <script type="application/ld+json">{"@type":"Brand","@id":"#brand","name":"Glow Works","logo":{"@type":"ImageObject","url":"/l.png"}}</script>`
    expect(product(html, { url: null }).data).toMatchObject({ name: "Lamp", brand: "Glow Works", price: 19.5, currency: "GBP", availability: "OutOfStock" })
  })

  it("reads an availability or a condition written as a schema.org reference", () => {
    const html = `<script type="application/ld+json">{"@type":"Product","name":"Kettle","offers":{"@type":"Offer","price":"9.99","priceCurrency":"USD","availability":{"@id":"http://schema.org/OutOfStock"},"itemCondition":{"@id":"https://schema.org/UsedCondition"}}}</script>`
    expect(product(html, { url: null }).data.availability).toBe("OutOfStock")
  })

  it("gives no brand for a reference the page never resolves (an @id is an address, not a name)", () => {
    const html = `<script type="application/ld+json">{"@type":"Product","name":"Tablet","brand":{"@id":"https://shop.example.com/#brand"},"offers":{"@type":"Offer","price":"999","priceCurrency":"USD"}}</script>`
    expect(product(html, { url: null }).data.brand).toBeUndefined()
  })

  it("reads microdata only", () => {
    const html = `<html><body><div itemscope itemtype="https://schema.org/Product">
      <h1 itemprop="name">Desk Chair</h1><span itemprop="brand" itemscope itemtype="https://schema.org/Brand"><span itemprop="name">SitWell</span></span>
      <meta itemprop="sku" content="DC-7">
      <div itemprop="offers" itemscope itemtype="https://schema.org/Offer"><span itemprop="price" content="1234.56">1.234,56 €</span>
      <meta itemprop="priceCurrency" content="EUR"><link itemprop="availability" href="https://schema.org/PreOrder"></div></div></body></html>`
    const out = product(html)
    expect(out.data).toMatchObject({ name: "Desk Chair", brand: "SitWell", sku: "DC-7", price: 1234.56, currency: "EUR", availability: "PreOrder" })
    expect(out.metadata.strategiesUsed).toContain("microdata")
  })

  it("reads OpenGraph product tags only", () => {
    const html = `<html><head><meta property="og:title" content="Green Mug"><meta property="product:price:amount" content="12.00">
      <meta property="product:price:currency" content="USD"><meta property="product:availability" content="out of stock">
      <meta property="og:image" content="/mug.png"></head><body><p>Nice mug.</p></body></html>`
    const out = product(html)
    expect(out.data).toMatchObject({ name: "Green Mug", price: 12, currency: "USD", availability: "OutOfStock" })
    expect(out.data.images?.[0]?.url).toBe("https://shop.example.com/mug.png")
    expect(out.metadata.strategiesUsed).toContain("opengraph")
  })

  it("falls back to page heuristics (price element, cart button, SKU label)", () => {
    const html = `<html><body><h1>Garden Hose 20m</h1><del class="price-old">$1,499.00</del><div class="product-price">$1,234.56</div>
      <table><tr><td>SKU:</td><td>GH-2020</td></tr></table><button class="add-to-cart">Add to cart</button></body></html>`
    const out = product(html)
    expect(out.data).toMatchObject({ name: "Garden Hose 20m", price: 1234.56, currency: "USD", availability: "InStock", sku: "GH-2020" })
    expect(out.metadata.strategiesUsed).toContain("product-heuristics")
  })

  it("uses config selectors only", () => {
    const html = `<html><body><div id="p"><b class="t">Kettle</b><i class="amount">1 234,56 EUR</i><em data-code="K-1">code</em><img class="main" src="/k.jpg"></div></body></html>`
    const out = product(html, {
      configs: [{ id: "cfg-1", payload: { selectors: {
        name: [{ css: ".t" }], price: [{ css: ".amount" }], sku: [{ css: "em", attr: "data-code" }], images: [{ css: "img.main", attr: "src" }], color: [{ css: ".nope" }, { css: "b.t" }],
      } } }],
    })
    expect(out.data).toMatchObject({ name: "Kettle", price: 1234.56, currency: "EUR", sku: "K-1", attributes: { color: "Kettle" } })
    expect(out.data.images).toEqual([{ url: "https://shop.example.com/k.jpg" }])
    expect(out.metadata.strategiesUsed[0]).toBe("selectors")
    expect(out.metadata.configsApplied).toEqual(["cfg-1"])
  })
})

describe("price parsing", () => {
  it.each([
    ["1.234,56 €", 1234.56, "EUR"],
    ["$1,234.56", 1234.56, "USD"],
    ["1 234,56 EUR", 1234.56, "EUR"],
    ["£12", 12, "GBP"],
    ["12,- €", 12, "EUR"],
    ["CHF 1'234.50", 1234.5, "CHF"],
    ["R$ 49,90", 49.9, "BRL"],
    ["1,299円", 1299, "JPY"],
    ["€ 12.990", 12990, "EUR"],
    ["19.99", 19.99, undefined],
    ["₦ 12,000", 12000, "NGN"],
    ["৳ 1,250", 1250, "BDT"],
    ["Rp 1.250.000", 1250000, "IDR"],
    ["S/ 49.90", 49.9, "PEN"],
  ])("%s", (text, price, currency) => {
    const p = parsePrice(text)
    expect(p?.price).toBe(price)
    expect(p?.currency).toBe(currency)
  })
  it("reads a currency written in letters only where it stands alone", () => {
    expect(detectCurrency("29,90 лв.")).toBe("BGN")
    expect(detectCurrency("1000 руб.")).toBe("RUB")
    for (const word of ["молва", "рубашка", "Size S/M"]) expect(detectCurrency(word)).toBeUndefined()
  })
  it("honours an explicit locale for ambiguous groups", () => {
    expect(parseNumber("1.234", "de")).toBe(1234)
    expect(parseNumber("1.234", "en")).toBe(1.234)
    expect(parseNumber("1,234", "de")).toBe(1.234)
    expect(parseNumber("1,234", "en")).toBe(1234)
  })
})
