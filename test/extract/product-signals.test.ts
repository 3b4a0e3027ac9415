import { describe, expect, it } from "vitest"
import { product } from "./helpers.ts"
import { availabilityFromText } from "../../src/extract/product/signals.ts"
import { parsePrice } from "../../src/extract/product/price.ts"

const ld = (o: unknown) => `<script type="application/ld+json">${JSON.stringify(o)}</script>`
const page = (head: string, body: string) => `<html><head>${head}</head><body>${body}</body></html>`

describe("product SKU: what the page shows", () => {
  it("prefers a labelled article number to a structured id the page never shows", () => {
    const html = page(ld({ "@type": "Product", name: "Selfie Stick", sku: "10134622", offers: { "@type": "Offer", price: "9.99", priceCurrency: "EUR" } }),
      `<h1>Selfie Stick</h1><p class="code">Product code: 141677</p><span class="price">€9.99</span>`)
    expect(product(html).data.sku).toBe("141677")
  })

  it("keeps a structured sku the page shows", () => {
    const html = page(ld({ "@type": "Product", name: "Boot", sku: "GB-42", offers: { "@type": "Offer", price: "99" } }),
      `<h1>Boot</h1><ul><li><strong>Model:</strong> X100</li><li><strong>Item number:</strong> 555123</li><li>GB-42</li></ul>`)
    expect(product(html).data.sku).toBe("GB-42")
  })

  it("prefers the shop's labelled item number to a manufacturer's part number the page shows among its specifics", () => {
    const mpnOnly = ld({ "@type": "Product", name: "Wireless Headset", mpn: "866724-0100", offers: { "@type": "Offer", price: "189.99", priceCurrency: "USD" } })
    const html = page(mpnOnly, `<h1>Wireless Headset</h1><span class="price">US $189.99</span><div>eBay item number: 325987654321</div>
      <table><tr><td>Brand</td><td>Jabra</td></tr><tr><td>MPN</td><td>866724-0100</td></tr></table>`)
    expect(product(html, { url: "https://www.ebay.com/itm/325987654321" }).data.sku).toBe("325987654321")
    // another source's sku the page does not show still comes before the part number
    const og = page(`<meta property="product:retailer_item_id" content="SHOP-77812">${mpnOnly}`, `<h1>Wireless Headset</h1><span class="price">US $189.99</span>`)
    expect(product(og).data.sku).toBe("SHOP-77812")
    // where the shop names none of its own, the part number stands in
    const alone = page(mpnOnly, `<h1>Wireless Headset</h1><span class="price">US $189.99</span><table><tr><td>MPN</td><td>866724-0100</td></tr></table>`)
    expect(product(alone).data.sku).toBe("866724-0100")
  })

  it("reads label and value across elements and languages", () => {
    expect(product(page("", `<h1>Leče</h1><ul><li><strong>Šifra:</strong> 0638</li></ul>`)).data.sku).toBe("0638")
    expect(product(page("", `<h1>Regal</h1><h4>Bestellnummer:</h4><div>79961</div>`)).data.sku).toBe("79961")
    expect(product(page("", `<h1>Холодильник</h1><span>Код: 73556</span>`)).data.sku).toBe("73556")
    expect(product(page("", `<h1>Bot</h1><p>N° d'article : 123456</p>`)).data.sku).toBe("123456")
    expect(product(page("", `<h1>Ayakkabı</h1><p>Ürün Kodu: TR12345</p>`)).data.sku).toBe("TR12345")
    expect(product(page("", `<h1>Giày</h1><p>Mã sản phẩm: SP001234</p>`)).data.sku).toBe("SP001234")
    expect(product(page("", `<h1>נעל</h1><p>מק"ט: 778812</p>`)).data.sku).toBe("778812")
    // "Style:" names a cut, not an article number
    const styled = page(ld({ "@type": "Product", name: "Top", sku: "AWP-7731", offers: { "@type": "Offer", price: "20" } }), `<h1>Top</h1><p>Style: 3/4 Sleeve</p>`)
    expect(product(styled, { url: null }).data.sku).toBe("AWP-7731")
    expect(product(page("", `<h1>Zapato</h1><p>Código de referencia: AB1234</p>`), { url: null }).data.sku).toBe("AB1234")
  })

  it("takes generic code labels only with punctuation, and not from running text", () => {
    const html = page("", `<h1>Radio</h1><p>Inserisci il codice SAVE10X al momento del pagamento.</p><p>Model: RT-22 Pro</p>`)
    expect(product(html, { url: null }).data.sku).toBe("RT-22")
    expect(product(page("", `<h1>Dress</h1><p>Ref. 3697/272</p>`), { url: null }).data.sku).toBe("3697/272")
  })

  it("takes a manufacturer label that opens its line or follows a separator, not one inside a sentence", () => {
    const spec = `<h1>Space Game</h1><ul><li><strong>Graphics:</strong> DirectX 11 card with support for Shader Model 5.0</li></ul>`
    expect(product(page("", spec), { url: null }).data.sku).toBeUndefined()
    expect(product(page("", `<h1>Lamp</h1><p>Colour: black | Model LX-200</p>`), { url: null }).data.sku).toBe("LX-200")
    expect(product(page("", `<h1>Lamp</h1><table><tr><th>Model</th><td>LX-200</td></tr></table>`), { url: null }).data.sku).toBe("LX-200")
    // punctuation after the label is enough wherever it stands
    for (const body of ["<td>Brand: Acme Model: WX-2000</td>", "<p>- Model: WX-2000</p>", "<p>Compact and light. Model: WX-2000</p>", "<p>Size M / Model WX-2000</p>"]) {
      expect(product(page("", `<h1>Lamp</h1><table><tr>${body.startsWith("<td>") ? body : `<td>${body}</td>`}</tr></table>`), { url: null }).data.sku).toBe("WX-2000")
    }
    expect(product(page("", `<h1>Lamp</h1><p>Weight 2 kg EAN: 4006381333931</p>`), { url: null }).data.sku).toBe("4006381333931")
  })

  it("reads an identifier from an element marked as one", () => {
    const html = page(ld({ "@type": "Product", name: "Dress", sku: "83341420-808-1", offers: { "@type": "Offer", price: "99" } }),
      `<h1>Dress</h1><p><span>Silver</span> - <span data-qa-qualifier="product-reference">3697/272</span></p>`)
    expect(product(html).data.sku).toBe("3697/272")
  })

  it("finds the number inside a letter-prefixed URL token when the page shows it", () => {
    const html = page("", `<h1>Fernbedienung</h1><div>Anzeige: <span>278526196</span></div>`)
    expect(product(html, { url: "https://shop.example.at/tv/c7200a278526196/fernbedienung.html" }).data.sku).toBe("278526196")
  })

  it("accepts a lower-case @type", () => {
    const html = page(ld({ "@context": "https://schema.org/", "@type": "product", name: "Chelsea Boot", brand: { "@type": "Brand", name: "GANT" },
      offers: { "@type": "Offer", price: "136.00", priceCurrency: "GBP" } }), `<h1>Chelsea Boot</h1>`)
    expect(product(html).data).toMatchObject({ name: "Chelsea Boot", brand: "GANT", price: 136, currency: "GBP" })
  })
})

describe("product SKU: more shop labels and marked attributes", () => {
  const shop = (body: string) => page("", `<h1>Trail Runner 5</h1><div class="price">$30.00</div>${body}<p>A light shoe for long runs.</p>`)
  it("reads Web ID and a bare Item label followed by punctuation", () => {
    expect(product(shop(`<p>Web ID: 4412987</p>`)).data.sku).toBe("4412987")
    expect(product(shop(`<p>Item: 8839201</p>`)).data.sku).toBe("8839201")
    // a bare "item" without punctuation is a word, not a label
    expect(product(shop(`<p>Add this item 8839201 times</p>`)).data.sku).toBeUndefined()
  })

  it("reads the identifier of a data-sku attribute when the element shows something else", () => {
    expect(product(shop(`<div class="product-meta" data-product-sku="SK-1001">In stock</div>`)).data.sku).toBe("SK-1001")
    // not inside a related-products area
    expect(product(shop(`<section class="related-products"><div data-sku="RP-2002">Other shoe</div></section>`)).data.sku).toBeUndefined()
  })
})

