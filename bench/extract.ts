/**
 * Extraction benchmark, through `extract()` exactly as the API runs it.
 *
 *   npm run bench:extract                          # all three dev sets, full + untouched fifth, speed vs Readability.js
 *   npm run bench:extract -- --set article-modern  # one set only (article | article-modern | product)
 *   options: --quick (Trawl only, no timing), --reps N (timing repetitions, best kept; default 3), --per-doc N (worst TUNING pages of each
 *            article set), --errors (product field errors on TUNING pages), --json DIR (Trawl predictions)
 * Products are also scored with their structured data removed (JSON-LD; then microdata, RDFa and product
 * meta tags too): what the visible-evidence rules find alone, for shops that publish little.
 *
 * Data and scorers: ../shared/extraction-bench (relative to the repository; TRAWL_BENCH_DIR overrides).
 * Split: bench/splits/extract.json (by site; fold 0 is the untouched fifth, never used for tuning;
 * see bench/splits/make-extract-splits.ts). Per-page diagnostics are printed for tuning pages only.
 * Speed: CPU time of parsing + extraction over both article sets, Trawl vs @mozilla/readability with
 * linkedom, same pages in memory, same run; ratio = Trawl docs per CPU second / Readability's.
 * Last line: `extract f1=<untouched> modern_f1=<untouched> product_mean_f1=<untouched> speed_ratio=<n>`.
 */
import { readFileSync, writeFileSync, existsSync, mkdirSync } from "node:fs"
import { gunzipSync } from "node:zlib"
import { pathToFileURL } from "node:url"
import { join } from "node:path"
import { parseHTML } from "linkedom"
import { Readability } from "@mozilla/readability"
import { extract } from "../src/extract/extract.ts"
import type { Article, Product } from "../src/extract/types.ts"
import { extractionBench } from "./splits/site.ts"

const args = process.argv.slice(2).filter((a) => a !== "--")
const opt = (name: string, dflt?: string): string | undefined => {
  const i = args.indexOf(name)
  if (i < 0) return dflt
  const v = args[i + 1]
  return v !== undefined && !v.startsWith("--") ? v : "true"
}
const only = opt("--set")
const reps = Math.max(1, Number(opt("--reps", "3")))
const perDoc = opt("--per-doc") !== undefined ? Number(opt("--per-doc") === "true" ? 15 : opt("--per-doc")) : 0
const jsonDir = opt("--json")
/** --quick: Trawl only, one pass, no Readability.js and no timing (for tuning iterations). */
const quick = args.includes("--quick")

const { benchDir, splits } = extractionBench()
const { scoreArticleBodies } = await import(pathToFileURL(join(benchDir, "score.mjs")).href)
const { scoreProducts, formatProductMetrics } = await import(pathToFileURL(join(benchDir, "score-product.mjs")).href)

