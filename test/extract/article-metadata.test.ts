/** Title, author and date signals of articles, on small synthetic pages. */
import { describe, expect, it } from "vitest"
import { article, para } from "./helpers.ts"
import { cleanAuthor, headlineOf } from "../../src/extract/article/article.ts"
import { toIsoDateTime } from "../../src/extract/dates.ts"

describe("headline", () => {
  it("uses the h1 when the title contains it, and drops a trailing site name otherwise", () => {
    expect(headlineOf("Harbour works extended | Example News", "Harbour works extended", undefined, null)).toBe("Harbour works extended")
    expect(headlineOf("Gardening basics • Gardenary", undefined, "Gardenary", null)).toBe("Gardening basics")
    expect(headlineOf("Ten easy steps - interior design | Tarkett", "Something else", undefined, "https://www.tarkett.com/x")).toBe("Ten easy steps - interior design")
    expect(headlineOf("Cats and dogs - a guide", undefined, undefined, "https://pets.example.com/")).toBe("Cats and dogs - a guide")
  })

  it("keeps every part of a page title but a trailing site name when nothing else names the page", () => {
    const html = `<html><head><title>'Kinds of threads' - A board as an engine? - Boardly Community</title></head><body>${para(3)}</body></html>`
    expect(article(html, { url: "https://discuss.boardly.org/d/1" }).data.title).toBe("'Kinds of threads' - A board as an engine?")
    const unnamed = `<html><head><title>Wiring - Overview | Office of Safety</title></head><body>${para(3)}</body></html>`
    expect(article(unnamed, { url: "https://www.example.gov/wiring" }).data.title).toBe("Wiring - Overview | Office of Safety")
  })

  it("prefers the page's h1 to a structured headline that neither the h1 nor the meta title shows", () => {
    const html = (headline: string) => `<html><head><title>Styrian pumpkin seed oil - Wikipedia</title><meta property="og:title" content="Styrian pumpkin seed oil - Wikipedia">
      <script type="application/ld+json">{"@context":"https://schema.org","@type":"Article","name":"Styrian pumpkin seed oil","headline":"${headline}"}</script></head>
      <body><h1>Styrian pumpkin seed oil</h1>${para(3)}</body></html>`
    expect(article(html("culinary oil from Styria, Austria"), { url: "https://en.wikipedia.org/wiki/Styrian_pumpkin_seed_oil" }).data.title).toBe("Styrian pumpkin seed oil")
    // one the meta title shows stays
    const shown = html("Pumpkin seed oil, explained").replaceAll("Styrian pumpkin seed oil - Wikipedia", "Pumpkin seed oil, explained - Wikipedia")
    expect(article(shown, { url: "https://en.wikipedia.org/wiki/Styrian_pumpkin_seed_oil" }).data.title).toBe("Pumpkin seed oil, explained")
  })

  it("does not take a consent dialog's h1 for the page's headline", () => {
    const html = `<html><head><title>Gel tardif : une assurance devenue hors de prix</title><meta property="og:title" content="Gel tardif : une assurance devenue hors de prix">
      <script type="application/ld+json">{"@context":"https://schema.org","@type":"NewsArticle","headline":"Gel tardif : une assurance hors de prix"}</script></head>
      <body><div id="didomi-host"><div class="didomi-popup-notice"><h1 class="didomi-popup-notice-title">Votre vie privée nous importe</h1><p>Le Courrier et ses 214 partenaires stockent et accèdent à des informations sur votre appareil, comme des cookies, pour personnaliser les annonces. Vous pouvez accepter ou refuser à tout moment.</p></div></div>
      <main><h1 class="article__title">Gel tardif : une assurance devenue hors de prix</h1>${para(3)}</main></body></html>`
    expect(article(html, { url: "https://www.example.fr/economie/gel" }).data.title).toBe("Gel tardif : une assurance devenue hors de prix")
    // a wrapper whose class says consent was given holds the page, headline included
    const wrapped = `<html><head><title>Zoo News</title></head><body><div class="site cookie-consent-given"><h1>Tigers arrive at the city zoo</h1>${para(3)}</div></body></html>`
    expect(article(wrapped, { url: "https://news.example.com/zoo/tigers" }).data.title).toBe("Tigers arrive at the city zoo")
  })

  it("decodes entities left in structured titles", () => {
    const html = `<html><head><meta property="og:title" content="Hire SF&amp;#x27;s best movers"></head><body>${para(3)}</body></html>`
    expect(article(html).data.title).toBe("Hire SF's best movers")
  })
})

