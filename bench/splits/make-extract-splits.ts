/**
 * Writes bench/splits/extract.json: for each extraction dev set, the sites (host without `www.`)
 * whose pages are the UNTOUCHED fifth (never looked at while tuning) and the fold of every site for
 * k-fold cross-validation by site. Deterministic: fold = sha256(`trawl-extract-split-v1:<site>`) mod 5,
 * fold 0 is the untouched fifth. Run once; the committed file is the split.
 *
 *   node --import tsx bench/splits/make-extract-splits.ts
 */
import { createHash } from "node:crypto"
import { readFileSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { siteOf } from "./site.ts"

const SEED = "trawl-extract-split-v1"
export const FOLDS = 5
const repoRoot = resolve(fileURLToPath(new URL("../..", import.meta.url)))
const benchDir = process.env.TRAWL_BENCH_DIR ?? join(repoRoot, "..", "shared", "extraction-bench")

const foldOf = (site: string): number => createHash("sha256").update(`${SEED}:${site}`).digest().readUInt32BE(0) % FOLDS

const out: Record<string, unknown> = { seed: SEED, folds: FOLDS, untouchedFold: 0, sets: {} }
for (const set of ["article", "article-modern", "product"]) {
  const dir = join(benchDir, set, "dev")
  const ids = readFileSync(join(dir, "ids.txt"), "utf8").trim().split(/\s+/)
  const truth = JSON.parse(readFileSync(join(dir, "ground-truth.json"), "utf8")) as Record<string, { url?: string }>
  const fold: Record<string, number> = {}
  for (const id of ids) fold[id] = foldOf(siteOf(truth[id]?.url, id))
  const untouched = ids.filter((id) => fold[id] === 0)
  ;(out.sets as Record<string, unknown>)[set] = {
    pages: ids.length,
    untouchedPages: untouched.length,
    untouchedSites: [...new Set(untouched.map((id) => siteOf(truth[id]?.url, id)))].sort(),
    fold,
  }
  console.log(`${set}: ${untouched.length}/${ids.length} pages untouched`)
}
writeFileSync(join(repoRoot, "bench", "splits", "extract.json"), JSON.stringify(out, null, 1) + "\n")
