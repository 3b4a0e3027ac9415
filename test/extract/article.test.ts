import { describe, expect, it } from "vitest"
import { article, para } from "./helpers.ts"

describe("article extraction (HTML)", () => {
  it("uses JSON-LD for metadata and the main-content extractor for the body", () => {
    const html = `<!doctype html><html lang="en-GB"><head><title>Harbour works extended | Example News</title>
      <script type="application/ld+json">{"@context":"https://schema.org","@graph":[{"@type":"WebSite","name":"Example News"},
        {"@type":"NewsArticle","headline":"Harbour works extended","datePublished":"2024-05-02T08:30:00+02:00","dateModified":"2024-05-03",
         "author":[{"@type":"Person","name":"Ann Writer"},{"@type":"Person","name":"Bob Reporter"}],"keywords":"harbour, council",
         "image":{"@type":"ImageObject","url":"/img/harbour.jpg","width":1200,"height":800},"description":"The harbour works run until December."}]}</script>
      </head><body><nav><a href="/">Home</a><a href="/world">World</a><a href="/sport">Sport</a></nav>
      <article><h1>Harbour works extended</h1>${para(5)}</article><footer>© Example News 2024. All rights reserved.</footer></body></html>`
    const out = article(html)
    const d = out.data
    expect(d.title).toBe("Harbour works extended")
    expect(d.authors).toEqual(["Ann Writer", "Bob Reporter"])
    expect(d.author).toBe("Ann Writer, Bob Reporter")
    expect(d.publishedAt).toBe("2024-05-02T08:30:00.000+02:00")
    expect(d.modifiedAt).toBe("2024-05-03T00:00:00.000Z")
    expect(d.tags).toEqual(["harbour", "council"])
    expect(d.description).toBe("The harbour works run until December.")
    expect(d.images?.[0]).toEqual({ url: "https://news.example.com/img/harbour.jpg", width: 1200, height: 800 })
    expect(d.lang).toBe("en")
    const paragraphs = d.content.split("\n\n")
    expect(paragraphs).toHaveLength(5)
    expect(paragraphs[0]).toMatch(/^Paragraph 1 about the harbour/)
    expect(d.content).not.toContain("Home")
    expect(d.content).not.toContain("All rights reserved")
    expect(d.content).not.toContain("Harbour works extended")
    expect(out.metadata.strategiesUsed).toEqual(expect.arrayContaining(["json-ld", "main-content"]))
    expect(out.metadata.detectedLanguage).toBe("en")
    expect(out.metadata.truncated).toBe(false)
  })

  it("works without structured data (OpenGraph + meta + body)", () => {
    const html = `<html><head><title>Quiet street reopens - Town Paper</title>
      <meta property="og:title" content="Quiet street reopens"><meta name="author" content="Cleo Columnist">
      <meta property="article:published_time" content="2023-11-20T10:00:00Z"><meta property="og:image" content="https://cdn.example.com/a.jpg">
      </head><body><div class="page"><div class="story-body">${para(4, "street")}</div></div></body></html>`
    const d = article(html).data
    expect(d.title).toBe("Quiet street reopens")
    expect(d.author).toBe("Cleo Columnist")
    expect(d.publishedAt).toBe("2023-11-20T10:00:00.000Z")
    expect(d.images?.[0]?.url).toBe("https://cdn.example.com/a.jpg")
    expect(d.content.split("\n\n")).toHaveLength(4)
  })

  it("removes boilerplate: navigation, share bars, related links, comments, footer", () => {
    const related = Array.from({ length: 6 }, (_, i) => `<li><a href="/r/${i}">Related story number ${i} with a long linked headline</a></li>`).join("")
    const comments = Array.from({ length: 4 }, (_, i) => `<div class="comment"><p>Comment ${i}: I completely disagree with the council, this has been going on for far too long and nobody listens to us.</p></div>`).join("")
    const html = `<html><body>
      <header class="site-header"><a href="/">Logo</a><ul class="menu"><li><a href="/a">News</a></li><li><a href="/b">Sport</a></li><li><a href="/c">Weather</a></li></ul></header>
      <main><article><h1>Bridge closed</h1><div class="share-bar"><a href="#">Share on Facebook</a><a href="#">Tweet</a></div>
      <div class="article-body">${para(6, "bridge")}<p>Advertisement</p></div>
      <aside class="related"><h3>More from us</h3><ul>${related}</ul></aside></article>
      <section id="comments"><h2>12 comments</h2>${comments}</section></main>
      <footer><p>Contact us · Privacy policy · Terms of use</p></footer></body></html>`
    const d = article(html).data
    expect(d.content.split("\n\n")).toHaveLength(6)
    for (const junk of ["Share on Facebook", "Related story", "Comment 0", "Privacy policy", "Advertisement", "Weather", "12 comments"]) {
      expect(d.content).not.toContain(junk)
    }
  })

  it("falls back to the <title> and then to the first words for the title", () => {
    expect(article(`<html><head><title>Only a title | Example News</title></head><body>${para(2)}</body></html>`).data.title).toBe("Only a title")
    const d = article(`<html><body>${para(2)}</body></html>`).data
    expect(d.title).toMatch(/^Paragraph 1 about the harbour: the council said/)
    expect(d.title.length).toBeLessThanOrEqual(120)
  })

  it("keeps lists, headings and quotes that belong to the article", () => {
    const html = `<html><body><div class="entry-content">${para(3)}<h2>What changes</h2>
      <ul><li>Buses are diverted through the old town centre for the whole period.</li><li>Parking on the quay is suspended until further notice.</li></ul>
      <blockquote><p>"We will keep everyone informed," the mayor said.</p></blockquote>${para(2, "quay")}</div></body></html>`
    const c = article(html).data.content
    expect(c).toContain("What changes")
    expect(c).toContain("Buses are diverted")
    expect(c).toContain("the mayor said")
  })
})