describe("author", () => {
  it("follows the author's @id to the person the page's graph names", () => {
    const ld = `<script type="application/ld+json">{"@context":"https://schema.org","@graph":[{"@type":"Article","headline":"Harbour works","author":{"@id":"https://news.example.com/#/person/7"}},
      {"@type":"Person","@id":"https://news.example.com/#/person/7","name":"Ann Writer","url":"https://news.example.com/author/ann"}]}</script>`
    expect(article(`<html><head>${ld}</head><body>${para(3)}</body></html>`).data.authors).toEqual(["Ann Writer"])
  })

  it("takes no author or date of a collection from its items' cards", () => {
    const card = (i: number) => `<article class="teaser"><a href="/news/${i}"><h3>Ferry timetable ${i} changes for the winter season</h3></a>
      <p class="author">By Jane Roe</p><time datetime="2026-03-${String(i + 1).padStart(2, "0")}">March ${i + 1}, 2026</time></article>`
    const html = `<html><head><title>Latest news | Harbour Post</title></head><body><nav>${Array.from({ length: 8 }, (_, i) => `<a href="/s/${i}">Section ${i}</a>`).join(" ")}</nav>
      <main><h1>Latest news</h1><div class="river">${Array.from({ length: 12 }, (_, i) => card(i)).join("")}</div></main></body></html>`
    const d = article(html, { url: "https://harbourpost.example.com/news" }).data
    expect(d.content).toContain("Ferry timetable 11 changes")
    expect(d.publishedAt).toBeUndefined()
    expect(d.author).toBeUndefined()
    // a post with the same markup for its own byline and date keeps them
    const post = `<html><body><main><article><h1>Ferry timetable changes</h1><p class="author">By Jane Roe</p><time datetime="2026-03-02">March 2, 2026</time>${para(4)}</article></main></body></html>`
    const p = article(post, { url: "https://harbourpost.example.com/news/ferry" }).data
    expect([p.author, p.publishedAt?.slice(0, 10)]).toEqual(["Jane Roe", "2026-03-02"])
  })

  it("takes no author or date from cards alike, even where their summaries read as prose, nor from a list's structured items", () => {
    const card = (i: number, kind: string) => `<article class="story-card story-card--${kind}"><div class="story-card__body"><h2 class="story-card__headline"><a href="/c/${i}">Story ${i} about the coast</a></h2>
      <p class="story-card__dek">Sea surface temperatures are up to three degrees above normal, raising concerns about toxic algae and the crab season, officials said.</p>
      <div class="story-card__meta"><span class="story-card__byline">By Lena Park</span> <time class="story-card__time" datetime="2026-03-0${i}">March ${i}, 2026</time></div></div></article>`
    const front = `<html><body><main><header><h1>Climate</h1><p>Coverage of climate change, energy and the environment.</p></header>
      ${card(1, "lead")}${[2, 3, 4, 5, 6].map((i) => card(i, "medium")).join("")}</main></body></html>`
    const d = article(front, { url: "https://ledger.example.com/climate/" }).data
    expect(d.content).toContain("Sea surface temperatures")
    expect([d.author, d.publishedAt]).toEqual([undefined, undefined])
    // date-marked elements of cards, not <time>s, are the cards' too
    const dated = front.replace(/<time class="story-card__time" datetime="[^"]*">([^<]*)<\/time>/g, `<span class="story-card__date">$1</span>`)
    expect(article(dated, { url: "https://ledger.example.com/climate/" }).data.publishedAt).toBeUndefined()
    const jobs = `<html><head><script type="application/ld+json">{"@type":"ItemList","itemListElement":[${[1, 2, 3].map((i) => `{"@type":"ListItem","position":${i},"item":{"@type":"JobPosting","title":"Engineer ${i}","datePosted":"2026-03-0${i}"}}`).join(",")}]}</script></head>
      <body><main><h1>Remote Rust jobs</h1>${para(3)}</main></body></html>`
    expect(article(jobs, { url: "https://jobs.example.com/" }).data.publishedAt).toBeUndefined()
  })

  it("keeps a page's own byline and date beside cards: its section, its co-author cards, a rail of teasers, an ItemList naming the page", () => {
    // the page's section is one of several sections alike: the one holding the headline is the page
    const sec = `<html><body><section class="section"><h1>Harbour works</h1><time datetime="2026-02-03">Feb 3, 2026</time>${para(3)}</section>
      ${[1, 2].map((i) => `<section class="section"><h2><a href="/t/${i}">Teaser headline about the ferry ${i}</a></h2><time datetime="2026-01-0${i}">Jan ${i}, 2026</time></section>`).join("")}</body></html>`
    expect(article(sec).data.publishedAt?.slice(0, 10)).toBe("2026-02-03")
    // co-authors' cards are no teasers (no headline in them)
    const co = `<html><body><article><h1>Study</h1><div class="contributors">${["Ann One", "Bob Two", "Cy Three"].map((n) => `<div class="contributor"><img src="/a.jpg"><a class="author-name" href="/a">${n}</a></div>`).join("")}</div>${para(3)}</article></body></html>`
    expect(article(co).data.author).toBe("Ann One")
    // a short story read as a listing beside its rail of teasers keeps the byline and date under its headline
    const story = `<html><body><div class="story"><h1>Ferry cancelled</h1><p class="byline">By Jane Writer</p><p>February 3, 2026</p><p>The morning ferry to the island was cancelled because of high winds, the operator said.</p></div>
      <ul class="rail">${Array.from({ length: 8 }, (_, i) => `<li><a href="/n/${i}">Teaser headline number ${i} about the harbour works</a></li>`).join("")}</ul></body></html>`
    const d = article(story).data
    expect([d.author, d.publishedAt?.slice(0, 10)]).toEqual(["Jane Writer", "2026-02-03"])
    // an ItemList item that is the page itself (by its address) is still the page's article
    const self = `<html><head><script type="application/ld+json">{"@type":"ItemList","itemListElement":[{"@type":"ListItem","position":1,"item":{"@type":"NewsArticle","url":"https://news.example.com/2024/05/story.html","headline":"Story","author":{"@type":"Person","name":"Jane Writer"},"datePublished":"2026-02-03"}}]}</script></head><body><h1>Story</h1>${para(3)}</body></html>`
    expect(article(self).data.author).toBe("Jane Writer")
  })

  it("does not take a customer review's or a testimonial's writer for the page's author", () => {
    const review = `<div class="featured-review"><div class="featured-review_rating">★★★★★</div><cite class="featured-review_rating-author">Ash C.</cite><p>Tastes great and works fast.</p></div>`
    expect(article(`<html><body><main><h1>Relax gummies</h1>${para(3)}${review}</main></body></html>`).data.author).toBeUndefined()
    const testimonial = `<section class="testimonials"><blockquote>They moved us in a day.</blockquote><span class="author">Lance S.</span></section>`
    expect(article(`<html><body><main><h1>Moving services</h1>${para(3)}${testimonial}</main></body></html>`).data.author).toBeUndefined()
    // the page's own byline above them is still read
    expect(article(`<html><body><main><h1>Moving guide</h1><p class="byline">By <span class="author-name">Dana Miles</span></p>${para(3)}${testimonial}</main></body></html>`).data.author).toBe("Dana Miles")
    // an editorial review is the page: its writer is the author
    expect(article(`<html><body><article class="review"><h1>Sony WH-1000XM6 review</h1><span class="author-name">Jane Writer</span>${para(3)}</article></body></html>`).data.author).toBe("Jane Writer")
  })

  it("reads a forum post's user name as the author when nothing else names one", () => {
    const html = `<html><body><div class="post"><h1>Turning off the LEDs</h1><p class="author">Sun Dec 17, 2023</p><dl class="postprofile"><dt><a class="username" href="/u/1">b.scherer</a></dt></dl>${para(3)}</div></body></html>`
    expect(article(html).data.author).toBe("b.scherer")
    // a name's container that also holds the member menu (vBulletin): the name inside it
    const menu = `<html><body><div class="postdetails"><div class="userinfo"><div class="username_container"><div class="popupmenu memberaction"><a class="username offline popupctrl" href="/member.php?u=1"><strong>tubesandtransistors</strong></a>
      <ul class="popupbody"><li><a href="/member.php?u=1">View Profile</a></li><li><a href="/search.php?u=1">View Forum Posts</a></li></ul></div></div></div></div><h1>Tube amp hum</h1>${para(3)}</body></html>`
    expect(article(menu).data.author).toBe("tubesandtransistors")
  })

  it("does not take a user review's author for the page's, nor a placeholder", () => {
    const review = (name: string) => `{"@type":"Review","author":{"@type":"Person","name":"${name}"},"reviewBody":"Works well."}`
    const product = `<html><head><script type="application/ld+json">[{"@type":"Product","name":"Feeder","review":[]},${review("Ron B.")}]</script></head><body><h1>Feeder</h1>${para(3)}</body></html>`
    expect(article(product).data.author).toBeUndefined()
    const reviews = `<html><head><script type="application/ld+json">[${review("Ann K.")},${review("Ron B.")}]</script></head><body><h1>Movers</h1>${para(3)}</body></html>`
    expect(article(reviews).data.author).toBeUndefined()
    const oneReview = `<html><head><script type="application/ld+json">${review("Ann Critic")}</script></head><body><h1>Film review</h1>${para(3)}</body></html>`
    expect(article(oneReview).data.author).toBe("Ann Critic")
    expect(cleanAuthor("undefined")).toBeUndefined()
  })

  it("reads the name inside an author box, and class names written in camelCase or with underscores", () => {
    const box = `<html><body><article><h1>Cheap fixes</h1>${para(3)}<div class="row author-description"><img src="/a.png">
      <div class="description"><h6><a href="/author/albert/" rel="author">Albert Swann</a></h6><p>Albert has written about cars, engines and the people who race them for twenty years.</p></div></div></article></body></html>`
    expect(article(box).data.author).toBe("Albert Swann")
    const camel = `<html><body><article><h1>Online classes</h1><div class="authorDateBlock_authorDateBlock__5gmRt"><div><b>By <span class="authorDateBlock_authorName__N6j3Y">Reyan Perumal</span></b></div><div>Published on July 18, 2025</div></div>${para(3)}</article></body></html>`
    expect(article(camel).data.author).toBe("Reyan Perumal")
  })

  it("reads an unmarked byline on a line around the headline", () => {
    const page = (lines: string) => `<html><body><article>${lines}${para(3)}</article></body></html>`
    expect(article(page(`<div><span>Published August 7, 2023</span> <span>by Nicole Burke</span></div><h1>Garden beds</h1>`)).data.author).toBe("Nicole Burke")
    expect(article(page(`<h1>DC motors</h1><p>By <a href="/contributor/aj">A. J. Neal</a>&nbsp;&nbsp;<a href="/digital">View In Digital Edition</a></p>`)).data.author).toBe("A. J. Neal")
    // a date right after the name is not part of it; a surname that is a month's name is
    expect(article(page(`<h1>Heat wave</h1><p>By Lena Park March 1, 2026</p>`)).data.author).toBe("Lena Park")
    expect(article(page(`<h1>Politics</h1><p>By Theresa May</p>`)).data.author).toBe("Theresa May")
    // picture and site credits, a lone word, a line far from the headline are no byline
    expect(article(page(`<h1>Garden beds</h1><p>Photo by John Smith</p><p>Powered by Word Press</p><p>By Reuters</p>`)).data.author).toBeUndefined()
    expect(article(`<html><body><h1>Garden beds</h1>${para(8)}<p>By Nicole Burke</p></body></html>`).data.author).toBeUndefined()
    // a label in an author box is no name
    expect(cleanAuthor("The Author")).toBeUndefined()
    expect(cleanAuthor("Author:")).toBeUndefined()
  })

  it("takes a byline's name without its label or role in other languages", () => {
    expect(cleanAuthor("Автор: Анна Сорокина")).toBe("Анна Сорокина")
    expect(cleanAuthor("Yazar: Ali Demir")).toBe("Ali Demir")
    expect(cleanAuthor("Autorin: Lena Brandt")).toBe("Lena Brandt")
    expect(cleanAuthor("记者 陈嘉宁")).toBe("陈嘉宁")
    expect(cleanAuthor("作者：王晓峰")).toBe("王晓峰")
    expect(cleanAuthor("김서연 기자")).toBe("김서연")
    expect(cleanAuthor("【佐野遥】")).toBe("佐野遥")
    // a name that only starts like a label keeps its letters
    expect(cleanAuthor("Autori Kallio")).toBe("Autori Kallio")
    expect(cleanAuthor("文化部")).toBe("文化部")
    expect(cleanAuthor("記者会見")).toBe("記者会見")
  })

  it("takes no byline from mid-sentence 'by', captions, labels or long capital runs", () => {
    const page = (lines: string) => `<html><body><article><h1>Rockets</h1>${lines}${para(3)}</article></body></html>`
    expect(article(page(`<p class="dek">How a startup founded by Elon Musk changed launches</p><div class="byline">By Jane Doe</div>`)).data.author).toBe("Jane Doe")
    expect(article(page(`<figure><img src="/a.jpg"><figcaption>Photograph by John Smith</figcaption></figure>`)).data.author).toBeUndefined()
    expect(article(page(`<p>Illustrations by Kate Green</p><p>© 2024 by Acme Corp</p>`)).data.author).toBeUndefined()
    expect(article(page(`<div class="author"><span class="author-label">Author:</span> <a href="/j">Jane Doe</a></div>`)).data.author).toBe("Jane Doe")
    const t0 = performance.now()
    expect(article(page(`<p>by ${"A".repeat(2000)}1</p>`)).data.author).toBeUndefined()
    expect(performance.now() - t0).toBeLessThan(2000)
  })

  it("stays linear on nested author marks around a huge text", () => {
    const html = `<html><body><h1>T</h1>${'<div class="author">'.repeat(500)}${"word ".repeat(400_000)}${"</div>".repeat(500)}</body></html>`
    const t0 = performance.now()
    expect(article(html).data.author).toBeUndefined()
    expect(performance.now() - t0).toBeLessThan(5000)
  })

  it("strips byline decoration and refuses dates", () => {
    expect(cleanAuthor("by Geri Mileva")).toBe("Geri Mileva")
    expect(cleanAuthor("Author Isaiah Shelton")).toBe("Isaiah Shelton")
    expect(cleanAuthor("BySummer Swann-June 12, 2025")).toBe("Summer Swann")
    expect(cleanAuthor("\"David Kim\"")).toBe("David Kim")
    expect(cleanAuthor("Ann Writer · 5 min read")).toBe("Ann Writer")
    // a credit's label, a role after a bar, a place or role in parentheses
    expect(cleanAuthor("Story by Emma Lowry")).toBe("Emma Lowry")
    expect(cleanAuthor("Interview by Oliver Grant")).toBe("Oliver Grant")
    expect(cleanAuthor("Tom Reed | Staff Writers")).toBe("Tom Reed")
    expect(cleanAuthor("Claire Dumas (Marseille, correspondante)")).toBe("Claire Dumas")
    expect(cleanAuthor("Sat, 20 Dec, 2025 - 06:36")).toBeUndefined()
    expect(cleanAuthor("Sun Dec 17, 2023 11:23 am")).toBeUndefined()
  })
})

