/** The block model's hooks into the main-content reader, on small synthetic pages with hand-written models. */
import { afterEach, describe, expect, it } from "vitest"
import { article, para } from "./helpers.ts"
import { classWords, DENSE_FEATURES, observeBlocks, useBlockModel, blockModel, type BlockModel, type BlockSample } from "../../src/extract/article/block-model.ts"

const shipped = blockModel()
afterEach(() => { useBlockModel(shipped); observeBlocks(null) })

const page = `<html><body><div class="page"><article class="story">${para(4)}<p class="edition-note">The print edition carries a crossword every morning, with a discount for the first three months.</p></article>
  <div class="sidebar"><p>Our sister site reviews the best hiking boots of the season, tested on mountain trails for six weeks.</p></div></div></body></html>`

/** A model that knows only class/id words (every dense weight 0). */
const wordModel = (words: Record<string, number>, bias: number): BlockModel =>
  ({ dense: DENSE_FEATURES.map(() => 0), bias, words, dropBelow: 0.5, addAbove: 0.9 })

describe("block model", () => {
  it("splits class and id into words, camelCase included, without generated hashes", () => {
    expect(classWords("promo-line articleBody", "x9")).toEqual(["promo", "line", "article", "body", "x"].filter((w) => w.length >= 2))
    expect(classWords(undefined, undefined)).toEqual([])
  })

  it("drops a body paragraph the model doubts and keeps the others", () => {
    useBlockModel(null)
    expect(article(page).data.content).toContain("print edition")
    useBlockModel(wordModel({ "o:edition": -8 }, 3))
    const body = article(page).data.content
    expect(body).not.toContain("print edition")
    expect(body).toContain("Paragraph 4 about the harbour")
  })

  it("adds a paragraph outside the body only when the model is confident", () => {
    useBlockModel(wordModel({ "a:sidebar": 1 }, 1))
    expect(article(page).data.content).not.toContain("hiking boots")
    useBlockModel(wordModel({ "a:sidebar": 4 }, 1))
    expect(article(page).data.content).toContain("hiking boots")
  })

  it("describes every candidate paragraph to an observer: inside the body or not, with its element's words", () => {
    useBlockModel(null)
    const seen: Array<[string, BlockSample]> = []
    observeBlocks((text, s) => seen.push([text, s]))
    article(page)
    const inBody = DENSE_FEATURES.indexOf("inBody")
    const promo = seen.find(([t]) => t.includes("print edition"))![1]
    const side = seen.find(([t]) => t.includes("hiking boots"))![1]
    expect(promo.dense[inBody]).toBe(1)
    expect(promo.words).toContain("o:edition")
    expect(side.dense[inBody]).toBe(0)
    expect(side.words).toContain("a:sidebar")
    expect(side.dense[DENSE_FEATURES.indexOf("inFurniture")]).toBe(1)
  })
})
