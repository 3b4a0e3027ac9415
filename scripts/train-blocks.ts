/**
 * Trains the block model (src/extract/article/block-model.ts) and reports it by k-fold
 * cross-validation split by site, against the rules alone on the same folds.
 *
 *   node --import tsx scripts/train-blocks.ts            # CV report, then writes config/block-model.json if CV says it helps
 *   node --import tsx scripts/train-blocks.ts --dry-run  # CV report only
 *
 * Data: the TUNING part of the article and article-modern dev sets (../shared/extraction-bench, TRAWL_BENCH_DIR
 * overrides); the untouched fifth (fold 0 of bench/splits/extract.json) is never read. The tuning part's
 * site folds 1..4 are the CV folds: no site is on both sides. Each candidate paragraph the extractor would
 * output is labelled by the share of its 4-token shingles found in the page's true body (the benchmark's
 * unit), weighted by its token count. The shipped model is trained on the whole tuning part.
 */
import { readFileSync, writeFileSync } from "node:fs"
import { gunzipSync } from "node:zlib"
import { pathToFileURL } from "node:url"
import { join } from "node:path"
import { extract } from "../src/extract/extract.ts"
import type { Article } from "../src/extract/types.ts"
import { DENSE_FEATURES, observeBlocks, sigmoid, useBlockModel, type BlockModel, type BlockSample } from "../src/extract/article/block-model.ts"
import { extractionBench, siteOf } from "../bench/splits/site.ts"

const dryRun = process.argv.includes("--dry-run")
const { repoRoot, benchDir, splits } = extractionBench()
const { scoreArticleBodies } = await import(pathToFileURL(join(benchDir, "score.mjs")).href)

/** (dropBelow, addAbove) pairs tried by CV; addAbove 1.01 never adds. */
const THRESHOLDS: Array<[number, number]> = [[0, 1.01], [0.2, 1.01], [0, 0.9], [0, 0.8], [0.2, 0.9], [0.2, 0.8], [0, 0.7]]
/** A class/id word enters the vocabulary only when it occurs on this many sites of the training folds. */
const MIN_SITES = 3
const L2_DENSE = 1e-4
const L2_WORDS = 1e-3
const EPOCHS = 300
/** The model ships only when CV raises the mean F1 of the two sets by at least this much (less is noise at ~300 pages). */
const MIN_GAIN = 0.002

interface Page { set: string; id: string; site: string; fold: number; html: string; url: string | null; truth: string }
const pages: Page[] = []
for (const set of ["article", "article-modern"]) {
  const dir = join(benchDir, set, "dev")
  const ids = readFileSync(join(dir, "ids.txt"), "utf8").trim().split(/\s+/)
  const truth = JSON.parse(readFileSync(join(dir, "ground-truth.json"), "utf8")) as Record<string, { articleBody?: string; url?: string }>
  const fold = splits.sets[set]!.fold
  for (const id of ids) {
    if (fold[id] === splits.untouchedFold) continue // the untouched fifth stays unread
    const t = truth[id]!
    pages.push({
      set, id, site: siteOf(t.url, id), fold: fold[id]!, url: t.url ?? null, truth: t.articleBody ?? "",
      html: gunzipSync(readFileSync(join(dir, "html", `${id}.html.gz`))).toString("utf8"),
    })
  }
}
const folds = [...new Set(pages.map((p) => p.fold))].sort()

// --- labelled samples of every tuning page (the rules alone choose the candidates)
const TOKEN = /[\p{L}\p{N}_]+/gu
const shingles = (tokens: string[]) => {
  const out: string[] = []
  for (let i = 0; i + 4 <= tokens.length; i++) out.push(tokens.slice(i, i + 4).join(" "))
  return out
}
interface Labelled { sample: BlockSample; y: number; w: number; page: number }
const samples: Labelled[] = []
useBlockModel(null)
for (let pi = 0; pi < pages.length; pi++) {
  const p = pages[pi]!
  const truthTokens = p.truth.match(TOKEN) ?? []
  const truthSet = new Set(shingles(truthTokens))
  const truthLine = " " + truthTokens.join(" ") + " "
  observeBlocks((text, sample) => {
    const tokens = text.match(TOKEN) ?? []
    if (tokens.length === 0) return
    const sh = shingles(tokens)
    const inTruth = sh.length > 0 ? sh.filter((s) => truthSet.has(s)).length / sh.length : truthLine.includes(" " + tokens.join(" ") + " ") ? 1 : 0
    samples.push({ sample, y: inTruth >= 0.5 ? 1 : 0, w: Math.min(tokens.length, 300), page: pi })
  })
  extract({ type: "article", content: p.html, inputFormat: "html", url: p.url, configs: [] })
}
observeBlocks(null)
console.log(`${pages.length} tuning pages (${new Set(pages.map((p) => p.site)).size} sites), ${samples.length} candidate paragraphs, ` +
  `${(samples.filter((s) => s.y === 0).reduce((a, s) => a + s.w, 0) / samples.reduce((a, s) => a + s.w, 0) * 100).toFixed(1)} % of their tokens not body text`)