describe("dates with a timezone offset", () => {
  it("keep the publisher's calendar day and offset (same instant)", () => {
    const cases: Array<[string, string]> = [
      ["2025-12-19T09:04:00+13:00", "2025-12-19T09:04:00.000+13:00"],
      ["2025-03-20T20:05:01-04:00", "2025-03-20T20:05:01.000-04:00"],
      ["2025-12-19T04:25:38+0500", "2025-12-19T04:25:38.000+05:00"],
      ["2024-01-01 00:30:00 +0100", "2024-01-01T00:30:00.000+01:00"],
    ]
    for (const [input, want] of cases) {
      const got = toIsoDateTime(input)
      expect(got).toBe(want)
      expect(Date.parse(got!)).toBe(Date.parse(input.replace(" ", "T").replace(" ", "")))
      expect(got!.slice(0, 10)).toBe(input.slice(0, 10))
    }
  })

  it("stay UTC without an offset or with a zero one", () => {
    expect(toIsoDateTime("2025-12-19T09:04:00Z")).toBe("2025-12-19T09:04:00.000Z")
    expect(toIsoDateTime("2025-12-19T09:04:00+00:00")).toBe("2025-12-19T09:04:00.000Z")
    expect(toIsoDateTime("2025-12-19")).toBe("2025-12-19T00:00:00.000Z")
    expect(toIsoDateTime("2025-02-30T10:00:00+02:00")).toBeUndefined()
  })

  it("reach the article from JSON-LD, meta tags and <time>", () => {
    const ld = `<html><head><script type="application/ld+json">{"@type":"NewsArticle","headline":"Late news","datePublished":"2025-12-18T23:30:00-05:00"}</script></head><body><article><h1>Late news</h1>${para(3)}</article></body></html>`
    expect(article(ld).data.publishedAt).toBe("2025-12-18T23:30:00.000-05:00")
    const meta = `<html><head><meta property="article:published_time" content="2025-12-19T00:15:00+02:00"></head><body><article><h1>Early news</h1>${para(3)}</article></body></html>`
    expect(article(meta).data.publishedAt?.slice(0, 10)).toBe("2025-12-19")
    const time = `<html><body><article><h1>Forum post</h1><time datetime="2025-03-20T20:05:01-0400">March 20</time>${para(3)}</article></body></html>`
    expect(article(time).data.publishedAt?.slice(0, 10)).toBe("2025-03-20")
  })
})

