import { describe, expect, it } from "vitest"
import { article, para, product } from "./helpers.ts"
import { ExtractError } from "../../src/extract/errors.ts"
import { applyPostProcess } from "../../src/extract/post-process.ts"
import { detectLanguage } from "../../src/extract/language.ts"
import { querySelectorAll } from "../../src/extract/html/selector.ts"
import { MAX_OPEN_ELEMENTS, parseHtml } from "../../src/extract/html/parser.ts"
import { selectHtml } from "../../src/extract/selectors.ts"
import { configPayloadProblems } from "../../src/extract/config-check.ts"

describe("sanitizing", () => {
  const evil = `<html><head><style>.x{color:red}</style><script>window.stolen = "SECRET-SCRIPT"</script></head>
    <body onload="alert('BODY-HANDLER')"><div class="content">
    <p onclick="alert('HANDLER')">A long paragraph of real news text, with enough words to count as content, about the evening <a href="javascript:alert('JSURL')">market</a> in town.</p>
    <img src="javascript:alert('IMGJS')" onerror="alert('ONERROR')"><img src="/ok.jpg" alt="ok">
    <script>document.write("INLINE-SCRIPT")</script><style>p{display:block} /* STYLE-TEXT */</style>
    <noscript>NOSCRIPT-TEXT</noscript><template>TEMPLATE-TEXT</template>
    ${para(3)}</div></body></html>`

  it("never outputs script, style, handlers or javascript: URLs", () => {
    const out = article(evil, { configs: [{ id: "c", payload: { selectors: { tags: [{ css: "a", attr: "href" }, { css: "p", attr: "onclick" }], images: [{ css: "img", attr: "src" }] } } }] })
    const json = JSON.stringify(out)
    for (const bad of ["SECRET-SCRIPT", "INLINE-SCRIPT", "STYLE-TEXT", "color:red", "BODY-HANDLER", "HANDLER", "JSURL", "IMGJS", "ONERROR", "javascript:", "NOSCRIPT-TEXT", "TEMPLATE-TEXT"]) {
      expect(json).not.toContain(bad)
    }
    expect(out.data.content).toContain("evening market in town")
    expect(out.data.images?.map((i) => i.url)).toEqual(["https://news.example.com/ok.jpg"])
  })
})

describe("postProcess", () => {
  const ctx = { url: "https://shop.example.com/a/b" }
  it("applies operations in the given order", () => {
    expect(applyPostProcess("f", "  Price: 1.234,50 EUR ", { regexReplace: { pattern: "^.*?:", replacement: "" }, trim: {}, parseNumber: { locale: "de" } }, ctx)).toBe(1234.5)
    expect(applyPostProcess("f", "Red, Green ,Blue", { split: { separator: "," }, lowercase: {} }, ctx)).toEqual(["red", "green", "blue"])
    expect(applyPostProcess("f", "abc", { uppercase: {} }, ctx)).toBe("ABC")
    expect(applyPostProcess("f", "../img/x.png", { absoluteUrl: {} }, ctx)).toBe("https://shop.example.com/img/x.png")
    expect(applyPostProcess("f", "javascript:alert(1)", { absoluteUrl: {} }, ctx)).toBeUndefined()
    expect(applyPostProcess("f", "A-B-C", { regexReplace: { pattern: "b", replacement: "x", flags: "gi" } }, ctx)).toBe("A-x-C")
    expect(applyPostProcess("f", "1,234", { parseNumber: { locale: "en" } }, ctx)).toBe(1234)
  })
  it("rejects unknown operations and bad patterns", () => {
    expect(() => applyPostProcess("f", "x", { explode: {} }, ctx)).toThrowError(ExtractError)
    expect(() => applyPostProcess("f", "x", { regexReplace: { pattern: "(" } }, ctx)).toThrowError(/invalid pattern/)
  })
  it("runs inside extract on the field of the highest-priority config", () => {
    const html = `<html><head><meta property="og:title" content="Hat"><meta property="product:price:amount" content="10"></head><body><span class="c">Wool, Red</span></body></html>`
    const out = product(html, { configs: [
      { id: "high", payload: { selectors: { color: [{ css: ".c" }] }, postProcess: { name: { uppercase: {} }, "attributes.color": { lowercase: {} } } } },
      { id: "low", payload: { postProcess: { name: { lowercase: {} } } } },
    ] })
    expect(out.data.name).toBe("HAT")
    expect(out.data.attributes?.color).toBe("wool, red")
    expect(out.metadata.configsApplied).toEqual(["high"])
  })
  it("lists a config only when its steps had a value to work on, or made one", () => {
    const html = `<html><head><meta property="og:title" content="Hat"></head><body><p>Wool</p></body></html>`
    const out = product(html, { configs: [
      // a selector that matches nothing, a step on a field without a value and on one the type lacks
      { id: "idle", payload: { selectors: { sku: [{ css: ".missing" }] }, postProcess: { brand: { trim: {} }, nosuchfield: { trim: {} } } } },
      { id: "default", payload: { postProcess: { description: { default: { value: "none given" } } } } },
    ] })
    expect(out.data.description).toBe("none given")
    expect(out.metadata.configsApplied).toEqual(["default"])
  })
})

