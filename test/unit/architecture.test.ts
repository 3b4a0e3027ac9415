import { readdirSync, readFileSync } from "node:fs"
import { dirname, join, posix } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

/**
 * The direction of imports between the folders of src/ (README.md, "Architecture"): http → actors
 * → sql, crawl, extract, schema; never back up. Each rule lists the violations that are known and
 * not yet fixed, each with its reason, so that any new one fails; a known one that is gone fails too,
 * so the list only shrinks.
 */

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..")

const sourceFiles = (dir: string): Array<string> =>
  readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = posix.join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.name.endsWith(".ts") ? [path] : []
  })

interface Import {
  /** The importing file, e.g. `src/sql/job-repo.ts`. */
  readonly from: string
  /** The imported file, e.g. `src/crawl/domain.ts`. */
  readonly to: string
  /** `import type`, `export type`, or every named binding marked `type`. */
  readonly typeOnly: boolean
}

const importPattern = /(?:^|[\n;])\s*(import|export)\s+(type\s+)?([^;"'`]*?)\s*from\s*["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)/g

/** The relative imports of a file's text (package imports are not between folders of src/). */
const importsOf = (from: string, text: string): Array<Import> =>
  [...text.matchAll(importPattern)].flatMap((m) => {
    const specifier = m[4] ?? m[5]!
    if (!specifier.startsWith(".")) return []
    const bindings = (m[3] ?? "").trim()
    const named = /^\{([^}]*)\}$/.exec(bindings)?.[1]?.split(",").map((b) => b.trim()).filter((b) => b !== "")
    const typeOnly = m[2] !== undefined || (named !== undefined && named.length > 0 && named.every((b) => b.startsWith("type ")))
    return [{ from, to: posix.normalize(posix.join(posix.dirname(from), specifier)), typeOnly }]
  })

/** The folder of src/ a file is in (`crawl` for `src/crawl/engines/http.ts`); "" for the files at the top. */
const folderOf = (path: string) => {
  const parts = path.split("/")
  return parts.length > 2 ? parts[1]! : ""
}

const usesSql = (text: string) => /\bsql`|\bsql\.unsafe\b|\bSqlClient\b/.test(text)

const files = sourceFiles("src").map((path) => ({ path, text: readFileSync(join(root, path), "utf8") }))
const imports = files.flatMap((f) => importsOf(f.path, f.text))
const edge = (i: Import) => `${i.from} -> ${i.to}`

/** Folders below http/ and actors/: engines, extraction, storage and the wire types. */
const LOWER = ["crawl", "extract", "sql", "schema"]
/** What sql/ may import values from: itself, the wire types, and the files at the top of src/ (ids, config). */
const SQL_MAY_USE = ["sql", "schema", ""]

/** Rule 2: sql/ imports values of feature folders (types are fine). */
const SQL_FEATURE_IMPORTS: Record<string, string> = {
  "src/sql/extraction-repo.ts -> src/crawl/domain.ts": "domainIdFilter (the stored form of a domainId filter) is the crawl's URL normalisation; it belongs in schema/ or sql/",
  "src/sql/job-repo.ts -> src/crawl/domain.ts": "domainIdFilter, as for extraction-repo",
  "src/sql/migrations/0017_page_keys_keep_query_bytes.ts -> src/crawl/domain.ts": "the migration recomputes page keys with the crawl's normalizeUrl; a migration must keep using the code it was written against",
  "src/sql/tenant-repo.ts -> src/iam/permissions.ts": "the system roles a bootstrap writes come from the permission table (identity plane, being rebuilt)",
  "src/sql/tenant-repo.ts -> src/billing/plans.ts": "planQuota and the quota catalogue are read to count a tenant's quotas in SQL",
  "src/sql/tenant-repo.ts -> src/billing/pricing.ts": "the service keys of jobs and extractions name ledger entries"
}

/** Rule 4: SQL text outside sql/. */
const SQL_OUTSIDE_SQL: Record<string, string> = {}

/** A rule's violations that are not known exceptions, and the known exceptions that are gone. */
const check = (violations: ReadonlyArray<string>, known: Record<string, string>) => ({
  unexpected: violations.filter((v) => !(v in known)),
  fixed: Object.keys(known).filter((k) => !violations.includes(k))
})

describe("import direction in src/", () => {
  it("finds the source files and their imports (the rules below check something)", () => {
    expect(files.length).toBeGreaterThan(100)
    expect(imports.some((i) => i.from === "src/server.ts" && i.to === "src/http/api.ts")).toBe(true)
    expect(importsOf("src/sql/x.ts", `import { a, type B } from "../crawl/a.ts"\nimport type { C } from "../http/c.ts"`)).toEqual([
      { from: "src/sql/x.ts", to: "src/crawl/a.ts", typeOnly: false },
      { from: "src/sql/x.ts", to: "src/http/c.ts", typeOnly: true }
    ])
    expect(importsOf("src/a/b.ts", `export { x } from "./c.ts"\nconst m = await import("../d/e.ts")`).map((i) => i.to)).toEqual([
      "src/a/c.ts",
      "src/d/e.ts"
    ])
  })

  it("crawl/, extract/, sql/ and schema/ import nothing from http/ or actors/", () => {
    const violations = imports
      .filter((i) => LOWER.includes(folderOf(i.from)) && ["http", "actors"].includes(folderOf(i.to)))
      .map(edge)
    expect(violations).toEqual([])
  })

  it("sql/ imports no feature folder, except types", () => {
    const violations = imports.filter((i) => folderOf(i.from) === "sql" && !i.typeOnly && !SQL_MAY_USE.includes(folderOf(i.to))).map(edge)
    const { unexpected, fixed } = check(violations, SQL_FEATURE_IMPORTS)
    expect(unexpected, "new imports of feature folders from sql/").toEqual([])
    expect(fixed, "fixed: remove them from SQL_FEATURE_IMPORTS").toEqual([])
  })

  it("observability/, which every layer records through, imports nothing from http/ or actors/", () => {
    const violations = imports.filter((i) => folderOf(i.from) === "observability" && ["http", "actors"].includes(folderOf(i.to))).map(edge)
    expect(imports.some((i) => i.from === "src/crawl/crawl-service.ts" && i.to === "src/observability/metrics.ts")).toBe(true)
    expect(violations).toEqual([])
  })

  it("schema/ imports only schema/ and ids.ts", () => {
    const violations = imports.filter((i) => folderOf(i.from) === "schema" && folderOf(i.to) !== "schema" && i.to !== "src/ids.ts").map(edge)
    expect(violations).toEqual([])
  })

  it("no SQL outside sql/ (server.ts and main.ts only provide layers)", () => {
    const violations = files.filter((f) => folderOf(f.path) !== "sql" && usesSql(f.text)).map((f) => f.path)
    const { unexpected, fixed } = check(violations, SQL_OUTSIDE_SQL)
    expect(unexpected, "new SQL outside src/sql/: put it in a repository there").toEqual([])
    expect(fixed, "fixed: remove them from SQL_OUTSIDE_SQL").toEqual([])
  })
})