describe("publication date", () => {
  it("reads a meta tag the site named for the publication date in its own words, not the publisher's", () => {
    const page = (metas: string) => `<html><head>${metas}</head><body><article><h1>Cost and benefit</h1>${para(3)}</article></body></html>`
    expect(article(page(`<meta name="w-published-date" content="2025-05-27T06:03:43.274Z">`)).data.publishedAt?.slice(0, 10)).toBe("2025-05-27")
    expect(article(page(`<meta property="og:publish_date" content="2024-02-03">`)).data.publishedAt?.slice(0, 10)).toBe("2024-02-03")
    expect(article(page(`<meta name="article.published" content="2023-11-30T08:00:00Z">`)).data.publishedAt?.slice(0, 10)).toBe("2023-11-30")
    expect(article(page(`<meta name="publisher" content="2019 Media">`), { url: null }).data.publishedAt).toBeUndefined()
    expect(article(page(`<meta name="auto-publish" content="2020-01-01">`), { url: null }).data.publishedAt).toBeUndefined()
    expect(article(page(`<meta name="publishedAt" content="2022-06-07T10:00:00Z">`)).data.publishedAt?.slice(0, 10)).toBe("2022-06-07")
    // values that are not dates, and keys that name who, where or another edition, give way to the page's <time>
    const timed = (metas: string) => `<html><head>${metas}</head><body><article><h1>Cost and benefit</h1><time datetime="2024-05-01T09:00:00Z">May 1</time>${para(3)}</article></body></html>`
    for (const m of [`<meta name="published" content="1">`, `<meta name="published_by" content="Channel 4">`, `<meta name="published-in" content="Section 3">`,
      `<meta name="last-published-date" content="2025-01-09">`, `<meta name="next-publish-date" content="2026-01-09">`]) {
      expect(article(timed(m), { url: null }).data.publishedAt?.slice(0, 10)).toBe("2024-05-01")
    }
  })

  it("reads a visible date in an element marked as a date", () => {
    const html = `<html><body><article><h1>Garden notes</h1><div class="entry-meta"><span class="post-date">Posted on March 3, 2025</span></div>${para(3)}</article></body></html>`
    expect(article(html).data.publishedAt).toBe("2025-03-03T00:00:00.000Z")
  })

  it("reads a line that is only a date just under the h1, and no date further down or with other words", () => {
    const under = `<html><body><main><h1>Proofs as types</h1><p>December 15, 2025</p>${para(3)}</main></body></html>`
    expect(article(under, { url: "https://blog.example.org/post/proofs" }).data.publishedAt).toBe("2025-12-15T00:00:00.000Z")
    const far = `<html><body><main><h1>Proofs as types</h1>${para(8)}<p>December 15, 2025</p></main></body></html>`
    expect(article(far, { url: "https://blog.example.org/post/proofs" }).data.publishedAt).toBeUndefined()
    const sentence = `<html><body><main><h1>Proofs as types</h1><p>Sale ends December 15, 2025</p>${para(3)}</main></body></html>`
    expect(article(sentence, { url: "https://blog.example.org/post/proofs" }).data.publishedAt).toBeUndefined()
  })

  it("reads a date line with its time of day under the h1", () => {
    const line = (t: string) => `<html><body><main><h1>Proofs as types</h1><div><span>${t}</span></div>${para(3)}</main></body></html>`
    for (const t of ["2026-11-29 09:15", "29.11.2026, 14:20 Uhr", "November 29, 2026 at 9:15 am EST"]) {
      expect(article(line(t), { url: "https://blog.example.org/post/proofs" }).data.publishedAt?.slice(0, 10)).toBe("2026-11-29")
    }
    // a time followed by other words is no date line
    expect(article(line("2026-11-29 09:15 in Hangzhou, by our reporter"), { url: "https://blog.example.org/post/proofs" }).data.publishedAt).toBeUndefined()
  })

  it("reads a date in the page's address when the page states none", () => {
    const html = `<html><body><article><h1>Rust backend</h1>${para(3)}</article></body></html>`
    expect(article(html, { url: "https://blog.example.org/articles/2025-12-15+Rust+backend" }).data.publishedAt).toBe("2025-12-15T00:00:00.000Z")
    expect(article(html, { url: "https://news.example.com/2024/05/07/rust-backend/" }).data.publishedAt).toBe("2024-05-07T00:00:00.000Z")
    expect(article(html, { url: "https://shop.example.com/item/2025-13-40" }).data.publishedAt).toBeUndefined()
    const stated = `<html><head><meta property="article:published_time" content="2025-12-14T08:00:00Z"></head><body><article><h1>Rust backend</h1>${para(3)}</article></body></html>`
    expect(article(stated, { url: "https://news.example.com/2025/12/15/rust" }).data.publishedAt).toBe("2025-12-14T08:00:00.000Z")
  })

  it("reads the date of a byline line around the headline, also in old table and center layouts", () => {
    const old = `<html><body><table><tr><td><img src="/l.gif"></td><td><center><h1><center>SysV init</center></h1>
      <p>by Jon Foster - 2025-09-13<br> Updated: 2025-10-01<br>&nbsp;</p></center>${para(3)}</td></tr></table></body></html>`
    expect(article(old, { url: "https://example.org/guides/sysv" }).data).toMatchObject({ publishedAt: "2025-09-13T00:00:00.000Z", author: "Jon Foster" })
    const above = `<html><body><article><div class="meta"><span>Published August 7, 2023</span> <span>by Nicole Burke</span></div><h1>Garden beds</h1>${para(3)}</article></body></html>`
    expect(article(above, { url: "https://example.org/garden" }).data.publishedAt).toBe("2023-08-07T00:00:00.000Z")
  })

  it("does not date a page by its revision: a labelled update <time>, a revision-date or footer date element", () => {
    const page = (extra: string) => `<html><body><main><h1>Webhooks</h1>${para(7)}${extra}</main></body></html>`
    const url = { url: "https://docs.example.com/webhooks" }
    expect(article(page(`<p>Last updated <time datetime="2025-12-09T14:22:03.000Z">3 months ago</time></p>`), url).data.publishedAt).toBeUndefined()
    expect(article(page(`<aside><span title="Last update"></span><span class="git-revision-date-localized-plugin-date">February 24, 2026</span></aside>`), url).data.publishedAt).toBeUndefined()
    expect(article(page(`<table class="foot"><tr><td class="foot-date">April 2025</td><td>GNU coreutils 9.7</td></tr></table>`), url).data.publishedAt).toBeUndefined()
    expect(article(page(`<p><time class="git-revision-date" datetime="2026-02-24">Feb 24, 2026</time></p>`), url).data.publishedAt).toBeUndefined()
    expect(article(page(`<p>Updated: <b><time datetime="2026-02-24">Feb 24, 2026</time></b></p>`), url).data.publishedAt).toBeUndefined()
    // a publication <time> beside an update label after it keeps its date
    const both = page(`<div><time datetime="2025-12-19T21:06:04Z">Dec 19, 2025</time><span>|</span><span>Last updated on Dec 19, 2025</span></div>`)
    expect(article(both, url).data.publishedAt?.slice(0, 10)).toBe("2025-12-19")
  })

  it("does not take a byline line's update date for the publication", () => {
    const html = `<html><body><article><h1>Rockets</h1><p>By Jane Doe · Updated March 3, 2025</p>${para(3)}</article></body></html>`
    expect(article(html, { url: "https://example.org/rockets" }).data.publishedAt).toBeUndefined()
  })

  it("does not take an event's own page's dates for its publication, but reads a post about an event", () => {
    const event = `{"@context":"https://schema.org","@type":"MusicEvent","name":"Harbour Jazz Night","startDate":"2026-06-12T19:00"}`
    const shown = `<main><h1>Harbour Jazz Night</h1><p><time datetime="2026-06-12T19:00">June 12, 2026</time></p>${para(3)}</main>`
    const page = (ld: string) => `<html><head><script type="application/ld+json">${ld}</script></head><body>${shown}</body></html>`
    expect(article(page(event), { url: "https://venue.example.org/events/2026/06/12/jazz" }).data.publishedAt).toBeUndefined()
    // a post that also describes its event is dated by what it shows
    const post = `[{"@context":"https://schema.org","@type":"BlogPosting","headline":"Harbour Jazz Night"},${event}]`
    expect(article(page(post), { url: "https://venue.example.org/blog/jazz" }).data.publishedAt?.slice(0, 10)).toBe("2026-06-12")
    // an event named on the page that is not the page's own (a sidebar's) changes nothing
    const other = `{"@context":"https://schema.org","@type":"Event","name":"Open day"}`
    expect(article(page(other), { url: "https://venue.example.org/news/jazz" }).data.publishedAt?.slice(0, 10)).toBe("2026-06-12")
  })

  it("does not take an update date for the publication", () => {
    const html = `<html><body><article><h1>Garden notes</h1><span class="date">Updated March 3, 2025</span>${para(3)}</article></body></html>`
    expect(article(html).data.publishedAt).toBeUndefined()
  })
})