describe("product price: choosing among candidates", () => {
  it("ignores old prices and prices of related items", () => {
    const html = page("", `<h1>Hose</h1><div class="price-box"><div class="old-price"><span class="price">$1,499.00</span></div>
      <span class="price">$1,234.56</span></div>`)
    expect(product(html).data.price).toBe(1234.56)
    const related = page("", `<div class="related-products"><div class="product"><span class="price">$5.00</span></div></div>
      <h1>Lamp</h1><div class="product-price">$25.00</div>`)
    expect(product(related).data.price).toBe(25)
  })

  it("uses an auction's current bid rather than the structured starting price", () => {
    const html = page(ld({ "@type": "Product", name: "Pillows", offers: { "@type": "Offer", price: 150, priceCurrency: "USD" } }),
      `<h1>Pillows</h1><div class="bidding"><span class="item-current-bid">$200</span><div class="bid-count">2 bids</div>
       <span>Starting Price $150</span></div>`)
    expect(product(html).data.price).toBe(200)
  })

  it("falls back to a plain-text price after the title, skipping a suggested price", () => {
    const html = page("", `<h1>Camping sink</h1><table><tr><td>建議售價</td><td><b>$3200</b> 元</td></tr>
      <tr><td><strong>一次付清特價</strong><b>72</b>折 <span style="font-size:27px">2320</span><span> 元 </span></td></tr></table>`)
    expect(product(html, { url: null }).data.price).toBe(2320)
  })

  it("does not guess a price when the structured offer has none", () => {
    const html = page(ld({ "@type": "Product", name: "Perfume", offers: { "@type": "Offer", price: "0", priceCurrency: "ILS" } }),
      `<h1>Perfume</h1><p>Shipping:</p><p>10 ₪</p>`)
    expect(product(html).data.price).toBeUndefined()
  })
})

describe("product price: structured sale prices and labelled text prices", () => {
  it("takes the selling price of an offer that also lists its strikethrough price", () => {
    const html = page(ld({ "@type": "Product", name: "Trail Runner 5", offers: { "@type": "Offer", priceCurrency: "USD", priceSpecification: [
      { "@type": "UnitPriceSpecification", priceType: "https://schema.org/ListPrice", price: 150 },
      { "@type": "UnitPriceSpecification", price: 120 },
    ] } }), `<h1>Trail Runner 5</h1>`)
    expect(product(html).data.price).toBe(120)
    // a single specification is the price whatever it is called
    const one = page(ld({ "@type": "Product", name: "Trail Runner 5", offers: { "@type": "Offer", priceCurrency: "USD", priceSpecification: { "@type": "UnitPriceSpecification", price: 99 } } }), `<h1>Trail Runner 5</h1>`)
    expect(product(one).data.price).toBe(99)
  })

  it("reads the currency of a structured price written with its symbol", () => {
    const html = page(ld({ "@type": "Product", name: "Trail Runner 5", offers: { "@type": "Offer", price: "£19.99" } }), `<h1>Trail Runner 5</h1>`)
    expect(product(html).data).toMatchObject({ price: 19.99, currency: "GBP" })
  })

  it("reads a plain-text price after a selling-price label, not the old price before it", () => {
    const labelled = page("", `<h1>Trail Runner 5</h1><p>Price: $24.99</p><button>Add to cart</button>`)
    expect(product(labelled).data).toMatchObject({ price: 24.99, currency: "USD" })
    const wasNow = page("", `<h1>Trail Runner 5</h1><div><span>Was <s>$34.99</s></span> <span>Now $24.99</span></div>`)
    expect(product(wasNow).data.price).toBe(24.99)
    const listOnly = page("", `<h1>Trail Runner 5</h1><p>List price: $34.99</p><p>Shipping: $4.99</p>`)
    expect(product(listOnly).data.price).toBeUndefined()
  })

  it("reads the selling amount of a price element that also shows another price's", () => {
    const shown = (price: string) => product(page("", `<h1>Trail Runner 5</h1><div class="price">${price}</div><button>Add to cart</button>`)).data.price
    expect(shown("<span>Was $149.99</span> <span>Now $99.99</span>")).toBe(99.99)
    expect(shown("UVP 29,90 € 19,90 €")).toBe(19.9)
    expect(shown("$99.99 <small>Shipping: $5.00</small>")).toBe(99.99)
    expect(shown("Shipping: $5.99 $29.99")).toBe(29.99)
    // the selling amount keeps its own currency sign
    const both = product(page("", `<h1>Trail Runner 5</h1><div class="price">statt € 49,90 € 39,90</div>`)).data
    expect(both).toMatchObject({ price: 39.9, currency: "EUR" })
    // superscript cents belong to their amount
    expect(shown("$19<sup>99</sup>")).toBe(19.99)
    // after grouped thousands, the cents take the other separator
    expect(shown("1.299<sup>00</sup> €")).toBe(1299)
    expect(shown("9.499<sup>99</sup> Lei")).toBe(9499.99)
    expect(shown("$1,299<sup>95</sup>")).toBe(1299.95)
    // a footnote after an amount with its decimals is no cents
    expect(shown("$24.99<sup>12</sup>")).toBe(24.99)
    // cents marked by class (Mercado Livre)
    expect(shown(`<span class="andes-money-amount__currency-symbol">R$</span><span class="andes-money-amount__fraction">1.299</span><span class="andes-money-amount__cents">90</span>`)).toBe(1299.9)
    // two digits in an element of their own right after the amount are cents, whatever the class says
    expect(shown(`$229<span class="rightEnd">99</span>`)).toBe(229.99)
    expect(shown(`$1,299<span>95</span>`)).toBe(1299.95)
    // an element that shows only a labelled amount is still read (its label may be the selling one)
    expect(shown("Special $79.00")).toBe(79)
  })
})

describe("product price drawn for the eye only", () => {
  it("reads a price box hidden from screen readers beside its screen-reader copy, not a warranty's price", () => {
    const html = page("", `<h1>Video Doorbell</h1><div class="pricing"><span class="screenReaderOnly">$229.99</span>
      <div class="salePrice" aria-hidden="true">$229<span class="rightEnd">99</span></div></div>
      <button>Add to cart</button><div class="warranty"><p>2 Years</p><p class="price">59.99</p></div>`)
    expect(product(html).data.price).toBe(229.99)
    // a block hidden from screen readers that is no price box is still left out
    const decoy = page("", `<h1>Video Doorbell</h1><div class="slide" aria-hidden="true"><span class="price">$9.99</span></div><p class="price">$229.99</p>`)
    expect(product(decoy).data.price).toBe(229.99)
    // only the box's own class or id names it a price box, not a data attribute of a carousel slide
    const slide = page("", `<h1>Video Doorbell</h1><div class="slide" data-price-list="sale" aria-hidden="true"><span class="price">$9.99</span></div><p class="price">$229.99</p>`)
    expect(product(slide).data.price).toBe(229.99)
  })
})

describe("product availability: page signals vs structured data", () => {
  const offer = (availability: string) => ({ "@type": "Product", name: "Garni 570", offers: { "@type": "Offer", price: 54.5, priceCurrency: "EUR", availability } })

  it("a visible out-of-stock text next to a disabled buy button overrides a structured InStock", () => {
    const html = page(ld(offer("https://schema.org/InStock")), `<h1>Garni 570</h1>
      <ul class="availability-box"><li><strong>Momentálne nie je možné produkt kúpiť</strong></li></ul>
      <button type="submit" disabled>Do košíka</button>`)
    expect(product(html).data.availability).toBe("OutOfStock")
  })

  it("a working add-to-cart button next to the title overrides a structured OutOfStock", () => {
    const html = page(ld(offer("OutOfStock")), `<h1>Garni 570</h1><form><button id="add-to-basket-button" type="submit">Add to your basket</button></form>`)
    expect(product(html).data.availability).toBe("InStock")
  })

  it("a sold-out button is OutOfStock; a disabled button alone says nothing", () => {
    expect(product(page("", `<h1>Shirt</h1><button class="btn" disabled>Sold out</button>`)).data.availability).toBe("OutOfStock")
    expect(product(page("", `<h1>Shirt</h1><button class="add-to-cart" disabled>Add to cart</button>`)).data.availability).toBeUndefined()
  })

  it("ignores availability texts far from the title or in related items", () => {
    const filler = `<p>${"Lorem ipsum dolor sit amet. ".repeat(120)}</p>`
    const html = page(ld(offer("InStock")), `<h1>Garni 570</h1>${filler}<table><tr><td class="stock">Out of Stock</td></tr></table>`)
    expect(product(html).data.availability).toBe("InStock")
    const related = page("", `<h1>Garni 570</h1><button>Add to cart</button><div class="recommendations"><span class="stock">Sold out</span></div>`)
    expect(product(related).data.availability).toBe("InStock")
  })

  it("a product is in stock when one of its variants is", () => {
    const v = (sku: string, av: string) => ({ "@type": "Product", name: "Boots", sku, offers: { "@type": "Offer", price: "69.95", availability: av } })
    const html = page(ld([v("B-35", "OutOfStock"), v("B-36", "InStock"), v("B-37", "OutOfStock")]), `<h1>Boots</h1>`)
    expect(product(html).data.availability).toBe("InStock")
  })

  it("a product group titled like the page is the product, in stock when one of its variants is", () => {
    const variant = (size: string, av: string) => ({ "@type": "Product", name: `Trail Runner 2 - ${size}`, sku: `TR2-${size}`, offers: { "@type": "Offer", price: "89.00", priceCurrency: "USD", availability: `https://schema.org/${av}` } })
    const html = page(ld({ "@type": "ProductGroup", name: "Trail Runner 2", productGroupID: "TR2", hasVariant: [variant("42", "OutOfStock"), variant("43", "InStock")] }), `<h1>Trail Runner 2</h1>`)
    expect(product(html).data).toMatchObject({ name: "Trail Runner 2", price: 89, currency: "USD", availability: "InStock" })
  })

  it("reads the earliest wording of a text", () => {
    expect(availabilityFromText("In stock. Not available for click & collect")).toBe("InStock")
    expect(availabilityFromText("Non disponibile. Non sappiamo se o quando l'articolo sarà di nuovo disponibile.")).toBe("OutOfStock")
    expect(availabilityFromText("Lieferzeit 2-3 Tage")).toBeUndefined()
  })
})

