/**
 * Extraction benchmark.
 *
 *   npm run bench:extract                       # articles: Trawl vs @mozilla/readability (linkedom DOM)
 *   npm run bench:extract -- --per-doc 15       # also the worst pages of Trawl
 *   npm run bench:extract -- --type product     # products: Trawl with score-product.mjs
 *   options: --reps N (timing repetitions, best kept; default 3), --split dev, --json FILE (Trawl predictions)
 *
 * Data and scorers: ../shared/extraction-bench (relative to the repository; TRAWL_BENCH_DIR overrides).
 * Timing covers parsing + extraction for both systems, on the same in-memory pages.
 * Last line: `extract f1=.. precision=.. recall=.. speed_ratio=..` or `extract-product mean_f1=..`.
 */
import { readFileSync, writeFileSync, existsSync } from "node:fs"
import { gunzipSync } from "node:zlib"
import { fileURLToPath, pathToFileURL } from "node:url"
import { join, resolve } from "node:path"
import { parseHTML } from "linkedom"
import { Readability } from "@mozilla/readability"
import { extract } from "../src/extract/extract.ts"
import type { Article, Product } from "../src/extract/types.ts"

const args = process.argv.slice(2).filter((a) => a !== "--")
const opt = (name: string, dflt?: string): string | undefined => {
  const i = args.indexOf(name)
  if (i < 0) return dflt
  const v = args[i + 1]
  return v !== undefined && !v.startsWith("--") ? v : "true"
}
const type = opt("--type", "article")!
const split = opt("--split", "dev")!
const reps = Math.max(1, Number(opt("--reps", "3")))
const perDoc = opt("--per-doc") !== undefined ? Number(opt("--per-doc") === "true" ? 15 : opt("--per-doc")) : 0
const jsonOut = opt("--json")

const repoRoot = resolve(fileURLToPath(new URL("..", import.meta.url)))
const benchDir = process.env.TRAWL_BENCH_DIR ?? join(repoRoot, "..", "shared", "extraction-bench")
const dataDir = join(benchDir, type, split)
if (!existsSync(dataDir)) {
  console.error(`benchmark data not found: ${dataDir}`)
  process.exit(2)
}
const ids = readFileSync(join(dataDir, "ids.txt"), "utf8").trim().split(/\s+/)
const truth = JSON.parse(readFileSync(join(dataDir, "ground-truth.json"), "utf8")) as Record<string, { url?: string }>
const pages = ids.map((id) => gunzipSync(readFileSync(join(dataDir, "html", `${id}.html.gz`))).toString("utf8"))
const mb = pages.reduce((a, p) => a + p.length, 0) / 1e6

function timeIt(run: () => void): number {
  let best = Infinity
  for (let r = 0; r < reps; r++) {
    const t0 = performance.now()
    run()
    best = Math.min(best, performance.now() - t0)
  }
  return best
}
const fmt = (x: number) => x.toFixed(4)