describe("the site's banner h1", () => {
  const page = (head: string, h1s: string) => `<html><head>${head}</head><body><header>${h1s.split("\n")[0]}</header><main>${h1s.split("\n").slice(1).join("")}${para(4)}</main></body></html>`

  it("skips an h1 that only names the site (og:site_name) for the next one", () => {
    const html = page(`<title>Get Free Tax Help | United Helpers</title><meta property="og:site_name" content="United Helpers">`, `<h1>United Helpers</h1>\n<h1>Get Free Tax Help</h1>`)
    expect(article(html, { url: "https://www.helpers.example.org/need-help/tax-help/" }).data.title).toBe("Get Free Tax Help")
  })

  it("takes an h1 that repeats the title's trailing part for the site's name, and drops that part from the title", () => {
    const html = page(`<title>Defining Shared Behavior with Traits - The Example Book</title>`, `<h1>The Example Book</h1>\n<h2>Defining Shared Behavior with Traits</h2>`)
    expect(article(html, { url: "https://doc.example.org/book/ch10-02-traits.html" }).data.title).toBe("Defining Shared Behavior with Traits")
  })

  it("skips an h1 that is the host's name", () => {
    const html = page(`<title>Vibe Coding</title>`, `<h1>davidexample.com</h1>\n<h2>December 16, 2025</h2>`)
    expect(article(html, { url: "https://davidexample.com/archives/2025/12/16/vibe_coding.html" }).data.title).toBe("Vibe Coding")
  })

  it("keeps the site's name as the headline on its home page, and where the title is that name alone", () => {
    const home = page(`<title>Example Labs – Tools for makers</title><meta property="og:site_name" content="Example Labs">`, `<h1>Example Labs</h1>`)
    expect(article(home, { url: "https://examplelabs.example/" }).data.title).toBe("Example Labs")
    const named = page(`<title>Example Labs</title>`, `<h1>Example Labs</h1>`)
    expect(article(named, { url: "https://examplelabs.example/about/team" }).data.title).toBe("Example Labs")
  })
})