describe("product heuristics on hostile pages", () => {
  it("stay linear on long separator runs and huge class names", () => {
    const html = page("", `<h1>X</h1><p>Code</p>${"<p>:</p>".repeat(20_000)}<p>!</p>
      <div class="${"a-price-".repeat(20_000)}was">1</div><span class="sku">${"1".repeat(50_000)}</span>`)
    const t0 = performance.now()
    product(html)
    expect(performance.now() - t0).toBeLessThan(3000)
  })
})

describe("product values", () => {
  it("decodes entities left in JSON-LD names and maps RUR to RUB", () => {
    const html = page(ld({ "@type": "Product", name: "Selfie Stick - Black &amp; Silver", offers: { "@type": "Offer", price: "249", priceCurrency: "RUR" } }), "")
    expect(product(html).data).toMatchObject({ name: "Selfie Stick - Black & Silver", currency: "RUB", price: 249 })
  })
})

describe("structured candidates: the main product and agreeing sources", () => {
  const ld = (o: unknown) => `<script type="application/ld+json">${JSON.stringify(o)}</script>`
  const offer = (price: string) => ({ "@type": "Offer", price, priceCurrency: "USD", availability: "https://schema.org/InStock" })

  it("takes the product the page is titled by, not a related one described first", () => {
    const html = `<html><head>${ld([
      { "@type": "Product", name: "Cable organizer tray", sku: "CO-100", offers: offer("9.99") },
      { "@type": "Product", name: "Standing desk frame", sku: "SD-500", offers: offer("499.00") },
    ])}</head><body><h1>Standing desk frame</h1><p>Steel frame with two motors.</p></body></html>`
    const p = product(html).data
    expect(p.name).toBe("Standing desk frame")
    expect(p.price).toBe(499)
    expect(p.sku).toBe("SD-500")
  })

  it("prefers a structured identifier of the main product that the page shows over an unseen variant id", () => {
    const html = `<html><head>${ld({ "@type": "Product", name: "Zeta bookshelf speaker", sku: "100233455", mpn: "ZX-4410", offers: offer("149.00") })}</head>
      <body><h1>Zeta bookshelf speaker</h1><table><tr><td>Part</td><td>ZX-4410</td></tr></table></body></html>`
    expect(product(html).data.sku).toBe("ZX-4410")
  })

  it("takes the identifier two sources agree on when the page shows none", () => {
    const html = `<html><head><meta property="product:retailer_item_id" content="KT-88">${ld({ "@type": "Product", name: "Kettle 1.7 litre", sku: "7731002", offers: offer("39.00") })}</head>
      <body><div itemscope itemtype="https://schema.org/Product"><h1 itemprop="name">Kettle 1.7 litre</h1><meta itemprop="sku" content="KT-88"></div></body></html>`
    expect(product(html).data.sku).toBe("KT-88")
  })
})

describe("prices and identifiers pages show without structured data", () => {
  it("leaves a discount badge out of a price element's amount", () => {
    // "₹2,433" + "2%" had read as 2.4332
    const html = page("", `<h1>Ceiling Fan</h1><div id="product-price"><span class="price">₹2,433</span><span class="price-drop"><span>2%</span></span></div>`)
    expect(product(html).data.price).toBe(2433)
    expect(product(page("", `<h1>Lamp</h1><div class="price"><span>€ 49,90</span><span class="badge">Save 20%</span></div>`)).data.price).toBe(49.9)
    // an amount and a percentage in one piece of text stay one text: the amount still reads
    expect(product(page("", `<h1>Lamp</h1><div class="price"><span>$16.00 -20%</span></div>`)).data.price).toBe(16)
  })

  it("reads an unmarked old price shown first as old when the discount badge beside the two says so", () => {
    // classes that say nothing (a style sheet strikes the first amount through)
    const shown = (amounts: string) => product(page("", `<h1>Power Bank</h1><div class="q1"><div class="a7">${amounts}</div></div><p>Charges two phones at once.</p>`)).data.price
    expect(shown(`<div>$49.90</div><div>$35.90</div><div>28% off</div>`)).toBe(35.9)
    // a badge that does not fit the two amounts leaves the first one (a second amount is another price)
    expect(shown(`<div>$49.90</div><div>$35.90</div><div>10% off</div>`)).toBe(49.9)
    expect(shown(`<div>$49.90</div><div>$5.99</div>`)).toBe(49.9)
    // a badge that names its discount by an amount labels no price: the amount after it sells
    expect(shown(`<div>Extra ₹1000 off</div><div>₹17,999</div><div>₹20,999</div><div>14% off</div>`)).toBe(17999)
    // an "origin" price class is an old price (Coupang's origin-price)
    expect(product(page("", `<h1>Ramen</h1><div class="prod-price"><span class="origin-price">39,900원</span> <span class="total-price">29,900원</span></div>`)).data.price).toBe(29900)
  })

  it("skips a struck-through old price in the page's text", () => {
    const html = page("", `<h1>Blue Kettle</h1><table><tr><td>Price:</td><td><strike>64.27 €</strike> <span class="red">43.97 €</span> <span>(- 32%)</span></td></tr></table>`)
    expect(product(html).data.price).toBe(43.97)
    expect(product(page("", `<h1>Mug</h1><p><del>$12.00</del></p><p>$9.00</p>`)).data.price).toBe(9)
  })

  it("reads the amount a price label names far below the title, struck old prices left out", () => {
    const menu = Array.from({ length: 80 }, (_, i) => `<li><a href="/c/${i}">Category ${i}</a></li>`).join("")
    const html = page("", `<h1>Sale</h1><ul>${menu}</ul><table><tr><td>Item No:</td><td>amx1</td></tr>
      <tr><td>Price:</td><td><strike>64.27 €</strike> <span class="red">43.97 €</span> <span>(- 32%)</span></td></tr></table>`)
    expect(product(html).data.price).toBe(43.97)
    expect(product(page("", `<h1>Sale</h1><ul>${menu}</ul><p>Preis: 19,90 €</p>`)).data.price).toBe(19.9)
    // a label that names another price, or none, is no price
    expect(product(page("", `<h1>Sale</h1><ul>${menu}</ul><p>Price match guarantee</p><p>List price:</p><p>$30.00</p>`)).data.price).toBeUndefined()
    expect(product(page("", `<h1>Sale</h1><ul>${menu}</ul><table><tr><th>Method</th><th>Price</th></tr><tr><td>Standard</td><td>£4.95</td></tr></table>`)).data.price).toBeUndefined()
    expect(product(page("", `<h1>Sale</h1><ul>${menu}</ul><dl><dt>Price:</dt><dd>Choose an amount</dd><dt>Minimum</dt><dd>£10.00</dd></dl>`)).data.price).toBeUndefined()
  })

  it("an amount a period follows is an instalment, and a converted amount is not the shop's price", () => {
    const html = page("", `<h1>Stage piano</h1><div><s>€ 1.899,00</s></div><div><span class="prodPrice">€ 1.599,00</span></div>
      <div class="upper"><span>20 rate da soli</span> <span><b><span class="zero-price">€ 79,95</span> /mese</b></span></div>`)
    expect(product(html).data.price).toBe(1599)
    expect(product(page("", `<h1>Desk</h1><span class="monthlyish-box"><span class="price-now">$41.58</span>/mo.</span><span class="price-full">$499.00</span>`)).data.price).toBe(499)
    // a period that is no instalment's: "€ 12,00" followed by a size stays the price
    expect(product(page("", `<div class="title">Soap</div><span class="price">€ 12,00</span> 200 ml`)).data.price).toBe(12)
    // a period word with no "/" or preposition before it is another line
    expect(product(page("", `<div class="title">Road bike</div><span class="price">$499.00</span><p>Monthly payments available with Klarna.</p>`)).data.price).toBe(499)
    expect(product(page("", `<div class="title">Tee</div><span class="price convertible">£49.00</span>`)).data.price).toBe(49)
    const converted = page("", `<h1>Thigh pads</h1><div>Price: <span class="notranslate" id="prcIsum">GBP 11.19</span>
      <div class="convPrice">Approximately <span id="convbidPrice">C $19.38<span>(including shipping)</span></span></div></div>`)
    expect(product(converted).data.price).toBe(11.19)
  })

  it("a price box marked regular holds the price when the page marks no other", () => {
    // Magento's whole price box inside a `price-regular` wrapper: its special price sells
    const box = `<div class="price-regular"><div class="price-box"><span class="special-price"><span class="price">10,75 €</span></span>
      <span class="old-price"><span class="price">11,95 €</span></span></div></div>`
    expect(product(page("", `<div class="title">The One Device</div>${box}<button>Add to cart</button>`)).data.price).toBe(10.75)
    expect(product(page("", `<div class="title">Tee</div><span class="price-regular">£109.00</span><button>Add to cart</button>`)).data.price).toBe(109)
    // beside a sale price, the regular price is the old one
    expect(product(page("", `<div class="title">Tee</div><span class="price-regular">$20.00</span><span class="price-sale">$15.00</span>`)).data.price).toBe(15)
  })

  it("skips a price before tax", () => {
    const html = page("", `<h1>Reading lenses</h1><ul><li>Excl. VAT:</li><li>36.53€</li><li>Total:</li><li>40.00€</li></ul>`)
    expect(product(html).data.price).toBe(40)
    expect(product(page("", `<h1>Bohrer</h1><p>zzgl. MwSt.</p><p>84,03 €</p><p>inkl. MwSt.</p><p>100,00 €</p>`)).data.price).toBe(100)
    // words holding a label's letters are no label ("Cornetto"), nor is a net weight
    expect(product(page("", `<h1>Cornetto Classico</h1><p>2,50 €</p>`)).data.price).toBe(2.5)
  })

  it("reads the price a Twitter card states, in the site's language", () => {
    const card = (label: string, data: string) => `<meta name="twitter:data1" content="${data}"><meta name="twitter:label1" content="${label}"><meta name="twitter:data2" content="black"><meta name="twitter:label2" content="Colour">`
    const en = product(page(card("Price", "€70.50"), `<h1>Ankle boots</h1>`)).data
    expect([en.price, en.currency]).toEqual([70.5, "EUR"])
    expect(product(page(card("Hinta", "38,15 €"), `<h1>Vyö</h1>`)).data.price).toBe(38.15)
    // other labels are not prices
    expect(product(page(card("Colour", "12"), `<h1>Vyö</h1>`)).data.price).toBeUndefined()
    // structured offers come first
    const withLd = page(ld({ "@type": "Product", name: "Boot", offers: { "@type": "Offer", price: "59.00", priceCurrency: "EUR" } }) + card("Price", "€70.50"), `<h1>Boot</h1>`)
    expect(product(withLd).data.price).toBe(59)
  })

  it("separates an identifier from its label in an element of its own", () => {
    const html = page("", `<h1>Felt pen</h1><div data-testid="sku"><span><span>Art.</span><span>1049084</span></span></div>`)
    expect(product(html).data.sku).toBe("1049084")
    // one piece that is the identifier stays whole
    expect(product(page("", `<h1>Watch</h1><span class="sku">CA-304103</span>`)).data.sku).toBe("CA-304103")
  })

  it("takes no date for an identifier", () => {
    const html = page("", `<h1>Laureates</h1><p>Text of the page.<span class="reference-accessdate">. Retrieved <span>2008-11-27</span></span></p>`)
    expect(product(html).data.sku).toBeUndefined()
  })
})

