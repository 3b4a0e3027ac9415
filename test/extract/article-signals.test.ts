/** Block signals of the main-content reader, each on a small synthetic page. */
import { describe, expect, it } from "vitest"
import { article, para } from "./helpers.ts"
import { Hint, hintOf, isConsentText } from "../../src/extract/article/main-content.ts"
import { sentenceParagraphs } from "../../src/extract/article/article.ts"
import { parseHtml, type Element } from "../../src/extract/html/parser.ts"
import { aboutThePage, looksLikeBody } from "../../src/extract/article/script-data.ts"
import { structuredListing } from "../../src/extract/article/item-list.ts"

const filler = (n: number) => Array.from({ length: n }, (_, i) => `<a href="/x${i}">Menu ${i}</a>`).join(" ")

describe("consent banners", () => {
  it("recognises a consent request in other languages", () => {
    expect(isConsentText("Wir und unsere Partner verwenden Cookies und ähnliche Technologien. Mit Klick auf „Alle akzeptieren“ stimmen Sie der Verarbeitung zu.")).toBe(true)
    expect(isConsentText("Nous utilisons des cookies pour mesurer l'audience. En poursuivant, vous acceptez leur utilisation et donnez votre consentement.")).toBe(true)
    expect(isConsentText("Die Bäckerei verkauft Cookies und Kuchen, jeden Samstag auf dem Markt am Rathaus.")).toBe(false)
  })

  it("recognises cookie-consent text and leaves baking cookies alone", () => {
    expect(isConsentText("We use cookies to give you the best online experience.")).toBe(true)
    expect(isConsentText("These cookies help us understand how visitors use our website and support analytics.")).toBe(true)
    expect(isConsentText("Bake the cookies for twelve minutes, until the edges turn golden.")).toBe(false)
    // an article's sentences about cookies address no visitor
    expect(isConsentText("Plausible's script is under 1 KB and sets no cookies, so there is no consent banner to add.")).toBe(false)
    expect(isConsentText("PECR applies in the UK to apps that use cookies or send marketing for advertising.")).toBe(false)
    // plural forms count: a banner that speaks of "websites" and "browsers"
    expect(isConsentText("These technologies are strictly necessary to provide services through our websites. To disable all cookies please use your browsers settings.")).toBe(true)
  })

  it("keeps a consent banner out of a short page's body", () => {
    const html = `<html><body><div class="shell"><div class="x1"><p>We use cookies to give you the best online experience. Please let us know if you agree to all of these cookies, which our partners use for analytics and advertising on this website.</p></div>
      <div class="x2"><p>Opening hours: the library is open from nine to five on weekdays, and on Saturday mornings.</p></div></div></body></html>`
    const body = article(html).data.content
    expect(body).toContain("Opening hours")
    expect(body).not.toContain("cookies")
  })
})

describe("script-rendered pages", () => {
  it("reads the markup inside a large noscript element when the visible page is nearly empty", () => {
    const posts = Array.from({ length: 6 }, (_, i) => `<div class="post"><p>Reply ${i + 1}: I tried the sync plugin on two laptops and it kept my daily notes in order, although the first import took several minutes to finish.</p></div>`).join("")
    const html = `<html><body><div id="app"><p>Loading…</p></div><noscript><div class="topic">${posts}</div></noscript></body></html>`
    const body = article(html).data.content
    expect(body).toContain("Reply 1: I tried the sync plugin")
    expect(body).toContain("Reply 6:")
  })

  it("ignores the noscript fallback when the visible page has the article", () => {
    const html = `<html><body><article>${para(5)}</article><noscript><div>${"<p>Please enable JavaScript to see the comments, which are loaded by a third-party service.</p>".repeat(30)}</div></noscript></body></html>`
    const body = article(html).data.content
    expect(body).toContain("Paragraph 5 about the harbour")
    expect(body).not.toContain("enable JavaScript")
  })
})

describe("listing pages", () => {
  const card = (i: number) => `<li class="card"><a href="/p/${i}"><h3>Trail runner model ${i} in recycled mesh</h3></a><span>$${100 + i}.00</span></li>`
  it("reads a product grid as the content of a collection page", () => {
    const html = `<html><body><nav>${filler(12)}</nav><main><h1>Men's running shoes</h1><ul class="grid">${Array.from({ length: 12 }, (_, i) => card(i)).join("")}</ul></main>
      <footer>${filler(8)}</footer></body></html>`
    const body = article(html).data.content
    expect(body).toContain("Trail runner model 0 in recycled mesh")
    expect(body).toContain("Trail runner model 11 in recycled mesh")
    expect(body).not.toContain("Menu 3")
  })

  it("reads a grid whose cards are a short name link and a price, beside a promotion that reads as prose", () => {
    const card = (i: number) => `<div class="cell"><a href="/p/${i}"><img src="/i/${i}.jpg" alt=""></a><a href="/p/${i}">Desk lamp ${i}</a><p>$ ${40 + i} +</p></div>`
    const html = `<html><body><nav>${filler(12)}</nav><main><h1>Accessories</h1>
      <div class="promo"><h2>Spring sale</h2><p>Buy more, save more when you outfit your full office this spring with our chairs and desks.</p>
      <p>Sale ends on Friday. While supplies last. One coupon per purchase, calculated on the subtotal before tax.</p></div>
      <div class="grid">${Array.from({ length: 60 }, (_, i) => card(i)).join("")}</div></main><footer>${filler(8)}</footer></body></html>`
    const body = article(html).data.content
    expect(body).toContain("Desk lamp 0")
    expect(body).toContain("Desk lamp 59")
    expect(body).toContain("$ 79 +")
  })

  it("reads a page whose main content a script reveals (hidden by its inline style), not a drawer hidden beside it", () => {
    const html = `<html><body><nav>${filler(12)}</nav><main><div class="lockdown-content" style="display:none;"><h1>Harbour works</h1>${para(6)}</div>
      <div class="drawer" style="display:none"><p>Sign up for our newsletter and get ten percent off your first order of maps.</p></div></main><footer>${filler(8)}</footer></body></html>`
    const body = article(html).data.content
    expect(body).toContain("Paragraph 1 about the harbour")
    expect(body).toContain("Paragraph 6 about the harbour")
    expect(body).not.toContain("newsletter")
    // deeper in the page, a hidden block stays hidden
    const deep = `<html><body><main><article>${para(4)}<div style="display:none"><p>A hidden paragraph that a tab would show, about the ferry timetable and its winter changes.</p></div></article></main></body></html>`
    expect(article(deep).data.content).not.toContain("ferry timetable")
  })

  it("keeps a list item that is a sentence with links in it, and still drops a list of links", () => {
    const html = `<html><body><nav>${filler(12)}</nav><main><article><h1>How to use beard oil</h1>${para(3, "oil")}
      <ol><li>Dispense the oil into your hand and then warm it between your palms.</li>
      <li>Use a <a href="/brush">boar's hair beard brush</a> or <a href="/comb">beard comb</a> to spread the oil evenly and shape your beard.</li></ol>
      <ul class="more"><li><a href="/a">Beard balm for dry winter days</a> and <a href="/b">beard wash</a></li></ul></article></main></body></html>`
    const body = article(html).data.content
    expect(body).toContain("Use a boar's hair beard brush or beard comb to spread the oil")
    expect(body).not.toContain("Beard balm for dry winter days")
  })

  it("leaves out a forum post's signature, its author's panel, its reply heading and a byline with its date", () => {
    const post = (who: string, n: number, heading: string) => `<div class="post"><dl class="postprofile"><dt><a class="username">${who}</a></dt><dd>Beiträge: ${40 + n}</dd><dd>Wohnort: Niedersachsen</dd></dl>
      <div class="postbody"><h3>${heading}</h3><div class="content">Post ${n}: Ich würde nicht warten, sondern sofort behandeln, solange die Temperaturen noch passen und die Winterbienen gesund aufgezogen werden.</div>
      <div class="signature">Imkern seit 201${n} – Carnica, Zander-Beuten</div></div></div>`
    const html = `<html><body><main class="section-viewtopic"><h1>Varroa-Behandlung im August</h1>${post("Bienenfreund", 1, "Varroa-Behandlung im August")}${post("Imker_Hans", 2, "Re: Varroa-Behandlung im August")}${post("Waldhonig", 3, "AW: Varroa-Behandlung im August")}</main></body></html>`
    const body = article(html, { url: "https://forum.example.de/viewtopic.php?t=1" }).data.content
    expect(body).toContain("Post 3: Ich würde nicht warten")
    expect(body).not.toContain("Imkern seit")
    expect(body).not.toContain("Wohnort")
    expect(body).not.toContain("Varroa-Behandlung im August")
    const news = `<html><body><main><article><h1>Leipzig baut Radwege</h1><div class="article__meta"><span>Von <a href="/autoren/kw">Katrin Wolff</a></span> <time datetime="2025-10-22T19:45:00+02:00">22.10.2025, 19:45 Uhr</time></div>${para(4)}</article></main></body></html>`
    expect(article(news).data.content).not.toContain("Katrin Wolff")
    // outside a discussion a "signature" is not a post's signature line
    const menu = `<html><body><main><article><h1>Our kitchen</h1>${para(3, "kitchen")}<section class="signature-dishes"><h2>Signature dishes</h2><p>Slow-roasted lamb shoulder with rosemary, garlic and a glaze of local honey, served with crushed new potatoes.</p></section></article></main></body></html>`
    expect(article(menu, { url: "https://restaurant.example.com/kitchen" }).data.content).toContain("Slow-roasted lamb shoulder")
  })

  it("leaves out a modal dialog (aria-modal) however much text it holds, like a <dialog>", () => {
    const policy = Array.from({ length: 40 }, (_, i) => `<p>Clause ${i + 1}: we keep the personal information you give us only as long as the law requires, and we never sell it to third parties.</p>`).join("")
    const html = `<html><body><nav>${filler(12)}</nav><main><section class="faq"><h2>What is an everyday shoe?</h2>${para(3, "shoe")}</section></main>
      <footer><a href="#policy">Privacy policy</a><div id="modal-policy" role="dialog" aria-modal="true"><h2>Privacy policy</h2>${policy}</div></footer></body></html>`
    const body = article(html).data.content
    expect(body).toContain("Paragraph 3 about the shoe")
    expect(body).not.toContain("Clause 1")
  })

  it("does not read a class that states a property (subscription-eligible, has-sidebar) as furniture", () => {
    const hint = (cls: string) => hintOf(parseHtml(`<div class="${cls}"><p>Text</p></div>`).body.children.find((c) => typeof c !== "string") as Element)
    for (const cls of ["card-wrapper subscription-eligible", "layout has-sidebar", "post no-comments", "page with-newsletter", "hasSidebar"]) expect(hint(cls)).not.toBe(Hint.Strong)
    for (const cls of ["subscription", "sidebar", "comments"]) expect(hint(cls)).toBe(Hint.Strong)
  })

  it("leaves out text kept for screen readers only", () => {
    const html = `<html><body><article>${para(4)}<p><span class="visually-hidden">Opens in a new window: the full council report</span>Residents can read the full report at the library on weekdays from nine to five.</p></article></body></html>`
    const body = article(html).data.content
    expect(body).toContain("Residents can read the full report")
    expect(body).not.toContain("Opens in a new window")
  })

  it("reads a card once that shows its name on its picture's link and in its heading", () => {
    const card = (i: number) => `<li class="grid__item"><div class="card-wrapper product-card-wrapper subscription-eligible"><a href="/p/${i}" class="media_link">Roast blend ${i}</a>
      <h3 class="card__heading"><a href="/p/${i}">Roast blend ${i}</a></h3><div class="price"><div class="price__regular"><span class="visually-hidden">Regular price</span><span>$${10 + i}.99</span></div>
      <div class="price__sale"><span class="visually-hidden">Sale price</span><span>$${10 + i}.99</span></div></div></div></li>`
    const html = `<html><body><nav>${filler(12)}</nav><main><h1>Coffee</h1><ul class="product-grid">${Array.from({ length: 40 }, (_, i) => card(i)).join("")}</ul></main><footer>${filler(8)}</footer></body></html>`
    const body = article(html).data.content
    expect(body).toContain("Roast blend 0")
    expect(body).toContain("Roast blend 19")
    expect(body.split("Roast blend 7\n").length - 1).toBe(1)
    expect(body.split("$17.99").length - 1).toBe(1)
    expect(body).not.toContain("Regular price")
  })

  it("treats cards that open with a date or a label before their linked headline as teasers", () => {
    const card = (i: number) => `<div class="item"><div class="tagline"><span>Dec ${i + 1}, 2025</span></div>
      <h3><a href="/story-${i}">Another long headline about travel number ${i}</a></h3>
      <p>An excerpt of the other story, long enough to read as prose: the airline said on Monday that its new cabins would fly from spring, with more seats and a quieter ride for everyone aboard. Its chief executive added that fares would not rise this year, and that the route to the coast would open again in April after a winter of repairs to the runway and the terminal.</p></div>`
    const html = `<html><body><div class="wrap"><h1>Rental cars</h1>${para(10)}</div>
      <div class="list">${Array.from({ length: 3 }, (_, i) => card(i)).join("")}</div></body></html>`
    const body = article(html).data.content
    expect(body).toContain("Paragraph 3 about the harbour")
    expect(body).not.toContain("An excerpt of the other story")
  })

  it("keeps a short article without its related-links list", () => {
    const related = Array.from({ length: 8 }, (_, i) => `<li><a href="/n/${i}">Another headline about the regional elections number ${i}</a></li>`).join("")
    const html = `<html><body><article><p>The son of a former president was stabbed during a lecture at a Berlin clinic on Tuesday evening, police said.</p>
      <p>A 57-year-old suspect was arrested at the scene, and a second man was injured while trying to stop the attacker.</p></article>
      <div><ul>${related}</ul></div></body></html>`
    const body = article(html).data.content
    expect(body).toContain("57-year-old suspect")
    expect(body).not.toContain("Another headline")
  })

  it("reads every paragraph of a page of short paragraphs, not only the one long enough to score", () => {
    for (const wrap of [(x: string) => x, (x: string) => `<html><body><article>${x}</article></body></html>`]) {
      const html = wrap(`<h1>Short Title</h1><p>First sentence of body here.</p><p>Second sentence here.</p><p>Third one.</p>`)
      const data = article(html).data
      expect(data.title).toBe("Short Title")
      expect(data.content).toBe("First sentence of body here.\n\nSecond sentence here.\n\nThird one.")
    }
    // a link list among them is still furniture
    const nav = `<p><a href="/a">Home</a> <a href="/b">News</a> <a href="/c">Sport</a> <a href="/d">Weather</a></p>`
    const withNav = article(`<h1>T</h1>${nav}<p>Alpha beta gamma delta epsilon.</p><p>Zeta eta.</p>`).data.content
    expect(withNav).toBe("Alpha beta gamma delta epsilon.\n\nZeta eta.")
  })

  it("does not repeat the title as the content of a page that shows little else", () => {
    expect(article(`<h1>Thing</h1><p>Body text.</p>`).data).toMatchObject({ title: "Thing", content: "Body text." })
    // a page that shows nothing but its title keeps it as its content
    expect(article(`<html><head><title>Nope</title></head><body><h1>Nope</h1></body></html>`).data.content).toBe("Nope")
  })

  it("prefers a structured articleBody over a listing reading", () => {
    const text = "The ferry timetable changes on Monday. ".repeat(20)
    const html = `<html><head><script type="application/ld+json">{"@type":"NewsArticle","headline":"Ferry","articleBody":${JSON.stringify(text)}}</script></head>
      <body><p>Short teaser.</p><ul>${Array.from({ length: 10 }, (_, i) => `<li><a href="/n/${i}">Unrelated headline about harbour traffic ${i}</a></li>`).join("")}</ul></body></html>`
    const body = article(html).data.content
    expect(body).toContain("ferry timetable changes")
    expect(body).not.toContain("Unrelated headline")
  })
})