describe("dates and authors as platforms write them", () => {
  const page = (head: string, body: string) => `<html><head><title>Story</title>${head}</head><body>${body}</body></html>`

  it("does not date the page by a related story's card, itself an article", () => {
    const html = page("", `<main><article><h1>Story</h1><div class="post-meta"><span class="post-date">27 February 2024</span></div>${para(3)}</article>
      <section class="related-stories"><h2>Related stories</h2><article class="card"><a href="/a"><h3>Bleaching</h3></a><time>12 February 2024</time></article></section></main>`)
    expect(article(html, { url: null }).data.publishedAt?.slice(0, 10)).toBe("2024-02-27")
  })

  it("reads the byline under a headline set in an h2 when the page has no h1", () => {
    const h2 = page("", `<main><article><h2><span>Fernverkehr</span> <span>Neue Sprinter zwischen Berlin und München</span></h2>
      <div><span>Von </span><a href="/autor/kb">Katrin Böhme</a></div>${para(3)}</article></main>`).replace("<title>Story</title>", "<title>Neue Sprinter zwischen Berlin und München</title>")
    expect(article(h2, { url: "https://news.example.de/wirtschaft/sprinter" }).data.author).toBe("Katrin Böhme")
  })

  it("prefers the person a byline names to an organisation given as the structured author", () => {
    const ld = (author: string) => `<script type="application/ld+json">{"@context":"https://schema.org","@type":"BlogPosting","headline":"Story","author":${author}}</script>`
    const body = `<article><h1>Story</h1><p class="byline">By <a href="/team/maya">Maya Chen</a></p>${para(3)}</article>`
    expect(article(page(ld(`{"@type":"Organization","name":"Fieldnote"}`), body)).data.author).toBe("Maya Chen")
    // a person given as the structured author stays, and an organisation stays when the page names nobody else
    expect(article(page(ld(`{"@type":"Person","name":"Maya C."}`), body)).data.author).toBe("Maya C.")
    expect(article(page(ld(`{"@type":"Organization","name":"Fieldnote"}`), `<article><h1>Story</h1>${para(3)}</article>`)).data.author).toBe("Fieldnote")
  })

  it("prefers the person a byline names to a structured author that is the publisher's or the site's name", () => {
    const ld = `<script type="application/ld+json">{"@context":"https://schema.org","@type":"BlogPosting","headline":"Story","author":"Saltmarsh Pottery","publisher":{"@type":"Organization","name":"Saltmarsh Pottery"}}</script>`
    const body = `<article><h1>Story</h1><p class="blog-author">By <a href="/journal?author=5f1">Jules Carrow</a></p>${para(3)}</article>`
    expect(article(page(ld, body)).data.author).toBe("Jules Carrow")
    // named by og:site_name too; with no byline on the page the structured name stays
    const og = ld.replace(',"publisher":{"@type":"Organization","name":"Saltmarsh Pottery"}', "") + `<meta property="og:site_name" content="Saltmarsh Pottery">`
    expect(article(page(og, body)).data.author).toBe("Jules Carrow")
    expect(article(page(ld, `<article><h1>Story</h1>${para(3)}</article>`)).data.author).toBe("Saltmarsh Pottery")
  })

  it("takes the publication's <time>, not an update's, a masthead's or a comment's", () => {
    const gp = page("", `<article><h1>Story</h1><time class="updated" datetime="2025-02-11T10:00:00Z">Feb 11</time><time class="entry-date published" datetime="2024-06-03T09:00:00Z">June 3</time>${para(3)}</article>`)
    expect(article(gp).data.publishedAt?.slice(0, 10)).toBe("2024-06-03")
    const masthead = page("", `<div class="topbar"><time datetime="2025-03-12">Wednesday</time></div><article><h1>Story</h1><p><time datetime="2025-03-07">March 7, 2025</time></p>${para(3)}</article>`)
    expect(article(masthead).data.publishedAt?.slice(0, 10)).toBe("2025-03-07")
    const reply = page("", `<article><h1>Story</h1>${para(3)}</article><div class="comments"><time datetime="2025-05-01">May 1</time></div>`)
    expect(article(reply).data.publishedAt?.slice(0, 10)).not.toBe("2025-05-01")
  })

  it("reads dates written in Spanish, Russian, Japanese and Korean", () => {
    expect(toIsoDateTime("3 de marzo de 2025")?.slice(0, 10)).toBe("2025-03-03")
    expect(toIsoDateTime("12 марта 2025")?.slice(0, 10)).toBe("2025-03-12")
    expect(toIsoDateTime("2025年3月3日 21:04")?.slice(0, 10)).toBe("2025-03-03")
    expect(toIsoDateTime("2025년 3월 3일")?.slice(0, 10)).toBe("2025-03-03")
    expect(toIsoDateTime("5 maggio 2024")?.slice(0, 10)).toBe("2024-05-05")
    const ja = page("", `<article><h1>Story</h1><div class="note-date">2025年3月3日 21:04</div>${para(3)}</article>`)
    expect(article(ja).data.publishedAt?.slice(0, 10)).toBe("2025-03-03")
  })

  it("lists every author of a byline", () => {
    const links = page("", `<article><h1>Story</h1><p class="byline">By <a rel="author" href="/a/jane">Jane Doe</a> and <a rel="author" href="/a/john">John Roe</a></p>${para(3)}</article>`)
    expect(article(links).data.authors).toEqual(["Jane Doe", "John Roe"])
    const german = page("", `<article><h1>Story</h1><p class="byline">Von Anna Schmidt und Jonas Weber</p>${para(3)}</article>`)
    expect(article(german).data.authors).toEqual(["Anna Schmidt", "Jonas Weber"])
    const titled = page("", `<article><h1>Story</h1><div class="byline">By Jane Doe, Senior Editor</div>${para(3)}</article>`)
    expect(article(titled).data.authors).toEqual(["Jane Doe, Senior Editor"])
    const metaAuthors = (content: string) => article(page(`<meta name="author" content="${content}">`, `<article><h1>Story</h1>${para(3)}</article>`)).data.authors
    expect(metaAuthors("Jane Doe, John Roe and Ann Lee")).toEqual(["Jane Doe", "John Roe", "Ann Lee"])
    // one comma is one name with its title, outlet or place (words cannot tell "A, B" from those);
    // "y"/"e" join Spanish and Portuguese surnames; one-word names stay whole
    for (const one of ["Jane Doe, Associated Press", "Jane Doe, The Arizona Republic", "García López, María José", "Doe, Jane", "Ana María García y Pérez Gómez", "Tom and Jerry"]) {
      expect(metaAuthors(one)).toEqual([one])
    }
  })

  it("reads a microdata author's own name, not a nested item's", () => {
    const html = page("", `<article><h1>Story</h1>${para(3)}<span itemprop="author" itemscope itemtype="https://schema.org/Person"><span itemprop="image" itemscope itemtype="https://schema.org/ImageObject"><meta itemprop="name" content="avatar.png"></span><span itemprop="name">Jane Doe</span></span></article>`)
    expect(article(html).data.author).toBe("Jane Doe")
  })

  it("reads a <time> inside the article whatever the page's own classes say", () => {
    const astra = `<html><head><title>Story</title></head><body class="single ast-right-sidebar showing-comments"><article><h1>Story</h1><time class="entry-date published" datetime="2024-03-05T10:00:00+00:00">2 days ago</time>${para(3)}<footer class="entry-footer"><time datetime="2024-03-06T08:00:00+00:00">March 6</time></footer></article></body></html>`
    expect(article(astra).data.publishedAt).toBe("2024-03-05T10:00:00.000Z")
    const footer = `<html><head><title>Story</title></head><body><article><h1>Story</h1>${para(3)}<footer class="entry-footer">Posted <time datetime="2024-03-05T10:00:00+00:00">March 5</time></footer></article></body></html>`
    expect(article(footer).data.publishedAt).toBe("2024-03-05T10:00:00.000Z")
  })

  it("reads a microdata author's own name, not its badges", () => {
    const html = page("", `<article><h1>Story</h1>${para(3)}<div class="user-details" itemprop="author" itemscope itemtype="https://schema.org/Person"><a href="/u/1">Hamza Yerlikaya</a><span class="d-none" itemprop="name">Hamza Yerlikaya</span><div class="-flair"><span class="reputation-score">33.5k</span></div></div></article>`)
    expect(article(html).data.author).toBe("Hamza Yerlikaya")
  })
})