describe("shop templates' conventions", () => {
  const shop = (url: string, body: string, head = "") => product(page(head, body), { url })

  it("reads a sign several currencies share as the shop's country's currency", () => {
    expect(shop("https://shop.example.ca/p/1", `<h1>Mug</h1><span class="price">$34.99</span>`).data.currency).toBe("CAD")
    expect(shop("https://butikk.example.no/p/1", `<h1>Krus</h1><span class="price">1 299 kr</span>`).data.currency).toBe("NOK")
    expect(shop("https://tienda.example.com.mx/p/1", `<h1>Taza</h1><span class="price">$1,299.00</span>`).data.currency).toBe("MXN")
    expect(shop("https://shop.example.cn/p/1", `<h1>杯子</h1><span class="price">¥1299.00</span>`).data.currency).toBe("CNY")
    // a code is not a sign; a sign the country does not write stays; a bare .co is any company's
    expect(shop("https://shop.example.ca/p/1", `<h1>Mug</h1><span class="price">USD 34.99</span>`).data.currency).toBe("USD")
    expect(shop("https://shop.example.ca/p/1", `<h1>Mug</h1><span class="price">€34.99</span>`).data.currency).toBe("EUR")
    expect(shop("https://events.example.co/p/1", `<h1>Seminar</h1><span class="price">$340</span>`).data.currency).toBe("USD")
    expect(shop("https://shop.example.com/p/1", `<h1>Mug</h1><span class="price">$34.99</span>`).data.currency).toBe("USD")
  })

  it("reads a shared sign by the page's language when the address says nothing", () => {
    const zh = `<html lang="zh-CN"><body><h1>电饭煲</h1><span class="price">¥2499.00</span></body></html>`
    expect(product(zh, { url: "https://detail.shop.example.com/item/1" }).data.currency).toBe("CNY")
    const mx = `<html lang="es-MX"><body><h1>Taza</h1><span class="price">$1,299.00</span></body></html>`
    expect(product(mx, { url: "https://www.tienda.example.com/p/1" }).data.currency).toBe("MXN")
    const hant = `<html lang="zh-Hant"><body><h1>電子鍋</h1><span class="price">¥2,480</span></body></html>`
    expect(product(hant, { url: "https://www.shop.example.com/p/1" }).data.currency).toBe("JPY")
    const us = `<html lang="en-US"><body><h1>Mug</h1><span class="price">$12.00</span></body></html>`
    expect(product(us, { url: "https://www.shop.example.com/p/1" }).data.currency).toBe("USD")
  })

  it("reads more currency signs", () => {
    expect(parsePrice("1.299,90 TL")).toMatchObject({ price: 1299.9, currency: "TRY" })
    expect(parsePrice("1 299 грн")).toMatchObject({ price: 1299, currency: "UAH" })
    expect(parsePrice("￥3,300")).toMatchObject({ price: 3300, currency: "JPY" })
  })

  it("reads the euro sign standing for the decimal comma, and never a percentage as the amount", () => {
    expect(parsePrice("24€99")).toMatchObject({ price: 24.99, currency: "EUR" })
    expect(parsePrice("1 299€00")).toMatchObject({ price: 1299 })
    expect(shop("https://boutique.example.fr/p/1", `<h1>Câble</h1><span class="price">24€<sup>99</sup></span>`).data.price).toBe(24.99)
    // two amounts stay two amounts
    expect(parsePrice("29€ 99€")?.price).toBe(29)
    expect(parsePrice("inkl. 19% MwSt. 49,90 €")?.price).toBe(49.9)
    expect(shop("https://shop.example.de/p/1", `<h1>Tasse</h1><div class="price">inkl. 19% MwSt. 49,90 €</div>`).data.price).toBe(49.9)
  })

  it("reads a label and value that direction marks separate", () => {
    const html = `<h1>Cable</h1><ul><li><span>ASIN \u200f : \u200e</span><span>B0ABCD1234</span></li></ul>`
    expect(shop("https://www.example.com/gp/product", html).data.sku).toBe("B0ABCD1234")
  })

  it("reads backorder, pre-order and stock-count wordings", () => {
    const readings: Array<[string, string]> = [
      ["Available on backorder", "BackOrder"], ["Available for pre-order", "PreOrder"], ["Bientôt disponible", "PreOrder"],
      ["Mehr als 10 verfügbar", "InStock"], ["Only 2 left!", "InStock"], ["Low stock: 3 left", "InStock"],
      // the label's word is not the wording; out of stock still wins over a qualifier
      ["Verfügbarkeit: nicht auf Lager", "OutOfStock"], ["Sold out. Pre-order the next batch", "OutOfStock"],
    ]
    for (const [text, reading] of readings) expect(availabilityFromText(text), text).toBe(reading)
  })

  it("reads an availability a line states under its label", () => {
    const html = `<h1>HP LP3065</h1><ul><li>Product Code: LP3065</li><li>Availability: Out Of Stock</li></ul><h2>$98.00</h2><button>Add to Cart</button>`
    expect(shop("https://shop.example.com/p/1", html).data.availability).toBe("OutOfStock")
    expect(shop("https://shop.example.com/p/1", `<h1>Lampe</h1><dl><dt>Verfügbarkeit:</dt><dd>Auf Lager</dd></dl>`).data.availability).toBe("InStock")
  })

  it("names the product by its headline when the title adds the shop's name", () => {
    const head = (t: string) => `<meta property="og:title" content="${t}">`
    expect(shop("https://shop.example.com/p/1", `<h1>Canvas Tote Bag</h1>`, head("Canvas Tote Bag - Example Shop")).data.name).toBe("Canvas Tote Bag")
    expect(shop("https://www.ebay.com/itm/1", `<h1>Seiko 5 SNK809</h1>`, head("Seiko 5 SNK809 | eBay")).data.name).toBe("Seiko 5 SNK809")
    expect(shop("https://acme.example/p/1", `<h1>Hoodie</h1>`, head("Hoodie - Acme Store") + `<meta property="og:site_name" content="Acme Store">`).data.name).toBe("Hoodie")
    // a dash of the product's own stays
    expect(shop("https://shop.example.com/p/1", `<h1>Sony WH-1000XM4</h1>`, head("Sony WH-1000XM4 - Black")).data.name).toBe("Sony WH-1000XM4 - Black")
  })

  it("sells the variant the page's address selects", () => {
    const offers = [
      { "@type": "Offer", price: "29.00", priceCurrency: "USD", sku: "P-S", url: "https://s.example.com/products/print?variant=1" },
      { "@type": "Offer", price: "59.00", priceCurrency: "USD", sku: "P-L", url: "/products/print?variant=2" },
    ]
    const html = page(ld({ "@type": "Product", name: "Canvas Print", offers }), `<h1>Canvas Print</h1>`)
    const selected = product(html, { url: "https://s.example.com/products/print?variant=2" }).data
    expect([selected.price, selected.sku]).toEqual([59, "P-L"])
    // without a selecting query, and with only a tracking one, the first offer sells
    expect(product(html, { url: "https://s.example.com/products/print" }).data.price).toBe(29)
    expect(product(html, { url: "https://s.example.com/products/print?utm_source=x" }).data.price).toBe(29)
  })

  it("sells the variant the page's buy form holds when the address selects none", () => {
    const form = (id: string) => `<form action="/cart/add" method="post"><input type="hidden" name="id" value="${id}"><button type="submit">Add to cart</button></form>`
    const offers = [
      { "@type": "Offer", price: "38.00", priceCurrency: "USD", sku: "MCS3-S", availability: "https://schema.org/OutOfStock", url: "https://s.example.com/products/socks?variant=11" },
      { "@type": "Offer", price: "42.00", priceCurrency: "USD", sku: "MCS3-M", availability: "https://schema.org/InStock", url: "https://s.example.com/products/socks?variant=22" },
    ]
    const url = { url: "https://s.example.com/products/socks" }
    const list = product(page(ld({ "@type": "Product", name: "Merino Socks", offers }), `<h1>Merino Socks</h1>${form("11")}`), url).data
    expect([list.price, list.sku]).toEqual([38, "MCS3-S"])
    // variants as products of a product group: the group names the product, the selected variant sells
    const group = { "@type": "ProductGroup", name: "Merino Socks", brand: "Fellside", hasVariant: offers.map((o, i) => ({ "@type": "Product", name: `Merino Socks - ${["S", "M"][i]}`, sku: o.sku, offers: o })) }
    const grouped = product(page(ld(group), `<h1>Merino Socks</h1>${form("11")}`), url).data
    expect([grouped.name, grouped.price, grouped.sku]).toEqual(["Merino Socks", 38, "MCS3-S"])
    const other = product(page(ld(group), `<h1>Merino Socks</h1>${form("22")}`), url).data
    expect([other.price, other.sku]).toEqual([42, "MCS3-M"])
    // a variant picker sends its selected option, else its first
    const picker = (options: string) => `<form action="/cart/add" method="post"><select name="id">${options}</select><button type="submit">Add to cart</button></form>`
    const chosen = product(page(ld({ "@type": "Product", name: "Merino Socks", offers: [...offers].reverse() }), `<h1>Merino Socks</h1>${picker(`<option value="22">M</option><option value="11" selected>S</option>`)}`), url).data
    expect([chosen.price, chosen.sku]).toEqual([38, "MCS3-S"])
    const first = product(page(ld({ "@type": "Product", name: "Merino Socks", offers: [...offers].reverse() }), `<h1>Merino Socks</h1>${picker(`<option value="11">S</option><option value="22">M</option>`)}`), url).data
    expect([first.price, first.sku]).toEqual([38, "MCS3-S"])
    const enabled = product(page(ld({ "@type": "Product", name: "Merino Socks", offers }), `<h1>Merino Socks</h1>${picker(`<option value="11" disabled>S - sold out</option><option value="22">M</option>`)}`), url).data
    expect([enabled.price, enabled.sku]).toEqual([42, "MCS3-M"])
    // a group's variant the address selects comes first among equals too
    const byAddress = product(page(ld(group), `<h1>Merino Socks</h1>`), { url: "https://s.example.com/products/socks?variant=22" }).data
    expect([byAddress.price, byAddress.sku]).toEqual([42, "MCS3-M"])
  })

  it("a plain-text price is not vetoed by an ordinary line before it, nor by a discount badge", () => {
    expect(shop("https://shop.example.com/p/1", `<h1>Tote bag</h1><p>Made from recycled cotton.</p><div><span>$24.00</span><button>Add to cart</button></div>`).data.price).toBe(24)
    expect(shop("https://shop.example.com/p/1", `<h1>Bag</h1><div><span>16% off</span></div><div><span>€41.30</span></div><div><span>€49.10</span></div>`).data.price).toBe(41.3)
    // a label of another price right before still is one
    expect(shop("https://shop.example.com/p/1", `<h1>Bag</h1><div><span>Shipping</span></div><div><span>€4.90</span></div><div><span>Price</span></div><div><span>€49.10</span></div>`).data.price).toBe(49.1)
  })

  it("a structured price the page shows only struck through, beside a lower sale price, is stale", () => {
    const head = ld({ "@type": "Product", name: "Men's Ride 17", sku: "S20924", offers: { "@type": "Offer", price: "140.00", priceCurrency: "USD" } })
    const sale = page(head, `<h1>Men's Ride 17</h1><div class="price"><del><span class="value" content="140.00">$140.00</span></del> <span class="sales"><span class="value" content="99.95">$99.95</span></span></div>`)
    expect(product(sale).data.price).toBe(99.95)
    // the structured price shown as the selling price stays, whatever list price is struck beside it
    const kept = page(head, `<h1>Men's Ride 17</h1><div class="price"><del>$160.00</del> <span class="sales">$140.00</span></div><p>Pay with Pix: <span class="price">$133.00</span></p>`)
    expect(product(kept).data.price).toBe(140)
    // a class that only says a list price exists strikes nothing
    const vtex = page(head.replace("140.00", "129.90"), `<h1>Men's Ride 17</h1><div class="listPrice"><del>$159.00</del></div><div class="sellingPrice sellingPrice--hasListPrice">$129.90</div><div class="spotPrice"><strong class="price">$123.40</strong> with Pix</div>`)
    expect(product(vtex).data.price).toBe(129.9)
    // struck in a club offer but shown as the price in the price box: the structured price stands
    const club = page(head, `<h1>Men's Ride 17</h1><div class="member-offer">Club price <del>$140.00</del> <span class="price">$119.00</span></div><div class="product-price"><span class="price">$140.00</span></div>`)
    expect(product(club).data.price).toBe(140)
  })

  it("a structured price the page marks as the regular price beside a lower current price is stale", () => {
    const stale = ld({ "@type": "Product", name: "Brunello 2019", offers: { "@type": "Offer", price: "39.90", priceCurrency: "EUR" } })
    const box = (regular: string, current: string) => `<h1>Brunello 2019</h1><div class="product-prices"><div class="product-discount">
      <span class="regular-price">${regular}</span></div><div><span class="current-price"><span class="product-price">${current}</span></span>
      <span class="discount-percentage">-13,5%</span></div></div>`
    expect(product(page(stale, box("39,90 €", "34,50 €"))).data.price).toBe(34.5)
    // the structured price the page sells at stays, whatever regular price it shows beside it
    expect(product(page(stale, box("45,00 €", "39,90 €"))).data.price).toBe(39.9)
    // a selling price marked with list words (VTEX's sellingPrice--hasListPrice) is no old price
    const vtex = `<h1>Brunello 2019</h1><span class="sellingPrice--hasListPrice">39,90 €</span><span class="installments-price">34,50 €</span>`
    expect(product(page(stale, vtex)).data.price).toBe(39.9)
    // without a discount that fits the two, a lower price beside the regular one is another offer's (a subscription's, a member's)
    const subscription = `<h1>Brunello 2019</h1><span class="regular-price">39,90 €</span><span class="subscription-price">34,50 €</span>`
    expect(product(page(stale, subscription)).data.price).toBe(39.9)
  })

  it("a WooCommerce variation chosen by the address or the picker is what the page sells", () => {
    const variations = [
      { attributes: { attribute_pa_weight: "50g" }, display_price: 9.5, sku: "TEA-50", is_in_stock: true },
      { attributes: { attribute_pa_weight: "100g" }, display_price: 17, sku: "TEA-100", is_in_stock: true },
      { attributes: { attribute_pa_weight: "250g" }, display_price: 38, sku: "TEA-250", is_in_stock: false },
    ]
    const parent = ld({ "@type": "Product", name: "Darjeeling", sku: "TEA", offers: [{ "@type": "AggregateOffer", lowPrice: "9.50", highPrice: "38.00", priceCurrency: "GBP" }] })
    const form = (selected: string) => `<h1>Darjeeling</h1><span class="sku">TEA</span><form class="variations_form cart" data-product_variations="${JSON.stringify(variations).replace(/"/g, "&quot;")}">
      <select name="attribute_pa_weight"><option value="">Choose an option</option>${["50g", "100g", "250g"].map((w) => `<option value="${w}"${w === selected ? " selected" : ""}>${w}</option>`).join("")}</select>
      <button type="submit" class="single_add_to_cart_button">Add to basket</button></form>`
    const byAddress = product(page(parent, form("")), { url: "https://tea.example/product/darjeeling/?attribute_pa_weight=100g" }).data
    expect([byAddress.price, byAddress.sku, byAddress.availability]).toEqual([17, "TEA-100", "InStock"])
    const byPicker = product(page(parent, form("250g")), { url: "https://tea.example/product/darjeeling/" }).data
    expect([byPicker.price, byPicker.sku, byPicker.availability]).toEqual([38, "TEA-250", "OutOfStock"])
    // nothing chosen: the parent's structured offer stands
    const none = product(page(parent, form("")), { url: "https://tea.example/product/darjeeling/" }).data
    expect([none.price, none.sku]).toEqual([9.5, "TEA"])
    // a related product's variation form is not the page's
    const related = `<section class="related products"><form class="variations_form" data-product_variations="${JSON.stringify([{ attributes: { attribute_pa_weight: "100g" }, display_price: 99, sku: "OTHER-100", is_in_stock: false }]).replace(/"/g, "&quot;")}">
      <select name="attribute_pa_weight"><option value="100g" selected>100g</option></select></form></section>`
    const withRelated = product(page(parent, related + form("")), { url: "https://tea.example/product/darjeeling/" }).data
    expect([withRelated.price, withRelated.sku]).toEqual([9.5, "TEA"])
    // a variation the shop switched off is not sold
    const off = variations.map((v) => (v.sku === "TEA-100" ? { ...v, variation_is_active: false } : v))
    const offForm = form("").replace(JSON.stringify(variations).replace(/"/g, "&quot;"), JSON.stringify(off).replace(/"/g, "&quot;"))
    expect(product(page(parent, offForm), { url: "https://tea.example/product/darjeeling/?attribute_pa_weight=100g" }).data.price).toBe(9.5)
  })

  it("a WooCommerce variation is chosen when the address sets every attribute the variations differ by, not an option beside them", () => {
    const variations = [
      { attributes: { attribute_pa_size: "250-g" }, display_price: 9.9, sku: "ESP-250", is_in_stock: true },
      { attributes: { attribute_pa_size: "1-kg" }, display_price: 29.9, sku: "ESP-1000", is_in_stock: true },
    ]
    const parent = ld({ "@type": "Product", name: "Espresso", sku: "ESP", offers: { "@type": "AggregateOffer", lowPrice: "9.90", highPrice: "29.90", priceCurrency: "EUR" } })
    // the grind changes no variation's price: it is an option of each
    const form = `<h1>Espresso</h1><form class="variations_form cart" data-product_variations="${JSON.stringify(variations).replace(/"/g, "&quot;")}">
      <select name="attribute_pa_size"><option value="">Choose</option><option value="250-g">250 g</option><option value="1-kg">1 kg</option></select>
      <select name="attribute_grind"><option value="">Choose</option><option value="beans">Beans</option><option value="fine">Fine</option></select></form>`
    const d = product(page(parent, form), { url: "https://roastery.example/product/espresso/?attribute_pa_size=1-kg" }).data
    expect([d.price, d.sku]).toEqual([29.9, "ESP-1000"])
    // the grind is an attribute every variation leaves empty ("any grind"): it varies nothing either
    const anyGrind = variations.map((v) => ({ ...v, attributes: { ...v.attributes, attribute_grind: "" } }))
    const withAny = form.replace(JSON.stringify(variations).replace(/"/g, "&quot;"), JSON.stringify(anyGrind).replace(/"/g, "&quot;"))
    expect(product(page(parent, withAny), { url: "https://roastery.example/product/espresso/?attribute_pa_size=1-kg" }).data.price).toBe(29.9)
    // a grind picked in advance beside the size chooses no variation, and does not keep the size's from being found
    const preset = form.replace('<option value="fine">', '<option value="fine" selected>').replace('<option value="1-kg">', '<option value="1-kg" selected>')
    expect(product(page(parent, preset), { url: "https://roastery.example/product/espresso/" }).data.price).toBe(29.9)
  })

  it("an aggregate offer's lowest price gives way to the amount the price box shows within its range", () => {
    const agg = ld({ "@type": "Product", name: "Barista Pro 1450", offers: { "@type": "AggregateOffer", lowPrice: "1249", highPrice: "1349", priceCurrency: "PLN", offerCount: 3 } })
    const box = `<h1>Barista Pro 1450</h1><div class="price-box"><span class="price">1 299,<span>00</span> zł</span></div><section><h2>Other offers</h2><p>from 1 249,00 zł</p></section>`
    expect(product(page(agg, box), { url: "https://market.example.pl/offer/barista-pro-14872563091" }).data.price).toBe(1299)
    // an amount outside the range is some other price; without a price box the lowest price stands
    expect(product(page(agg, box.replace("1 299,<span>00</span>", "1 499,<span>00</span>")), { url: "https://market.example.pl/offer/barista-pro-14872563091" }).data.price).toBe(1249)
    expect(product(page(agg, "<h1>Barista Pro 1450</h1>"), { url: "https://market.example.pl/offer/barista-pro-14872563091" }).data.price).toBe(1249)
  })

  it("a price comparison's aggregate keeps its lowest price: the page lists many offers in its range", () => {
    const html = `<html lang="de"><head><title>Sony WH-1000XM5 ab 279,00 € | Preisvergleich</title>
<script type="application/ld+json">{"@context":"https://schema.org","@type":"Product","name":"Sony WH-1000XM5","gtin13":"4548736132450","offers":{"@type":"AggregateOffer","lowPrice":"279.00","highPrice":"399.00","offerCount":"38","priceCurrency":"EUR"}}</script></head>
<body><main>
<h1>Sony WH-1000XM5</h1>
<div class="summary"><span class="summary__from">ab</span> <span class="summary__range">279,00 € – 399,00 €</span> <span>38 Angebote</span></div>
<div class="offerlist">
<div class="offer"><div class="offer__shop"><a href="/go/1">Händler A</a></div><div class="offer__price"><span class="gh_price">€ 289,90</span></div><div class="offer__shipping">inkl. Versand 294,89 €</div></div>
<div class="offer"><div class="offer__shop"><a href="/go/2">Händler B</a></div><div class="offer__price"><span class="gh_price">€ 279,00</span></div><div class="offer__shipping">inkl. Versand 284,99 €</div></div>
<div class="offer"><div class="offer__shop"><a href="/go/3">Händler C</a></div><div class="offer__price"><span class="gh_price">€ 299,00</span></div></div>
</div></main></body></html>`
    expect(product(html, { url: "https://www.preisvergleich.example.de/produkt/sony-wh-1000xm5-a2791234.html" }).data.price).toBe(279)
  })

  it("a product group whose variant the address does not choose has the group's id as SKU", () => {
    const variant = (sku: string, size: string) => ({ "@type": "Product", sku, size, name: "Alta Parka", offers: { "@type": "Offer", price: "449.95", priceCurrency: "PLN", url: `https://shop.example.pl/alta-parka.html?size=${size}` } })
    const group = ld({ "@type": "ProductGroup", productGroupID: "NV122U0AB-N11", name: "Alta Parka", hasVariant: [variant("NV122U0AB-N1100001000", "XS"), variant("NV122U0AB-N1100002000", "S")] })
    expect(product(page(group, "<h1>Alta Parka</h1><dl><dt>Article number</dt><dd>NV122U0AB-N11</dd></dl>"), { url: "https://shop.example.pl/alta-parka.html" }).data.sku).toBe("NV122U0AB-N11")
    // the address that chooses a size sells that variant
    expect(product(page(group, "<h1>Alta Parka</h1>"), { url: "https://shop.example.pl/alta-parka.html?size=S" }).data.sku).toBe("NV122U0AB-N1100002000")
    // only when the page shows it: Shopify's group id is its internal product number, and a tracking
    // parameter in the address chooses nothing
    const shopify = `<html><head><title>Merino Crew – Example</title>
<script type="application/ld+json">{"@context":"http://schema.org/","@type":"ProductGroup","@id":"https://shop.example.com/products/merino-crew#product","name":"Merino Crew","url":"https://shop.example.com/products/merino-crew","productGroupID":"8012345678901","brand":{"@type":"Brand","name":"Example"},"hasVariant":[
{"@type":"Product","@id":"https://shop.example.com/products/merino-crew?variant=44000000000001#variant","name":"Merino Crew - Navy / S","sku":"MC-NAV-S","offers":{"@type":"Offer","price":"89.00","priceCurrency":"USD","availability":"http://schema.org/InStock","url":"https://shop.example.com/products/merino-crew?variant=44000000000001"}},
{"@type":"Product","@id":"https://shop.example.com/products/merino-crew?variant=44000000000002#variant","name":"Merino Crew - Navy / M","sku":"MC-NAV-M","offers":{"@type":"Offer","price":"89.00","priceCurrency":"USD","availability":"http://schema.org/InStock","url":"https://shop.example.com/products/merino-crew?variant=44000000000002"}}]}</script></head>
<body><main><div class="product">
<h1 class="product__title">Merino Crew</h1>
<div class="price"><span class="price-item price-item--regular">$89.00 USD</span></div>
<form method="post" action="/cart/add" id="product-form" class="form" enctype="multipart/form-data"><input type="hidden" name="id" value="44000000000001" class="product-variant-id"><button type="submit" name="add" class="product-form__submit">Add to cart</button></form>
</div></main></body></html>`
    expect(product(shopify, { url: "https://shop.example.com/products/merino-crew?srsltid=AfmBOor1Xyz" }).data.sku).toBe("MC-NAV-S")
    expect(product(page(group, "<h1>Alta Parka</h1><p>Numer artykułu: NV122U0AB-N11</p>"), { url: "https://shop.example.pl/alta-parka.html" }).data.sku).toBe("NV122U0AB-N11")
  })

  it("reads BigCommerce's price box: the price marked with its tax display, not the non-sale or MSRP one", () => {
    const html = `<div class="productView-product"><h1 class="productView-title">Adjustable Kettlebell</h1>
            <div class="productView-price">
        <div class="price-section price-section--withoutTax rrp-price--withoutTax" >
            <span>MSRP:</span>
            <span data-product-rrp-price-without-tax class="price price--rrp">
                $199.99
            </span>
        </div>
        <div class="price-section price-section--withoutTax non-sale-price--withoutTax" >
            <span>Was:</span>
            <span data-product-non-sale-price-without-tax class="price price--non-sale">
                $179.99
            </span>
        </div>
        <div class="price-section price-section--withoutTax">
            <span class="price-label" >
                
            </span>
            <span class="price-now-label" >
                Now:
            </span>
            <span data-product-price-without-tax class="price price--withoutTax">$149.99</span>
        </div>
         <div class="price-section price-section--saving price" >
                <span class="price">(You save</span>
                <span data-product-price-saved class="price price--saving">
                    $30.00
                </span>
                <span class="price">)</span>
         </div></div>`
    // its structured offer says the price is before tax, so the shown price decides
    const offer = ld({ "@type": "Product", name: "Adjustable Kettlebell", offers: [{ "@type": "Offer", priceSpecification: { "@type": "UnitPriceSpecification", price: 149.99, priceCurrency: "USD", valueAddedTaxIncluded: "false" } }] })
    expect(product(page(offer, html)).data.price).toBe(149.99)
    expect(product(page("", html)).data.price).toBe(149.99)
  })

  it("reads a buy box set in an <aside> after the title", () => {
    const html = `<html><head><title>Trail Runner 2 – Example Outdoor</title></head>
<body><header><nav><a href="/">Home</a><a href="/shoes">Shoes</a></nav></header>
<main class="product-page">
<h1 class="product-title">Trail Runner 2</h1>
<div class="product-layout">
<section class="product-gallery"><img src="/img/tr2-1.jpg" alt="Trail Runner 2 side"><img src="/img/tr2-2.jpg" alt="Trail Runner 2 sole"></section>
<aside class="product-buybox">
<div class="product-price"><span class="price">$129.00</span></div>
<p class="stock-status">Sold out</p>
<button class="btn add-to-cart" disabled>Sold out</button>
<p class="sku">SKU: TR2-BLK</p>
</aside>
</div>
<section class="product-description"><h2>Description</h2><p>A light trail shoe with a rock plate and a 6 mm drop, built for long days on mixed terrain.</p></section>
</main></body></html>`
    const d = product(html, { url: "https://shop.example.com/products/trail-runner-2" }).data
    expect([d.price, d.sku, d.availability]).toEqual([129, "TR2-BLK", "OutOfStock"])
  })

  it("leaves a sidebar's bestsellers out of the price", () => {
    const side = `<aside id="column-left"><h3>Bestsellers</h3><div class="product-thumb"><a href="/p/lamp">Head lamp 400 lm</a><p class="price">649 Kč</p></div></aside>`
    const html = `${side}<div id="content"><h1>Trekking pack 45 l</h1><ul><li><span style="text-decoration: line-through;">3 190,00 Kč</span></li><li><h2>2 490,00 Kč</h2></li></ul></div>`
    expect(product(page("", html), { url: "https://shop.example.cz/batoh" }).data.price).toBe(2490)
  })

  it("an amount struck through by its style is an old price", () => {
    const html = `<h1>HP LP3065</h1><ul><li><span style="text-decoration: line-through;">$122.00</span></li><li><h2>$98.00</h2></li></ul>`
    expect(shop("https://shop.example.com/p/1", html).data.price).toBe(98)
    expect(shop("https://shop.example.com/p/1", `<h1>Mug</h1><div class="price"><span style="text-decoration:line-through">$20</span> $15</div>`).data.price).toBe(15)
  })

  it("reads 'related products' headings in more languages, also in scripts without word boundaries", () => {
    const html = (heading: string) => page("", `<h1>Makita DHP482RTJ</h1><ul><li><h2>1 299,00 zł</h2></li></ul>
      <h3>${heading}</h3><div class="row"><div class="caption"><h4><a href="/p/2">Makita DHP482Z</a></h4><p class="price">389,00 zł</p></div></div>`)
    for (const heading of ["Produkty powiązane", "Relaterade produkter", "関連商品", "Similar item to consider"]) expect(product(html(heading), { url: "https://shop.example.pl/p/1" }).data.price).toBe(1299)
  })

  it("a list of other products, each item with a link and a price, is other items wherever it stands", () => {
    const ranking = `<div class="side"><p>Best sellers</p><ol>${[["drip-50", "2,180"], ["drip-100", "3,980"], ["beans-1kg", "4,480"]].map(([slug, price]) => `<li><a href="/shop/${slug}/">${slug}</a><br><span class="price">${price}円</span></li>`).join("")}</ol></div>`
    const html = page("", `${ranking}<h1>ドリップバッグ コーヒー 100袋</h1><table><tr><td>価格</td><td><span class="price2">3,980円</span></td></tr></table>`)
    expect(product(html, { url: "https://item.example.jp/shop/drip-100/" }).data.price).toBe(3980)
    // a tier price list (no links) is the product's own
    const tiers = page("", `<h1>Kabel 5 m</h1><ul class="tiers"><li><span class="price">9,99 €</span> ab 1 Stück</li><li><span class="price">8,99 €</span> ab 10 Stück</li><li><span class="price">7,99 €</span> ab 50 Stück</li></ul>`)
    expect(product(tiers, { url: "https://shop.example.de/kabel" }).data.price).toBe(9.99)
  })

  it("what follows a 'Related products' heading is other items", () => {
    const html = `<h1>Arc Lamp</h1><div><strong>$245.00</strong><button>Add to cart</button></div>
      <div><h3>Customers also bought</h3></div><div class="row"><div><h4>Bulb</h4><p class="price">$12.00</p><button>Add to cart</button></div></div>`
    expect(shop("https://shop.example.com/p/1", html).data.price).toBe(245)
    const oos = page(ld({ "@type": "Product", name: "Vase", offers: { "@type": "Offer", price: "80", availability: "https://schema.org/OutOfStock" } }),
      `<h1>Vase</h1><p>This item is currently out of stock.</p><h2>You may also like</h2><div class="grid"><div><a>Bowl</a><button>Add to cart</button></div></div>`)
    expect(product(oos).data.availability).toBe("OutOfStock")
  })

  it("a product hidden from screen readers is still on the page", () => {
    const html = `<div aria-hidden="true"><div><h1>Seiko 5</h1><div>Price:</div><div>GBP 11.19</div></div></div>`
    expect(shop("https://shop.example.com/p/1", html).data.price).toBe(11.19)
  })
})

