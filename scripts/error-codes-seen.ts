/**
 * Compares the errors a test run met (the JSON lines `TRAWL_ERROR_CODES_LOG=<file>` collects) with
 * the codes the OpenAPI document lists per operation: one line per (operation, status, code) seen,
 * `MISS` where the document lacks it. Exits 1 on a miss.
 *
 *   node --import tsx scripts/error-codes-seen.ts <file>
 */
import { readFileSync } from "node:fs"
import { OpenApi } from "effect/http-api"
import { Api } from "../src/http/api.ts"

const doc: any = OpenApi.fromApi(Api)
const listed = new Map<string, ReadonlyArray<string>>()
for (const item of Object.values<any>(doc.paths)) {
  for (const op of Object.values<any>(item)) {
    for (const [status, response] of Object.entries<any>(op.responses)) listed.set(`${op.operationId} ${status}`, response["x-error-codes"] ?? [])
  }
}
const seen = new Map<string, number>()
for (const line of readFileSync(process.argv[2]!, "utf8").split("\n").filter(Boolean)) {
  const e = JSON.parse(line) as { operationId: string; status: number; code: string }
  const key = `${e.operationId} ${e.status} ${e.code}`
  seen.set(key, (seen.get(key) ?? 0) + 1)
}
let misses = 0
for (const [key, n] of [...seen].sort()) {
  const [op, status, code] = key.split(" ")
  const ok = listed.get(`${op} ${status}`)?.includes(code!) ?? false
  if (!ok) misses++
  console.log(`${ok ? "  ok" : "MISS"} ${key} (${n})`)
}
console.log(`${seen.size} (operation, status, code) seen, ${misses} not in the document`)
process.exitCode = misses > 0 ? 1 : 0