describe("scholarly and job pages", () => {
  it("reads a paper's authors and date from its citation tags, names given first", () => {
    const html = `<html><head><title>Tree canopy and night heat</title><meta name="citation_author" content="Mendes, Laura"><meta name="citation_author" content="Piotr Zieliński">
      <meta name="citation_publication_date" content="2025/05/01"><meta name="citation_online_date" content="2025/03/18"></head><body><h1>Tree canopy and night heat</h1>${para(3)}</body></html>`
    const d = article(html).data
    expect(d.authors).toEqual(["Laura Mendes", "Piotr Zieliński"])
    expect(d.publishedAt).toBe("2025-05-01T00:00:00.000Z")
    const online = html.replace(/<meta name="citation_publication_date"[^>]*>/, "")
    expect(article(online).data.publishedAt).toBe("2025-03-18T00:00:00.000Z")
  })

  it("dates a job posting by its structured datePosted", () => {
    const html = `<html><head><title>Field ecologist</title><script type="application/ld+json">{"@context":"https://schema.org","@type":"JobPosting","title":"Field ecologist","datePosted":"2025-10-06","validThrough":"2025-11-30"}</script></head><body><h1>Field ecologist</h1>${para(3)}</body></html>`
    expect(article(html).data.publishedAt).toBe("2025-10-06T00:00:00.000Z")
  })
})