describe("names and pre-orders as site builders show them", () => {
  const shop = (url: string, body: string, head = "") => product(page(head, body), { url })
  it("names the product by its h1 when og:title is the h1 and the site's name, the h1 holding a dash itself", () => {
    const head = `<meta property="og:title" content="Moonphase Lamp – Hand-Glazed Stoneware | Northlight Ceramics"><meta property="og:site_name" content="Northlight Ceramics">`
    expect(shop("https://www.northlight.example/p/lamp", `<h1>Moonphase Lamp – Hand-Glazed Stoneware</h1><span class="price">$185.00</span>`, head).data.name).toBe("Moonphase Lamp – Hand-Glazed Stoneware")
    // a part that does not name the site stays
    const other = `<meta property="og:title" content="Moonphase Lamp – Hand-Glazed Stoneware | Blue"><meta property="og:site_name" content="Northlight Ceramics">`
    expect(shop("https://www.northlight.example/p/lamp", `<h1>Moonphase Lamp – Hand-Glazed Stoneware</h1><span class="price">$185.00</span>`, other).data.name).toBe("Moonphase Lamp – Hand-Glazed Stoneware | Blue")
  })

  it("does not name the product after a logo h1: the h2 that starts the page's title names it", () => {
    const head = `<title>Shin Ramyun 120g, 40 packs - Ramen | Coupang</title>`
    const body = `<header><h1 class="logo"><a href="/">Coupang</a></h1></header><div class="prod-buy"><h2 class="prod-buy-header__title">Shin Ramyun 120g, 40 packs</h2><span class="price">29,900원</span></div>`
    expect(shop("https://www.coupang.example/vp/products/7512", body, head).data.name).toBe("Shin Ramyun 120g, 40 packs")
  })

  it("reads a price named for screen readers on an element whose classes say nothing", () => {
    const body = (label: string) => `<h1>Espresso machine</h1><div class="mp0t_0a" aria-label="${label}"><span class="mli8">1&nbsp;299,<span>00</span>&nbsp;<span>zł</span></span></div><button>dodaj do koszyka</button>`
    expect(shop("https://allegro.example.pl/oferta/1", body("cena 1 299,00 zł")).data).toMatchObject({ price: 1299, currency: "PLN" })
    // a label that names no price is no price
    expect(shop("https://allegro.example.pl/oferta/1", body("ocena 4,87 na 5")).data.price).toBeUndefined()
  })

  it("gives the price with its tax when the structured offer says its price is before tax", () => {
    const ld = (vat: string) => `<script type="application/ld+json">{"@context":"https://schema.org","@type":"Product","name":"Combi Drill","offers":{"@type":"Offer","price":"74.99","priceCurrency":"GBP",
      "priceSpecification":{"@type":"PriceSpecification","price":"74.99","priceCurrency":"GBP","valueAddedTaxIncluded":${vat}}}}</script>`
    const body = `<h1>Combi Drill</h1><div class="pdp-price"><div class="price-inc"><span class="price-value">£89.99</span> <span>Inc. VAT</span></div><div class="price-ex"><span class="price-value">£74.99</span> <span>Ex. VAT</span></div></div>`
    expect(shop("https://trade.example.co.uk/p/4298", body, ld("false")).data.price).toBe(89.99)
    // a structured price with its tax, or one the shown price does not add a VAT rate to, stays
    expect(shop("https://trade.example.co.uk/p/4298", body, ld("true")).data.price).toBe(74.99)
    expect(shop("https://trade.example.co.uk/p/4298", body.replace("£89.99", "£149.99"), ld("false")).data.price).toBe(74.99)
  })

  it("reads the brand from a specification row labelled 'Brand' or 'Brand Name'", () => {
    const spec = (label: string) => `<h1>65W GaN Charger</h1><span class="price">US $12.84</span><ul class="specification--list"><li><div><span>${label}</span></div><div><span>UGREEN</span></div></li><li><div><span>Origin</span></div><div><span>CN</span></div></li></ul>`
    expect(shop("https://www.shop.example/item/1", spec("Brand Name")).data.brand).toBe("UGREEN")
    expect(shop("https://www.shop.example/item/1", spec("Brand")).data.brand).toBe("UGREEN")
    expect(shop("https://www.shop.example/item/1", spec("Brand Story")).data.brand).toBeUndefined()
  })

  it("takes an identifier from the address the page repeats, but not a measure or a word of the product's name", () => {
    const body = `<h1>Anker Nano Power Bank 10000mAh 22.5W</h1><span class="price">$35.90</span><div>Item 23519847362 · Capacity 10000mAh</div>`
    expect(shop("https://shop.example.sg/Anker-Nano-Power-Bank-10000mAh-22.5W-i.392102587.23519847362", body).data.sku).toBe("23519847362")
    expect(shop("https://shop.example.sg/Anker-Nano-Power-Bank-10000mAh-22.5W", body).data.sku).toBeUndefined()
    expect(shop("https://shop.example.sg/p/X200A7/power-bank", body.replace("Capacity", "Model X200A7 ·")).data.sku).toBe("X200A7")
  })

  it("reads a buy button that pre-orders as a pre-order", () => {
    const body = (button: string) => `<h1>Moonphase Lamp</h1><span class="price">$185.00</span><button class="add-to-cart">${button}</button>`
    expect(shop("https://www.northlight.example/p/lamp", body("Pre-Order")).data.availability).toBe("PreOrder")
    expect(shop("https://www.northlight.example/p/lamp", body("Add to Cart")).data.availability).toBe("InStock")
  })
})