describe("config precedence", () => {
  const html = `<html><head><meta property="og:title" content="From OG"></head><body><h1 class="a">From A</h1><h2 class="b">From B</h2>
    <div id="main"><p>Inside the root element there is a long enough paragraph of text, with commas, to be the article body.</p></div>
    <div id="other"><p>Outside the root element there is another long paragraph of text, with commas, that must not appear.</p></div></body></html>`
  it("the first config that yields a field wins it; later configs fill the rest", () => {
    const out = article(html, { configs: [
      { id: "first", payload: { selectors: { title: [{ css: ".missing" }], description: [{ css: "h2.b" }] } } },
      { id: "second", payload: { selectors: { title: [{ css: "h1.a" }], description: [{ css: "h1.a" }] } } },
      { id: "third", payload: { selectors: { title: [{ css: "h2.b" }] } } },
    ] })
    expect(out.data.title).toBe("From A")
    expect(out.data.description).toBe("From B")
    expect(out.metadata.configsApplied).toEqual(["first", "second"])
    expect(out.metadata.strategiesUsed[0]).toBe("selectors")
  })
  it("rootSelector limits the content and fields filters the output", () => {
    const out = article(html, { configs: [{ id: "r", payload: { rootSelector: "#main", fields: ["title", "content"] } }] })
    expect(out.data.content).toContain("Inside the root")
    expect(out.data.content).not.toContain("Outside the root")
    expect(out.metadata.rootSelector).toBe("#main")
    expect(Object.keys(out.data).sort()).toEqual(["content", "title"])
  })
  it("an invalid CSS selector is invalid_input", () => {
    try {
      article(html, { configs: [{ id: "x", payload: { selectors: { title: [{ css: "h1[" }] } } }] })
      expect.fail("should throw")
    } catch (e) {
      expect((e as ExtractError).errorClass).toBe("invalid_input")
    }
  })
})

describe("language detection", () => {
  it.each([
    ["en", "The weather was fine and the people in the town said that it was the best day of the year for all of them."],
    ["de", "Die Stadt hat am Montag beschlossen, dass die Straße nicht mehr für den Verkehr geöffnet wird, weil sie zu eng ist."],
    ["fr", "La ville a décidé lundi que la rue ne sera plus ouverte à la circulation, parce qu'elle est trop étroite pour les bus."],
    ["es", "La ciudad decidió el lunes que la calle no se abrirá más al tráfico porque es muy estrecha para los autobuses del centro."],
    ["it", "La città ha deciso lunedì che la strada non sarà più aperta al traffico perché è troppo stretta per gli autobus della zona."],
    ["pt", "A cidade decidiu na segunda-feira que a rua não será mais aberta ao trânsito porque é muito estreita para os ônibus da região."],
    ["nl", "De stad heeft maandag besloten dat de straat niet meer open gaat voor het verkeer, omdat die te smal is voor de bussen van de regio."],
  ])("%s", (lang, text) => {
    expect(detectLanguage(text)).toBe(lang)
  })
  it("prefers the declared <html lang>, else detects from the body", () => {
    expect(article(`<html lang="fr-FR"><body>${para(3)}</body></html>`).metadata.detectedLanguage).toBe("fr")
    const de = `<html><body><div class="text">${Array.from({ length: 4 }, () => "<p>Die Stadt hat am Montag beschlossen, dass die Straße nicht mehr für den Verkehr geöffnet wird, weil sie zu eng ist und die Anwohner sich beschwert haben.</p>").join("")}</div></body></html>`
    const out = article(de)
    expect(out.metadata.detectedLanguage).toBe("de")
    expect(out.data.lang).toBe("de")
  })
  it("returns undefined without evidence", () => {
    expect(detectLanguage("12345 !!!")).toBeUndefined()
  })
})

