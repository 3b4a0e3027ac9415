import { Effect, Layer } from "effect"
import { Migrator } from "effect/sql"
import accounts from "./migrations/0001_accounts.ts"
import clusterProbe from "./migrations/0002_cluster_probe.ts"

/**
 * Versioned migrations, applied at start. The migrator locks its table, so
 * several nodes starting at once apply each migration exactly once.
 */
export const migrations = {
  "0001_accounts": accounts,
  "0002_cluster_probe": clusterProbe
}

export const runMigrations = Migrator.make({})({ loader: Migrator.fromRecord(migrations) })

export const MigrationsLive = Layer.effectDiscard(Effect.orDie(runMigrations))
