/**
 * The learned block model: a logistic regression over the features of one candidate paragraph
 * (a chunk the main-content extractor would output) that estimates whether it belongs to the body.
 * Trained offline by scripts/train-blocks.ts (k-fold by site on the tuning part of the dev sets);
 * its weights are data in config/block-model.json. See docs/extraction.md ("Block model").
 */
import shipped from "../../../config/block-model.json" with { type: "json" }

/** Dense features, in this order (each scaled to about 0..1 by hand so that one L2 penalty fits all). */
export const DENSE_FEATURES = [
  "lenLog", "linkDensity", "leadLink", "punctuation", "endsSentence", "wordsLog", "wordLength", "startsUpper", "digits",
  "depth", "posInBody", "posMiddle", "posInPage", "tagP", "tagListItem", "tagHeading", "tagCell", "tagDiv", "tagQuote", "tagOther",
  "repeated", "quoted", "teaser", "dateLine", "listing", "valuePositive", "valuePerChar", "hintPositive", "hintWeak", "bodyShare", "lineBreaks", "inBody", "inFurniture",
] as const

export interface BlockModel {
  /** Weights of DENSE_FEATURES, same order. */
  dense: number[]
  bias: number
  /** Weights of class/id words: `o:word` on the paragraph's own element, `a:word` on one of its 3 nearest ancestors. */
  words: Record<string, number>
  /** A paragraph of the chosen body below this probability is dropped. */
  dropBelow: number
  /** A paragraph outside the chosen body at or above this probability is added (in page order). */
  addAbove: number
}

/** One candidate paragraph as the model sees it. */
export interface BlockSample {
  dense: Float64Array
  words: string[]
}

let active: BlockModel | null = validModel(shipped) ? (shipped as unknown as BlockModel) : null

/** The model in use (null: none, the rules alone decide). */
export const blockModel = (): BlockModel | null => active
/** Replaces the model in use; for scripts/train-blocks.ts (cross-validation runs the extractor with each fold's model). */
export function useBlockModel(model: BlockModel | null): void {
  active = model
}

function validModel(m: unknown): boolean {
  const o = m as Partial<BlockModel> | null
  return o !== null && typeof o === "object" && Array.isArray(o.dense) && o.dense.length === DENSE_FEATURES.length &&
    typeof o.bias === "number" && typeof o.dropBelow === "number" && typeof o.addAbove === "number" && typeof o.words === "object" && o.words !== null
}

export function blockLogit(model: BlockModel, s: BlockSample): number {
  let z = model.bias
  for (let i = 0; i < s.dense.length; i++) z += model.dense[i]! * s.dense[i]!
  for (const w of s.words) z += model.words[w] ?? 0
  return z
}

export const sigmoid = (z: number) => 1 / (1 + Math.exp(-z))

/** The words of a class/id attribute pair, as the furniture hints split them (camelCase and punctuation). */
export function classWords(cls: string | undefined, id: string | undefined): string[] {
  if (cls === undefined && id === undefined) return []
  const out: string[] = []
  for (const w of ((cls ?? "") + " " + (id ?? "")).replace(/([a-z])([A-Z])/g, "$1 $2").toLowerCase().split(/[^a-z]+/)) {
    // generated ids and hashes ("css-1x2y3z") carry no vocabulary
    if (w.length >= 2 && w.length <= 20 && !out.includes(w)) out.push(w)
  }
  return out
}

/** Receives every candidate paragraph with its sample (scripts/train-blocks.ts labels them); null: off. */
let observer: ((text: string, sample: BlockSample) => void) | null = null
export const blockObserver = () => observer
export function observeBlocks(fn: ((text: string, sample: BlockSample) => void) | null): void {
  observer = fn
}