describe("site vocabulary", () => {
  const section = (i: number) => `<div class="builder-widget widget-text"><div class="widget-container"><h2>Part ${i}</h2><p>Section ${i} of the guide explains how consultants plan their weeks, why travel takes a toll on them, and what they do to keep their evenings free for family.</p></div></div>`
  it("reads a page whose builder calls every block a widget", () => {
    const html = `<html><body><nav>${filler(10)}</nav><main>${Array.from({ length: 6 }, (_, i) => section(i + 1)).join("")}</main><footer>${filler(6)}</footer></body></html>`
    const body = article(html).data.content
    expect(body).toContain("Section 1 of the guide")
    expect(body).toContain("Section 6 of the guide")
  })

  it("reads the rest of an article that its site calls 'more' (NHK's content--detail-more) as content, more stories as furniture", () => {
    const hint = (cls: string) => hintOf(parseHtml(`<div class="${cls}"><p>Text</p></div>`).body.children.find((c) => typeof c !== "string") as Element)
    expect(hint("content--detail-more")).not.toBe(Hint.Strong)
    expect(hint("article-more")).not.toBe(Hint.Strong)
    expect(hint("more-stories")).toBe(Hint.Strong)
    expect(hint("more")).toBe(Hint.Strong)
  })

  it("knows readers' comments by their names in other languages", () => {
    const hint = (cls: string) => hintOf(parseHtml(`<div class="${cls}"><p>Text</p></div>`).body.children.find((c) => typeof c !== "string") as Element)
    for (const cls of ["a_com comentarios", "article__reactions", "kommentare", "commentaires-list", "commenti"]) expect(hint(cls)).toBe(Hint.Strong)
  })

  it("knows a paywall's barrier, a disclosure statement, a newspaper's cutline (caption) and a wiki's reference list and navigation box as furniture", () => {
    const hint = (cls: string) => hintOf(parseHtml(`<div class="${cls}"><p>Text</p></div>`).body.children.find((c) => typeof c !== "string") as Element)
    for (const cls of ["barrier", "barrier__offers", "disclosure", "cutline", "reflist", "navbox"]) expect(hint(cls)).toBe(Hint.Strong)
  })

  it("reads a Japanese article whose paragraphs end in a full stop as sentences, not as a short page", () => {
    const p = "東京都は来年度から都内の公立小中学校の給食費を実質的に無償化する方針を固めました。"
    expect(sentenceParagraphs({ paragraphs: [p, p], root: null })).toBe(2)
  })

  it("still drops sidebar modules even when they hold more text than the article", () => {
    const box = (i: number) => `<div class="modulo-sidebar"><p>Sidebar story ${i}: a long teaser paragraph about another race weekend, the drivers involved and the championship standings before the final round.</p></div>`
    const html = `<html><body><div class="articleBody"><p>The 2018 calendar has twelve rounds, opening at Interlagos in March and closing there in December, with two new circuits.</p><p>Tickets for every round go on sale in February, and children under twelve enter free.</p></div>
      <div class="col">${Array.from({ length: 7 }, (_, i) => box(i)).join("")}</div></body></html>`
    const body = article(html).data.content
    expect(body).toContain("twelve rounds")
    expect(body).not.toContain("Sidebar story")
  })

  it("reads a page whose builder prefixes every component, nested or not, with the same word", () => {
    // Adobe's page builder marks every container cmp-container, one inside the other, and its sections too.
    const part = (i: number, topic: string) => `<section class="cmp-container page-section"><div class="cmp-text"><h2>${topic}</h2>${para(2, topic)}</div></section>`
    const html = `<html><body><nav>${filler(10)}</nav><div class="cmp-container"><div class="cmp-container">
      ${part(1, "overview")}${part(2, "capabilities")}<div class="cmp-container">${part(3, "deals")}${part(4, "operations")}</div>
      </div></div><footer>${filler(6)}</footer></body></html>`
    const body = article(html).data.content
    expect(body).toContain("Paragraph 1 about the overview")
    expect(body).toContain("Paragraph 2 about the operations")
  })

  it("keeps a consent manager's cmp dialog out of the body", () => {
    const html = `<html><body><main><h1>Harbour works</h1>${para(4)}</main>
      <div class="cmp-banner"><p>We and our partners store and access information on your device, such as unique identifiers, to measure audiences and improve our services.</p></div></body></html>`
    const body = article(html).data.content
    expect(body).toContain("Paragraph 4 about the harbour")
    expect(body).not.toContain("our partners store")
  })

  // Documentation generators give each section the id of its heading's words.
  const docSection = (id: string, heading: string, topic: string) =>
    `<section id="${id}"><h2>${heading}<a class="headerlink" href="#${id}">¶</a></h2>${para(2, topic)}</section>`
  it("reads an id made of its own heading's words as that heading's anchor, not as layout vocabulary", () => {
    const html = `<html><body><nav>${filler(10)}</nav><main><h1>Data structures</h1>
      ${docSection("more-on-lists", "5.1. More on Lists", "list methods")}${["tuples", "sets", "dictionaries", "looping"].map((t, i) => docSection(t, `5.${i + 2}. ${t}`, t)).join("")}</main></body></html>`
    const body = article(html).data.content
    expect(body).toContain("Paragraph 2 about the list methods")
    expect(body).toContain("Paragraph 2 about the looping")
  })

  it("keeps reading the same words as furniture where no heading of the element has them", () => {
    const html = `<html><body><main><h1>Harbour works</h1>${para(4)}
      <div id="more-stories"><h3>Elsewhere</h3><p>Other stories from the council this week: the library roof, a new bus route, and the market square's lighting plan.</p></div></main></body></html>`
    const body = article(html).data.content
    expect(body).toContain("Paragraph 4 about the harbour")
    expect(body).not.toContain("Other stories from the council")
  })
})