describe("HTML parser and selectors", () => {
  it("handles implied end tags, entities and raw text", () => {
    const doc = parseHtml(`<ul><li>one<li>two &amp; three</ul><p>a<p>b &eacute;&#233;&#x41;<script>if (a < b) {}</script><table><tr><td>x<td>y</table>`)
    expect(querySelectorAll(doc.root, "li").map((e) => e.children.join(""))).toEqual(["one", "two & three"])
    expect(querySelectorAll(doc.root, "p")).toHaveLength(2)
    expect(querySelectorAll(doc.root, "p + p")[0]!.children[0]).toBe("b ééA")
    expect(querySelectorAll(doc.root, "tr > td:nth-child(2)")[0]!.children[0]).toBe("y")
    expect(querySelectorAll(doc.root, "script")[0]!.children[0]).toBe("if (a < b) {}")
  })
  it("bounds the depth of deeply nested input and keeps its text (a browser's 512 open elements)", () => {
    const depth = 100_000
    const deep = `<html><body>${"<div>".repeat(depth)}${para(3)}${"</div>".repeat(depth)}<footer>after</footer></body></html>`
    const doc = parseHtml(deep)
    let deepest = 0
    const measure = (el: { children: ReadonlyArray<unknown> }, d: number) => {
      deepest = Math.max(deepest, d)
      for (const c of el.children) if (typeof c !== "string") measure(c as { children: ReadonlyArray<unknown> }, d + 1)
    }
    measure(doc.root, 0)
    expect(deepest).toBeLessThanOrEqual(MAX_OPEN_ELEMENTS + 1)
    expect(querySelectorAll(doc.root, "p")).toHaveLength(3)
    expect(querySelectorAll(doc.root, "footer")).toHaveLength(1)
    // The whole extraction runs over it without exhausting the stack.
    const out = article(deep)
    expect(JSON.stringify(out.data)).toContain("Paragraph 3 about the harbour")
  })
  it("spends a bounded budget searching the open elements, which real pages never reach", () => {
    // Every <li> searches the 512 open <div>s for an <li> to close: 512 steps a tag without the budget.
    const hostile = `${"<div>".repeat(520)}${"<li>x".repeat(300_000)}`
    const doc = parseHtml(hostile)
    expect(doc.searchSteps).toBe(8 * hostile.length + 65_536) // the budget ran out, and parsing went on
    expect(querySelectorAll(doc.root, "li")).toHaveLength(300_000)
    // A page of nested lists, tables and paragraphs stays far below it, so nothing changes for it.
    const real = `<html><body>${`<div class="c"><ul><li><p>one<li>two<ol><li>x</ol></ul><table><tr><td>a<td>b<tr><td>c</table><p>para <a href="#">l</a> <b>b</b></p></div>`.repeat(2_000)}</body></html>`
    const realDoc = parseHtml(real)
    expect(realDoc.searchSteps).toBeLessThan(real.length)
    expect(querySelectorAll(realDoc.root, "td")).toHaveLength(6_000)
  })
  it("builds the tree browsers build where pages break the rules", () => {
    // `<button/>` opens a button (the slash means nothing on it); the `</div>` that follows closes it,
    // so the main content after it is not inside the button
    const selfClosed = parseHtml(`<body><header><div class="search"><button class="go" /></div></header><main><p>Definition text</p></main></body>`)
    expect(querySelectorAll(selfClosed.root, "button main")).toHaveLength(0)
    expect(querySelectorAll(selfClosed.root, "body > main > p")).toHaveLength(1)
    // buttons do not nest
    expect(querySelectorAll(parseHtml(`<button>a<button>b</button>`).root, "button button")).toHaveLength(0)
    // a stray `</li>` is ignored inside a nested list instead of closing the menu item around it
    const menu = parseHtml(`<body><ul><li>Platform<div><ul><li>Analytics</li></li><li>Engagement</li></ul></div></li><li>Pricing</li></ul><p>After</p>`)
    expect(querySelectorAll(menu.root, "ul ul > li").map((e) => e.children.join(""))).toEqual(["Analytics", "Engagement"])
    expect(querySelectorAll(menu.root, "body > ul > li")).toHaveLength(2)
    // a stray `</p>` inside a button does not close the paragraph around the button
    expect(querySelectorAll(parseHtml(`<p>Text <button>go</p></button> more</p>`).root, "p")).toHaveLength(1)
    // content between `</head>` and `<body>` opens the body; the `<body>` tag only adds its attributes
    const early = parseHtml(`<html><head><title>t</title></head><header><a href="/">Shop</a></header><body class="page"><p>Body</p></body></html>`)
    expect(early.body.attr("class")).toBe("page")
    expect(querySelectorAll(early.root, "body > header")).toHaveLength(1)
    expect(querySelectorAll(early.root, "html > header")).toHaveLength(0)
    // a declarative shadow root's content is shown as its host's; an ordinary template stays inert
    const shadow = parseHtml(`<body><product-card><template shadowrootmode="open"><h3>Shadow title</h3></template><p>Light</p></product-card><template><p>Inert</p></template></body>`)
    expect(querySelectorAll(shadow.root, "product-card > h3").map((e) => e.children.join(""))).toEqual(["Shadow title"])
    expect(querySelectorAll(shadow.root, "template > p").map((e) => e.children.join(""))).toEqual(["Inert"])
    // head elements before the body stay where they are
    expect(querySelectorAll(parseHtml(`<html><head></head><link rel="x"><body><p>b</p></body></html>`).root, "body link")).toHaveLength(0)
  })
  it("supports attribute selectors and :not", () => {
    const doc = parseHtml(`<div class="a b" data-x="hello"><span id="s" class="c">1</span><span class="d">2</span></div>`)
    expect(querySelectorAll(doc.root, "div.a.b > span:not(.c)")).toHaveLength(1)
    expect(querySelectorAll(doc.root, "[data-x^=hel] #s")).toHaveLength(1)
    expect(querySelectorAll(doc.root, "span:first-child, span:last-child")).toHaveLength(2)
  })
})