describe("titles that put the site's name first", () => {
  it("reads the headline after a leading site name", () => {
    const town = `<html><head><title>Town of Example | Bulky waste collection dates</title></head><body><h1>Bulky waste collection dates</h1>${para(3)}</body></html>`
    expect(article(town, { url: "https://www.townofexample.gov/news/bulky-waste" }).data.title).toBe("Bulky waste collection dates")
    const shop = `<html><head><title>Corner Books | Our new opening hours</title><meta property="og:site_name" content="Corner Books"></head><body>${para(3)}</body></html>`
    expect(article(shop, { url: "https://cornerbooks.example/news/hours" }).data.title).toBe("Our new opening hours")
    // a leading part that is not the site's name stays
    expect(headlineOf("Review | The new phone is fast", undefined, undefined, "https://news.example.com/x")).toBe("Review | The new phone is fast")
  })
})

describe("pages as forums and regional newspapers write them", () => {
  it("drops a forum's \"Thread:\" label from the headline", () => {
    expect(headlineOf("Thread: 70-200 f/2.8 vs f/4 for hiking", "Thread: 70-200 f/2.8 vs f/4 for hiking", undefined, null)).toBe("70-200 f/2.8 vs f/4 for hiking")
    expect(headlineOf("Topic: Varroa im August", undefined, undefined, null)).toBe("Varroa im August")
  })

  it("does not date an article by the top bar's date of today, and reads the published date before a French \"mis à jour\"", () => {
    const html = `<html><body><div class="topbar"><span class="topbar-date">Mardi 3 février 2026</span></div><main><article><h1>Les transports gratuits</h1>
      <div class="infos-article"><span class="auteur">Par <strong>Julien Marchetti</strong></span> — <span class="date">Publié le 2 février 2026 à 18h12</span>, <span class="maj">mis à jour le 3 février 2026 à 08h30</span></div>
      ${para(4)}</article></main></body></html>`
    const out = article(html, { url: "https://www.example.fr/lyon/transports" })
    expect(out.data.publishedAt?.slice(0, 10)).toBe("2026-02-02")
    expect(out.data.content).not.toContain("Julien Marchetti")
  })
})