describe("standfirsts", () => {
  const dek = "Ferries will run every twenty minutes from Monday, the harbour authority said, ending a year of delays."
  const page = (lead: string) => `<html><head><meta name="description" content="${dek}"></head><body><article><h1>Ferries return</h1>
    ${lead}${para(4)}</article></body></html>`
  it("leaves out a standfirst that repeats the page's description: it is the description, not the body", () => {
    const out = article(page(`<p class="article-dek">${dek}</p>`)).data
    expect(out.description).toBe(dek)
    expect(out.content).not.toContain("every twenty minutes")
    expect(out.content).toContain("Paragraph 1 about the harbour")
  })
  it("keeps a first paragraph that repeats the description when nothing marks it as a standfirst", () => {
    const out = article(page(`<p>${dek}</p>`)).data
    expect(out.content.startsWith(dek)).toBe(true)
  })
})

describe("figures", () => {
  it("reads a table or a code listing wrapped in a figure as content, and a picture's caption as furniture", () => {
    const html = `<html><body><article><h1>Supplement survey</h1>${para(3, "survey")}
      <figure class="wp-block-table"><table><tr><th>Motivation</th><th>Share of respondents</th></tr><tr><td>Energy and focus</td><td>61.6%</td></tr><tr><td>Gut health</td><td>45.6%</td></tr></table></figure>
      <figure class="listing"><div class="file">Filename: src/lib.rs</div><pre>pub trait Summary {\n    fn summarize(&amp;self) -&gt; String;\n}</pre></figure>
      <figure><img src="/harbour.jpg" alt=""><div class="note">The harbour at dawn, seen from the northern breakwater before the works began.</div></figure>
      ${para(2, "results")}</article></body></html>`
    const body = article(html).data.content
    expect(body).toContain("Energy and focus 61.6%")
    expect(body).toContain("pub trait Summary")
    expect(body).not.toContain("The harbour at dawn")
    expect(body).toContain("Paragraph 2 about the results")
  })
})

describe("consent-manager dialogs on script-rendered pages", () => {
  const dialogText = Array.from({ length: 8 }, (_, i) => `<section class="ot-cat-grp"><h3>Purpose ${i + 1}</h3><p>Your data can be used to measure the delivery of content and to improve the services of our partners, who may process it on the basis of legitimate interest.</p></section>`).join("")
  it("never takes the body from inside a consent dialog, even when it holds most of the page's text", () => {
    const html = `<html><body class="cookies-not-set"><div id="app"><h1>Front page</h1><ul class="stories">${
      Array.from({ length: 6 }, (_, i) => `<li><a href="/s/${i}">Story number ${i + 1} with a headline long enough to be a teaser</a><p>Short summary ${i + 1} of the story, in one sentence.</p></li>`).join("")
    }</ul></div><div id="onetrust-consent-sdk"><div id="onetrust-pc-sdk"><div id="ot-pc-content">${dialogText}</div></div></div></body></html>`
    const content = article(html).data.content
    expect(content).not.toContain("legitimate interest")
    expect(content).toContain("Short summary 1 of the story")
  })

  it("does not read a page-state class on <body> (cookies-not-set) as a consent dialog", () => {
    const html = `<html><body class="single-post cookies-not-set"><article><h1>Garden notes</h1>${para(4, "garden")}</article></body></html>`
    expect(article(html).data.content.split("\n\n")).toHaveLength(4)
  })
})

describe("script-data reading (bodies shipped inside inline script data)", () => {
  const describe_ = `<meta name="description" content="The council says the quay stays closed until spring.">`
  const shell = (head: string, script: string, visible = `<div id="root"><p>Loading…</p></div>`) =>
    `<html><head><title>Harbour works extended | Example News</title>${describe_}${head}</head><body>${visible}<script>${script}</script></body></html>`
  const bodyHtml = Array.from({ length: 5 }, (_, i) => `<p>Part ${i + 1}: the harbour works extended past the winter, the council said, and the quay stays closed to traffic until the spring.</p>`).join("")

  it("reads an HTML body from a framework's state (JSON inside a script)", () => {
    const state = { props: { post: { id: 7, contents: { html: bodyHtml }, author: "Ann" } } }
    const out = article(shell("", `window.__STATE__ = ${JSON.stringify(state)};`))
    const paragraphs = out.data.content.split("\n\n")
    expect(paragraphs).toHaveLength(5)
    expect(paragraphs[0]).toMatch(/^Part 1: the harbour works extended/)
    expect(out.data.content).not.toContain("<p>")
  })

  it("reads JSON serialized inside a script string (React server components)", () => {
    const inner = JSON.stringify(["$", "div", null, { dangerouslySetInnerHTML: { __html: bodyHtml } }])
    const out = article(shell("", `self.__next_f.push([1, ${JSON.stringify("5:" + inner + "\n")}])`))
    expect(out.data.content.split("\n\n")).toHaveLength(5)
  })

  it("reads plain prose strings and leaves code, URLs and serialized JSON alone", () => {
    const prose = "The harbour works extended past the winter, the council said on Tuesday. ".repeat(3) +
      "Residents were asked to plan their journeys accordingly, and the quay stays closed until spring. ".repeat(3)
    expect(looksLikeBody(prose)).toBe(true)
    expect(looksLikeBody("function(a){return a.map((x) => x + 1);} ".repeat(10))).toBe(false)
    expect(looksLikeBody(JSON.stringify({ a: bodyHtml, b: 1, c: 2 }))).toBe(false)
    expect(looksLikeBody("<div><span>label</span></div>".repeat(12))).toBe(false)
    const out = article(shell("", `var data = ${JSON.stringify({ text: prose })}`))
    expect(out.data.content).toContain("Residents were asked to plan their journeys")
  })

  it("takes only a text about the page (its title and description), not another item's", () => {
    const other = Array.from({ length: 5 }, (_, i) => `<p>Item ${i + 1}: this wireless speaker fills a living room with warm sound and lasts a full day on one charge.</p>`).join("")
    const out = article(shell("", `window.__STATE__ = ${JSON.stringify({ featured: { html: other } })};`))
    expect(out.data.content).not.toContain("wireless speaker")
    expect(aboutThePage(["The harbour works extended past winter."], "Harbour works extended")).toBe(false) // too few words to tell
    expect(aboutThePage(["The harbour works were extended past the winter, the council said."], "Harbour works extended past winter")).toBe(true)
  })

  it("is not used when the visible page has the article", () => {
    const other = Array.from({ length: 5 }, (_, i) => `<p>Harbour works extended, draft ${i + 1}: an older version of the story kept in the page's data for the editor preview.</p>`).join("")
    const out = article(shell("", `window.__STATE__ = ${JSON.stringify({ draft: { html: other } })};`, `<article><h1>Harbour works extended</h1>${para(5)}</article>`))
    expect(out.data.content).not.toContain("draft")
    expect(out.data.content.split("\n\n")).toHaveLength(5)
  })
})

describe("structured-listing reading (collections described in structured data)", () => {
  const ld = (o: unknown) => `<script type="application/ld+json">${JSON.stringify(o)}</script>`
  // enough cards to be clearly more than the empty grid shows (a reading must beat it by 200 characters)
  const names = ["Trail Runner", "Road Glide", "Summit Boot", "City Walker", "Harbour Sandal"].flatMap((n) => [1, 2, 3].map((v) => `${n} ${v}`))

  it("reads an ItemList's items as one paragraph each (name and price, no descriptions)", () => {
    const list = { "@context": "https://schema.org", "@type": "ItemList", itemListElement: names.map((n, i) => ({ "@type": "ListItem", position: i + 1,
      item: { "@type": "Product", name: n, description: "A long description no card shows.", offers: { "@type": "Offer", price: `${80 + i}.00`, priceCurrency: "USD" } } })) }
    const html = `<html><head><title>Running shoes</title>${ld(list)}</head><body><div id="grid"></div></body></html>`
    const paragraphs = article(html).data.content.split("\n\n")
    expect(paragraphs).toEqual(names.map((n, i) => `${n} $${80 + i}.00`))
  })

  it("reads one Product node per card, names decoded, brand first when the name lacks it", () => {
    const html = `<html><head><title>Sneakers</title>${names.map((n, i) => ld({ "@type": "Product", name: i === 0 ? "Women&apos;s Runner" : n, brand: { "@type": "Brand", name: "Topo" } })).join("")}</head><body><div id="grid"></div></body></html>`
    const paragraphs = article(html).data.content.split("\n\n")
    expect(paragraphs[0]).toBe("Topo Women's Runner")
    expect(paragraphs).toHaveLength(names.length)
  })

  it("ignores breadcrumbs, short lists and pages whose markup has the content", () => {
    const crumbs = { "@type": "BreadcrumbList", itemListElement: names.map((n, i) => ({ "@type": "ListItem", position: i + 1, name: n })) }
    expect(structuredListing([crumbs])).toEqual([])
    expect(structuredListing(names.slice(0, 3).map((n) => ({ "@type": "Product", name: n })))).toEqual([])
    expect(structuredListing(names.slice(0, 4).map((n) => ({ "@type": "Product", name: n })))).toHaveLength(4)
    const list = { "@type": "ItemList", itemListElement: names.map((n) => ({ "@type": "ListItem", name: n })) }
    const html = `<html><head>${ld(list)}</head><body><article><h1>Shoe guide</h1>${para(5)}</article></body></html>`
    expect(article(html).data.content).not.toContain("Summit Boot")
  })
})