describe("selector text", () => {
  const html = `<html><body><div class="card"><header>Card title</header><nav>Home</nav><p>First <b>line</b></p><svg><text>icon</text></svg><dl><dt>Size</dt><dd>XL</dd></dl></div></body></html>`
  const selected = (textOnly: boolean) =>
    selectHtml(parseHtml(html).root, { css: ".card", textOnly }, null)

  it("keeps a line per block with textOnly false, the blocks being those of every text reader", () => {
    expect(selected(false)).toEqual(["Card title\nHome\nFirst line\nSize\nXL"])
  })
  it("puts the same blocks on one line otherwise, and never reads an element that shows no text", () => {
    expect(selected(true)).toEqual(["Card title Home First line Size XL"])
  })
})

describe("config payload check", () => {
  it("checks a pattern without running it on text: one that backtracks without end answers at once", () => {
    // Run over even a few characters, it would outlast the test's timeout by days.
    const nested = "(".repeat(30) + ".*" + ")*".repeat(30) + "x"
    expect(configPayloadProblems({ postProcess: { title: { regexReplace: { pattern: nested } } } })).toEqual([])
    expect(configPayloadProblems({ postProcess: { title: { regexReplace: { pattern: "([" } } } }).map((p) => p.path))
      .toEqual(["payload.postProcess.title.regexReplace"])
  })
  it("counts field names in characters, as the document does, and the payload in bytes of JSON", () => {
    const emoji = "\u{1F600}".repeat(60) // 60 characters, 120 UTF-16 units
    expect(configPayloadProblems({ selectors: { [emoji]: [{ css: "h1" }] }, fields: [emoji] })).toEqual([])
    const long = "\u{1F600}".repeat(101)
    expect(configPayloadProblems({ selectors: { [long]: [{ css: "h1" }] }, fields: [long] }).map((p) => p.path))
      .toEqual(["payload.selectors", "payload.fields.0"])
    // 40 000 two-byte characters: 80 000 bytes as UTF-8 JSON, though only 40 000 UTF-16 units
    const big = { postProcess: { title: { prefix: { value: "é".repeat(20_000) } }, description: { suffix: { value: "é".repeat(20_000) } } } }
    expect(configPayloadProblems(big).map((p) => p.path)).toContain("payload")
  })
})