/** Weighted logistic regression (Adam, L2), class/id words seen on ≥ MIN_SITES sites of the training pages. */
function train(train: Labelled[]): Omit<BlockModel, "dropBelow" | "addAbove"> {
  const sitesOf = new Map<string, Set<string>>()
  for (const s of train) for (const w of s.sample.words) {
    let set = sitesOf.get(w)
    if (set === undefined) sitesOf.set(w, (set = new Set()))
    set.add(pages[s.page]!.site)
  }
  const vocab = [...sitesOf].filter(([, s]) => s.size >= MIN_SITES).map(([w]) => w)
  const index = new Map(vocab.map((w, i) => [w, i]))
  const D = DENSE_FEATURES.length
  const P = D + 1 + vocab.length
  const theta = new Float64Array(P)
  const m = new Float64Array(P), v = new Float64Array(P), g = new Float64Array(P)
  const rows = train.map((s) => ({ d: s.sample.dense, w: s.sample.words.map((x) => index.get(x)).filter((i): i is number => i !== undefined), y: s.y, sw: s.w }))
  const totalW = rows.reduce((a, r) => a + r.sw, 0)
  const lr = 0.05, b1 = 0.9, b2 = 0.999
  for (let epoch = 1; epoch <= EPOCHS; epoch++) {
    g.fill(0)
    for (const r of rows) {
      let z = theta[D]!
      for (let i = 0; i < D; i++) z += theta[i]! * r.d[i]!
      for (const j of r.w) z += theta[D + 1 + j]!
      const e = (sigmoid(z) - r.y) * r.sw / totalW
      for (let i = 0; i < D; i++) g[i]! += e * r.d[i]!
      g[D]! += e
      for (const j of r.w) g[D + 1 + j]! += e
    }
    for (let i = 0; i < P; i++) {
      if (i < D) g[i]! += L2_DENSE * theta[i]!
      else if (i > D) g[i]! += L2_WORDS * theta[i]!
      m[i] = b1 * m[i]! + (1 - b1) * g[i]!
      v[i] = b2 * v[i]! + (1 - b2) * g[i]! * g[i]!
      theta[i]! -= (lr * (m[i]! / (1 - b1 ** epoch))) / (Math.sqrt(v[i]! / (1 - b2 ** epoch)) + 1e-8)
    }
  }
  const round = (x: number) => Math.round(x * 1e4) / 1e4
  const words: Record<string, number> = {}
  vocab.forEach((w, i) => { const x = round(theta[D + 1 + i]!); if (Math.abs(x) >= 0.05) words[w] = x })
  return { dense: [...theta.slice(0, D)].map(round), bias: round(theta[D]!), words }
}

/** Article bodies of `which` pages with `model` in use. */
function predict(which: Page[], model: BlockModel | null): Record<string, Record<string, { articleBody: string }>> {
  useBlockModel(model)
  const out: Record<string, Record<string, { articleBody: string }>> = { article: {}, "article-modern": {} }
  for (const p of which) {
    const a = extract({ type: "article", content: p.html, inputFormat: "html", url: p.url, configs: [] }).data as Article
    out[p.set]![p.id] = { articleBody: a.content }
  }
  useBlockModel(null)
  return out
}

// --- k-fold by site: the rules alone vs the rules + each fold's model, pooled over the test folds
const rules = predict(pages, null)
const withModel = new Map(THRESHOLDS.map((t) => [t, { article: {}, "article-modern": {} } as Record<string, Record<string, { articleBody: string }>>]))
for (const k of folds) {
  const trainIdx = new Set(pages.flatMap((p, i) => (p.fold !== k ? [i] : [])))
  const model = train(samples.filter((s) => trainIdx.has(s.page)))
  const test = pages.filter((p) => p.fold === k)
  for (const t of THRESHOLDS) {
    const pred = predict(test, { ...model, dropBelow: t[0], addAbove: t[1] })
    for (const set of Object.keys(pred)) Object.assign(withModel.get(t)![set]!, pred[set])
  }
  console.log(`fold ${k}: ${trainIdx.size} training pages, ${test.length} test pages, ${Object.keys(model.words).length} words`)
}
const truthOf = (set: string) => Object.fromEntries(pages.filter((p) => p.set === set).map((p) => [p.id, { articleBody: p.truth }]))
const f3 = (x: number) => x.toFixed(3)
const score = (set: string, pred: Record<string, Record<string, { articleBody: string }>>) => scoreArticleBodies(truthOf(set), pred[set], { bootstrap: 0 })
console.log(`\n${folds.length}-fold CV by site on the tuning part (F1 / P / R, pooled test folds)`)
console.log(`system               article                modern`)
const line = (label: string, pred: Record<string, Record<string, { articleBody: string }>>) => {
  const a = score("article", pred), m = score("article-modern", pred)
  console.log(`${label.padEnd(20)} ${f3(a.f1)} / ${f3(a.precision)} / ${f3(a.recall)}  ${f3(m.f1)} / ${f3(m.precision)} / ${f3(m.recall)}`)
  return (a.f1 + m.f1) / 2
}
const base = line("rules", rules)
let bestT: [number, number] | null = null, bestGain = MIN_GAIN
for (const t of THRESHOLDS) {
  const gain = line(`model ${t[0]}/${t[1]}`, withModel.get(t)!) - base
  if (gain >= bestGain) { bestGain = gain; bestT = t }
}

if (dryRun) process.exit(0)
const file = join(repoRoot, "config", "block-model.json")
if (bestT === null) {
  console.log("\nCV: the model does not help; config/block-model.json = null (the rules alone)")
  writeFileSync(file, "null\n")
} else {
  const model = { ...train(samples), dropBelow: bestT[0], addAbove: bestT[1] }
  console.log(`\nCV: the model helps at dropBelow/addAbove ${bestT.join("/")} (mean F1 +${bestGain.toFixed(4)}); trained on all ${pages.length} tuning pages, ` +
    `${Object.keys(model.words).length} words → config/block-model.json`)
  writeFileSync(file, JSON.stringify({ ...model, denseNames: DENSE_FEATURES }, null, 1) + "\n")
}