describe("lettered identifiers", () => {
  it("takes a hyphenated identifier of letters after a shop-number label, and no plain word", () => {
    expect(product(page("", `<h1>Hoodie</h1><div class="product_meta"><span class="sku_wrapper">SKU: <span class="sku">woo-hoodie</span></span></div>`)).data.sku).toBe("woo-hoodie")
    expect(product(page("", `<h1>Merino Crew</h1><p>SKU: MCS-M-NVY</p>`)).data.sku).toBe("MCS-M-NVY")
    expect(product(page("", `<h1>Merino Crew</h1><p>SKU: none</p>`)).data.sku).toBeUndefined()
    // generic code labels still want a digit
    expect(product(page("", `<h1>Merino Crew</h1><p>Code: SUMMER-SALE</p>`)).data.sku).toBeUndefined()
  })
})

describe("what the shop-template rules leave alone (a review's cases)", () => {
  const shop = (url: string, body: string, head = "") => product(page(head, body), { url })

  it("keeps a qualified dollar sign's currency, and reads ISK on .is", () => {
    expect(shop("https://www.ebay.ca/itm/1234", `<h1>Watch</h1><div class="x-price-primary"><span>US $20.00</span></div>`).data.currency).toBe("USD")
    expect(shop("https://verslun.example.is/p/1", `<h1>Bolli</h1><span class="price">1.299 kr</span>`).data.currency).toBe("ISK")
  })

  it("reads in-stock wordings that mention a backorder or a reservation as in stock, and 'back soon' as nothing in stock", () => {
    expect(availabilityFromText("5 in stock (can be backordered)")).toBe("InStock")
    expect(availabilityFromText("Disponibile - Prenota e ritira in negozio")).toBe("InStock")
    expect(availabilityFromText("In stock. More colours coming soon")).toBe("InStock")
    expect(availabilityFromText("Bald wieder verfügbar")).not.toBe("InStock")
    expect(availabilityFromText("Verfügbar ab 15. März")).not.toBe("InStock")
  })

  it("reads amounts next to other numbers as before", () => {
    expect(parsePrice("5,99 € 12 x 1,5 L")?.price).toBe(5.99)
    expect(shop("https://shop.example.de/p/1", `<h1>Wasser</h1><div class="price">29,90 €<sup>12</sup></div>`).data.price).toBe(29.9)
    expect(parsePrice("Model TL-WR841N: 24.99")?.currency).toBeUndefined()
  })

  it("keeps vetoing another price's label however the line reads", () => {
    expect(shop("https://shop.example.co.uk/p/1", `<h1>Drill</h1><div>Was – now 20% off</div><div>£100.00</div><div>Now</div><div>£80.00</div>`).data.price).toBe(80)
    expect(shop("https://shop.example.com/p/1", `<h1>Drill</h1><div>Regular price (Save 20%)</div><div>$100.00</div><div>$80.00</div>`).data.price).toBe(80)
    expect(shop("https://shop.example.de/p/1", `<h1>Bohrer</h1><div>UVP inkl. MwSt.</div><div>99,99 €</div><div>79,99 €</div>`).data.price).toBe(79.99)
  })

  it("reads a spec heading beside the title as the product's, and what a heading above the title introduces as other items only after it", () => {
    expect(shop("https://shop.example.de/p/1", `<div class="col"><h1>Baby Seat</h1><p>Safe and light.</p><h3>Recommended age</h3><p>9-36 months</p><p>€89,00</p></div>`).data.price).toBe(89)
  })

  it("keeps a title whose h1 is the site's logo, and ignores a variant offer on another host", () => {
    const sony = shop("https://electronics.sony.com/p/1", `<header><h1 class="logo"><a href="/">Sony</a></h1></header><main><p>Noise cancelling.</p></main>`, `<meta property="og:title" content="Sony WH-1000XM4 Headphones | Sony">`)
    expect(sony.data.name).toBe("Sony WH-1000XM4 Headphones | Sony")
    const offers = [
      { "@type": "Offer", price: "29.00", priceCurrency: "USD", url: "https://s.example.com/products/print?variant=1" },
      { "@type": "Offer", price: "59.00", priceCurrency: "USD", url: "https://other.example.net/products/print?variant=2" },
    ]
    const html = page(ld({ "@type": "Product", name: "Canvas Print", offers }), `<h1>Canvas Print</h1>`)
    expect(product(html, { url: "https://s.example.com/products/print?variant=2" }).data.price).toBe(29)
  })

  it("reads WooCommerce's sale price, which it hides from screen readers", () => {
    const html = `<h1>Hoodie with Logo</h1><p class="price"><del aria-hidden="true"><span class="woocommerce-Price-amount amount"><bdi><span class="woocommerce-Price-currencySymbol">&pound;</span>45.00</bdi></span></del> <span class="screen-reader-text">Original price was: &pound;45.00.</span><ins aria-hidden="true"><span class="woocommerce-Price-amount amount"><bdi><span class="woocommerce-Price-currencySymbol">&pound;</span>35.00</bdi></span></ins><span class="screen-reader-text">Current price is: &pound;35.00.</span></p>`
    expect(shop("https://shop.example.co.uk/product/hoodie/", html).data.price).toBe(35)
  })
})