describe("collections that read as prose", () => {
  const teaser = (i: number) =>
    `<div class="card"><h3><a href="/story-${i}">Story number ${i} about the regional elections</a></h3><p>Candidate ${i} promised new bus lines, cheaper rents and longer library hours in the debate.</p></div>`
  const lead = `<div class="lead"><p>The regional elections are on Sunday, and the polls stay open from eight in the morning until eight in the evening.</p>
    <p>Results for every district will be published here as soon as the counting is done, usually before midnight.</p></div>`

  it("reads a front as its teasers when they hold several times the text of the prose block", () => {
    // four sections of teasers, none holding most of the page: in the article reading each is a teaser list (furniture)
    const sections = [0, 1, 2, 3].map((s) => `<section class="stories">${[1, 2, 3, 4].map((i) => teaser(s * 4 + i)).join("")}</section>`).join("")
    const html = `<html><body><main>${lead}${sections}</main></body></html>`
    const body = article(html).data.content
    expect(body).toContain("Story number 7 about the regional elections")
    expect(body).toContain("Candidate 12 promised")
  })

  it("keeps each result's linked headline over its own sentence, not a heading that only links", () => {
    const result = (i: number) => `<li><article class="Card_card"><div class="Card_body"><span class="Card_kicker">Money</span>
      <h2 class="Card_headline"><a href="/money/result-${i}">Result ${i}: heat pump grants after the April changes</a></h2>
      <p class="Card_standfirst">The boiler upgrade grant now covers more homes, but installers warn that waiting lists in region ${i} have grown to four months.</p></div></article></li>`
    const html = `<html><body><main><h1>Search results for "heat pump"</h1><ol class="results">${[1, 2, 3, 4, 5, 6].map(result).join("")}</ol>
      <h3 class="section-title"><a href="/topics/energy">More on energy</a></h3><h3 class="section-title"><a href="/topics/homes">More on homes</a></h3></main></body></html>`
    const body = article(html).data.content
    expect(body).toContain("Result 3: heat pump grants after the April changes")
    expect(body).toContain("waiting lists in region 3")
    expect(body).not.toContain("More on energy")
  })

  it("keeps an article's related teasers out when the article holds most of the text", () => {
    const html = `<html><body><main><article>${para(6)}</article><section class="stories">${Array.from({ length: 4 }, (_, i) => teaser(i + 1)).join("")}</section></main></body></html>`
    const body = article(html).data.content
    expect(body).toContain("Paragraph 6 about the harbour")
    expect(body).not.toContain("Story number 2")
  })
})

describe("lines between paragraphs that are the page's furniture", () => {
  const page = (inserts: ReadonlyArray<string>) =>
    `<html><body><article>${para(3)}${inserts.map((t) => `<p>${t}</p>`).join("")}${para(3, "bridge")}</article></body></html>`

  it("drops a picture's caption that ends with its credit, and keeps a sentence that mentions a photo", () => {
    const body = article(page([
      "Protesters gathered outside the court on Monday (Image: GETTY )",
      "The new bridge seen from the north bank (Photo: Jane Doe/Reuters)",
      "She said the photo, taken in 1998, had never been published before."
    ])).data.content
    expect(body).not.toContain("Protesters gathered")
    expect(body).not.toContain("north bank")
    expect(body).toContain("never been published before")
    expect(body).toContain("Paragraph 3 about the bridge")
  })

  it("drops a caption beside its picture that ends with an unbracketed credit, and keeps a line that is only a credit", () => {
    const figure = (caption: string) => `<div class="main-image"><img src="/t.jpg" alt=""><div class="main-image__author">${caption}</div></div>`
    const html = `<html><body><article>${para(2)}${figure("Amur tiger Taifun in its enclosure — Foto: Divulgação/Governo de SP")}${para(2, "zoo")}
      <div class="photo"><img src="/u.jpg"><span class="photo__caption">Зоопарк зимой <span>Фото: пресс-служба зоопарка</span></span></div>
      <div class="mainPhoto"><img src="/v.jpg"><div>Zmiany w przepisach od 1 stycznia. <span>Fot. Jakub Kamiński / Agencja Wyborcza</span></div></div>
      <div class="imgBox"><img src="/w.jpg"><p class="imgDesc">拱墅区一处正在施工的加装电梯项目。 记者 王晓峰 图</p></div>
      ${figure("Main image credit: Getty")}<p>The agency said the photo: a tiger, taken in 1998, had never been published before today.</p>${para(2, "bridge")}</article></body></html>`
    const body = article(html).data.content
    for (const gone of ["Amur tiger", "Зоопарк зимой", "Zmiany w przepisach", "加装电梯项目"]) expect(body).not.toContain(gone)
    expect(body).toContain("Main image credit: Getty")
    expect(body).toContain("never been published before today")
    // beside no picture, a line ending with a credit is the text's own
    expect(article(page(["Our reporter asked for the original picture — Foto: Archiv"])).data.content).toContain("Our reporter asked")
  })

  it("drops short lines above the headline when the body holds it (a top bar's rates, a kicker)", () => {
    const html = `<html><body><div class="topline"><span>USD 92,41</span><span>EUR 100,17</span><span>Brent 71,38</span></div>
      <div class="page"><p>Energy transition</p><h1>Tigers arrive at the city zoo</h1><p>The zoo received a pair of young Amur tigers from Khabarovsk this week, keepers said.</p>${para(3)}</div></body></html>`
    const body = article(html).data.content
    expect(body).not.toContain("USD 92,41")
    expect(body).not.toContain("Energy transition")
    expect(body).toContain("received a pair of young Amur tigers")
    // a paragraph above the headline stays
    const long = `<html><body><div class="page"><p>This story was first published in our weekend edition, and has been updated with the council's vote on Tuesday evening.</p><h1>Tigers arrive</h1>${para(3)}</div></body></html>`
    expect(article(long).data.content).toContain("first published in our weekend edition")
    // an h1 after paragraphs heads a part of the text: the short lines before it stay
    const inside = `<html><body><article><h2>Packing list for the trip</h2><p>Bring the following items:</p><ul><li>Passport and a copy of it</li><li>A rain jacket</li></ul>${para(2)}<h1>Day one: arrival</h1>${para(3, "bridge")}</article></body></html>`
    const kept = article(inside).data.content
    for (const line of ["Packing list for the trip", "Bring the following items:", "Passport and a copy of it"]) expect(kept).toContain(line)
  })

  it("drops an embedded video player's title", () => {
    const html = `<html><body><article>${para(3)}<div class="video-player" data-video-id="12"><div class="video-player__poster"><img src="/p.jpg" alt=""></div>
      <span class="video-player__title">Experts on the minimum wage rise: employers are divided</span></div>${para(3, "bridge")}</article></body></html>`
    const body = article(html).data.content
    expect(body).not.toContain("Experts on the minimum wage")
    expect(body).toContain("Paragraph 3 about the bridge")
    const stats = `<html><body><article>${para(3)}<div class="player-stats"><p>Jane scored 31 goals in 40 games this season, a club record for a defender.</p></div>${para(2, "bridge")}</article></body></html>`
    expect(article(stats).data.content).toContain("Jane scored 31 goals")
  })

  it("drops ages, reading times and notices that the article goes on, in several languages", () => {
    const body = article(page([
      "Publié il y a 2 heures, modifié il y a 38 minutes",
      "vor 3 Stunden",
      "2 часа назад",
      "Temps de lecture 5 min.",
      "Lesezeit: 4 Min.",
      "6 min read",
      "Dalsza część artykułu pod materiałem wideo",
      "Story continues below advertisement",
      "Il y a 20 ans, la chute du mur",
      "20 лет назад: наводнение",
      "Veröffentlicht wurde die Studie 2021 im Fachjournal Nature.",
      "Publié en 2019, le rapport a été contesté par les syndicats.",
      "Continúa tras la reunión el debate sobre el presupuesto",
    ])).data.content
    for (const gone of ["Publié il y a", "vor 3 Stunden", "2 часа назад", "Temps de lecture", "Lesezeit", "min read", "Dalsza", "continues below"]) expect(body).not.toContain(gone)
    for (const kept of ["Il y a 20 ans, la chute du mur", "20 лет назад", "Veröffentlicht wurde die Studie", "Publié en 2019", "Continúa tras la reunión"]) expect(body).toContain(kept)
  })

  it("drops the site's notices (an unsupported browser, a failed widget) and short interface labels", () => {
    const body = article(page([
      "We've detected you are on Internet Explorer. For the best experience, please update to a modern browser.",
      "Something went wrong. Please try again later.",
      "Text size",
      "DON'T MISS",
      "Advert",
      "Related articles:",
      "Promises work in the latest versions of all modern browsers, the authors of the guide wrote in their notes."
    ])).data.content
    for (const junk of ["Internet Explorer", "Something went wrong", "Text size", "DON'T MISS", "Advert\n", "Related articles"]) expect(body).not.toContain(junk)
    expect(body).toContain("all modern browsers")
  })

  it("drops the ages of posts and answers, and keeps a sentence that says how long ago something happened", () => {
    const body = article(page([
      "6 years, 9 months ago",
      "Posted by harbourfan 3 hours ago",
      "2d ago",
      "The bridge was closed 40 years ago, after a storm damaged two of its piers."
    ])).data.content
    for (const stamp of ["9 months ago", "3 hours ago", "2d ago"]) expect(body).not.toContain(stamp)
    expect(body).toContain("closed 40 years ago")
  })

  it("drops calls to subscribe or buy with a code, and keeps prose about subscriptions", () => {
    const body = article(page([
      "Get the magazine delivered through your letterbox every month. 12 issues for £11.99.",
      "Use the code SAVE50 at checkout for 20% off your first order.",
      "Subscriptions to streaming services rose by a tenth last year, the regulator said in its annual report."
    ])).data.content
    expect(body).not.toContain("letterbox")
    expect(body).not.toContain("SAVE50")
    expect(body).toContain("Subscriptions to streaming services rose")
  })

  it("drops a forum's counters, its who-is-online block, a Q&A site's closing notice and a quote's attribution", () => {
    const body = article(page([
      "3 Likes",
      "Viewed 1k times",
      "Wer ist online?",
      "Mitglieder in diesem Forum: Werkstatt_Uwe und 14 Gäste",
      "Not the answer you're looking for? Browse other questions tagged find gnu or ask your own question.",
      "3 likes in a week surprised her",
    ])).data.content
    for (const gone of ["3 Likes", "Viewed", "Wer ist online", "Mitglieder in diesem Forum", "Not the answer"]) expect(body).not.toContain(gone)
    expect(body).toContain("3 likes in a week surprised her")
    const quoted = `<html><body><article>${para(3)}<blockquote><div><cite><a href="/u/5512">Bernd_K</a> hat geschrieben: <a href="#p1">↑</a><span>Mo 30. Nov 2026, 19:42</span></cite>Kann es sein, dass die neue Kette auf den alten Ritzeln nicht mehr greift?</div></blockquote>
      <blockquote><p>Cities are the great laboratories of democracy, and always have been.</p><cite>Jane Jacobs</cite></blockquote></article></body></html>`
    const q = article(quoted).data.content
    expect(q).toContain("Kann es sein, dass die neue Kette")
    expect(q).not.toContain("hat geschrieben")
    expect(q).toContain("Jane Jacobs")
  })

  it("drops appeals to support the site's journalism, and keeps prose about funding news", () => {
    const body = article(page([
      "Will you support Civic Grid’s explanatory journalism?",
      "Most news outlets make their money through advertising or subscriptions. We rely on readers like you to keep our work free for everyone.",
      "Make a one-time contribution today.",
      "The foundation pledged $5m to support local journalism in rural counties.",
      "Readers like you often ask why the bridge was closed; here is the answer from the council.",
      "Fans were urged to make a donation to the victims' families after the match.",
    ])).data.content
    for (const gone of ["Will you support", "rely on readers like you", "one-time contribution"]) expect(body).not.toContain(gone)
    for (const kept of ["pledged $5m to support local journalism", "Readers like you often ask", "urged to make a donation"]) expect(body).toContain(kept)
  })
})