if (type === "article") {
  const { scoreArticleBodies, formatMetrics } = await import(pathToFileURL(join(benchDir, "score.mjs")).href)
  const trawl: Record<string, { articleBody: string }> = {}
  const readab: Record<string, { articleBody: string }> = {}
  const runTrawl = () => {
    for (let i = 0; i < ids.length; i++) {
      const out = extract({ type: "article", content: pages[i]!, inputFormat: "html", url: truth[ids[i]!]?.url ?? null, configs: [] })
      trawl[ids[i]!] = { articleBody: (out.data as Article).content }
    }
  }
  const runReadability = () => {
    for (let i = 0; i < ids.length; i++) {
      const { document } = parseHTML(pages[i]!)
      let body = ""
      try {
        body = new Readability(document as unknown as Document).parse()?.textContent ?? ""
      } catch {
        body = ""
      }
      readab[ids[i]!] = { articleBody: body }
    }
  }
  // warm-up, then timed runs (interleaved so both see the same machine state)
  runTrawl()
  runReadability()
  let tTrawl = Infinity, tRead = Infinity
  for (let r = 0; r < reps; r++) {
    tTrawl = Math.min(tTrawl, timeIt(runTrawl))
    tRead = Math.min(tRead, timeIt(runReadability))
  }
  const mT = scoreArticleBodies(truth, trawl, { bootstrap: 200 })
  const mR = scoreArticleBodies(truth, readab, { bootstrap: 200 })
  const dpsT = ids.length / (tTrawl / 1000)
  const dpsR = ids.length / (tRead / 1000)
  console.log(`article benchmark: ${ids.length} pages (${split}), ${mb.toFixed(1)} MB HTML, best of ${reps} timed runs\n`)
  console.log(formatMetrics(mT, "trawl"))
  console.log(`docs/s     ${dpsT.toFixed(1)}  (${(tTrawl / ids.length).toFixed(2)} ms/doc)\n`)
  console.log(formatMetrics(mR, "@mozilla/readability + linkedom"))
  console.log(`docs/s     ${dpsR.toFixed(1)}  (${(tRead / ids.length).toFixed(2)} ms/doc)\n`)
  if (perDoc > 0) {
    const worst = Object.entries(mT.perDoc as Record<string, { precision: number; recall: number; f1: number; predTokens: number; trueTokens: number }>)
      .sort((a, b) => a[1].f1 - b[1].f1).slice(0, perDoc)
    console.log(`worst ${worst.length} Trawl pages (id  P  R  F1  predTokens/trueTokens  url):`)
    for (const [id, d] of worst) {
      console.log(`  ${id.slice(0, 12)}  ${d.precision.toFixed(3)}  ${d.recall.toFixed(3)}  ${d.f1.toFixed(3)}  ${d.predTokens}/${d.trueTokens}  ${truth[id]?.url ?? ""}`)
    }
    console.log("")
  }
  if (jsonOut !== undefined && jsonOut !== "true") writeFileSync(jsonOut, JSON.stringify(trawl, null, 1))
  console.log(`extract f1=${fmt(mT.f1)} precision=${fmt(mT.precision)} recall=${fmt(mT.recall)} speed_ratio=${(dpsT / dpsR).toFixed(2)}`)
} else if (type === "product") {
  const { scoreProducts, formatProductMetrics } = await import(pathToFileURL(join(benchDir, "score-product.mjs")).href)
  const preds: Record<string, Record<string, unknown>> = {}
  const run = () => {
    for (let i = 0; i < ids.length; i++) {
      const out = extract({ type: "product", content: pages[i]!, inputFormat: "html", url: truth[ids[i]!]?.url ?? null, configs: [] })
      const p = out.data as Product
      preds[ids[i]!] = { price: p.price, currency: p.currency, sku: p.sku, availability: p.availability, brand: p.brand, name: p.name }
    }
  }
  run()
  const t = timeIt(run)
  const m = scoreProducts(truth, preds, { bootstrap: 200 })
  console.log(`product benchmark: ${ids.length} pages (${split}), ${mb.toFixed(1)} MB HTML\n`)
  console.log(formatProductMetrics(m))
  console.log(`docs/s     ${(ids.length / (t / 1000)).toFixed(1)}  (${(t / ids.length).toFixed(2)} ms/doc)`)
  if (args.includes("--errors")) {
    for (const [name, r] of Object.entries(m.fields as Record<string, { errors: Array<{ id: string; truth: unknown; pred: unknown }> }>)) {
      for (const e of r.errors) console.log(`  ${name}\t${e.id.slice(0, 12)}\ttruth=${JSON.stringify(e.truth)}\tpred=${JSON.stringify(e.pred)}`)
    }
  }
  if (jsonOut !== undefined && jsonOut !== "true") writeFileSync(jsonOut, JSON.stringify(preds, null, 1))
  console.log(`extract-product mean_f1=${fmt(m.meanF1)}`)
} else {
  console.error(`unknown --type ${type} (article | product)`)
  process.exit(2)
}
