import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Records of the cluster probe: every run of a probe message, and its effect (applied once). */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE cluster_probe_runs (
      id bigserial PRIMARY KEY,
      probe_id text NOT NULL,
      runner text NOT NULL,
      started_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`
    CREATE TABLE cluster_probe_effects (
      probe_id text PRIMARY KEY,
      runner text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`
})