interface DevSet {
  name: string
  ids: string[]
  untouched: Set<string>
  truth: Record<string, Record<string, unknown> & { url?: string }>
  pages: string[]
  mb: number
}
function loadSet(name: string): DevSet {
  const dir = join(benchDir, name, "dev")
  if (!existsSync(dir)) {
    console.error(`benchmark data not found: ${dir}`)
    process.exit(2)
  }
  const ids = readFileSync(join(dir, "ids.txt"), "utf8").trim().split(/\s+/)
  const truth = JSON.parse(readFileSync(join(dir, "ground-truth.json"), "utf8"))
  const fold = splits.sets[name]!.fold
  for (const id of ids) if (fold[id] === undefined) throw new Error(`${name}/${id} is not in bench/splits/extract.json`)
  const pages = ids.map((id) => gunzipSync(readFileSync(join(dir, "html", `${id}.html.gz`))).toString("utf8"))
  return {
    name, ids, truth, pages,
    untouched: new Set(ids.filter((id) => fold[id] === splits.untouchedFold)),
    mb: pages.reduce((a, p) => a + p.length, 0) / 1e6,
  }
}
const withoutJsonLd = (html: string) => html.replace(/<script[^>]*application\/ld\+json[^>]*>[\s\S]*?<\/script>/gi, "")
const withoutMarkupData = (html: string) =>
  html.replace(/\s(?:itemprop|itemscope|itemtype|property|typeof|vocab|content)(?:=(?:"[^"]*"|'[^']*'|[^\s>]*))?/gi, " ").replace(/<meta[^>]*(?:og:|product:)[^>]*>/gi, "")
const subset = <T>(rec: Record<string, T>, keep: (id: string) => boolean): Record<string, T> =>
  Object.fromEntries(Object.entries(rec).filter(([id]) => keep(id)))
const f3 = (x: number) => x.toFixed(3)
const f4 = (x: number) => x.toFixed(4)

/** CPU milliseconds (user + system) of `run`, best of `reps`. */
function cpuTime(run: () => void): number {
  let best = Infinity
  for (let r = 0; r < reps; r++) {
    const c0 = process.cpuUsage()
    run()
    const c = process.cpuUsage(c0)
    best = Math.min(best, (c.user + c.system) / 1000)
  }
  return best
}

interface ArticlePred { articleBody: string; title: string; author: string | undefined; publishedAt: string | undefined }
function runTrawl(set: DevSet, out: Record<string, ArticlePred>) {
  for (let i = 0; i < set.ids.length; i++) {
    const id = set.ids[i]!
    const r = extract({ type: "article", content: set.pages[i]!, inputFormat: "html", url: set.truth[id]?.url ?? null, configs: [] })
    const a = r.data as Article
    out[id] = { articleBody: a.content, title: a.title, author: a.author, publishedAt: a.publishedAt }
  }
}
function runReadability(set: DevSet, out: Record<string, { articleBody: string }>) {
  for (let i = 0; i < set.ids.length; i++) {
    const { document } = parseHTML(set.pages[i]!)
    let body = ""
    try {
      body = new Readability(document as unknown as Document).parse()?.textContent ?? ""
    } catch {
      body = ""
    }
    out[set.ids[i]!] = { articleBody: body }
  }
}

// --- metadata (modern set): exact match after normalization for title and date, token F1 for author
const normTitle = (s: unknown) => typeof s === "string" ? s.normalize("NFKC").toLowerCase().replace(/[^\p{L}\p{N}]+/gu, " ").trim() : ""
const normDate = (s: unknown) => typeof s === "string" ? (/^\d{4}-\d\d-\d\d/.exec(s)?.[0] ?? "") : ""
const tokens = (s: unknown) => typeof s === "string" ? (s.normalize("NFKC").toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) : []
function tokenF1(truth: string[], pred: string[]): number {
  if (truth.length === 0 || pred.length === 0) return truth.length === pred.length ? 1 : 0
  const bag = new Map<string, number>()
  for (const t of truth) bag.set(t, (bag.get(t) ?? 0) + 1)
  let tp = 0
  for (const t of pred) {
    const n = bag.get(t) ?? 0
    if (n > 0) { tp++; bag.set(t, n - 1) }
  }
  if (tp === 0) return 0
  const p = tp / pred.length, r = tp / truth.length
  return (2 * p * r) / (p + r)
}
/** Per field: accuracy on pages whose truth has it, and how many pages without it got a value anyway. */
function metadataScores(set: DevSet, preds: Record<string, ArticlePred>, keep: (id: string) => boolean) {
  const acc = { title: [0, 0, 0], author: [0, 0, 0], date: [0, 0, 0] } as Record<string, [number, number, number]>
  for (const id of set.ids) {
    if (!keep(id)) continue
    const t = set.truth[id]!, p = preds[id]!
    const add = (f: string, has: boolean, predHas: boolean, score: number) => {
      const a = acc[f]!
      if (has) { a[0] += score; a[1]++ } else if (predHas) a[2]++
    }
    add("title", normTitle(t.title) !== "", normTitle(p.title) !== "", normTitle(t.title) === normTitle(p.title) ? 1 : 0)
    add("author", tokens(t.author).length > 0, tokens(p.author).length > 0, tokenF1(tokens(t.author), tokens(p.author)))
    add("date", normDate(t.datePublished) !== "", normDate(p.publishedAt) !== "", normDate(t.datePublished) === normDate(p.publishedAt) ? 1 : 0)
  }
  return acc
}
const fmtMeta = (m: Record<string, [number, number, number]>) =>
  Object.entries(m).map(([f, [s, n, extra]]) => `${f} ${f3(n > 0 ? s / n : 0)} (n=${n}, extra=${extra})`).join("  ")

const lastLine: Record<string, string> = {}
const articleSets = ["article", "article-modern"].filter((s) => only === undefined || only === s).map(loadSet)
const allTrawl: Record<string, Record<string, ArticlePred>> = {}
if (articleSets.length > 0) {
  const readab: Record<string, Record<string, { articleBody: string }>> = {}
  for (const s of articleSets) { allTrawl[s.name] = {}; readab[s.name] = {} }
  const trawlAll = () => { for (const s of articleSets) runTrawl(s, allTrawl[s.name]!) }
  const readAll = () => { for (const s of articleSets) runReadability(s, readab[s.name]!) }
  trawlAll()
  if (!quick) readAll()
  let tT = Infinity, tR = Infinity
  for (let r = 0; r < (quick ? 0 : reps); r++) {
    tT = Math.min(tT, cpuTime(trawlAll))
    tR = Math.min(tR, cpuTime(readAll))
  }
  const docs = articleSets.reduce((a, s) => a + s.ids.length, 0)
  const mb = articleSets.reduce((a, s) => a + s.mb, 0)
  for (const s of articleSets) {
    const isU = (id: string) => s.untouched.has(id)
    const isT = (id: string) => !s.untouched.has(id)
    console.log(`== ${s.name}: ${s.ids.length} pages (${s.untouched.size} untouched), ${s.mb.toFixed(1)} MB HTML`)
    console.log(`   split        system       F1     P      R      pages`)
    let untouchedF1 = 0
    for (const [label, keep] of [["full", () => true], ["tuning", isT], ["untouched", isU]] as const) {
      const truth = subset(s.truth, keep)
      const mT = scoreArticleBodies(truth, subset(allTrawl[s.name]!, keep), { bootstrap: 0 })
      const systems: Array<[string, { f1: number; precision: number; recall: number }]> = [["trawl", mT]]
      if (!quick) systems.push(["readability", scoreArticleBodies(truth, subset(readab[s.name]!, keep), { bootstrap: 0 })])
      for (const [sys, m] of systems) {
        console.log(`   ${label.padEnd(12)} ${sys.padEnd(12)} ${f3(m.f1)}  ${f3(m.precision)}  ${f3(m.recall)}  ${Object.keys(truth).length}`)
      }
      if (label === "untouched") untouchedF1 = mT.f1
    }
    if (s.name === "article-modern") {
      console.log(`   metadata full:      ${fmtMeta(metadataScores(s, allTrawl[s.name]!, () => true))}`)
      console.log(`   metadata untouched: ${fmtMeta(metadataScores(s, allTrawl[s.name]!, isU))}`)
      // recall by page type on the tuning part (where listing/collection/product pages lose)
      const types = [...new Set(s.ids.map((id) => String(s.truth[id]!.pageType)))].sort()
      const parts = types.map((t) => {
        const keep = (id: string) => isT(id) && s.truth[id]!.pageType === t
        const m = scoreArticleBodies(subset(s.truth, keep), subset(allTrawl[s.name]!, keep), { bootstrap: 0 })
        return `${t} ${f3(m.f1)}/${f3(m.recall)}`
      })
      console.log(`   tuning F1/R by type: ${parts.join("  ")}`)
    }
    if (perDoc > 0) {
      const m = scoreArticleBodies(subset(s.truth, isT), subset(allTrawl[s.name]!, isT), { bootstrap: 0 })
      const worst = Object.entries(m.perDoc as Record<string, { precision: number; recall: number; f1: number; predTokens: number; trueTokens: number }>)
        .sort((a, b) => a[1].f1 - b[1].f1).slice(0, perDoc)
      console.log(`   worst ${worst.length} tuning pages (id  P  R  F1  predTokens/trueTokens  url):`)
      for (const [id, d] of worst) {
        console.log(`     ${id.slice(0, 12)}  ${f3(d.precision)}  ${f3(d.recall)}  ${f3(d.f1)}  ${d.predTokens}/${d.trueTokens}  ${s.truth[id]?.url ?? ""}`)
      }
    }
    console.log("")
    lastLine[s.name] = f4(untouchedF1)
  }
  const dpsT = docs / (tT / 1000), dpsR = docs / (tR / 1000)
  if (!quick) console.log(`speed (${docs} pages, ${mb.toFixed(1)} MB, best of ${reps}, CPU time): trawl ${dpsT.toFixed(1)} docs/CPU-s (${(tT / docs).toFixed(2)} ms/doc), ` +
    `readability ${dpsR.toFixed(1)} docs/CPU-s (${(tR / docs).toFixed(2)} ms/doc)\n`)
  if (!quick) lastLine.speed = (dpsT / dpsR).toFixed(2)
}

if (only === undefined || only === "product") {
  const s = loadSet("product")
  const predict = (transform: (html: string) => string) => {
    const preds: Record<string, Record<string, unknown>> = {}
    for (let i = 0; i < s.ids.length; i++) {
      const id = s.ids[i]!
      const p = extract({ type: "product", content: transform(s.pages[i]!), inputFormat: "html", url: s.truth[id]?.url ?? null, configs: [] }).data as Product
      preds[id] = { price: p.price, currency: p.currency, sku: p.sku, availability: p.availability, brand: p.brand, name: p.name }
    }
    return preds
  }
  const preds = predict((html) => html)
  console.log(`== product: ${s.ids.length} pages (${s.untouched.size} untouched), ${s.mb.toFixed(1)} MB HTML`)
  console.log(`   split        mean   price  sku    avail  pages`)
  const isT = (id: string) => !s.untouched.has(id)
  const rows = (prefix: string, p: Record<string, Record<string, unknown>>, last: boolean) => {
    for (const [label, keep] of [["full", () => true], ["tuning", isT], ["untouched", (id: string) => s.untouched.has(id)]] as const) {
      const truth = subset(s.truth, keep)
      const m = scoreProducts(truth, subset(p, keep), { bootstrap: 0 })
      const fields = m.fields as Record<string, { f1: number }>
      console.log(`   ${(prefix + label).padEnd(12)} ${f3(m.meanF1)}  ${f3(fields.price!.f1)}  ${f3(fields.sku!.f1)}  ${f3(fields.availability!.f1)}  ${Object.keys(truth).length}`)
      if (last && label === "untouched") lastLine.product = f4(m.meanF1)
    }
  }
  rows("", preds, true)
  // What the page shows, without the structured data it would otherwise read: how the visible-evidence
  // rules fare on shops that publish little (robustness; not part of the benchmark's figures).
  console.log(`   without JSON-LD:`)
  rows("  ", predict(withoutJsonLd), false)
  console.log(`   without any structured data (JSON-LD, microdata, RDFa, OpenGraph/product meta):`)
  rows("  ", predict((html) => withoutMarkupData(withoutJsonLd(html))), false)
  if (args.includes("--errors")) {
    const m = scoreProducts(subset(s.truth, isT), subset(preds, isT), { bootstrap: 0 })
    console.log(formatProductMetrics(m))
    for (const [name, r] of Object.entries(m.fields as Record<string, { errors: Array<{ id: string; truth: unknown; pred: unknown }> }>)) {
      for (const e of r.errors) console.log(`  ${name}\t${e.id.slice(0, 12)}\ttruth=${JSON.stringify(e.truth)}\tpred=${JSON.stringify(e.pred)}\t${s.truth[e.id]?.url ?? ""}`)
    }
  }
  console.log("")
  if (jsonDir !== undefined && jsonDir !== "true") { mkdirSync(jsonDir, { recursive: true }); writeFileSync(join(jsonDir, "product.json"), JSON.stringify(preds, null, 1)) }
}
if (jsonDir !== undefined && jsonDir !== "true") {
  mkdirSync(jsonDir, { recursive: true })
  for (const [name, p] of Object.entries(allTrawl)) writeFileSync(join(jsonDir, `${name}.json`), JSON.stringify(p, null, 1))
}

console.log(`extract f1=${lastLine.article ?? "-"} modern_f1=${lastLine["article-modern"] ?? "-"} product_mean_f1=${lastLine.product ?? "-"} speed_ratio=${lastLine.speed ?? "-"}`)