describe("the page's shown text, the reading of last resort", () => {
  // A storefront grid of short linked names and prices: no reading finds a body in it.
  const grid = Array.from({ length: 20 }, (_, i) => `<div class="tile"><a href="/p/${i}"><span>Roast ${i}</span></a><span>$1${i}.99</span></div>`).join("")
  const shell = (main: string) => `<html><body><header><nav>${filler(30)}</nav></header>
    <main>${main}</main>
    <div class="banner">We use cookies to improve your experience on our website.</div>
    <footer><p>Copyright Example Roasters. All rights reserved. Terms of service and privacy.</p></footer></body></html>`

  it("reads what <main> shows when every other reading finds next to nothing, without the page's furniture", () => {
    const content = article(shell(`<h2>51 products</h2><form><select><option>Sort</option></select><button>Filter</button></form>${grid}<div hidden>Hidden promo text</div>`)).data.content
    expect(content).toContain("51 products")
    expect(content).toContain("Roast 3")
    expect(content).toContain("$13.99")
    for (const furniture of ["Menu 1", "Sort", "Filter", "Copyright", "cookies", "Hidden promo"]) expect(content).not.toContain(furniture)
  })

  it("gives a fragment of a few words as its own content rather than nothing", () => {
    expect(article("<p>Hello world</p>").data.content).toBe("Hello world")
    expect(article("<div>Short note.</div>").data.content).toBe("Short note.")
  })

  it("is not used when a reading finds a body", () => {
    const content = article(shell(`<article><h1>Harbour works</h1>${para(4)}</article>${grid}`)).data.content
    expect(content).toContain("Paragraph 4 about the harbour")
    expect(content).not.toContain("Roast 3")
  })
  // A product's page: two sentences of description among its offer, options and specifications.
  const description = `<p>The kettle boils a litre in under four minutes and keeps its handle cool to the touch.</p>
    <p>Its spout pours without dripping, and the lid opens wide enough to clean the inside by hand.</p>`
  const specs = Array.from({ length: 40 }, (_, i) => `<tr><th>Part ${i} height</th><td>${i + 10} cm</td></tr>`).join("")
  const productShell = (head: string) => `<html><head>${head}</head><body><header><nav>${filler(30)}</nav></header>
    <main><div class="buy"><h1>Steel kettle</h1><div class="price">$49.00</div><div>SKU: KT-100</div></div>
    <div class="description">${description}</div><div class="specifications"><table>${specs}</table></div></main>
    <footer><p>Copyright Example Kitchens. All rights reserved.</p></footer></body></html>`

  it("reads what a product's page shows (offer, options, specifications) when that is several times its prose", () => {
    const asProduct = article(productShell(`<script type="application/ld+json">{"@context":"https://schema.org","@type":"Product","name":"Steel kettle"}</script>`)).data.content
    expect(asProduct).toContain("boils a litre")
    expect(asProduct).toContain("$49.00")
    expect(asProduct).toContain("Part 39 height")
    expect(asProduct).not.toContain("Copyright")
    expect(article(productShell(`<meta property="og:type" content="product">`)).data.content).toContain("SKU: KT-100")
  })

  it("keeps the prose reading of a page that does not say it is about a product", () => {
    const plain = article(productShell("")).data.content
    expect(plain).toContain("boils a litre")
    expect(plain).not.toContain("Part 39 height")
  })
})

describe("permalink anchors", () => {
  it("drops the link glyphs documentation generators put in headings, and keeps links with words, numbers or images", () => {
    const html = `<html><head><title>5. Data Structures — Python 3 documentation</title></head><body><div class="body">
      <h1>5. Data Structures<a class="headerlink" href="#data-structures" title="Link to this heading">¶</a></h1>
      <p>This chapter describes some things you have learned about already in more detail, and adds some new things as well.<a href="#fn1">1</a></p>
      <h2>5.1. More on Lists<a class="headerlink" href="#more-on-lists">¶</a></h2>
      ${para(4, "lists")}
      <h2 id="c-sharp">Calling C#<a href="#c-sharp" class="anchor"><svg viewBox="0 0 16 16"><path d="M0 0"/></svg></a></h2>
      ${para(3, "interop")}
      <p><a href="#gallery"><img src="https://docs.example.com/figure.png" alt="A figure of a list"></a></p>
    </div></body></html>`
    const out = article(html, { url: "https://docs.example.com/tutorial/datastructures.html" })
    expect(out.data.title).toBe("5. Data Structures")
    expect(out.data.content).not.toContain("¶")
    expect(out.data.content).toContain("5.1. More on Lists")
    expect(out.data.content).toContain("Calling C#")
    // a footnote's number is a link with a number: kept
    expect(out.data.content).toMatch(/as well\.1/)
    expect(out.data.images?.map((i) => i.url) ?? []).toContain("https://docs.example.com/figure.png")
  })
})

describe("repeated copies of the body", () => {
  const body = `<h2>Planning the work</h2><p>A kitchen remodel starts with a budget, a floor plan and the permits your city asks for. Get three quotes, and ask each contractor for references from jobs of the same size.</p>
    <p>Order cabinets early: their lead time decides when the rest of the crew can start. Counters are measured only once the cabinets are in, so leave two weeks between the two.</p>`
  it("keeps one copy of an article a responsive builder ships once per breakpoint", () => {
    const html = `<html><body><main><div class="variant hidden-phone hidden-tablet">${body}</div>
      <div class="variant hidden-desktop hidden-phone">${body}</div><div class="variant hidden-desktop hidden-tablet">${body}</div></main></body></html>`
    const text = article(html).data.content
    expect(text.split("A kitchen remodel starts").length - 1).toBe(1)
    expect(text.split("Order cabinets early").length - 1).toBe(1)
    expect(text.split("Planning the work").length - 1).toBe(1)
  })

  it("keeps text that only nested wrappers hold twice, and a short line said twice", () => {
    const html = `<html><body><main><div class="outer"><div class="inner"><section>${body}</section></div></div>
      <p>Call us today.</p><p>${"Second section with its own words about tiles, grout and the order of the work. ".repeat(3)}</p><p>Call us today.</p></main></body></html>`
    const text = article(html).data.content
    expect(text).toContain("A kitchen remodel starts")
    expect(text).toContain("Order cabinets early")
    expect(text).toContain("Second section with its own words")
    expect(text.split("Call us today.").length - 1).toBe(2)
  })

  it("keeps one paragraph the page says twice: a song's chorus, a lead that a standfirst repeats", () => {
    const chorus = "Row, row, row your boat, gently down the stream, merrily, merrily, merrily, merrily,<br>life is but a dream, and the river keeps on running all the way down to the open sea,<br>row, row, row your boat, and sing along with me tonight until the morning light comes up again"
    const verse = (i: number) => `<p>Verse ${i}: we left the harbour early, with the mist still on the water and the gulls behind the pier, and nobody said a word.</p>`
    const song = article(`<html><body><main><h1>River song</h1><div class="lyrics">${verse(1)}<p>${chorus}</p>${verse(2)}<p>${chorus}</p>${verse(3)}<p>${chorus}</p></div></main></body></html>`).data.content
    expect(song.split("life is but a dream").length - 1).toBe(3)
    const lead = "The city will rebuild the old harbour wall over the next two years, closing the promenade in stages, the council said on Tuesday after a vote that ended months of debate about the cost, the design and the height of the new wall, which engineers say must stand for a century."
    const html = `<html><head><meta name="description" content="${lead}"></head><body><article><h1>Harbour wall</h1><p class="standfirst">${lead}</p>
      <div class="body"><p>${lead}</p>${para(3)}</div></article></body></html>`
    expect(article(html).data.content).toContain("The city will rebuild the old harbour wall")
  })
})

