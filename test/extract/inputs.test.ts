import { describe, expect, it } from "vitest"
import { article, para, product } from "./helpers.ts"
import { repairMojibake } from "../../src/extract/html/mojibake.ts"
import { ExtractError } from "../../src/extract/errors.ts"
import { extract, MAX_PROCESSED_CHARS } from "../../src/extract/extract.ts"

describe("markdown, text and JSON inputs", () => {
  it("markdown: title from the first heading, paragraphs as plain text", () => {
    const md = `# Spring *Festival* returns\n\nThe **festival** returns on [Saturday](https://x.example/sat) with music.\nIt lasts two days.\n\n## Programme\n\n- Concerts in the park\n- Food stalls\n\n![Stage](/stage.jpg)\n\n\`\`\`\ncode line\n\`\`\``
    const out = article(md, { format: "markdown" })
    expect(out.data.title).toBe("Spring Festival returns")
    expect(out.data.content.split("\n\n")).toEqual([
      "The festival returns on Saturday with music. It lasts two days.", "Programme", "Concerts in the park", "Food stalls", "code line",
    ])
    expect(out.data.images).toEqual([{ url: "https://news.example.com/stage.jpg", alt: "Stage" }])
    expect(out.metadata.inputFormat).toBe("markdown")
  })

  it("text: blank lines separate paragraphs, a short first line is the title", () => {
    const out = article("Council meeting\n\nThe council met on Monday.\nIt decided nothing.\n\nNext meeting in June.", { format: "text" })
    expect(out.data.title).toBe("Council meeting")
    expect(out.data.content).toBe("The council met on Monday.\nIt decided nothing.\n\nNext meeting in June.")
  })

  it("json: keys map to fields", () => {
    const out = product(JSON.stringify({ title: "Blue Vase", price: "1.234,56 €", stock: true, brand: { name: "Potter" }, sku: 991 }), { format: "json" })
    expect(out.data).toMatchObject({ name: "Blue Vase", price: 1234.56, currency: "EUR", availability: "InStock", brand: "Potter", sku: "991" })
  })

  it("json: a price text gives its currency too, unless the data names one", () => {
    expect(product(JSON.stringify({ name: "Thing", price: "£19.99" }), { format: "json" }).data).toMatchObject({ price: 19.99, currency: "GBP" })
    expect(product(JSON.stringify({ name: "Thing", price: "£19.99", currency: "usd" }), { format: "json" }).data).toMatchObject({ price: 19.99, currency: "USD" })
    expect(product(JSON.stringify({ currency: "CHF", name: "Thing", price: "€5" }), { format: "json" }).data).toMatchObject({ price: 5, currency: "CHF" })
  })

  it("json: markup in a value is read as the HTML pipeline reads it, never passed on", () => {
    const out = product(JSON.stringify({
      name: "<b>N</b><script>x()</script>",
      description: "<p>D one</p><script>evil()</script><p>D two</p>",
      brand: "<img src=x onerror=alert(1)>B"
    }), { format: "json" })
    expect(out.data).toMatchObject({ name: "N", description: "D one\n\nD two", brand: "B" })
    const a = article(JSON.stringify({ title: "T", body: "<p>Para one.</p><script>stealCookies()</script><style>.x{color:red}</style><p>Para two.</p>" }), { format: "json" })
    expect(a.data.content).toBe("Para one.\n\nPara two.")
    // Text with a lone "<" is text.
    expect(product(JSON.stringify({ name: "a < b" }), { format: "json" }).data.name).toBe("a < b")
  })

  it("json: values that break the output's types are left out (a negative price, an image size below 1, unknown image fields)", () => {
    const out = product(JSON.stringify({
      name: "P",
      price: -5,
      images: [{ url: "http://127.0.0.1/a.png", width: 0, height: -3, alt: " A ", onload: "x()" }, { url: "http://127.0.0.1/b.png", width: 640, height: 480.5 }]
    }), { format: "json" })
    expect(out.data.price).toBeUndefined()
    expect(out.data.images).toEqual([{ url: "http://127.0.0.1/a.png", alt: "A" }, { url: "http://127.0.0.1/b.png", width: 640 }])
  })

  it("json: JSON-LD is understood", () => {
    const out = article(JSON.stringify({ "@context": "https://schema.org", "@type": "BlogPosting", headline: "Hello", articleBody: "First paragraph.\n\nSecond paragraph.", author: { name: "Dee" } }), { format: "json" })
    expect(out.data.title).toBe("Hello")
    expect(out.data.content).toBe("First paragraph.\n\nSecond paragraph.")
    expect(out.data.author).toBe("Dee")
  })

  it("json: selectors with JSON paths", () => {
    const json = JSON.stringify({ data: { item: { label: "Clock", cost: [{ value: "$15.50" }] } } })
    const out = product(json, { format: "json", configs: [{ id: "c", payload: { selectors: { name: [{ json: "$.data.item.label" }], price: [{ json: "data.item.cost.0.value" }] } } }] })
    expect(out.data).toMatchObject({ name: "Clock", price: 15.5, currency: "USD" })
  })

  it("invalid JSON is a parse_error, empty input an invalid_input", () => {
    const run = (content: string, inputFormat: "json" | "html") => () => extract({ type: "article", content, inputFormat, url: null, configs: [] })
    expect(run("{not json", "json")).toThrowError(ExtractError)
    try { run("{not json", "json")() } catch (e) { expect((e as ExtractError).errorClass).toBe("parse_error") }
    try { run("   ", "html")(); expect.fail("should throw") } catch (e) { expect((e as ExtractError).errorClass).toBe("invalid_input") }
    try { extract({ type: "recipe" as "article", content: "x", inputFormat: "html", url: null, configs: [] }); expect.fail("should throw") } catch (e) { expect((e as ExtractError).errorClass).toBe("invalid_input") }
  })

  it("truncates input beyond the work limit", () => {
    const big = "<html><body><p>" + "word ".repeat(MAX_PROCESSED_CHARS / 5 + 10) + "</p></body></html>"
    const out = article(big)
    expect(out.metadata.truncated).toBe(true)
    expect(out.data.content.length).toBeGreaterThan(0)
  })
  it("sheds an oversized page's style sheets, drawings and largest scripts before cutting its text", () => {
    const bulk = Math.ceil(MAX_PROCESSED_CHARS / 3)
    const html = `<html><head><style>${"a{color:red}".repeat(bulk / 12)}</style><script type="application/ld+json">{"@type":"NewsArticle","headline":"Harbour works","author":{"@type":"Person","name":"Ann Lee"}}</script>
      <script>window.__STATE__=${JSON.stringify("x".repeat(bulk))}</script><script>var small = "<svg><!--";</script></head>
      <body><svg viewBox="0 0 1 1">${"<path d='M0 0'/>".repeat(bulk / 16)}</svg><article><h1>Harbour works</h1>${para(4)}</article></body></html>`
    expect(html.length).toBeGreaterThan(MAX_PROCESSED_CHARS)
    const out = article(html)
    expect(out.metadata.truncated).toBe(true)
    expect(out.data.content).toContain("Paragraph 4 about the harbour")
    // JSON-LD stays: the byline comes from it
    expect(out.data.author).toBe("Ann Lee")
  })
})

