import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { normalizeUrl } from "../../crawl/domain.ts"
import { OID, pgArray } from "../pg-array.ts"

/**
 * Page-history keys (`normalized_url`) keep their query's parameters as written (see
 * `normalizeUrl`); they used to be decoded and form-encoded again, which merged different pages.
 * The keys of jobs with a query are worked out again from each job's URL, and each page version
 * takes its job's key. Jobs are read a batch at a time in id order, so a large table is not held
 * in memory. It uses the key rule of the code that runs it: a database that skips versions gets
 * the newest keys at once, and a later change of the rule needs a migration of its own for the
 * databases that ran this one. Nodes of an older version still write old keys: upgrade every node
 * before it takes jobs again (docs/crawling.md).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  let after = ""
  for (;;) {
    const rows = yield* sql<{ id: string; url: string; normalized_url: string }>`
      SELECT id, url, normalized_url FROM jobs WHERE id > ${after} AND strpos(url, '?') > 0 ORDER BY id LIMIT 1000`
    if (rows.length === 0) break
    after = rows[rows.length - 1]!.id
    const moved = rows.map((r) => ({ id: r.id, key: normalizeUrl(r.url) })).filter((r, i) => r.key !== rows[i]!.normalized_url)
    if (moved.length === 0) continue
    const ids = pgArray(moved.map((m) => m.id), OID.text)
    const keys = pgArray(moved.map((m) => m.key), OID.text)
    yield* sql`UPDATE jobs SET normalized_url = m.key FROM unnest(${ids}, ${keys}) AS m(id, key) WHERE jobs.id = m.id`
    yield* sql`UPDATE page_versions SET normalized_url = m.key FROM unnest(${ids}, ${keys}) AS m(id, key) WHERE page_versions.job_id = m.id`
  }
})
