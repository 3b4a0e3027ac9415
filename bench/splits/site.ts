import { readFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { fileURLToPath } from "node:url"

/** The site of a benchmark page: its host without a leading `www.` (the id when the URL is missing). */
export function siteOf(url: string | undefined, id: string): string {
  try {
    return new URL(url ?? "").hostname.toLowerCase().replace(/^www\d?\./, "")
  } catch {
    return `id:${id}`
  }
}

/** The extraction benchmark's folder and its split of each dev set into site folds (bench/splits/extract.json). */
export const extractionBench = () => {
  const repoRoot = resolve(fileURLToPath(new URL("../..", import.meta.url)))
  const benchDir = process.env.TRAWL_BENCH_DIR ?? join(repoRoot, "..", "shared", "extraction-bench")
  const splits = JSON.parse(readFileSync(join(repoRoot, "bench", "splits", "extract.json"), "utf8")) as {
    untouchedFold: number
    sets: Record<string, { fold: Record<string, number> }>
  }
  return { repoRoot, benchDir, splits }
}
