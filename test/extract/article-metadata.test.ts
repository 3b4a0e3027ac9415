/** Title, author and date signals of articles, on small synthetic pages. */
import { describe, expect, it } from "vitest"
import { article, para } from "./helpers.ts"
import { cleanAuthor, headlineOf } from "../../src/extract/article/article.ts"

describe("headline", () => {
  it("uses the h1 when the title contains it, and drops a trailing site name otherwise", () => {
    expect(headlineOf("Harbour works extended | Example News", "Harbour works extended", undefined, null)).toBe("Harbour works extended")
    expect(headlineOf("Gardening basics • Gardenary", undefined, "Gardenary", null)).toBe("Gardening basics")
    expect(headlineOf("Ten easy steps - interior design | Tarkett", "Something else", undefined, "https://www.tarkett.com/x")).toBe("Ten easy steps - interior design")
    expect(headlineOf("Cats and dogs - a guide", undefined, undefined, "https://pets.example.com/")).toBe("Cats and dogs - a guide")
  })

  it("decodes entities left in structured titles", () => {
    const html = `<html><head><meta property="og:title" content="Hire SF&amp;#x27;s best movers"></head><body>${para(3)}</body></html>`
    expect(article(html).data.title).toBe("Hire SF's best movers")
  })
})

describe("author", () => {
  it("strips byline decoration and refuses dates", () => {
    expect(cleanAuthor("by Geri Mileva")).toBe("Geri Mileva")
    expect(cleanAuthor("Author Isaiah Shelton")).toBe("Isaiah Shelton")
    expect(cleanAuthor("BySummer Swann-June 12, 2025")).toBe("Summer Swann")
    expect(cleanAuthor("\"David Kim\"")).toBe("David Kim")
    expect(cleanAuthor("Ann Writer · 5 min read")).toBe("Ann Writer")
    expect(cleanAuthor("Sat, 20 Dec, 2025 - 06:36")).toBeUndefined()
    expect(cleanAuthor("Sun Dec 17, 2023 11:23 am")).toBeUndefined()
  })
})

describe("publication date", () => {
  it("reads a visible date in an element marked as a date", () => {
    const html = `<html><body><article><h1>Garden notes</h1><div class="entry-meta"><span class="post-date">Posted on March 3, 2025</span></div>${para(3)}</article></body></html>`
    expect(article(html).data.publishedAt).toBe("2025-03-03T00:00:00.000Z")
  })

  it("does not take an update date for the publication", () => {
    const html = `<html><body><article><h1>Garden notes</h1><span class="date">Updated March 3, 2025</span>${para(3)}</article></body></html>`
    expect(article(html).data.publishedAt).toBeUndefined()
  })
})