describe("publishing platforms' conventions", () => {
  const wrap = (body: string) => `<html><head><title>Page</title></head><body><header><nav>${filler(8)}</nav></header>${body}<footer>${filler(6)}</footer></body></html>`

  it("keeps a table's rows that hold dates", () => {
    const html = wrap(`<main><article><h1>Release history</h1><div class="entry-content">${para(2)}
      <table><tr><th>Version</th><th>Released</th><th>Support ends</th></tr><tr><td>3.0</td><td>March 17, 2025</td><td>March 2027</td></tr><tr><td>2.4</td><td>June 2, 2024</td><td>June 2026</td></tr></table></div></article></main>`)
    const body = article(html).data.content
    expect(body).toContain("March 17, 2025")
    expect(body).toContain("June 2, 2024")
  })

  it("keeps the headings of a live blog's updates, set in each update's header", () => {
    const update = (n: number, heading: string) => `<article class="block"><header class="block-header"><p class="block-time"><time>23:${50 - n}</time></p><h3 class="block-title">${heading}</h3></header>
      <div class="block-elements">${para(2, `update${n}`)}</div></article>`
    const html = wrap(`<main><h1>Northern lights live</h1><div class="liveblog-body">${update(1, "Aurora seen as far south as Cornwall")}${update(2, "Why is the aurora pink tonight?")}${update(3, "Phone cameras pick up more than eyes")}</div></main>`)
    const body = article(html).data.content
    expect(body).toContain("Aurora seen as far south as Cornwall")
    expect(body).toContain("Phone cameras pick up more than eyes")
  })

  it("leaves the writer's profile box out of the body", () => {
    const html = wrap(`<main><article><h1>Yoga retreats</h1><div class="entry-content">${para(4, "retreat")}
      <div class="author-box"><h4>About Johanna Wetzel</h4><p>Johanna is a yoga teacher and travel writer who has led retreats in Portugal and Bali for ten years, and writes about insurance for travellers.</p></div></div></article></main>`)
    const body = article(html).data.content
    expect(body).toContain("Paragraph 4 about the retreat")
    expect(body).not.toContain("Johanna is a yoga teacher")
    expect(body).not.toContain("About Johanna Wetzel")
  })

  it("reads other in-page links in headings as links", () => {
    const toc = wrap(`<main><article><h1>The plan</h1><div><h4><a href="#background">Background of the plan</a></h4><h4><a href="#costs">What the plan costs</a></h4></div>
      <h2 id="background">Background of the plan</h2>${para(2, "plan")}<h2 id="costs">What the plan costs</h2>${para(2, "costs")}</article></main>`)
    const body = article(toc).data.content
    expect(body.split("Background of the plan").length - 1).toBe(1)
  })

  it("drops date lines written in Spanish, Portuguese and French", () => {
    for (const line of ["Publicado el 3 de marzo de 2025 a las 10:00", "Atualizado em 3 de março de 2025 às 10h00", "Mis à jour le 4 mars 2025 à 08h12", "Springfield, March 3, 2025, 10:00 a.m. CT"]) {
      const html = wrap(`<main><article><h1>Story</h1><div class="entry-content">${para(2)}<p>${line}</p>${para(2, "lake")}</div></article></main>`)
      expect(article(html).data.content).not.toContain(line)
    }
  })

  it("keeps headings whose text is a link to their own anchor", () => {
    const html = wrap(`<main><article><h1>Array.prototype.map()</h1>${para(2, "map")}<h2 id="syntax"><a href="#syntax">Syntax</a></h2>${para(2, "syntax")}<h2 id="parameters"><a href="#parameters">Parameters</a></h2>${para(2, "callback")}</article></main>`)
    const body = article(html).data.content
    expect(body).toContain("Syntax")
    expect(body).toContain("Parameters")
  })

  it("keeps list items that name a year, and drops lines that are their date", () => {
    const html = wrap(`<main><article><h1>Harbour works</h1><div class="entry-content">${para(2)}
      <ul><li>Phase 1 (2026): Canal Park to 14th Avenue East</li><li>Phase 2 (2027): 14th Avenue to Lakeside Drive</li></ul>
      <p>WASHINGTON, March 3, 2025 (Reuters)</p><p>Updated 3 hours ago</p>${para(2, "lake")}</div></article></main>`)
    const body = article(html).data.content
    expect(body).toContain("Phase 1 (2026): Canal Park to 14th Avenue East")
    expect(body).not.toContain("Updated 3 hours ago")
    expect(body).not.toContain("WASHINGTON, March 3, 2025")
  })

  it("leaves a forum's block of site notices out of the thread", () => {
    const notice = "Scam Alert. Members are reminded to NOT send money to buy anything. Scammers have burned people on this forum, so meet in person."
    const post = (i: number) => `<article class="message"><div class="message-content"><p>Post ${i}: I run Debian with VirtualBox for Windows 7, and it has worked well for years without any trouble at all.</p></div></article>`
    const html = `<html><body><div class="p-body"><ul class="notices notices--block"><li class="notice"><div class="notice-content">${notice}</div></li></ul>
      <h1>Proxmox or Debian?</h1><div class="block-body">${[1, 2, 3, 4].map(post).join("")}</div></div></body></html>`
    const body = article(html, { url: "https://forum.example.com/threads/proxmox.18571" }).data.content
    expect(body).toContain("Post 4: I run Debian")
    expect(body).not.toContain("Scam Alert")
  })

  it("keeps lines labelled by a time alone (an episode's chapters, an agenda), and drops times of day", () => {
    const lines = ["(00:00) Intro", "(02:15) Why the moon matters", "[31:05] Listener questions", "09:30 – Registration"]
    const html = wrap(`<main><article><h1>Episode 12: Tides</h1><div class="entry-content">${para(2)}<h2>Chapters</h2>
      ${lines.map((l) => `<p>${l}</p>`).join("")}<p>10:42 am ET</p><p>19:45 Uhr</p>${para(2, "lake")}</div></article></main>`)
    const body = article(html).data.content
    for (const l of lines) expect(body).toContain(l)
    expect(body).not.toContain("10:42 am ET")
    expect(body).not.toContain("19:45 Uhr")
    // a time and an agency is a dateline
    expect(article(wrap(`<main><article><h1>Story</h1><div class="entry-content">${para(2)}<p>14:40 | Reuters</p>${para(2, "lake")}</div></article></main>`)).data.content).not.toContain("Reuters")
  })

  it("drops a one-cell date row of a layout table", () => {
    const html = wrap(`<main><article><h1>Release history</h1><div class="entry-content">${para(2)}<table><tr><td>Updated March 3, 2024</td></tr></table></div></article></main>`)
    expect(article(html).data.content).not.toContain("Updated March 3, 2024")
  })

  it("keeps an ad marker whose class opens with a preposition", () => {
    const html = wrap(`<main><article><h1>Mattresses</h1><div class="entry-content">${para(3)}<div class="inArticleAd"><p>Sponsored: buy the best mattress of the year today at a special price for readers.</p></div>${para(2, "sleep")}</div></article></main>`)
    expect(article(html).data.content).not.toContain("buy the best mattress")
  })

  it("reads an intro paragraph and its list as the body", () => {
    const html = wrap(`<main><article><h1>Packing list</h1><div class="entry-content">
      <p>Here is the list I use before every weekend hike in the mountains, refined over many years.</p>
      <ul><li>Rain jacket and warm layer</li><li>Two litres of water per person</li><li>Map, compass and a charged phone</li><li>First aid kit with blister plasters</li></ul>
      </div></article></main>`)
    const body = article(html).data.content
    expect(body).toContain("refined over many years")
    expect(body).toContain("Two litres of water per person")
    expect(body).toContain("First aid kit with blister plasters")
  })

  const comment = (who: string) => `<li class="comment"><article class="comment-body"><footer class="comment-meta"><b class="fn">${who}</b> says:</footer>
    <div class="comment-content"><p>I did exactly this last year with an old machine of mine. A new battery, fresh thermal paste and an SSD turned it into a perfectly usable computer for writing and browsing, and it has been running every day since without a single problem worth mentioning here.</p></div></article></li>`

  it("leaves readers' comments out of a short post, however much longer they are", () => {
    const html = wrap(`<main><article class="post"><h1>Is it worth repairing an old laptop?</h1><div class="entry-content">
      <p>My old laptop has started to struggle: the battery lasts forty minutes and the fan sounds like a small aircraft. Is a new battery money well spent?</p>
      <p>For context, I mostly use it for writing, email and the occasional video call.</p></div></article>
      <div id="comments" class="comments-area"><h2>3 Comments</h2><ol class="comment-list">${comment("Martin")}${comment("Ana")}${comment("Lee")}</ol></div></main>`)
    const body = article(html).data.content
    expect(body).toContain("the fan sounds like a small aircraft")
    expect(body).not.toContain("thermal paste")
    expect(body).not.toContain("3 Comments")
  })

  it("keeps a forum thread's replies, marked as comments beside a first post marked as content", () => {
    const thread = wrap(`<main><h1>Is it worth repairing an old laptop?</h1><div class="post-content"><p>My old laptop has started to struggle: the battery lasts forty minutes and the fan sounds like a small aircraft. Is a new battery money well spent?</p><p>For context, I mostly use it for writing, email and the occasional video call.</p></div>
      <ol class="comment-list">${comment("Martin")}${comment("Ana")}</ol></main>`)
    expect(article(thread, { url: "https://forum.example.com/t/old-laptop/123" }).data.content).toContain("thermal paste")
    expect(article(thread, { url: "https://example.com/threads/old-laptop.123/" }).data.content).toContain("thermal paste")
    // an issue tracker's issue or pull request is a discussion too
    expect(article(thread, { url: "https://git.example.com/acme/laptop/issues/123" }).data.content).toContain("thermal paste")
    expect(article(thread, { url: "https://git.example.com/acme/laptop/pull/45?tab=comments" }).data.content).toContain("thermal paste")
    // the same markup on a blog, or a magazine's issue: the comments are aside
    expect(article(thread, { url: "https://blog.example.com/2025/03/old-laptop" }).data.content).not.toContain("thermal paste")
    expect(article(thread, { url: "https://magazine.example.com/issues/42/old-laptop" }).data.content).not.toContain("thermal paste")
    expect(article(thread, { url: "https://weekly.example.com/issues/512" }).data.content).not.toContain("thermal paste")
  })

  it("keeps the replies of a thread whose page names itself one (ThreadViewPage, section-viewtopic), at any address", () => {
    const body = (main: string, bodyAttrs = "") => `<html><body${bodyAttrs}><nav>${Array.from({ length: 8 }, (_, i) => `<a href="/n${i}">Menu ${i}</a>`).join(" ")}</nav>${main}</body></html>`
    const posts = `<h1>Is it worth repairing an old laptop?</h1><div class="post-content"><p>My old laptop has started to struggle: the battery lasts forty minutes and the fan sounds like a small aircraft. Is a new battery money well spent?</p><p>For context, I mostly use it for writing, email and the occasional video call.</p></div>
      <ol class="comment-list">${comment("Martin")}${comment("Ana")}</ol>`
    const url = { url: "https://www.example.com/beginners-area/1488296-old-laptop.html" }
    expect(article(body(`<main class="MainContent ThreadViewPage">${posts}</main>`), url).data.content).toContain("thermal paste")
    expect(article(body(`<main>${posts}</main>`, ` class="section-viewtopic"`), url).data.content).toContain("thermal paste")
    // a blog whose comments are a "comment-thread": aside
    expect(article(body(`<main class="single-post">${posts.replace("comment-list", "comment-list comment-thread")}</main>`), url).data.content).not.toContain("thermal paste")
  })

  it("keeps every reply of an issue tracker's timeline, each its own \"comment\"", () => {
    const item = (who: string, text: string) => `<div class="TimelineItem js-comment-container"><div class="timeline-comment comment"><h3><strong>${who}</strong> commented</h3>
      <div class="edit-comment-hide"><table><tbody><tr><td class="d-block comment-body markdown-body js-comment-body">${text}</td></tr></tbody></table></div></div></div>`
    const html = wrap(`<main><div class="repository-content"><h1>Memory grows when streaming large responses</h1><div class="js-discussion">
      ${item("reporter", `<h3>Describe the bug</h3><p>When downloading large files through the stream API with a keep-alive agent, the process memory keeps growing until the container is killed. Without the agent, memory stays flat.</p>${para(4, "heap")}`)}
      ${item("maintainer", "<p>Thanks for the detailed report. I can reproduce this with a two gigabyte file: the backpressure path never drains its pending chunks when the socket returns to the pool early.</p>")}
      ${item("user", "<p>We see this on the previous release as well. Setting a smaller high water mark on the stream options keeps memory bounded for us, though throughput drops by about fifteen percent.</p>")}</div></div></main>`)
    const content = article(html, { url: "https://git.example.com/acme/flume/issues/2184" }).data.content
    expect(content).toContain("backpressure path")
    expect(content).toContain("high water mark")
    // the same timeline in a forum thread
    expect(article(html, { url: "https://forum.example.com/t/streaming/2184" }).data.content).toContain("high water mark")
  })

  it("leaves a blog post's comments section and reply form out even at an address that reads as a discussion", () => {
    const html = wrap(`<main><article class="post"><h1>Street lights go LED</h1><div class="entry-content">${para(4, "lights")}</div></article>
      <div id="comments" class="comments-area"><h2 class="comments-title">2 thoughts on "Street lights go LED"</h2><ol class="comment-list">${comment("Martin")}${comment("Ana")}</ol>
      <div id="respond" class="comment-respond"><h3 class="comment-reply-title">Leave a Reply</h3><form class="comment-form"><p class="comment-notes">Your email address will not be published. Required fields are marked.</p></form></div></div></main>`)
    const body = article(html, { url: "https://news.example.com/topics/energy/street-lights" }).data.content
    expect(body).toContain("Paragraph 4 about the lights")
    expect(body).not.toContain("Leave a Reply")
    expect(body).not.toContain("email address will not be published")
  })

  it("keeps a discussion whose posts are all comments", () => {
    const html = wrap(`<main><h1>Repairing old laptops</h1><ol class="comment-list">${comment("Martin")}${comment("Ana")}</ol></main>`)
    expect(article(html).data.content).toContain("thermal paste")
  })

  it("reads no words in utility classes with a variant or an arbitrary value (Tailwind's print:…, md:…, [&>*]:…)", () => {
    const p = (i: number) => `<p class="mx-auto max-w-3xl page-api-block:ml-0 print:break-inside-avoid md:text-lg w-full">Paragraph ${i} about the webhooks: the service sends a signed POST request to your endpoint whenever an event you subscribed to occurs.</p>`
    const code = `<pre><code>curl https://api.example.com/v2/webhook_endpoints -u key: -d url="https://shop.example.com/hooks" -d "events[]=shipment.delivered" -d "events[]=shipment.exception"</code></pre>`
    const rows = Array.from({ length: 8 }, (_, i) => `<tr><td>shipment.state_${i}</td><td>The carrier reported state number ${i} for the parcel, with its time and place.</td></tr>`).join("")
    const html = `<html><body><nav>${filler(12)}</nav><main><h1>Webhooks</h1><div class="[&>*+*]:mt-5 grid">${p(1)}<h2>Registering an endpoint</h2>${code}${p(2)}
      <h2>Event types</h2><table>${rows}</table><h2>Verifying signatures</h2>${code.replace(/curl/, "openssl")}${p(3)}</div></main></body></html>`
    const body = article(html).data.content
    for (const i of [1, 2, 3]) expect(body).toContain(`Paragraph ${i} about the webhooks`)
  })

  it("keeps a manual page's sections set in h1s and its options that link to themselves", () => {
    const sec = (name: string, body: string) => `<section class="Sh"><h1 class="Sh" id="${name}"><a class="permalink" href="#${name}">${name}</a></h1>${body}</section>`
    const opt = (id: string, flag: string, text: string) => `<dt id="${id}"><a class="permalink" href="#${id}"><b>${flag}</b></a></dt><dd>${text}</dd>`
    const html = `<html><head><title>timeout(1) — coreutils — Debian Manpages</title></head><body><div class="mandoc">
      ${sec("NAME", "<p>timeout - run a command with a time limit</p>")}${sec("SYNOPSIS", "<p><b>timeout</b> [OPTION] DURATION COMMAND [ARG]...</p>")}
      ${sec("DESCRIPTION", `<p>Start COMMAND, and kill it if still running after DURATION.</p><dl>${opt("k", "-k, --kill-after=DURATION", "also send a KILL signal if COMMAND is still running this long after the initial signal was sent")}${opt("v", "-v, --verbose", "diagnose to stderr any signal sent upon timeout")}</dl>`)}
      ${sec("BUGS", "<p>Some platforms don't currently support timeouts beyond the year 2038.</p>")}</div></body></html>`
    const d = article(html, { url: "https://manpages.example.org/timeout.1.html" }).data
    for (const line of ["SYNOPSIS", "DESCRIPTION", "BUGS", "-k, --kill-after=DURATION", "-v, --verbose", "diagnose to stderr"]) expect(d.content).toContain(line)
    // the first section's heading is no headline: the page's <title> is
    expect(d.title).toBe("timeout(1) — coreutils")
    // a logo's, a headline's and a footer's h1 do not make sections: the h1 heads the page
    const three = `<html><head><title>Best drills 2026: our picks | ToolShop</title></head><body><div><h1>ToolShop</h1></div><main><h1>The best cordless drills</h1>${para(3)}</main><div><h1>Newsletter</h1></div></body></html>`
    expect(article(three).data.title).toBe("The best cordless drills")
    // an article's own h1 is still its headline, shown as the title only
    const plain = article(`<html><body><main><h1>Harbour works</h1>${para(3)}</main></body></html>`).data
    expect([plain.title, plain.content.includes("Harbour works\n")]).toEqual(["Harbour works", false])
  })

  it("reads what component names say (data-testid, data-component, data-area), not their weak words", () => {
    const html = wrap(`<main><article data-area="article"><h1>Rail closure</h1>${para(3, "rail line")}
      <div data-area="author_bio"><a href="/autor/kb">Katharina Brenner</a><p>Editor in the business desk, writing about transport and energy.</p></div>
      <section data-testid="related-stories"><h2>More on rail</h2><p>Night trains are back on three routes across the Alps this winter, with sleeper cars and a dining car.</p></section>
      <div data-testid="section-title"><h2>What happens next</h2></div>${para(2, "bus service")}</article></main>`)
    const body = article(html).data.content
    expect(body).not.toContain("Editor in the business desk")
    expect(body).not.toContain("Night trains")
    // (a "title" component is a heading: the weak word does not count)
    expect(body).toContain("What happens next")
    expect(body).toContain("Paragraph 2 about the bus service")
    // a Q&A site names each answer a "comment" component: its answers are the page
    const qa = `<html><head><title>How do I stop my sourdough from spreading? - Bakers Answers</title></head>
<body><div id="root"><div class="css-1x2y3z">
<div class="css-8k2j1a" data-testid="question">
<h1 class="css-1q2w3e">How do I stop my sourdough from spreading?</h1>
<div class="css-4r5t6y">asked by <a href="/u/loafy">loafy</a></div>
<div class="css-7u8i9o"><p>Every loaf I bake spreads out flat in the oven. I use 75% hydration, a 12 hour cold retard and bake in a Dutch oven at 250°C. What am I doing wrong?</p></div>
</div>
<div class="css-0p9o8i"><h2 class="css-2k3l4m">3 answers</h2>
<div class="css-5n6b7v" data-testid="comment"><div class="css-a1"><a href="/u/crumbshot">crumbshot</a> answered</div><div class="css-b2"><p>At 75% hydration most flours need stronger shaping. Do a pre-shape, rest the dough 20 minutes, then shape again with more surface tension; the skin should look taut and smooth.</p><p>Also check your bulk fermentation: over-proofed dough loses its structure and spreads no matter how well you shape it. Aim for a 50 to 75% rise, not a doubling.</p></div></div>
<div class="css-5n6b7v" data-testid="comment"><div class="css-a1"><a href="/u/ryeguy">ryeguy</a> answered</div><div class="css-b2"><p>Try dropping the hydration to 68% for a few bakes until your shaping improves. A banneton that supports the loaf overnight also helps a lot, and score deeply right before it goes into the oven.</p></div></div>
<div class="css-5n6b7v" data-testid="comment"><div class="css-a1"><a href="/u/loafy">loafy</a> answered</div><div class="css-b2"><p>Thanks both. It was over-proofing: a shorter bulk fixed it.</p></div></div>
</div></div></div></body></html>`
    const answers = article(qa, { url: "https://answers.example.com/q/48213/sourdough" }).data.content
    for (const line of ["stronger shaping", "dropping the hydration", "It was over-proofing"]) expect(answers).toContain(line)
  })

  it("leaves out a standfirst set in the headline's header, and keeps a lede that repeats the description", () => {
    const desc = "From February no train runs between the two cities for five months, and replacement buses take over."
    const page = (header: string, body: string) => `<html><head><title>Rail closure</title><meta name="description" content="${desc}"></head><body><nav>${filler(8)}</nav>
      <main><article>${header}<div class="body">${body}${para(3, "rail line")}</div></article></main></body></html>`
    // an El País-style h2 under the h1, a Spiegel-style bold lead, in the article's <header>
    for (const header of [`<header><h1>Rail closure</h1><h2>${desc}</h2></header>`, `<header><h2>Rail closure</h2><div><strong>${desc}</strong></div></header>`]) {
      expect(article(page(header, "")).data.content).not.toContain("replacement buses take over")
    }
    // the body's first paragraph, which the description copies, is the lede; so is a press release's
    // first paragraph in the header, which opens with its dateline
    expect(article(page("<h1>Rail closure</h1>", `<p>${desc}</p>`)).data.content).toContain("replacement buses take over")
    const lede = `DRESDEN, 3 March 2025 – ${desc}`
    expect(article(page(`<header><h1>Rail closure</h1><p>${lede}</p></header>`, "").replace(`content="${desc}"`, `content="${lede}"`)).data.content).toContain("DRESDEN, 3 March 2025")
  })

  it("leaves out a marked standfirst that opens with its dateline's place", () => {
    const desc = "From July 2026 petrol motorbikes may not enter the first ring road, and owners get up to five million dong to switch."
    const html = `<html><head><title>Ring road</title><meta name="description" content="${desc}"></head><body><nav>${filler(8)}</nav><main><article><h1>Ring road</h1>
      <p class="description"><span class="location-stamp">Hà Nội</span>${desc}</p>${para(3, "ring road")}</article></main></body></html>`
    const body = article(html).data.content
    expect(body).not.toContain("five million dong")
    expect(body).toContain("Paragraph 1 about the ring road")
  })

  it("drops the writer's name alone on the body's last line, and keeps a credit line", () => {
    const page = (last: string) => `<html><head><title>Ring road</title><script type="application/ld+json">{"@type":"NewsArticle","headline":"Ring road","author":{"@type":"Person","name":"Võ Hải"}}</script></head>
      <body><main><article><h1>Ring road</h1>${para(3, "ring road")}<p style="text-align:right;"><strong>${last}</strong></p></article></main></body></html>`
    expect(article(page("Võ Hải")).data.content).not.toContain("Võ Hải")
    expect(article(page("（Võ Hải）")).data.content).not.toContain("Võ Hải")
    expect(article(page("© Võ Hải")).data.content).toContain("© Võ Hải")
    expect(article(page("Võ Hải reported from Hanoi.")).data.content).toContain("Võ Hải reported")
  })

  it("drops a byline run into its publication line, and keeps a sentence that starts like one", () => {
    const meta = `<div><span>Par Claire Vasseur</span><span>Publié le 12 novembre 2025 à 06h00, modifié à 09h41</span><span>Temps de lecture 7 min.</span></div>`
    const body = article(wrap(`<main><article><h1>Déserts médicaux</h1>${para(1, "clinic")}${meta}${para(3, "clinic")}</article></main>`)).data.content
    expect(body).not.toContain("Claire Vasseur")
    for (const sentence of ["Par Marseille passent chaque année des milliers de conteneurs, publiés dans le rapport de 2024.",
      "By Friday, the agency had updated 14 of its 22 regional forecast pages.", "Di Maio ha pubblicato il 3 marzo un lungo post su Facebook dedicato alla mostra.",
      "Por Navidad, el Ayuntamiento ha publicado el 20 de diciembre el calendario completo de actos."]) {
      expect(article(wrap(`<main><article><h1>Port</h1>${para(1, "port")}<p>${sentence}</p>${para(3, "port")}</article></main>`)).data.content).toContain(sentence)
    }
  })

  it("keeps sentences in Chinese and Japanese that open with a year, and drops their date lines", () => {
    const items = `<ul><li>2025年産の収穫量増加により、年末にかけて在庫が積み上がる可能性がある</li><li>2024年我国低空经济规模已超过5000亿元，预计到2030年将达到2万亿元</li></ul>`
    const body = article(wrap(`<main><article><h1>コメ平均価格</h1><p>2025年11月20日 08:12</p>${para(3, "rice")}${items}</article></main>`)).data.content
    expect(body).toContain("在庫が積み上がる可能性がある")
    expect(body).toContain("预计到2030年将达到2万亿元")
    expect(body).not.toContain("2025年11月20日")
    // a date line with its time in date characters and the paper's long name
    const line = "2025年11月20日 午前10時30分 読売新聞オンライン 経済部"
    expect(article(wrap(`<main><article><h1>コメ平均価格</h1><p>${line}</p>${para(3, "rice")}</article></main>`)).data.content).not.toContain("経済部")
  })

  it("drops a date line under a name in Dutch or German (\"do 16 okt 2025, 20:45\")", () => {
    const body = article(wrap(`<main><article><h1>Dijkversterking</h1><div>Sanne de Graaf do 16 okt 2025, 20:45 Aangepast: do 16 okt 2025, 22:10</div>${para(3, "dike")}</article></main>`)).data.content
    expect(body).not.toContain("Sanne de Graaf")
    // headings and lines that only look like dates stay: a weekday's abbreviation counts only before a day
    const lines = ["Things to do in Lisbon 2025", "So viel kostet Energie im Jahr 2025", "Zo kies je de beste energieleverancier in 2025", "Copa do Mundo de 2014 no Brasil",
      "Energy prices across Europe in 2025", "Arrigo Boito (Padova, 24 febbraio 1842 – Milano, 10 giugno 1918)"]
    const kept = article(wrap(`<main><article><h1>Lines</h1>${para(2, "energy")}${lines.map((l) => `<h2>${l}</h2>${para(1, "energy")}`).join("")}</article></main>`)).data.content
    for (const l of lines) expect(kept).toContain(l)
  })

  it("drops a picture's credit alone on its line beside the picture, and a caption's bracketed Chinese credit", () => {
    const credit = `<p><img src="/a.jpg" alt="Квитанция"><br><i>Фото: Волжская правда / Игорь Ланцов</i></p>`
    const zh = `<div class="img_wrapper"><img src="/b.jpg"><span>11月18日，一架物流无人机在深圳市南山区一处起降点准备起飞。（图片来源：视觉中国）</span></div>`
    const body = article(wrap(`<main><article><h1>Тарифы</h1>${para(2, "tariff")}${credit}${zh}${para(2, "drone")}</article></main>`)).data.content
    expect(body).not.toContain("Волжская правда")
    expect(body).not.toContain("视觉中国")
    // a credit line with no picture beside it is the article's own line
    expect(article(wrap(`<main><article><h1>Тарифы</h1>${para(2, "tariff")}<p>Фото: Игорь Ланцов</p>${para(2, "drone")}</article></main>`)).data.content).toContain("Игорь Ланцов")
  })

  it("leaves out a comments section that its heading counts, whatever its classes", () => {
    const post = (who: string, text: string) => `<div class="reviews-post"><div class="reviews-post-author"><b>${who}</b> <span>22.12.2025 12:41</span></div><div class="reviews-text">${text}</div></div>`
    const comments = `<div class="reviews-block"><div class="reviews-title">Комментарии (3)</div>${post("Сергей В.", "Каждый год небольшое повышение, а в сумме за пять лет платежи выросли почти в полтора раза.")}${post("Марина", "Спасибо за таблицу, наконец-то понятно написано, проверила свою квитанцию.")}</div>`
    const body = article(wrap(`<main><article><h1>Тарифы ЖКХ</h1>${para(4, "tariff")}${comments}</article></main>`)).data.content
    expect(body).not.toContain("полтора раза")
    // a manual's section on code comments has no count
    const manual = `<section><h2>Comments</h2><p>A comment starts with two slashes and runs to the end of the line; block comments nest.</p></section>`
    expect(article(wrap(`<main><article><h1>Lexical grammar</h1>${para(3, "parser")}${manual}</article></main>`)).data.content).toContain("block comments nest")
    // "Comment 1" numbers one comment of a rulemaking's answers: its section is the text
    const answered = (i: number) => `<section><h3>Comment ${i}</h3><p>Several utilities asked the agency to phase the monitoring rule in over ${i + 2} years, citing the cost of new meters.</p><h4>Response</h4><p>The agency agrees in part and extends the deadline for small systems by ${i} years.</p></section>`
    const rule = article(wrap(`<main><article><h1>Final rule: water reuse</h1>${para(2, "rule")}${answered(1)}${answered(2)}${answered(3)}</article></main>`)).data.content
    for (const i of [1, 2, 3]) expect(rule).toContain(`Comment ${i}`)
    // a plural with a bare number counts them ("Comments 42")
    const counted = `<section><div>Comments 42</div><div><b>mkw</b><p>No Android apps is a feature, not a bug, as far as I am concerned with this tablet.</p></div></section>`
    expect(article(wrap(`<main><article><h1>Tablet</h1>${para(4, "tablet")}${counted}</article></main>`)).data.content).not.toContain("No Android apps")
  })

  it("drops a breadcrumb trail set as a line of links", () => {
    const crumbs = `<div><a href="/">News</a> <span>›</span> <a href="/city">City News</a> <span>›</span> <span>Yellow Line to get 12 more trains</span></div>`
    const body = article(wrap(`<main><article><h1>Yellow Line to get 12 more trains</h1>${crumbs}${para(3, "metro")}</article></main>`)).data.content
    expect(body).not.toContain("City News")
    // an arrow between words in a sentence is text
    expect(article(wrap(`<main><article><h1>Menus</h1><p>Open <a href="/s">Settings</a> › Privacy › Cookies and clear the data there.</p>${para(3, "menu")}</article></main>`)).data.content).toContain("Privacy")
    // a menu path in an instruction has one link; French quotes are no separators
    for (const line of [`Go to <a href="/admin">Admin</a> › Settings › Integrations`, `<a href="/e">Entretien</a> : les mots « crise » et « réforme » dominent le débat`]) {
      const text = line.replace(/<[^>]+>/g, "")
      expect(article(wrap(`<main><article><h1>Menus</h1>${para(2, "menu")}<ul><li>${line}</li><li>${line.replace("Settings", "Profile")}</li></ul>${para(2, "menu")}</article></main>`)).data.content).toContain(text)
    }
  })

  it("keeps Docusaurus headings, whose class names a sticky navbar", () => {
    const html = wrap(`<main><article><div class="theme-doc-markdown markdown"><h1>Installation</h1>${para(2, "setup")}
      <h2 class="anchor anchorWithStickyNavbar_LWe7" id="requirements">Requirements<a class="hash-link" href="#requirements">​</a></h2>${para(2, "node")}</div></article></main>`)
    expect(article(html).data.content).toContain("Requirements")
  })
})