describe("text encoded as UTF-8 twice", () => {
  // what "—" and "é" become when their UTF-8 bytes are read as Latin-1 and encoded again
  const twice = (s: string) => Buffer.from(s, "utf8").toString("latin1")

  it("is repaired when the document shows such sequences with C1 control characters", () => {
    expect(repairMojibake(`itertools ${twice("—")} functions, and caf${twice("é")} ${twice("—")} open`)).toBe("itertools — functions, and café — open")
    const out = article(`<html><head><title>itertools ${twice("—")} loops</title></head><body><article><h1>itertools ${twice("—")} loops</h1>${para(3)}<p>Written by Zoë ${twice("—")} and ${twice("“")}quoted${twice("”")}.</p></article></body></html>`)
    expect(out.data.title).toBe("itertools — loops")
    expect(out.data.content).toContain("Written by Zoë — and “quoted”.")
  })

  it("leaves a document alone without that evidence: one stray sequence, or none with a C1 character", () => {
    expect(repairMojibake("Ã© is how some write it, and â\u0080 is cut short")).toBe("Ã© is how some write it, and â\u0080 is cut short")
    expect(repairMojibake(`one ${twice("—")} only`)).toBe(`one ${twice("—")} only`)
    expect(repairMojibake("Plain text with ümlauts — and dashes")).toBe("Plain text with ümlauts — and dashes")
  })
})
